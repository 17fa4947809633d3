"""`thinktax run --days / --as-of`: parsed, checked against the job's partitions, passed to the job."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import pytest

from pipelines.definitions import defs
from thinktax.cli import main
from thinktax.runner import default_days, job_run_config, parse_days, partition_args


def test_days_parse_and_map_to_partitions():
    assert parse_days("2026-11-01:2026-11-30") == (dt.date(2026, 11, 1), dt.date(2026, 11, 30))
    assert parse_days("2026-11-03") == (dt.date(2026, 11, 3), dt.date(2026, 11, 3))
    assert partition_args((dt.date(2025, 4, 3), dt.date(2025, 4, 3))) == {"partition_key": "2025-04-03"}
    assert partition_args((dt.date(2025, 4, 1), dt.date(2025, 4, 30))) == {"tags": {
        "dagster/asset_partition_range_start": "2025-04-01", "dagster/asset_partition_range_end": "2025-04-30"}}
    assert default_days(dt.date(2026, 12, 1)) == (dt.date(2026, 11, 30), dt.date(2026, 11, 30))
    with pytest.raises(ValueError, match="before"):
        parse_days("2026-11-30:2026-11-01")
    with pytest.raises(ValueError, match="not a daily partition"):
        partition_args((dt.date(2020, 1, 1), dt.date(2020, 1, 2)))


def test_as_of_is_valid_run_config_for_the_alert_step():
    job = defs.resolve_job_def("thinktax")
    assert dg.validate_run_config(job, job_run_config(dt.date(2025, 4, 30)))["ops"]["warehouse_models"]["config"] == {
        "as_of": "2025-04-30"}
    dg.validate_run_config(job, job_run_config(None))


@pytest.mark.parametrize(("flags", "message"), [
    (["--days", "2026-13-01:2026-13-02"], "expected FIRST:LAST"),
    (["--days", "2020-01-01:2020-01-31"], "not a daily partition"),
    (["--as-of", "yesterday"], "--as-of: expected a day"),
])
def test_bad_flags_exit_2_before_running(tmp_path: Path, capsys, flags, message):
    (tmp_path / "landing").mkdir()
    args = ["run", "--landing", str(tmp_path / "landing"), "--warehouse", str(tmp_path / "wh.duckdb"), *flags]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "wh.duckdb").exists()


def _scope(wh: Path) -> tuple:
    from warehouse.db import read_only

    with read_only(wh) as con:
        return con.execute("SELECT full_rebuild, reason, days FROM ops.build_scope").fetchall()[0]


def test_runs_rebuild_the_days_new_files_touch_or_everything_when_asked(mini_landing: Path, tmp_path: Path):
    wh = tmp_path / "wh.duckdb"
    base = ["run", "--landing", str(mini_landing), "--warehouse", str(wh), "--quiet", "--days", "2026-07-01:2026-07-01"]
    assert main(base) == 0
    assert _scope(wh)[:2] == (True, "no earlier build of the SQL tables")
    # a late call of task t1 (2026-06-30): that day and the requested one are rebuilt, nothing else
    (mini_landing / "telemetry" / "requests" / "late.jsonl").write_text(
        '{"ts":"2026-06-30T12:00:00Z","request_id":"r6","model":"o3","provider":"openai","task_id":"t1",'
        '"usage":{"prompt_tokens":100,"completion_tokens":10}}\n')
    assert main(base) == 0
    assert _scope(wh) == (False, "incremental", [dt.date(2026, 6, 30), dt.date(2026, 7, 1)])
    assert main([*base, "--full-rebuild"]) == 0
    assert _scope(wh)[:2] == (True, "a full rebuild was asked for")
    assert main(base) == 0  # and the next plain run is incremental again (nothing new: no day but the requested one)
    assert _scope(wh) == (False, "incremental", [dt.date(2026, 7, 1)])
    from warehouse.db import read_only

    with read_only(wh) as con:
        # r6 inherits t1's team; the task now has three calls (r1, r4, r6)
        assert con.execute("SELECT team, calls FROM marts.task_costs WHERE task_id = 't1'").fetchall() == [("search", 3)]


def test_a_warehouse_named_by_its_folder(tmp_path, monkeypatch):
    """--warehouse DIR: an existing folder means DIR/thinktax.duckdb for every engine; for the Spark
    engine (whose --warehouse names where its tables live) so does a new path without a suffix."""
    from services.config import resolve_paths

    monkeypatch.delenv("THINKTAX_WAREHOUSE", raising=False)
    tmp_path = tmp_path.resolve()
    (tmp_path / "existing").mkdir()
    assert resolve_paths(None, str(tmp_path / "existing"))[1] == tmp_path / "existing" / "thinktax.duckdb"
    assert resolve_paths(None, str(tmp_path / "new"), folder=True)[1] == tmp_path / "new" / "thinktax.duckdb"
    # without folder= a new suffix-less path stays a file name, as before; a file path is unchanged
    assert resolve_paths(None, str(tmp_path / "new"))[1] == tmp_path / "new"
    assert resolve_paths(None, str(tmp_path / "w.duckdb"), folder=True)[1] == tmp_path / "w.duckdb"
