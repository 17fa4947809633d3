"""The job that runs the whole pipeline, and the nightly schedule that launches it."""


import os

import dagster as dg

# Steps share one DuckDB build file: run them one after another, in one process.
thinktax_job = dg.define_asset_job(
    "thinktax",
    selection=dg.AssetSelection.all(),
    executor_def=dg.in_process_executor,
    description="Ingest new landing files, rebuild core and marts, run the checks, publish the warehouse.",
)

nightly = dg.ScheduleDefinition(
    name="nightly",
    target=thinktax_job,
    cron_schedule=os.environ.get("THINKTAX_NIGHTLY_CRON", "0 2 * * *"),
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Runs thinktax every night (02:00 UTC unless THINKTAX_NIGHTLY_CRON says otherwise).",
)
