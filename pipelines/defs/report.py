"""The nightly HTML report: written next to the warehouse after every publish.

The report reads the snapshot that was just published, so it runs after ops/published_warehouse.
It never fails the data run: the warehouse is already published when it runs, and a failed step
would make `thinktax run` exit non-zero and say the data run failed when it did not. A rendering
error is logged, recorded on the materialisation (``rendered: false``, ``error``) and fails the
asset's non-blocking check ``ops/report:rendered``, which the Dagster UI shows in red; the previous
report file stays as it was (the new one is written to a temporary file and renamed).
"""


import traceback
from pathlib import Path

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.warehouse_assets import PUBLISHED

REPORT = dg.AssetKey(["ops", "report"])


@dg.asset(
    key=REPORT,
    deps=[PUBLISHED],
    group_name="publish",
    kinds={"html"},
    description="Self-contained HTML report (charts, works offline) of the published warehouse, written as report.html next to it.",
    check_specs=[dg.AssetCheckSpec("rendered", asset=REPORT, blocking=False,
                                   description="The report rendered without error (a failure never fails the data run).")],
)
def report(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    from services.report import default_path, write_report  # noqa: PLC0415 - rendering libraries only in this step

    out: Path | None = None
    try:
        warehouse = thinktax.warehouse_file
        out = default_path(warehouse)
        path = write_report(warehouse, out)
    except Exception as exc:  # noqa: BLE001 - a report bug must not fail the published data run
        detail = traceback.format_exc()
        context.log.error(f"report not written ({type(exc).__name__}: {exc}); {out} left as it was\n{detail}")
        return dg.MaterializeResult(
            metadata={"rendered": False, "path": str(out), "error": f"{type(exc).__name__}: {exc}"},
            check_results=[dg.AssetCheckResult(check_name="rendered", passed=False,
                                                metadata={"error": dg.MetadataValue.text(detail[-4000:])})],
        )
    return dg.MaterializeResult(
        metadata={"rendered": True, "path": dg.MetadataValue.path(str(path)), "bytes": path.stat().st_size},
        check_results=[dg.AssetCheckResult(check_name="rendered", passed=True)],
    )
