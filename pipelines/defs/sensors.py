"""Sensors: new landing files start a run; a failed run notifies once.

``landing_files`` lists the landing folder (path, size, mtime) and keeps a fingerprint of that
listing as its cursor: a new, rewritten or removed file changes it and requests one run of the
`thinktax` job (run key = the fingerprint, so one landing state never starts two runs). Files
modified in the last ``SETTLE_S`` seconds may still be being copied: the sensor waits for them
(no run, cursor unchanged). Re-landing a file that was ingested before starts a run that finds
nothing new, which is cheap.

``notify_run_failure`` posts one message per failed run to ``alert.webhook_url`` (or logs it
when no webhook is set). A run that Dagster will retry automatically (the run died, not a step)
is not announced: its retry is, if it fails too.
"""

import datetime as dt
import hashlib
import json
import os
import time

import dagster as dg

from pipelines.defs.jobs import thinktax_job
from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.warehouse_assets import ingest_run_config
from services.alert import post_json
from warehouse.ingest import landing_files as list_landing

SETTLE_S = float(os.environ.get("THINKTAX_SENSOR_SETTLE_S", "30"))


def landing_state(landing, now: float, settle_s: float = SETTLE_S) -> tuple[dict, int]:
    """(cursor state of the settled files, number of files still settling)."""
    entries, settling = [], 0
    for path in list_landing(landing):
        st = path.stat()
        if now - st.st_mtime < settle_s:
            settling += 1
            continue
        entries.append((path.relative_to(landing).as_posix(), st.st_size, st.st_mtime_ns))
    digest = hashlib.sha256(json.dumps(sorted(entries)).encode()).hexdigest()[:16]
    max_mtime = max((e[2] for e in entries), default=0) / 1e9
    return {"fingerprint": digest, "files": len(entries), "max_mtime": max_mtime}, settling


def run_day(now: float) -> str:
    """Runs started by the sensor are for yesterday's partition (UTC), like a plain `thinktax run`."""
    return (dt.datetime.fromtimestamp(now, dt.UTC).date() - dt.timedelta(days=1)).isoformat()


@dg.sensor(
    name="landing_files",
    target=thinktax_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts a thinktax run when files under the landing folder are added, changed or removed.",
)
def landing_sensor(context: dg.SensorEvaluationContext, thinktax: ThinktaxResource) -> dg.SensorResult | dg.SkipReason:
    landing = thinktax.landing_dir
    if not landing.is_dir():
        return dg.SkipReason(f"landing folder {landing} does not exist")
    now = time.time()
    state, settling = landing_state(landing, now)
    if settling:
        return dg.SkipReason(f"{settling} file(s) modified in the last {SETTLE_S:g} s; waiting for them to settle")
    previous = json.loads(context.cursor) if context.cursor else {}
    if previous.get("fingerprint") == state["fingerprint"]:
        return dg.SkipReason(f"no change in {landing} ({state['files']} files)")
    if not state["files"]:
        return dg.SensorResult(skip_reason=dg.SkipReason("landing folder is empty"), cursor=json.dumps(state))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(
            run_key=f"landing-{state['fingerprint']}",
            partition_key=run_day(now),
            run_config=ingest_run_config(rebuild_requested_days=False),  # only what the new files touch
            tags={"thinktax/trigger": "landing", "thinktax/landing_files": str(state["files"])},
        )],
        cursor=json.dumps(state),
    )


def failure_text(run: dg.DagsterRun, message: str) -> str:
    part = run.tags.get("dagster/partition") or "{}..{}".format(
        run.tags.get("dagster/asset_partition_range_start", "?"), run.tags.get("dagster/asset_partition_range_end", "?"))
    reason = run.tags.get("dagster/failure_reason", "unknown")
    return (f"thinktax run {run.run_id[:8]} failed (days {part}, reason {reason}); the published warehouse "
            f"was left as it was. {message}")


@dg.run_failure_sensor(
    name="notify_run_failure",
    monitored_jobs=[thinktax_job],
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Posts one message per failed thinktax run to alert.webhook_url (logs it if none is set).",
)
def notify_run_failure(context: dg.RunFailureSensorContext, thinktax: ThinktaxResource) -> None:
    run = context.dagster_run
    if run.tags.get("dagster/will_retry") == "true":
        context.log.info(f"run {run.run_id} failed and will be retried; not announced")
        return
    text = failure_text(run, context.failure_event.message or "")
    webhook = thinktax.config().alert.webhook_url.strip()
    if not webhook:
        context.log.error(text)
        return
    error = post_json(webhook, {"text": text, "run_id": run.run_id, "job": run.job_name,
                                "failure_reason": run.tags.get("dagster/failure_reason")})
    if error:
        context.log.error(f"{text} (webhook failed: {error})")
