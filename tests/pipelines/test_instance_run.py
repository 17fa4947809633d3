"""Partition runs on a real Dagster instance in a temporary DAGSTER_HOME (tests/conftest.py sets it),
the retry policy of a failed blocking check, and the one notification of a failed run.

Landing: tests/nightly_helpers.py, April 2025 at the "high" volume: every day o3 ($8.00),
gpt-4o ($10.00), plain-x ($1.00) and on the 15th mystery-r1 ($0.40): 3 x 30 + 1 = 91 calls.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.definitions import defs
from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.sensors import notify_run_failure
from tests.nightly_helpers import Receiver, alert_landing, as_table, config_file, write
from thinktax.runner import RunOptions, dagster_home, run_pipeline

APR = [dt.date(2025, 4, d).isoformat() for d in range(1, 31)]
DAILY_SPEND = dg.AssetKey(["marts", "daily_spend"])
LATE = ('{"ts":"2025-04-20T18:00:00Z","request_id":"late-1","model":"o3","provider":"openai",'
        '"usage":{"prompt_tokens":0,"completion_tokens":1000000,"completion_tokens_details":{"reasoning_tokens":500000}}}\n')


def _partitions_by_run(instance: dg.DagsterInstance, run_id: str, key: dg.AssetKey) -> set[str]:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=10_000)
    return {r.event_log_entry.dagster_event.partition for r in records.records
            if r.event_log_entry.dagster_event.asset_key == key and r.event_log_entry.dagster_event.partition}


def _day_counts(wh: Path) -> tuple[list, int, int]:
    with duckdb.connect(str(wh), read_only=True) as c:
        per_day = c.sql("SELECT day, count(*), sum(cost_usd) FROM core.call_costs GROUP BY day ORDER BY day").fetchall()
        calls, distinct = c.sql("SELECT count(*), count(DISTINCT request_id) FROM core.calls").fetchall()[0]
    return per_day, calls, distinct


def test_partition_runs_replace_days_and_record_late_ones(tmp_path: Path):
    landing = alert_landing(tmp_path / "landing", [(2025, 4, True)])
    wh = tmp_path / "wh" / "t.duckdb"

    # 1. one partition, as the nightly schedule would launch it
    first = run_pipeline(landing, wh, None, RunOptions(days=(dt.date(2025, 4, 3), dt.date(2025, 4, 3))))
    assert first.success, first.error
    with dg.DagsterInstance.get() as instance:
        assert Path(instance.root_directory) == tmp_path / "dagster_home"
        run = instance.get_run_by_id(first.run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS and run.job_name == "thinktax"
        assert run.tags["dagster/partition"] == "2025-04-03"
        # asked for Apr 3; its new file touched every day of April: all of them are re-materialised
        assert _partitions_by_run(instance, first.run_id, DAILY_SPEND) == set(APR)
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 1
        assert instance.run_retries_retry_on_asset_or_op_failure is False
    per_day, calls, distinct = _day_counts(wh)
    assert (calls, distinct, len(per_day)) == (91, 91, 30)
    # every day: 8 + 10 + 1 = 19.00; the 15th: + 0.40
    assert per_day[0] == (dt.date(2025, 4, 1), 3, D("19")) and per_day[14] == (dt.date(2025, 4, 15), 4, D("19.40"))

    # 2. re-run Apr 1..10 after a late file (Apr 20) and the April file re-landed under another name
    april = (landing / "telemetry/requests/2025-04.jsonl").read_text().splitlines(keepends=True)
    write(landing, "telemetry/requests/april-again.jsonl", "".join(reversed(april)))  # same calls, other bytes
    write(landing, "telemetry/requests/late.jsonl", LATE)
    second = run_pipeline(landing, wh, None, RunOptions(days=(dt.date(2025, 4, 1), dt.date(2025, 4, 10))))
    assert second.success, second.error
    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(second.run_id)
        assert (run.tags["dagster/asset_partition_range_start"], run.tags["dagster/asset_partition_range_end"]) == (
            "2025-04-01", "2025-04-10")
        # the ten days asked for, plus Apr 20 (the late file's day); nothing else
        assert _partitions_by_run(instance, second.run_id, DAILY_SPEND) == set(APR[:10]) | {"2025-04-20"}
    per_day2, calls2, distinct2 = _day_counts(wh)
    # replaced, never duplicated: the re-landed calls add nothing, the late call adds one ($8.00)
    assert (calls2, distinct2) == (92, 92)
    assert per_day2[19] == (dt.date(2025, 4, 20), 4, D("27"))
    assert [r for i, r in enumerate(per_day2) if i != 19] == [r for i, r in enumerate(per_day) if i != 19]
    with duckdb.connect(str(wh), read_only=True) as c:
        assert c.sql("SELECT rows_loaded, rows_duplicate FROM ops.ingested_files WHERE file LIKE '%april-again%'"
                     ).fetchall() == [(0, 91)]
        assert c.sql("SELECT day FROM ops.ingested_days JOIN ops.ingested_files USING (file_id) "
                     "WHERE file LIKE '%late%'").fetchall() == [(dt.date(2025, 4, 20),)]


def test_failed_check_is_not_retried_and_notifies_once(tmp_path: Path, monkeypatch):
    landing = alert_landing(tmp_path / "landing", [(2025, 4, True)])
    wh = tmp_path / "wh" / "t.duckdb"
    import warehouse.transform as transform

    real_build = transform.build

    def broken(con, model, scope=None):  # a negative bucket: the blocking check buckets_non_negative fails
        rows = real_build(con, model, scope)
        if model.table == "core.call_costs":  # the check is attached to core.call_costs
            as_table(con, "core.call_costs")  # a view over Parquet files (warehouse/parts.py): made a table to corrupt it
            con.execute("UPDATE core.call_costs SET thinking_tokens = -1 WHERE request_id = 'o3-2025-04-01'")
        return rows

    monkeypatch.setattr("warehouse.rebuild.build", broken)  # what the models step calls per table
    monkeypatch.setenv("THINKTAX_LANDING", str(landing))
    monkeypatch.setenv("THINKTAX_WAREHOUSE", str(wh))
    dagster_home()  # the temporary DAGSTER_HOME, with thinktax's dagster.yaml (run retries)
    with dg.DagsterInstance.get() as instance:
        # launched as the schedule launches it: with the job's own tags (the CLI adds max_retries 0)
        result = defs.resolve_job_def("thinktax").execute_in_process(
            instance=instance, partition_key="2025-04-30", raise_on_error=False)
        assert not result.success
        assert [e.check_name for e in result.get_asset_check_evaluations() if not e.passed] == ["buckets_non_negative"]
        run = instance.get_run_by_id(result.run_id)
        assert run.tags["dagster/failure_reason"] == "STEP_FAILURE"
        assert run.tags["dagster/max_retries"] == "1"  # a run that dies would be retried once...
        assert run.tags["dagster/will_retry"] == "false"  # ...a failed blocking check is not
        assert not wh.exists()  # nothing was published

        failure = instance.get_records_for_run(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
        assert len(failure) == 1
        event = failure[0].event_log_entry.dagster_event
        with Receiver() as rx:
            toml = config_file(tmp_path / "thinktax.toml", rx.url, threshold=0)
            resources = {"thinktax": ThinktaxResource(config_path=str(toml))}
            # the resource tears down the run's engine, so Dagster builds it as a context manager
            with dg.build_run_status_sensor_context(
                    sensor_name="notify_run_failure", dagster_event=event, dagster_instance=instance,
                    dagster_run=run, resources=resources) as ctx:
                notify_run_failure(ctx.for_run_failure())
            assert rx.posts == 1
            assert "failed (days 2025-04-30, reason STEP_FAILURE)" in rx.bodies[0]["text"]
            assert rx.bodies[0]["run_id"] == run.run_id
            # a run Dagster will retry is not announced (its retry is, if it fails too)
            instance.add_run_tags(run.run_id, {"dagster/will_retry": "true"})
            retried = instance.get_run_by_id(run.run_id)
            with dg.build_run_status_sensor_context(
                    sensor_name="notify_run_failure", dagster_event=event, dagster_instance=instance,
                    dagster_run=retried, resources=resources) as ctx:
                notify_run_failure(ctx.for_run_failure())
            assert rx.posts == 1
