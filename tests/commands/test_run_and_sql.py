"""`thinktax run` and `thinktax sql` as a user calls them, on a temporary landing folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import write_files
from tests.nightly_helpers import as_table
from thinktax.cli import main


def test_run_publishes_and_sql_reads(mini_landing: Path, tmp_path: Path, capsys):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    assert "5 calls in 4 tasks" in out and "warehouse:" in out
    # cost of all calls = 0.20225 + 0.0028 + 0.0567 + 113.28 + 28.32 (tests/sql/test_costs_hand_worked.py)
    assert "$141.86" in out
    assert "rebuild: full (no earlier build of the SQL tables)" in out
    assert main(["sql", "SELECT tier, sum(calls) AS calls FROM marts.tier_mix WHERE team = '*' GROUP BY tier ORDER BY tier",
                 "--warehouse", str(wh), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == [{"tier": "fast", "calls": 2}, {"tier": "full", "calls": 1}, {"tier": "medium", "calls": 2}]
    # a second run with nothing new ingests nothing: 2 + 1 price rows, 1 node, 5 calls = 9 rows in;
    # it rebuilds no table and says so in one line
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh)]) == 0
    assert "rebuild: nothing (no new rows, no requested days)\n" in capsys.readouterr().out
    assert main(["sql", "SELECT sum(rows_in) FROM ops.ingested_files", "--warehouse", str(wh), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "9"
    assert main(["sql", "SELECT files_new FROM ops.runs ORDER BY started_at", "--warehouse", str(wh), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["4", "0"]
    # a third run, for one day that has calls: that day (and the days of its tasks) is replaced
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh), "--days", "2026-07-01:2026-07-01"]) == 0
    # the tables rebuilt: every model downstream of the day-bound staging tables
    from warehouse.days import DAY_SOURCES
    from warehouse.incremental import downstream
    from warehouse.transform import load_tables

    tables = len(downstream(load_tables(), set(DAY_SOURCES)))
    assert f"rebuild: incremental, {tables} table(s), 1 day(s) replaced (2026-07-01)" in capsys.readouterr().out


def test_sql_errors_are_clear(tmp_path: Path, capsys):
    assert main(["sql", "SELECT 1", "--warehouse", str(tmp_path / "none.duckdb")]) == 2
    assert "no published warehouse" in capsys.readouterr().err


def test_failed_check_leaves_published_warehouse_untouched(mini_landing: Path, tmp_path: Path, capsys, monkeypatch):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh), "--quiet"]) == 0
    before = hashlib.sha256(wh.read_bytes()).hexdigest()
    # a node price that makes node cost and allocation disagree cannot happen through the SQL, so
    # break the invariant the check guards by corrupting the allocation model for this run
    import warehouse.transform as transform

    real_build = transform.build

    def broken(con, model, scope=None):
        rows = real_build(con, model, scope)
        if model.table == "core.self_hosted_allocation":
            as_table(con, "core.self_hosted_allocation")  # a view over Parquet files: made a table to corrupt it
            con.execute("UPDATE core.self_hosted_allocation SET allocated_micro_usd = allocated_micro_usd + 1")
        return rows

    monkeypatch.setattr("warehouse.rebuild.build", broken)  # what the models step calls per table
    write_files(mini_landing, {"telemetry/requests/more.jsonl":
        '{"ts":"2026-06-30T12:00:00Z","request_id":"r9","model":"qwen3-32b","node_id":"n1","usage":{"prompt_tokens":10,"completion_tokens":10}}\n'})
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh)]) == 1
    err = capsys.readouterr().err
    assert "allocation_balances" in err and "offending" in err
    assert hashlib.sha256(wh.read_bytes()).hexdigest() == before
    assert not list(wh.parent.glob("*.build-*"))


def test_demo_small(tmp_path: Path, capsys):
    landing, wh = tmp_path / "landing", tmp_path / "wh.duckdb"
    assert main(["demo", "--landing", str(landing), "--warehouse", str(wh), "--days", "3", "--tasks-per-day", "60"]) == 0
    out = capsys.readouterr().out
    assert "tier mix" in out
    assert main(["sql", "SELECT count(*) FROM core.call_costs WHERE cost_usd IS NULL AND node_id IS DISTINCT FROM 'qwen-c'",
                 "--warehouse", str(wh), "--format", "csv"]) == 0
    # every demo call is priced but the three of the node missing from nodes.csv (synthetic/demo_sources.py)
    assert capsys.readouterr().out.splitlines()[-1] == "0"
    assert main(["sql", "SELECT count(*) FROM marts.unpriced_usage WHERE node_id = 'qwen-c' AND calls_or_hours = 3",
                 "--warehouse", str(wh), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1"
