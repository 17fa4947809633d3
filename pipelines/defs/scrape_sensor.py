"""The scrape sensor: what `thinktax scrape` does, on Dagster's clock.

Every tick it pulls /metrics once from each node in the landing folder's catalog/nodes.csv that
has a `metrics_url`, and writes one timestamped .prom file per target into
landing/telemetry/metrics/ (a target that is down is logged and skipped). It starts no run
itself: the landing sensor notices the new files. Off by default (it talks to your GPU nodes);
turn it on in the UI. The interval is THINKTAX_SCRAPE_EVERY_S seconds (default 30).
"""

import datetime as dt
import io
import os

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from services.scraper import load_targets, scrape_once

EVERY_S = int(os.environ.get("THINKTAX_SCRAPE_EVERY_S", "30"))


@dg.sensor(
    name="scrape_metrics",
    minimum_interval_seconds=EVERY_S,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Scrapes /metrics of the nodes in catalog/nodes.csv (metrics_url column) into the landing folder.",
)
def scrape_metrics(context: dg.SensorEvaluationContext, thinktax: ThinktaxResource) -> dg.SkipReason:
    nodes = thinktax.landing_dir / "catalog" / "nodes.csv"
    if not nodes.is_file():
        return dg.SkipReason(f"no {nodes}")
    try:
        targets = load_targets(str(nodes))
    except ValueError as exc:
        return dg.SkipReason(f"nothing to scrape: {exc}")
    log = io.StringIO()
    results = scrape_once(targets, thinktax.landing_dir, dt.datetime.now(dt.UTC), log=log)
    for line in log.getvalue().splitlines():
        context.log.warning(line)
    written = [r for r in results if r.path is not None]
    return dg.SkipReason(f"scraped {len(written)} of {len(results)} target(s); the landing sensor starts the run")
