"""Issue 43 item 2: each Python mart is computed once per run, from the inputs it declares.

A mart that needs another Python mart's figures reads that mart's table, built before it in the run
(marts.deployment_offers -> the break-evens and the outlook; marts.peak_capacity -> marts.capacity_plan
-> marts.breakeven_outlook), instead of calling its functions again. Each mart's inputs are declared
once, next to its builder (``INPUTS`` of warehouse/economics.py, outlook.py, buying_options.py,
anomalies.py), and are what Dagster shows as its deps and what a Spark run brings into the DuckDB build.

On tests/sql/test_outlook_marts.py's landing folder (a reasoning API model, a substitution to a
self-hosted model, budgets), plus a GPU price sheet, a second deployment of the self-hosted model
without a price of its own, so that one offer is taken from the sheet (``is_used``), and API calls of
the self-hosted model too (so that marts.self_host_breakeven has rows).
"""

from __future__ import annotations

import contextlib
import json

import pytest

from pipelines.defs.economics_assets import ECONOMICS, INPUTS
from tests.conftest import build_warehouse, write_files
from tests.sql.test_outlook_marts import FILES as OUTLOOK_FILES
from warehouse import economics, outlook

SHEET = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "gpu-h100-sxm_1gpu-16vcpu-200gb,H100,1,16,200,2.95,eu-north1,,1.25\n"
    "gpu-h100-sxm_8gpu-128vcpu-1600gb,H100,8,128,1600,23.60,eu-north1,,10.00\n"
)
TINY_CALLS = [json.dumps({"ts": f"2026-06-{d:02d}T09:00:00Z", "request_id": f"t{d}", "model": "tiny-model",
                           "provider": "acme", "team": "search", "task_id": f"t{d}", "task_type": "qa", "latency_ms": 2000,
                           "usage": {"prompt_tokens": 500, "completion_tokens": 300,
                                     "completion_tokens_details": {"reasoning_tokens": 200}}}) for d in range(1, 11)]
FILES = OUTLOOK_FILES | {
    "catalog/deployments.csv": OUTLOOK_FILES["catalog/deployments.csv"] + "d-tiny-h100,tiny-model,,H100,1,bf16,,,\n",
    "prices/gpu/skypilot_catalog_v7_nebius_vms.2026-06-01.csv": SHEET,
    "prices/llm/prices.2026-01-01.csv": OUTLOOK_FILES["prices/llm/prices.2026-01-01.csv"] + "acme,tiny-model,0.1,0.2,USD\n",
    "telemetry/requests/tiny.jsonl": "\n".join(TINY_CALLS) + "\n",
}
# the functions a mart used to call again for its parents' figures: counted over one run
COUNTED = {"offers": (economics, outlook), "peak_capacity_rows": (outlook,), "capacity_plan_rows": (outlook,),
           "busiest_hours": (outlook,)}  # busiest_hours: the capacity plan's queue replay reads the calls


# the mart whose own rows each counted function computes
OWNER = {"offers": "marts.deployment_offers", "peak_capacity_rows": "marts.peak_capacity",
         "capacity_plan_rows": "marts.capacity_plan", "busiest_hours": "marts.capacity_plan"}


@contextlib.contextmanager
def counting():
    """The calls of the COUNTED functions while inside (name -> count)."""
    calls = dict.fromkeys(COUNTED, 0)

    def wrap(name, f):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return f(*args, **kwargs)
        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for name, modules in COUNTED.items():
            wrapped = wrap(name, getattr(modules[0], name))
            for m in modules:
                mp.setattr(m, name, wrapped)
        yield calls


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("python_marts")
    con, _ = build_warehouse(write_files(tmp / "landing", FILES), tmp / "wh" / "thinktax.duckdb")
    with counting() as calls:
        for e in ECONOMICS:  # as a run builds them (pipelines/defs/warehouse_assets.py, warehouse/spark/economics.py)
            e.builder(con)
    yield con, calls
    con.close()


def test_each_mart_is_computed_once_per_run(run):
    con, calls = run
    assert calls == {"offers": 1, "peak_capacity_rows": 1, "capacity_plan_rows": 1, "busiest_hours": 1}
    # and what is counted was there to compute: an offer taken from the sheet, a queue replayed, and the
    # marts that read them have their rows
    assert con.execute("SELECT deployment, offer FROM marts.deployment_offers WHERE is_used").fetchall() == [
        ("d-tiny-h100", "nebius/eu-north1/gpu-h100-sxm_1gpu-16vcpu-200gb/on_demand")]
    plans, replayed = con.execute("SELECT count(*), min(hours_replayed) FROM marts.capacity_plan").fetchall()[0]
    assert plans >= 2 and replayed > 0
    for mart in ("marts.self_host_breakeven", "marts.substitution_breakeven", "marts.breakeven_outlook"):
        got = con.execute(f"SELECT list(DISTINCT deployment ORDER BY deployment) FROM {mart}").fetchall()[0][0]
        assert got == ["d-tiny", "d-tiny-h100"], mart


def _relations(con) -> list[tuple[str, str, str]]:
    return con.execute("SELECT table_schema, table_name, table_type FROM information_schema.tables "
                       "WHERE table_schema IN ('stg', 'core', 'marts') ORDER BY ALL").fetchall()


@pytest.mark.parametrize("mart", [e.table for e in ECONOMICS])
def test_a_mart_built_from_its_declared_inputs_alone_is_the_same(run, mart):
    """Every stg / core / marts relation the mart does not declare is hidden (renamed) while it is built
    again: a read of one fails, or takes the path of a build without it (its rows differ, or it computes
    a parent mart's figures itself: a counted call)."""
    con, _ = run
    e = next(x for x in ECONOMICS if x.table == mart)
    schema, name = mart.split(".")
    con.execute(f"CREATE OR REPLACE TEMP TABLE built_in_the_run AS SELECT * FROM {mart}")
    hidden = [(s, n, kind) for s, n, kind in _relations(con) if f"{s}.{n}" not in e.deps | {mart}]
    assert len(hidden) > 20  # most of the warehouse is out of sight
    for s, n, kind in hidden:
        con.execute(f"ALTER {'VIEW' if kind == 'VIEW' else 'TABLE'} {s}.{n} RENAME TO {n}__hidden")
    try:
        with counting() as calls:
            e.builder(con)
    finally:
        for s, n, kind in hidden:
            con.execute(f"ALTER {'VIEW' if kind == 'VIEW' else 'TABLE'} {s}.{n}__hidden RENAME TO {n}")
    assert calls == {name: int(owner == mart) for name, owner in OWNER.items()}
    if mart != "marts.spend_anomalies":  # 10 days of calls: fewer than min_history_days, no row to score
        assert con.execute(f"SELECT count(*) FROM {mart}").fetchall()[0][0] > 0
    for a, b in ((mart, "built_in_the_run"), ("built_in_the_run", mart)):
        assert con.execute(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})").fetchall() == [(0,)]


def test_the_inputs_are_declared_once_for_dagster_and_spark():
    from pipelines.defs.warehouse_assets import _model_specs
    from warehouse.spark.economics import CORE_SMALL, PER_CALL, PYTHON_MART_INPUTS

    assert {e.table: e.deps for e in ECONOMICS} == INPUTS == PYTHON_MART_INPUTS
    specs = {spec.key: spec for spec in _model_specs()}
    for e in ECONOMICS:  # the lineage Dagster shows is the declared one
        assert {tuple(d.asset_key.path) for d in specs[e.key].deps} == {tuple(t.split(".")) for t in e.deps}
    # a Spark run brings every core table a mart reads (the per-call ones as the columns read)
    assert {t for deps in INPUTS.values() for t in deps if t.startswith("core.")} - set(PER_CALL) <= set(CORE_SMALL)
    # a mart is built after the Python marts it reads
    order = [e.table for e in ECONOMICS]
    for e in ECONOMICS:
        assert all(order.index(d) < order.index(e.table) for d in e.deps if d in order), e.table
