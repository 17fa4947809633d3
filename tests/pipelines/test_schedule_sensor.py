"""The nightly schedule and the landing sensor, evaluated with Dagster's own test utilities."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.jobs import RETRY_TAGS, nightly_partition
from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.sensors import landing_sensor, run_day
from tests.nightly_helpers import alert_landing, write


def test_nightly_runs_yesterdays_partition_at_two_utc():
    schedule = defs.resolve_schedule_def("nightly")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 2 * * *", "UTC")
    ctx = dg.build_schedule_context(scheduled_execution_time=dt.datetime(2025, 5, 1, 2, 0, tzinfo=dt.UTC),
                                    repository_def=defs.get_repository_def())
    [req] = schedule.evaluate_tick(ctx).run_requests
    assert req.partition_key == "2025-04-30"
    assert req.run_key == "nightly-2025-04-30"  # a second tick for the same night launches nothing new
    # the tick time is taken in UTC whatever zone it is given in: 2025-05-01 03:30+02:00 is 01:30 UTC
    assert nightly_partition(dt.datetime(2025, 5, 1, 3, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))) == "2025-04-30"


def test_nightly_skips_days_before_the_first_partition():
    schedule = defs.resolve_schedule_def("nightly")
    ctx = dg.build_schedule_context(scheduled_execution_time=dt.datetime(2024, 1, 1, 2, 0, tzinfo=dt.UTC),
                                    repository_def=defs.get_repository_def())
    data = schedule.evaluate_tick(ctx)
    assert data.run_requests == [] and "before the first partition" in data.skip_message


def test_job_is_daily_partitioned_and_never_retries_a_failed_step():
    job = defs.resolve_job_def("thinktax")
    assert job.partitions_def.get_partition_keys_in_range(
        dg.PartitionKeyRange("2025-04-01", "2025-04-30")) == [f"2025-04-{d:02d}" for d in range(1, 31)]
    assert RETRY_TAGS.items() <= job.tags.items()
    assert job.tags["dagster/retry_on_asset_or_op_failure"] == "false"
    graph = defs.resolve_asset_graph()
    daily = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is not None}
    assert {"core/calls", "core/call_costs", "marts/daily_spend", "marts/cost_per_task", "marts/tier_mix"} <= daily
    assert not daily & {"ops/settings", "ops/ingested_files", "ops/published_warehouse", "ops/alerts", "core/dim_models"}
    # the alert runs after the marts and before publish
    alerts = graph.get(dg.AssetKey(["ops", "alerts"]))
    assert dg.AssetKey(["marts", "daily_spend"]) in alerts.parent_keys
    assert dg.AssetKey(["ops", "alerts"]) in graph.get(dg.AssetKey(["ops", "published_warehouse"])).parent_keys


def _age(root: Path, seconds: float = 3600) -> None:
    """Make every file look settled (modified ``seconds`` ago)."""
    past = time.time() - seconds
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (past, past))


def _tick(landing: Path, cursor: str | None, instance: dg.DagsterInstance):
    # the resource tears down a run's engine, so Dagster builds it as a context manager (as the daemon does)
    with dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                 resources={"thinktax": ThinktaxResource(landing=str(landing))}) as ctx:
        return landing_sensor.evaluate_tick(ctx)


def test_landing_sensor_runs_once_per_change(tmp_path: Path):
    landing = alert_landing(tmp_path / "landing", [(2025, 4, True)])
    write(landing, ".partial/ignored.jsonl", "{}\n")  # hidden: never a trigger
    _age(landing)
    with dg.instance_for_test() as instance:
        t0 = time.time()
        first = _tick(landing, None, instance)
        [req] = first.run_requests
        assert req.partition_key in {run_day(t0), run_day(time.time())}  # yesterday (UTC), like `thinktax run`
        assert req.tags["thinktax/landing_files"] == "3"
        cursor = json.loads(first.cursor)
        assert cursor["files"] == 3 and cursor["max_mtime"] > 0

        same = _tick(landing, first.cursor, instance)  # nothing changed: no run, cursor kept
        assert same.run_requests == [] and "no change" in same.skip_message
        assert same.cursor in (None, first.cursor)

        # a late file is being copied: wait for it (no run, cursor unchanged) ...
        late = write(landing, "telemetry/requests/late.jsonl", '{"ts":"2025-04-05T00:00:00Z"}\n')
        busy = _tick(landing, first.cursor, instance)
        assert busy.run_requests == [] and "settle" in busy.skip_message and busy.cursor in (None, first.cursor)
        # ... then it has settled: one run, new cursor
        _age(landing)
        second = _tick(landing, first.cursor, instance)
        [req2] = second.run_requests
        assert req2.run_key != req.run_key and json.loads(second.cursor)["files"] == 4

        # a file rewritten in place (same name, other bytes) is a change too
        late.write_text('{"ts":"2025-04-06T00:00:00Z"}\n')
        _age(landing)
        third = _tick(landing, second.cursor, instance)
        assert len(third.run_requests) == 1 and third.cursor != second.cursor
        assert _tick(landing, third.cursor, instance).run_requests == []


def test_landing_sensor_without_a_landing_folder(tmp_path: Path):
    with dg.instance_for_test() as instance:
        data = _tick(tmp_path / "missing", None, instance)
    assert data.run_requests == [] and "does not exist" in data.skip_message


def test_late_days_are_recorded_unless_a_bulk_import():
    from pipelines.defs.warehouse_assets import LATE_DAYS_MAX, late_partitions

    days = [dt.date(2025, 4, d) for d in (3, 5, 20)]
    # Apr 3 was asked for (recorded by the run itself); Apr 5 and 20 are late; 2023 is before the first partition
    assert late_partitions([dt.date(2023, 12, 31), *days], {"2025-04-03"}) == ["2025-04-05", "2025-04-20"]
    history = [dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in range(LATE_DAYS_MAX + 1)]
    assert late_partitions(history, set()) == []  # a bulk import of history records none
    assert len(late_partitions(history[:LATE_DAYS_MAX], set())) == LATE_DAYS_MAX
