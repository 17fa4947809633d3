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
    assert dg.validate_run_config(job, job_run_config(dt.date(2025, 4, 30)))["ops"]["ops__alerts"]["config"] == {
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
