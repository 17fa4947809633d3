"""The BI recipes of docs/bi.md and the example queries in sql/bi/, run for real.

Every example query runs twice against the fixture warehouse of tests/bi_landing.py: through the
Python DuckDB client opened read-only, and through SQLAlchemy + duckdb-engine (what Superset
uses). The expected figures are worked by hand in tests/bi_landing.py.
"""

from __future__ import annotations

import re
from decimal import Decimal as D
from importlib import resources
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from tests import bi_landing
from services.config import Config
from warehouse.db import Build, copy_warehouse

BI = resources.files("sql").joinpath("bi")
QUERIES = sorted(p.name[:-4] for p in BI.iterdir() if p.name.endswith(".sql"))


def query(name: str) -> str:
    return BI.joinpath(f"{name}.sql").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> bi_landing.Published:
    return bi_landing.published(tmp_path_factory)


def run_duckdb(path: Path, sql: str) -> list[dict]:
    """Recipe 'Python': a read-only connection per query."""
    with duckdb.connect(str(path), read_only=True) as con:
        rel = con.execute(sql)
        cols = [d[0] for d in rel.description]
        return [dict(zip(cols, r)) for r in rel.fetchall()]


def run_sqlalchemy(path: Path, sql: str) -> list[dict]:
    """Recipe 'SQLAlchemy / Superset': duckdb-engine, read-only, no pooled connection kept open."""
    engine = sa.create_engine(f"duckdb:///{path}?access_mode=read_only", poolclass=NullPool)
    try:
        with engine.connect() as con:
            return [dict(r._mapping) for r in con.execute(sa.text(sql))]
    finally:
        engine.dispose()


RUNNERS = {"duckdb": run_duckdb, "sqlalchemy": run_sqlalchemy}


def test_the_five_example_queries_exist_with_a_header():
    assert QUERIES == ["bill_reconciliation", "breakeven_status", "spend_by_team_tier_30d",
                       "thinking_share_by_model", "top_task_types_by_cost_per_task"]
    for name in QUERIES:
        sql = query(name)
        header = [ln for ln in sql.splitlines() if ln.startswith("--")]
        assert sql.startswith("-- "), name
        assert any(ln.startswith("-- grain: ") for ln in header), f"{name}: no '-- grain:' line"
        assert any(ln.startswith("-- reads: marts.") for ln in header), f"{name}: no '-- reads:' line"
        # SQLAlchemy's text() would take ':word' for a bind parameter
        assert not re.search(r"(?<![:\w]):\w", sql), f"{name}: ':name' would be a SQLAlchemy bind parameter"


@pytest.mark.parametrize("via", RUNNERS)
def test_spend_by_team_and_tier_last_30_days(pub, via):
    rows = RUNNERS[via](pub.warehouse, query("spend_by_team_tier_30d"))
    got = {(r["team"], r["tier"]): (int(r["calls"]), r["cost_usd"], r["thinking_cost_usd"]) for r in rows}
    # Window 2025-05-12 .. 2025-06-10: c1 (2025-05-11, search, fast, $2.00) is left out.
    assert got == {
        ("search", "full"): (1, D("4.216"), D("4.000")),     # c2
        ("search", "medium"): (1, D("0.274"), D("0.016")),   # c3
        ("ads", "fast"): (2, D("1.200"), D("0")),            # c4 0.80 + c5 0.40
        ("ads", "full"): (2, D("0.460"), D("0.139")),        # task t6: c6 0.10 + c7 0.36; thinking 0.064 + 0.075
        ("infra", "medium"): (1, D("2.000"), D("1.200")),    # c8: node hour 00, thinking 2.00 x 3000/5000
        ("infra", "fast"): (1, D("2.000"), D("0")),          # c9: node hour 01
        ("misc", "fast"): (20, D("0.084"), D("0")),          # 0.0004 x (1 + ... + 20)
        ("idle", "idle"): (0, D("2.000"), D("0")),           # node-a 2025-06-09 23:00, no call that day
    }
    assert sum(r["cost_usd"] for r in rows) == bi_landing.WINDOW_USD  # 12.234
    # sorted by spend, largest first; share_of_spend adds up to 1
    assert (rows[0]["team"], rows[0]["tier"]) == ("search", "full")
    assert rows[0]["share_of_spend"] == pytest.approx(4.216 / 12.234)
    assert sum(r["share_of_spend"] for r in rows) == pytest.approx(1.0)


@pytest.mark.parametrize("via", RUNNERS)
def test_thinking_share_of_spend_by_model(pub, via):
    rows = RUNNERS[via](pub.warehouse, query("thinking_share_by_model"))
    got = {(r["model"], r["source"]): (int(r["calls"]), r["cost_usd"], r["thinking_cost_usd"]) for r in rows}
    assert got == {
        ("o3", "api_usage"): (3, D("4.590"), D("4.080")),               # c2 + c3 + c6 (c1 is outside the window)
        ("gpt-4.1-mini", "api_usage"): (22, D("1.284"), D("0")),        # c4 + c5 + twenty misc calls
        ("claude-sonnet-4", "api_usage"): (1, D("0.360"), D("0.075")),  # c7
        ("qwen3-32b", "self_hosted"): (2, D("6.000"), D("1.200")),      # c8 + c9 + idle hour 2.00
    }
    share = {r["model"]: r["thinking_share"] for r in rows}
    assert share["o3"] == pytest.approx(4.08 / 4.59)        # 0.8889
    assert share["claude-sonnet-4"] == pytest.approx(0.075 / 0.36)
    assert share["qwen3-32b"] == pytest.approx(1.2 / 6.0)   # idle node time counts as spend without thinking
    assert share["gpt-4.1-mini"] == 0
    assert [r["model"] for r in rows] == ["qwen3-32b", "o3", "gpt-4.1-mini", "claude-sonnet-4"]


@pytest.mark.parametrize("via", RUNNERS)
def test_top_20_task_types_by_cost_per_task(pub, via):
    rows = RUNNERS[via](pub.warehouse, query("top_task_types_by_cost_per_task"))
    assert len(rows) == 20  # 24 task types in the window (summarize's only task is 2025-05-11)
    head = [(r["task_type"], int(r["tasks"]), r["cost_per_task_usd"]) for r in rows[:4]]
    assert head == [
        ("code_review", 2, D("2.245")),  # (4.216 + 0.274) / 2
        ("eval", 2, D("2.000")),         # (2.00 + 2.00) / 2
        ("classify", 2, D("0.600")),     # (0.80 + 0.40) / 2
        ("agent_run", 1, D("0.460")),    # one task, two calls, two models
    ]
    # then tt20 .. tt05 at 0.0004 x k; tt04 .. tt01 fall off the top 20
    assert [r["task_type"] for r in rows[4:]] == [f"tt{k:02d}" for k in range(20, 4, -1)]
    assert rows[-1]["cost_per_task_usd"] == D("0.002")
    assert rows[0]["thinking_share"] == pytest.approx(4.016 / 4.49)  # (4.0 + 0.016) / (4.216 + 0.274)
    assert int(rows[0]["full_tier_tasks"]) == 1


def test_queries_agree_with_the_core_tables(pub):
    """The window sums equal the same sums taken from core.call_costs + idle allocation directly."""
    with duckdb.connect(str(pub.warehouse), read_only=True) as con:
        calls_usd = con.execute(
            "SELECT sum(cost_usd) FROM core.call_costs WHERE day BETWEEN DATE '2025-05-12' AND DATE '2025-06-10'").fetchall()[0][0]
        idle_micro = con.execute(
            "SELECT sum(allocated_micro_usd) FROM core.self_hosted_allocation WHERE pool = 'idle'").fetchall()[0][0]
    spend = sum(r["cost_usd"] for r in run_duckdb(pub.warehouse, query("spend_by_team_tier_30d")))
    model = sum(r["cost_usd"] for r in run_duckdb(pub.warehouse, query("thinking_share_by_model")))
    assert spend == model == calls_usd + D(idle_micro) / 1_000_000 == bi_landing.WINDOW_USD


# --- break-even and bill reconciliation: written against the contract (DESIGN.md section 4) ---

@pytest.fixture
def contract_copy(pub, tmp_path) -> Path:
    """A copy of the fixture warehouse with contract-shaped break-even and reconciliation marts."""
    path = tmp_path / "contract.duckdb"
    copy_warehouse(pub.warehouse, path)
    with duckdb.connect(str(path)) as con:
        con.execute(bi_landing.BREAKEVEN_ROWS)
        con.execute(bi_landing.RECON_ROWS)
    return path


@pytest.mark.parametrize("via", RUNNERS)
def test_breakeven_status_on_contract_columns(contract_copy, via):
    rows = RUNNERS[via](contract_copy, query("breakeven_status"))
    by = {r["model"]: r for r in rows}
    assert list(by) == ["o3", "deepseek-r1"]  # largest savings first; May 2025 is not the latest month
    o3 = by["o3"]
    assert (o3["best_deployment"], o3["verdict"], int(o3["api_calls"])) == ("big-16xh200", "self_host", 200000)
    assert float(o3["self_host_usd_at_volume"]) == pytest.approx(23593.60)  # 1 deployment x 23,593.60
    assert o3["share_of_breakeven"] == pytest.approx(200000 / 114531.07)     # 1.746: past break-even
    r1 = by["deepseek-r1"]
    # the feasible deployment that loses least, not the infeasible one (savings NULL)
    assert (r1["best_deployment"], r1["verdict"]) == ("r1-8xb200", "stay_on_api")
    assert float(r1["savings_usd"]) == pytest.approx(-7262.40)  # 12,360 - 19,622.40
    assert r1["share_of_breakeven"] == pytest.approx(60000 / 95254.37)


@pytest.mark.parametrize("via", RUNNERS)
def test_bill_reconciliation_on_contract_columns(contract_copy, via):
    rows = RUNNERS[via](contract_copy, query("bill_reconciliation"))
    by = {(r["provider"], r["model"]): r for r in rows}
    assert list(by) == [("openai", "o3"), ("anthropic", "claude-sonnet-4")]  # largest |difference| first
    o3 = by["openai", "o3"]  # window 2025-05-04 .. 2025-06-02: the 2025-05-01 row is outside
    assert (int(o3["days"]), float(o3["billed_usd"]), float(o3["computed_usd"])) == (2, 15.50, 15.00)
    assert float(o3["difference_usd"]) == pytest.approx(0.50)
    assert o3["difference_pct"] == pytest.approx(100 * 0.5 / 15.5)  # 3.2258 %
    assert int(o3["days_off"]) == 1
    claude = by["anthropic", "claude-sonnet-4"]
    assert float(claude["difference_usd"]) == pytest.approx(-0.005)
    assert claude["difference_pct"] == pytest.approx(-0.5)
    assert int(claude["days_off"]) == 0  # half a cent is within a cent


def _has(path: Path, table: str) -> bool:
    schema, name = table.split(".")
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?",
                           [schema, name]).fetchall()[0][0] > 0


@pytest.mark.parametrize("via", RUNNERS)
def test_breakeven_status_on_the_real_mart(pub, via):
    if not _has(pub.warehouse, "marts.self_host_breakeven"):
        pytest.skip("marts.self_host_breakeven is not built in this tree; the query is tested on the contract columns above")
    rows = RUNNERS[via](pub.warehouse, query("breakeven_status"))
    # latest month 2025-06: o3 API calls c3 + c6 = 2 calls, $0.274 + $0.10 = $0.374, $0.187 a call;
    # o3-2xh100: 2 x $2.00 x 730 h = $2,920.00 a month, 10/min x 60 x 730 = 438,000 calls a month;
    # break-even 2,920 / 0.187 = 15,614.97 calls; savings 0.374 - 2,920 = -2,919.626.
    [o3] = rows
    assert (str(o3["month"]), o3["model"], o3["best_deployment"], o3["verdict"]) == ("2025-06-01", "o3", "o3-2xh100", "stay_on_api")
    assert (int(o3["api_calls"]), o3["api_spend_usd"], o3["api_cost_per_call_usd"]) == (2, D("0.374"), D("0.187"))
    assert (o3["self_host_usd_per_month"], float(o3["capacity_calls_per_month"]), int(o3["deployments_needed"])) == \
        (D("2920"), 438_000.0, 1)
    assert int(o3["breakeven_calls_per_month"]) == 15_615  # ceil(2920 / 0.187 = 15,614.97)
    assert o3["savings_usd"] == D("-2919.626")
    assert o3["share_of_breakeven"] == pytest.approx(2 / 15_615)


@pytest.mark.parametrize("via", RUNNERS)
def test_bill_reconciliation_on_the_real_mart(pub, via):
    if not _has(pub.warehouse, "marts.bill_reconciliation"):
        pytest.skip("marts.bill_reconciliation is not built in this tree; the query is tested on the contract columns above")
    rows = RUNNERS[via](pub.warehouse, query("bill_reconciliation"))
    got = {(r["provider"], r["model"]): (int(r["days"]), r["billed_usd"], r["computed_usd"], r["difference_usd"], int(r["days_off"]))
           for r in rows}
    # window 2025-05-07 .. 2025-06-05 (the last billed day); see the bill in tests/bi_landing.py
    assert got == {
        # billed 0.28 + 0.10; computed c1 2.00 + c2 4.216 + c3 0.274 + c6 0.10; off on 05-11 and 05-12 (no bill)
        ("openai", "o3"): (4, D("0.38"), D("6.59"), D("-6.21"), 2),
        # billed 0.80 + 0.45; computed c4 0.80 + c5 0.40 + misc 0.084; off on 06-02 (+0.05) and 06-03 (no bill)
        ("openai", "gpt-4.1-mini"): (3, D("1.25"), D("1.284"), D("-0.034"), 2),
        ("anthropic", "claude-sonnet-4"): (1, D("0"), D("0.36"), D("-0.36"), 1),  # c7, never billed
    }
    assert [(r["provider"], r["model"]) for r in rows] == [("openai", "o3"), ("anthropic", "claude-sonnet-4"),
                                                          ("openai", "gpt-4.1-mini")]  # largest |difference| first
    pct = {r["model"]: r["difference_pct"] for r in rows}
    assert pct["gpt-4.1-mini"] == pytest.approx(100 * -0.034 / 1.25)  # -2.72 %
    assert pct["claude-sonnet-4"] is None  # nothing billed: no percentage


# --- connection recipes ---

def test_sqlalchemy_read_only_url_and_connect_args(pub):
    url = sa.create_engine(f"duckdb:///{pub.warehouse}?access_mode=read_only", poolclass=NullPool)
    args = sa.create_engine(f"duckdb:///{pub.warehouse}", connect_args={"read_only": True}, poolclass=NullPool)
    for engine in (url, args):
        with engine.connect() as con:
            assert con.execute(sa.text("SELECT current_setting('access_mode')")).scalar() == "read_only"
            with pytest.raises(sa.exc.DBAPIError, match="read-only"):
                con.execute(sa.text("CREATE TABLE marts.scratch AS SELECT 1 AS x"))
        engine.dispose()


def test_sqlalchemy_inspector_shows_schemas_and_column_docs(pub):
    """What Superset's dataset editor reads: schema list, tables, column comments, table comment."""
    engine = sa.create_engine(f"duckdb:///{pub.warehouse}?access_mode=read_only", poolclass=NullPool)
    insp = sa.inspect(engine)
    assert "thinktax.marts" in insp.get_schema_names()  # duckdb-engine qualifies schemas with the file's name
    assert {"task_cost_breakdown", "daily_spend", "tier_mix"} <= set(insp.get_table_names(schema="marts"))
    assert "cost_per_task" in insp.get_view_names(schema="marts")  # its old name, a view (issue 17)
    # a per-call table is a view over its Parquet files (issue 26, warehouse/parts.py), documented the same
    assert "task_costs" in insp.get_view_names(schema="marts")
    task_cols = {c["name"]: c for c in insp.get_columns("task_costs", schema="marts")}
    assert task_cols["cost_usd"]["comment"].endswith("Unit: USD.")
    cols = {c["name"]: c for c in insp.get_columns("daily_spend", schema="marts")}
    assert cols["cost_usd"]["comment"].endswith("Unit: USD.")
    assert "grain" in insp.get_table_comment("daily_spend", schema="marts")["text"]
    engine.dispose()


def _runs(con) -> int:
    return con.execute("SELECT count(*) FROM ops.runs").fetchall()[0][0]


def test_open_readers_keep_their_snapshot_until_they_reconnect(pub, tmp_path):
    """The atomic swap as BI tools see it (docs/bi.md, 'Refreshes and the atomic file swap')."""
    published = tmp_path / "thinktax.duckdb"
    copy_warehouse(pub.warehouse, published)

    def publish_next(build_id: str) -> None:  # a new run: copy, change (one more ops.runs row), rename
        b = Build(published, build_id)
        b.start(Config().settings_row())
        b.publish(files_new=0, landing="-")

    # SQLAlchemy: a pooled engine (the default QueuePool) keeps its connection open between queries.
    pooled = sa.create_engine(f"duckdb:///{published}?access_mode=read_only")
    fresh = sa.create_engine(f"duckdb:///{published}?access_mode=read_only", poolclass=NullPool)

    def runs(engine) -> int:
        with engine.connect() as con:
            return con.execute(sa.text("SELECT count(*) FROM ops.runs")).scalar()

    assert runs(pooled) == 1
    publish_next("second")
    assert runs(pooled) == 1  # the pooled connection still reads the old file (same inode)
    # In one process DuckDB shares one database instance per path while any connection to it is
    # open, so even a per-query (NullPool) connection still gets the old snapshot here...
    assert runs(fresh) == 1
    # ...and a plain duckdb connection cannot even open it: duckdb-engine's connections carry
    # another configuration (its user agent), and one process cannot mix the two.
    with pytest.raises(duckdb.ConnectionException, match="different configuration"):
        duckdb.connect(str(published), read_only=True)
    pooled.dispose()
    assert runs(fresh) == 2  # no connection left on the old file: the next one opens the new snapshot
    fresh.dispose()

    # The Python client: a held connection keeps its snapshot; close it and reconnect for the new one.
    held = duckdb.connect(str(published), read_only=True)
    assert _runs(held) == 2
    publish_next("third")
    assert _runs(held) == 2
    with duckdb.connect(str(published), read_only=True) as again:
        assert _runs(again) == 2  # same process, same path, instance still open
    held.close()
    with duckdb.connect(str(published), read_only=True) as new:
        assert _runs(new) == 3
    assert not list(tmp_path.glob("thinktax.duckdb.build-*")), "each build file was renamed over the published one"
