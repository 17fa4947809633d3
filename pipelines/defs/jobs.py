"""The job that runs the whole pipeline, and the nightly schedule that launches it.

Every run of `thinktax` covers one or more daily partitions (UTC): the nightly schedule asks for
yesterday, `thinktax run --days A:B` and a Dagster backfill for a range (one run, see
BackfillPolicy.single_run in warehouse_assets.py). The run also records every day touched by the
files it ingested, so late files re-materialise their days.

Retries: a run that failed because a step failed (a blocking data-quality check, a SQL error) is
never retried automatically: running the same data again gives the same failure. A run that died
for another reason (run worker killed, out of memory, instance restart) is retried once.
dagster.yaml (written by thinktax/runner.py) says the same for every job of the instance.
"""


import datetime as dt
import os

import dagster as dg

from pipelines.defs.warehouse_assets import DAILY, ingest_run_config

NIGHTLY_CRON = os.environ.get("THINKTAX_NIGHTLY_CRON", "0 2 * * *")  # 02:00 UTC

RETRY_TAGS = {
    "dagster/max_retries": "1",
    "dagster/retry_on_asset_or_op_failure": "false",
}

# Steps share one DuckDB build file: run them one after another, in one process.
thinktax_job = dg.define_asset_job(
    "thinktax",
    selection=dg.AssetSelection.all(),
    executor_def=dg.in_process_executor,
    tags=RETRY_TAGS,
    description="Ingest new landing files, rebuild core and marts, run the checks, evaluate the alert, publish the warehouse.",
)


def nightly_partition(scheduled: dt.datetime) -> str:
    """The partition a tick at ``scheduled`` runs: the UTC day before it."""
    return (scheduled.astimezone(dt.UTC).date() - dt.timedelta(days=1)).isoformat()


@dg.schedule(
    name="nightly",
    cron_schedule=NIGHTLY_CRON,
    target=thinktax_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every night (02:00 UTC unless THINKTAX_NIGHTLY_CRON says otherwise): yesterday's partition, "
                "plus every day the newly landed files touch.",
)
def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    day = nightly_partition(context.scheduled_execution_time)
    if not DAILY.has_partition_key(day):
        return dg.SkipReason(f"{day} is before the first partition ({DAILY.start.date()})")
    # yesterday is the default day, not a request: a night with no new files rebuilds nothing
    return dg.RunRequest(run_key=f"nightly-{day}", partition_key=day,
                         run_config=ingest_run_config(rebuild_requested_days=False))
