"""Run the Dagster job in this process, on a real Dagster instance (DAGSTER_HOME)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from warehouse.db import Build, run_lock

STATE_DIR = ".thinktax"

DAGSTER_YAML = """\
# Written by thinktax. A persistent instance for `thinktax run` and `make dev`.
telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 1   # runs share one warehouse build; one at a time
"""


def dagster_home() -> Path:
    """$DAGSTER_HOME, else .thinktax/dagster_home in the working directory (created with a dagster.yaml)."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path(STATE_DIR, "dagster_home")).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@dataclass
class RunOutcome:
    success: bool
    run_id: str
    failed_checks: list[dict] = field(default_factory=list)
    error: str | None = None


def run_pipeline(landing: Path, warehouse: Path, config: str | None) -> RunOutcome:
    """Materialise every asset once (the `thinktax` job). The published warehouse changes only on success."""
    os.environ["THINKTAX_LANDING"] = str(landing)
    os.environ["THINKTAX_WAREHOUSE"] = str(warehouse)
    if config:
        os.environ["THINKTAX_CONFIG"] = str(Path(config).resolve())
    dagster_home()
    logging.getLogger("dagster").setLevel(logging.WARNING)

    import dagster as dg  # noqa: PLC0415 - heavy import, only when running

    from pipelines.definitions import defs  # noqa: PLC0415

    with run_lock(warehouse), dg.DagsterInstance.get() as instance:
        job = defs.resolve_job_def("thinktax")
        result = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
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
