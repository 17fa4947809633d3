"""Incremental nightly rebuilds give exactly the tables a full rebuild gives.

History is built and published; then a nightly run ingests more files and rebuilds only the
days they touch (warehouse/incremental.py). Every core and mart table of that warehouse must
equal, row for row, the tables of a fresh full build over the same landing folder. The later
files are chosen to hit every edge the plan has to get right:

* a new day after the history (the plain nightly case);
* a late file for a day already built, holding a call of a task that started two days before
  (so the task's row, its day and its inherited team must come out as in a full build) and a
  first call of that task *earlier* than the ones built, carrying the team the others lacked;
* a self-hosted call whose interval [ts - latency, ts] crosses midnight into a day that is not
  otherwise touched (the usage-basis split of the hours before midnight changes);
* a call four days after the last day of data, so nodes without an end date are paid for the
  gap days in between (idle days that no new file touches).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from synthetic import benchgen
from services.config import Config
from warehouse import incremental
from warehouse.db import Build, copy_warehouse, read_only
from warehouse.ingest import Ingestor
from warehouse.rebuild import rebuild_all
from warehouse.transform import load_tables

SPEC = benchgen.GenSpec(calls_per_day=1_500, days=4, lines_per_file=2_000)


def _run(published: Path, landing: Path, name: str) -> incremental.Scope:
    """One warehouse-level run: start (copy of published), ingest, plan, build, publish."""
    b = Build(published, name)
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, landing).ingest()
        scope = incremental.plan(con, b.build_id)
        rebuild_all(con, scope, b.build_id)  # what the Dagster step runs: models the plan keeps are not rebuilt
    b.publish(files_new=0, landing=str(landing))
    return scope


def _digest(published: Path) -> dict[str, tuple[int, str]]:
    """Per table: row count and a hash of its rows in a fixed order (build_id left out, DOUBLEs to
    10 significant digits since float sums may differ in the last bit between plans)."""
    out = {}
    with read_only(published) as con:
        for m in load_tables():
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "AND column_name <> 'build_id' ORDER BY ordinal_position",
                [m.schema, m.name],
            ).fetchall()
            exprs = [f"round(CAST(\"{c}\" AS DOUBLE), 10 - CAST(ceil(log10(abs(CAST(\"{c}\" AS DOUBLE)) + 1e-300)) AS INTEGER))::VARCHAR"
                     if t in ("DOUBLE", "FLOAT") else f'"{c}"::VARCHAR' for c, t in cols]
            rows = con.execute(f"SELECT {', '.join(exprs)} FROM {m.table} ORDER BY ALL").fetchall()
            out[m.table] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest())
    return out


def _line(ts: dt.datetime, request_id: str, task_id: str, *, team: str | None, node: str | None = None,
          latency_ms: int = 2_000, thinking: int = 3_000) -> str:
    rec = {"ts": ts.isoformat(timespec="milliseconds") + "Z", "request_id": request_id, "task_id": task_id,
           "task_type": "triage", "latency_ms": latency_ms,
           "usage": {"prompt_tokens": 4_000, "completion_tokens": thinking + 500,
                     "prompt_tokens_details": {"cached_tokens": 1_000},
                     "completion_tokens_details": {"reasoning_tokens": thinking}}}
    if team:
        rec["team"] = team
    if node:
        rec |= {"model": "Qwen/Qwen3-32B", "node_id": node}
    else:
        rec |= {"model": "o3", "provider": "openai"}
    return json.dumps(rec)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, list[Path] | Path]:
    root = tmp_path_factory.mktemp("incr")
    landing = root / "landing"
    reference = benchgen.write_reference_files(landing, SPEC)
    for d in range(SPEC.days):
        benchgen.write_day(landing, SPEC, d)
    later = root / "later"
    new_day = benchgen.write_day(later, SPEC, SPEC.days).jsonl
    d0 = SPEC.day(0)
    req = later / "telemetry" / "requests"
    req.mkdir(parents=True, exist_ok=True)
    at = lambda d, h, m=0: dt.datetime.combine(SPEC.day(d), dt.time(h, m))  # noqa: E731
    # history already has task "edge-task" on day 0 (no team) and day 1; the late file adds a call on day 2
    # and an earlier first call on day 0 that carries the team
    edge_hist = landing / "telemetry" / "requests" / f"{d0}" / "edge-history.jsonl"
    edge_hist.write_text("\n".join([
        _line(at(0, 23, 50), "edge-1", "edge-task", team=None),
        _line(at(1, 0, 10), "edge-2", "edge-task", team=None),
    ]) + "\n")
    late = req / "late-edge.jsonl"
    late.write_text("\n".join([
        _line(at(2, 9), "edge-3", "edge-task", team=None),
        _line(at(0, 23, 40), "edge-0", "edge-task", team="late-team"),
        # self-hosted, ends 00:20 on day 3 after 2 hours: busy time in day 2's last hours
        _line(at(3, 0, 20), "edge-midnight", "edge-midnight-task", team="infra", node="gpu-node-a",
              latency_ms=2 * 3_600_000),
    ]) + "\n")
    gap = req / "gap-day.jsonl"
    gap.write_text(_line(at(SPEC.days + 4, 12), "edge-gap", "edge-gap-task", team="infra", node="gpu-node-b") + "\n")
    return {"root": root, "landing": landing, "reference": reference, "later": [*new_day, late, gap],
            "later_root": later}


def test_incremental_nightly_equals_full_rebuild(generated, tmp_path: Path):
    landing = generated["landing"]
    nightly = tmp_path / "nightly" / "wh.duckdb"
    first = _run(nightly, landing, "history")
    assert first.full and first.reason == "no earlier build of the SQL tables"

    # the nightly landing = history + the later files
    everything = tmp_path / "landing_all"
    shutil.copytree(landing, everything)
    for f in generated["later"]:
        dest = everything / f.relative_to(generated["later_root"])
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)

    scope = _run(nightly, everything, "night")
    assert not scope.full, scope.reason
    d = SPEC.day
    # touched: day 0 and 2 (late file; day 1 by the task closure), day 3 (midnight call), new day 4,
    # gap days 5..7 (nodes paid up to the gap call's day), day 8 (gap call)
    assert list(scope.days) == [d(k) for k in range(0, SPEC.days + 5)]
    assert scope.halo_days == 1
    with read_only(nightly) as con:
        modes = dict(con.execute("SELECT table_name, mode FROM ops.model_builds").fetchall())
    assert modes["core.call_costs"] == "incremental" and modes["marts.task_costs"] == "incremental"
    assert modes["core.calls"] == "incremental" and modes["core.tasks"] == "incremental"
    assert modes["marts.task_cost_breakdown"] == "incremental" and modes["marts.cost_per_task"] == "view"
    assert modes["marts.tier_mix"] == "full"

    full = tmp_path / "full" / "wh.duckdb"
    assert _run(full, everything, "full").full
    got, want = _digest(nightly), _digest(full)
    assert got.keys() == want.keys()
    assert {t: v for t, v in got.items() if v != want[t]} == {}

    with read_only(nightly) as con:
        team, day, calls = con.execute("SELECT team, day, calls FROM marts.task_costs WHERE task_id = 'edge-task'").fetchall()[0]
        # the build id of every mart row is the new build's, also on days the night did not touch
        ids = con.execute("SELECT count(DISTINCT build_id) FROM marts.cost_per_task").fetchall()[0][0]
    assert (team, day, calls) == ("late-team", d(0), 4)
    assert ids == 1


def test_a_nightly_run_without_new_files_changes_nothing(generated, tmp_path: Path):
    wh = tmp_path / "wh.duckdb"
    _run(wh, generated["landing"], "one")
    before = _digest(wh)
    scope = _run(wh, generated["landing"], "two")
    assert not scope.full and scope.days == ()
    assert _digest(wh) == before


def _same_as_full(wh: Path, landing: Path, tmp_path: Path) -> None:
    """Every table of ``wh`` equals a full rebuild of the same staging tables (a copy of ``wh``
    rebuilt whole; the same files ingested in the same order, so the same file ids)."""
    full = tmp_path / "full-reference.duckdb"
    copy_warehouse(wh, full)
    b = Build(full, "full")
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, landing).ingest()  # nothing new
        scope = incremental.plan(con, b.build_id, full=True)
        rebuild_all(con, scope, b.build_id)
    b.publish(files_new=0, landing=str(landing))
    assert scope.full
    got, want = _digest(wh), _digest(full)
    assert got.keys() == want.keys()
    assert {t: v for t, v in got.items() if v != want[t]} == {}


# the models that read LLM prices (core.llm_price_versions), directly or through other models
LLM_PRICE_READERS = {
    "core.llm_price_versions", "core.model_map", "core.call_costs",
    "core.daily_call_totals", "core.self_hosted_usage_cost", "marts.bill_reconciliation", "marts.daily_spend",
    "marts.task_costs", "marts.unpriced_usage", "marts.focus_costs", "marts.tier_mix",
    "marts.node_hours", "marts.cost_per_task", "marts.task_cost_breakdown",
    # issues 14, 15, 18: marts over core.call_costs
    "marts.price_basis_mix", "marts.budget_status", "marts.cost_crosscheck",
    # issue 24: provisioned calls with what they would have cost on demand
    "marts.provisioned_usage",
    # issue 25: the cloud invoice against the calls' cost, by bucket, and its month
    "marts.invoice_reconciliation", "marts.invoice_mismatch",
    # issue 25 item 5: a commitment's month against what its provisioned calls would have cost on demand
    "marts.commitments",
    # issue 41: who spent it, and the agent runs, sessions and traces: marts over core.call_costs
    "marts.chargeback", "marts.agent_runs", "marts.run_costs", "marts.session_costs",
}
# issue 17, calls before costs: what reads only calls and tokens reads core.calls, not core.call_costs,
# so a new price sheet leaves it alone
NOT_PRICE_READERS = {"core.calls", "core.reported_models", "core.tasks", "core.self_hosted_allocation", "core.call_kv", "core.call_profiles",
                     "marts.kv_thinking_share", "marts.peak_concurrency"}


def test_a_new_price_sheet_rebuilds_from_its_first_changed_day_only_what_reads_prices(generated, tmp_path: Path):
    """History is days 0..3 (the benchgen o3 price cut is on day 2). A sheet effective on day 1
    that changes o3's price: days from day 1 on are replaced (day 0 too, by the task closure:
    tasks span midnight), only in the models that read prices; the result equals a full build."""
    landing = tmp_path / "landing"
    shutil.copytree(generated["landing"], landing)
    wh = tmp_path / "wh.duckdb"
    _run(wh, landing, "one")
    d = SPEC.day
    sheet = landing / "prices" / "llm" / f"late_prices.{d(1)}.csv"
    sheet.write_text(f"{benchgen.PRICE_HEADER}\nopenai,o3,{d(1)},1.00,0.25,,4,,USD\n")
    scope = _run(wh, landing, "two")
    assert not scope.full, scope.reason
    assert scope.price_from == d(1)
    assert scope.tables == frozenset(LLM_PRICE_READERS)
    assert not NOT_PRICE_READERS & scope.tables
    # the tables that do not read prices were kept: the dims, the allocation, the node hours' cost
    with read_only(wh) as con:
        modes = dict(con.execute("SELECT table_name, build_id FROM ops.model_builds").fetchall())
    assert {t for t, b in modes.items() if b == "two"} == LLM_PRICE_READERS
    assert d(1) in scope.days and d(SPEC.days - 1) in scope.days
    _same_as_full(wh, landing, tmp_path)


def test_a_sheet_that_changes_no_price_rebuilds_nothing(generated, tmp_path: Path):
    """The price in force from day 2 (o3 1.5/6) re-landed under day 3, as a nightly snapshot of an
    unchanged price list is; and a currency-rate file (applied at ingest, read by no model)."""
    landing = tmp_path / "landing"
    shutil.copytree(generated["landing"], landing)
    wh = tmp_path / "wh.duckdb"
    _run(wh, landing, "one")
    before = _digest(wh)
    d = SPEC.day
    (landing / "prices" / "llm" / f"bench_prices.{d(3)}.csv").write_text(
        f"{benchgen.PRICE_HEADER}\nopenai,o3,{d(3)},1.5,0.375,,6,,USD\n")
    (landing / "fx").mkdir()
    (landing / "fx" / f"rates.{d(0)}.csv").write_text("currency,usd_per_unit\nEUR,1.08\n")
    scope = _run(wh, landing, "two")
    with read_only(wh) as con:
        loaded = dict(con.execute("SELECT target_table, rows_loaded FROM ops.ingested_files WHERE file = ? OR file LIKE 'fx/%'",
                                  [f"prices/llm/bench_prices.{d(3)}.csv"]).fetchall())
        built = con.execute("SELECT count(*) FROM ops.model_builds WHERE build_id = 'two'").fetchall()[0][0]
        marts_ids = con.execute("SELECT DISTINCT build_id FROM marts.cost_per_task").fetchall()
    assert loaded == {"stg.llm_prices": 1, "stg.fx_rates": 1}  # both were new rows...
    assert not scope.full and scope.tables == frozenset() and scope.days == ()  # ...that change no model
    assert built == 0
    assert marts_ids == [("two",)]  # kept marts still carry the build id of the snapshot
    assert _digest(wh) == before
    assert scope.summary() == "rebuild: nothing (no new rows, no requested days)"


def test_a_new_nodes_file_rebuilds_its_readers_whole_and_nothing_else(generated, tmp_path: Path):
    landing = tmp_path / "landing"
    shutil.copytree(generated["landing"], landing)
    wh = tmp_path / "wh.duckdb"
    _run(wh, landing, "one")
    nodes = landing / "catalog" / "nodes.csv"
    nodes.write_text(nodes.read_text().replace("2.49", "2.19"))
    scope = _run(wh, landing, "two")
    assert not scope.full
    assert {"core.dim_nodes", "core.node_hours_cost", "core.self_hosted_allocation", "core.call_costs"} <= scope.full_tables
    assert not {"core.llm_price_versions", "core.billed_lines", "core.dim_models", "core.metric_deltas"} & scope.tables
    _same_as_full(wh, landing, tmp_path)


def test_changed_sql_rebuilds_the_model_and_what_it_feeds_whole(generated, tmp_path: Path, monkeypatch):
    landing = tmp_path / "landing"
    shutil.copytree(generated["landing"], landing)
    wh = tmp_path / "wh.duckdb"
    _run(wh, landing, "one")

    # a changed model SQL: that model and everything downstream are rebuilt whole
    import warehouse.transform as transform

    models = list(transform.load_tables())
    i = next(k for k, m in enumerate(models) if m.table == "core.self_hosted_allocation")
    models[i] = transform.SqlTable(models[i].schema, models[i].name, models[i].sql + "\n-- changed\n", models[i].deps,
                                   models[i].incremental, models[i].halo)
    import warehouse.sqltable as sqltable

    monkeypatch.setattr(sqltable, "load_tables", lambda engine="duckdb": tuple(models))  # what the plan reads
    b = Build(wh, "three")
    b.start(Config().settings_row())
    with b.connect() as con:
        scope = incremental.plan(con, b.build_id)
    assert not scope.full
    assert {"core.self_hosted_allocation", "core.call_costs", "marts.task_costs"} <= scope.full_tables
    # issue 17: calls before costs -- the money-free tables upstream of the allocation stay incremental
    assert not {"core.calls", "core.tasks"} & scope.full_tables
    assert not {"core.node_hours_cost", "core.dim_nodes", "core.llm_price_versions"} & scope.full_tables
    b.abandon()


def test_render_replaces_the_macros():
    scope = incremental.Scope(full=False, reason="incremental", days=(dt.date(2026, 1, 5), dt.date(2026, 1, 7)), halo_days=1)
    sql = "SELECT * FROM t WHERE core.in_build_days(CAST(ts AS DATE)) AND core.in_build_context(day)"
    out = incremental.render(sql, scope, full=False)
    assert "core.in_build" not in out
    assert "(CAST(ts AS DATE)) IN (DATE '2026-01-05', DATE '2026-01-07')" in out
    # context = the days +- 1: 4, 5, 6, 7, 8 January
    assert "IN (DATE '2026-01-04', DATE '2026-01-05', DATE '2026-01-06', DATE '2026-01-07', DATE '2026-01-08')" in out
    assert incremental.render(sql, scope, full=True) == "SELECT * FROM t WHERE TRUE AND TRUE"
    empty = incremental.Scope(full=False, reason="incremental")
    assert incremental.render(sql, empty, full=False) == "SELECT * FROM t WHERE FALSE AND FALSE"


def test_a_month_of_a_day_column_is_rendered_with_the_columns_own_range():
    """core.in_build_months(CAST(date_trunc('month', day) AS DATE)) also bounds ``day`` itself, so a
    Parquet scan prunes its day folders (core.call_profiles read every file of core.calls for one month);
    the IN list stays, so the rows are those of the months asked for, across a year's end too."""
    scope = incremental.Scope(full=False, reason="incremental",
                              days=(dt.date(2025, 12, 31), dt.date(2026, 1, 2), dt.date(2026, 3, 1)), halo_days=1)
    sql = "SELECT day FROM t WHERE core.in_build_months(CAST(date_trunc('month', day) AS DATE))"
    out = incremental.render(sql, scope, full=False)
    assert "day >= DATE '2025-12-01' AND day < DATE '2026-04-01'" in out, out
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT CAST(DATE '2025-11-20' + INTERVAL (k) DAY AS DATE) AS day FROM range(150) r(k)")
    got = sorted(r[0] for r in con.execute(out).fetchall())
    # December, January and March (February has no asked-for day), every day of each, by hand
    want = ([dt.date(2025, 12, d) for d in range(1, 32)] + [dt.date(2026, 1, d) for d in range(1, 32)]
            + [dt.date(2026, 3, d) for d in range(1, 32)])
    want = [d for d in want if d <= dt.date(2025, 11, 20) + dt.timedelta(days=149)]
    assert got == want


def test_render_reads_the_sql_with_sqlglots_tokenizer():
    """The in_build renderer finds calls as tokens (issue 27, one renderer on sqlglot): a call in a
    comment or a string stays text, a ')' inside a string literal does not end the argument, names are
    case-insensitive, calls nest, and an unclosed call is an error."""
    scope = incremental.Scope(full=False, reason="incremental", days=(dt.date(2026, 2, 3),), halo_days=1)
    sql = ("SELECT 'core.in_build_days(x)' AS s -- core.in_build_days(y)\n"
           "FROM t WHERE core.IN_BUILD_DAYS (coalesce(d, ')')) AND core.in_build_months(date_trunc('month', m))")
    out = incremental.render(sql, scope, full=False)
    assert out == ("SELECT 'core.in_build_days(x)' AS s -- core.in_build_days(y)\n"
                   "FROM t WHERE ((coalesce(d, ')')) BETWEEN DATE '2026-02-03' AND DATE '2026-02-03' "
                   "AND (coalesce(d, ')')) IN (DATE '2026-02-03')) AND ((date_trunc('month', m)) "
                   "BETWEEN DATE '2026-02-01' AND DATE '2026-02-01' AND (date_trunc('month', m)) IN (DATE '2026-02-01'))")
    nested = incremental.render("SELECT core.in_build_months(core.in_build_days(d))", None, full=True)
    assert nested == "SELECT TRUE"
    assert [c[0] for c in incremental.macro_calls(sql)] == ["in_build_days", "in_build_months"]
    with pytest.raises(ValueError, match="unbalanced"):
        incremental.render("SELECT 1 WHERE core.in_build_days((d)", scope, full=False)


def test_a_call_reaching_back_over_midnight_rewrites_the_day_before(generated, tmp_path: Path):
    """Only day 2 is touched, but the new self-hosted call ran from 22:20 on day 1: day 1's last
    hours get busier (usage-basis split), so the halo days are rewritten too."""
    landing = tmp_path / "landing"
    shutil.copytree(generated["landing"], landing)
    wh = tmp_path / "nightly.duckdb"
    _run(wh, landing, "one")
    late = landing / "telemetry" / "requests" / "late-midnight.jsonl"
    at = dt.datetime.combine(SPEC.day(2), dt.time(0, 20))
    late.write_text(_line(at, "midnight-only", "midnight-only-task", team="infra", node="gpu-node-a",
                          latency_ms=2 * 3_600_000) + "\n")
    scope = _run(wh, landing, "two")
    assert not scope.full and scope.days == (SPEC.day(2),) and scope.halo_days == 1
    full = tmp_path / "full.duckdb"
    _run(full, landing, "full")
    got, want = _digest(wh), _digest(full)
    assert {t: v for t, v in got.items() if v != want[t]} == {}


def test_a_model_out_of_memory_is_retried_with_the_larger_limit(tmp_path: Path, monkeypatch, caplog):
    """quantile_disc keeps a group's values in memory: at a 20 MB limit it fails for real; the build
    retries once at THINKTAX_MEMORY_LIMIT_RETRY and puts the configured limit back."""
    import duckdb

    import warehouse.transform as transform
    from warehouse.db import connect

    monkeypatch.setenv("THINKTAX_MEMORY_LIMIT", "20MB")
    monkeypatch.setenv(transform.RETRY_ENV, "2GB")
    con = connect(tmp_path / "w.duckdb")
    # DuckDB gets POOL_SHARE of the build's budget: 15 MB of 20 MB (DuckDB shows it in MiB)
    assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == "14.3 MiB"
    con.execute("CREATE SCHEMA core")
    model = transform.SqlTable("core", "big_quantile", "SELECT quantile_disc(random(), 0.5) AS q FROM range(20000000)",
                               frozenset())
    with pytest.raises(duckdb.OutOfMemoryException):
        con.execute(f"CREATE TABLE core.direct AS {model.sql}")
    assert transform.build(con, model) == 1
    assert "out of memory at memory_limit 15MB (DuckDB's share of the build's 20MB" in caplog.text
    assert "retrying with 2GB" in caplog.text
    assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == "14.3 MiB"  # put back


def test_a_full_rebuild_in_batches_of_days_equals_one_written_whole(generated, tmp_path: Path, monkeypatch):
    """A full rebuild over more calls than ``FULL_BATCH_CALLS`` writes the per-call Parquet tables
    batch by batch (issue 26 item 3). With a limit below one day's calls every day is its own batch,
    so every edge of the landing is cut: the task over days 0-2, the self-hosted call over midnight
    (halo), the idle gap days. Every table must equal the rebuild written whole."""
    from warehouse import transform

    everything = tmp_path / "landing_all"
    shutil.copytree(generated["landing"], everything)
    for f in generated["later"]:
        dest = everything / f.relative_to(generated["later_root"])
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
    # a node paid from four days before the first call: idle node-days before every day of calls
    nodes = everything / "catalog" / "nodes.csv"
    nodes.write_text(nodes.read_text() + f"gpu-node-early,nebius,H100,8,Qwen/Qwen3-32B,fp8,2.95,{SPEC.day(0) - dt.timedelta(days=4)},\n")
    whole = tmp_path / "whole" / "wh.duckdb"
    assert _run(whole, everything, "whole").full
    monkeypatch.setattr(transform, "FULL_BATCH_CALLS", 1_000)
    batched = tmp_path / "batched" / "wh.duckdb"
    assert _run(batched, everything, "batched").full
    with read_only(batched) as con:
        # 4 + 1 days of 1,500 calls, then the gap call's day: one batch a day
        (calls, first, last) = con.execute("SELECT count(*), min(day), max(day) FROM core.calls").fetchall()[0]
        folders = dict(con.execute(
            "SELECT table_name, count(DISTINCT split_part(path, '/', 3)) FROM ops.part_files "
            "WHERE retired_by IS NULL AND day IS NOT NULL GROUP BY ALL").fetchall())
        idle_before = con.execute("SELECT count(DISTINCT day) FROM core.self_hosted_allocation WHERE day < ?", [first]).fetchall()[0][0]
    assert idle_before == 4
    days_with_calls = 6
    # 5 days of generated calls; edge history 2, the late file 3, the gap call 1
    assert calls == 5 * 1_500 + 2 + 3 + 1 and last == SPEC.day(SPEC.days + 4)
    # the first batch writes into the build's folder (day=... directly), each later one in batch_<i>/
    assert folders["core.calls"] == days_with_calls and folders["marts.task_costs"] >= 3
    got, want = _digest(batched), _digest(whole)
    assert got.keys() == want.keys()
    assert {t: v for t, v in got.items() if v != want[t]} == {}


def test_duckdb_gets_its_share_of_the_builds_memory_budget():
    """THINKTAX_MEMORY_LIMIT is the build's budget for the whole process; DuckDB's memory_limit
    bounds only its buffer manager, so it gets POOL_SHARE (0.75) of it, in MB (10^6 bytes)."""
    from warehouse.db import POOL_SHARE, duckdb_memory_limit

    assert POOL_SHARE == 0.75
    assert duckdb_memory_limit("3GB") == "2250MB"  # 3e9 x 0.75
    assert duckdb_memory_limit("8GiB") == "6442MB"  # 8 x 2^30 x 0.75 = 6,442,450,944 bytes
    assert duckdb_memory_limit("512 mb") == "384MB"
    assert duckdb_memory_limit("80%") == "80%"  # not a size: DuckDB's to read (or refuse)


def test_full_batches_cut_days_by_calls_and_fall_back_to_one_write_when_a_task_spans_the_history(monkeypatch):
    """10 days of 3 calls, a limit of 6 calls: two days a batch, 5 batches. Each reads its days, a
    halo day before (and the last one a day after the data). A task id with a call on every day
    closes every batch over the whole history: written whole instead ([])."""
    import duckdb

    from warehouse import transform

    def con_with(task_of_day) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect()
        con.execute("CREATE SCHEMA stg")
        con.execute("""CREATE TABLE stg.requests AS
                       SELECT TIMESTAMP '2026-03-01 12:00:00' + INTERVAL (d) DAY + INTERVAL (k) MINUTE AS ts,
                              ? || CAST(CASE WHEN ? THEN 0 ELSE d END AS VARCHAR) || '-' || k AS task_id,
                              CAST(NULL AS VARCHAR) AS node_id, 1000 AS latency_ms
                       FROM range(10) t(d), range(3) u(k)""", ["t", task_of_day == "same"])
        if task_of_day == "same":  # one more call of the same task on every day
            con.execute("INSERT INTO stg.requests SELECT ts + INTERVAL 1 HOUR, 'everyday', NULL, 1000 FROM stg.requests WHERE task_id LIKE '%-0'")
        return con

    monkeypatch.setattr(transform, "FULL_BATCH_CALLS", 6)
    batches = transform.full_batches(con_with("own"), "b1")
    assert [(b.lo, b.hi) for b in batches] == [
        (None, dt.date(2026, 3, 3)), (dt.date(2026, 3, 3), dt.date(2026, 3, 5)), (dt.date(2026, 3, 5), dt.date(2026, 3, 7)),
        (dt.date(2026, 3, 7), dt.date(2026, 3, 9)), (dt.date(2026, 3, 9), None)]
    # halo 1 day (latency under a day): the first batch reads Feb 28 - Mar 2, the third Mar 4 - 6,
    # the last Mar 8 - 11; no task crosses a day, so the closure adds nothing
    assert batches[0].read_days == tuple(dt.date(2026, 2, 28) + dt.timedelta(days=k) for k in range(3))
    assert batches[2].read_days == tuple(dt.date(2026, 3, 4) + dt.timedelta(days=k) for k in range(3))
    assert batches[-1].read_days == tuple(dt.date(2026, 3, 8) + dt.timedelta(days=k) for k in range(4))
    assert batches[2].key_filter("day") == "(day >= DATE '2026-03-05' AND day < DATE '2026-03-07')"
    assert batches[0].key_filter("day") == "(day IS NULL OR (day < DATE '2026-03-03'))"
    monkeypatch.setattr(transform, "FULL_BATCH_CALLS", 8)
    assert transform.full_batches(con_with("same"), "b2") == []
