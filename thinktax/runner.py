"""Run the Dagster job in this process, on a real Dagster instance (DAGSTER_HOME).

Run options travel one way: into the job's run config (the ``thinktax`` resource's paths, the
ingest step's plan options, the alert's window), never through environment variables, tags or
process state. (``make dev`` is different: the Dagster daemon and UI run in other processes, so
``export_paths`` gives them the paths as environment variables, read by the resource's defaults.)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from services.config import DEFAULT_DAGSTER_HOME, move_old_defaults
from warehouse.db import Build, run_lock

STATE_DIR = ".thinktax"  # tool venvs (focus-validator, Spark Connect); runtime data is under var/
YAML_MARKER = "# Written by thinktax"

DAGSTER_YAML = f"""\
{YAML_MARKER} (thinktax/runner.py), and rewritten when thinktax changes it.
# Delete the line above to keep your own edits. A persistent instance for `thinktax run` and `make dev`.
telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 1   # runs share one warehouse build; one at a time
run_retries:
  enabled: true
  max_retries: 1           # a run that died (worker killed, OOM, restart) is retried once...
  retry_on_asset_or_op_failure: false   # ...but never one that failed a step: a blocking check fails again
# Dagster's SQLite storage in this folder, with an event log that keeps its connections open
# (pipelines/dagster_storage.py): a run writes ~270 events, and a new connection per event was
# most of a no-op run's time.
storage:
  custom:
    module: pipelines.dagster_storage
    class: ThinktaxSqliteStorage
    config:
      base_dir: {{base_dir}}
"""


def dagster_yaml(home: Path) -> str:
    """The dagster.yaml thinktax writes into ``home`` (its storage's base_dir is ``home``)."""
    return DAGSTER_YAML.replace("{base_dir}", json.dumps(str(home)))


def dagster_home() -> Path:
    """$DAGSTER_HOME, else var/dagster_home in the working directory (with thinktax's dagster.yaml;
    a .thinktax/dagster_home of before issue 27 is moved there once)."""
    if not os.environ.get("DAGSTER_HOME"):
        move_old_defaults()
    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    text = dagster_yaml(home)
    if not cfg.exists() or (cfg.read_text().startswith(YAML_MARKER) and cfg.read_text() != text):
        cfg.write_text(text)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def export_paths(landing: Path, warehouse: Path, config: str | None) -> None:
    """Tell Dagster processes started from here (`make dev`: daemon, UI, code server) where to work:
    pipelines/defs/resources.py reads these when a run's config does not say."""
    os.environ["THINKTAX_LANDING"] = str(landing)
    os.environ["THINKTAX_WAREHOUSE"] = str(warehouse)
    if config:
        os.environ["THINKTAX_CONFIG"] = str(Path(config).resolve())


@dataclass(frozen=True)
class RunOptions:
    """What `thinktax run` may ask beyond the defaults."""

    days: tuple[dt.date, dt.date] | None = None  # partitions to run (inclusive); None: yesterday (UTC)
    as_of: dt.date | None = None  # the alert window's last day; None: the latest day with calls
    full_rebuild: bool = False  # rebuild every table whole, not only the days new files touch
    # the engine (warehouse/engine.py); None: [engine] in thinktax.toml. A Spark run is this same
    # Dagster job: the same assets, materialisations, checks and run record
    engine: str | None = None  # 'duckdb' or 'spark'
    spark_remote: str | None = None  # 'sc://host:port'
    spark_warehouse: str | None = None  # where the Spark tables live


def parse_days(text: str) -> tuple[dt.date, dt.date]:
    """'2026-11-01:2026-11-30' (or one day '2026-11-03') -> (first, last), inclusive."""
    first, _, last = text.partition(":")
    try:
        a = dt.date.fromisoformat(first.strip())
        b = dt.date.fromisoformat((last or first).strip())
    except ValueError:
        raise ValueError(f"--days: expected FIRST:LAST as YYYY-MM-DD:YYYY-MM-DD, got {text!r}") from None
    if b < a:
        raise ValueError(f"--days: {b} is before {a}")
    return a, b


def default_days(today: dt.date | None = None) -> tuple[dt.date, dt.date]:
    """A run without --days is the nightly run: yesterday's partition (UTC)."""
    day = (today or dt.datetime.now(dt.UTC).date()) - dt.timedelta(days=1)
    return day, day


def partition_args(days: tuple[dt.date, dt.date]) -> dict:
    """execute_in_process arguments for a day or a range of daily partitions (checked against the job's)."""
    from pipelines.defs.warehouse_assets import DAILY  # noqa: PLC0415

    first, last = days
    for d in days:
        if not DAILY.has_partition_key(d.isoformat()):
            raise ValueError(
                f"{d} is not a daily partition (partitions run from {DAILY.start.date()} to today, UTC; "
                "set THINKTAX_PARTITIONS_START for older data)")
    if first == last:
        return {"partition_key": first.isoformat()}
    return {"tags": {"dagster/asset_partition_range_start": first.isoformat(),
                     "dagster/asset_partition_range_end": last.isoformat()}}


def job_run_config(as_of: dt.date | None, *, landing: Path | str | None = None, warehouse: Path | None = None,
                   config: str | None = None, full_rebuild: bool = False, rebuild_requested_days: bool = True,
                   engine: str | None = None, spark_remote: str | None = None, spark_warehouse: str | None = None) -> dict:
    """Run config of the `thinktax` job: quiet console logs; where to work (the resource); the
    plan's options (the ingest step); the alert's window end if given."""
    run_config: dict = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    paths = {k: str(v) for k, v in (("landing", landing), ("warehouse", warehouse),
                                     ("config_path", Path(config).resolve() if config else None),
                                     ("engine_kind", engine), ("spark_remote", spark_remote),
                                     ("spark_warehouse", spark_warehouse)) if v}
    if paths:
        run_config["resources"] = {"thinktax": {"config": paths}}
    ops: dict = {"ingest_landing": {"config": {"full_rebuild": full_rebuild,
                                               "rebuild_requested_days": rebuild_requested_days}}}
    if as_of:
        ops["warehouse_models"] = {"config": {"as_of": as_of.isoformat()}}  # the step that evaluates the alert
    run_config["ops"] = ops
    return run_config


@dataclass
class RunOutcome:
    success: bool
    run_id: str
    failed_checks: list[dict] = field(default_factory=list)
    error: str | None = None


def run_pipeline(landing: Path | str, warehouse: Path, config: str | None, options: RunOptions | None = None) -> RunOutcome:
    """Materialise every asset once (the `thinktax` job). The published warehouse changes only on success.

    ``options.days`` are the daily partitions the run is for (default: yesterday, UTC): days asked
    for are rebuilt from staging (replaced, never duplicated) even when no new file touches them;
    the default day is not a request, so a run with nothing new rebuilds nothing.
    ``options.as_of`` ends the alert's window on that day.
    """
    opts = options or RunOptions()
    days = opts.days or default_days()
    dagster_home()
    logging.getLogger("dagster").setLevel(logging.WARNING)

    import dagster as dg  # noqa: PLC0415 - heavy import, only when running

    from pipelines.definitions import defs  # noqa: PLC0415

    part = partition_args(days)
    # The CLI reports a failure itself: the daemon (if one runs on this instance) must not retry it.
    tags = {"dagster/max_retries": "0", **part.pop("tags", {})}
    run_config = job_run_config(opts.as_of, landing=landing, warehouse=warehouse, config=config,
                                full_rebuild=opts.full_rebuild, rebuild_requested_days=opts.days is not None,
                                engine=opts.engine, spark_remote=opts.spark_remote, spark_warehouse=opts.spark_warehouse)
    with run_lock(warehouse), dg.DagsterInstance.get() as instance:
        job = defs.resolve_job_def("thinktax")
        result = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config=run_config,
            tags=tags,
            **part,
        )
        outcome = RunOutcome(success=result.success, run_id=result.run_id)
        if not result.success:
            for ev in result.get_asset_check_evaluations():
                if not ev.passed:
                    meta = {k: getattr(v, "value", v) for k, v in ev.metadata.items()}
                    outcome.failed_checks.append({
                        "check": f"{ev.asset_key.to_user_string()}:{ev.check_name}", **meta})
            for ev in result.all_events:
                if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
                    outcome.error = ev.step_failure_data.error.to_string()
                    break
            Build(warehouse, result.run_id.split("-")[0]).abandon()
        return outcome
