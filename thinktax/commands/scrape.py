"""`thinktax scrape`: pull /metrics from serving and GPU exporters into the landing folder."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NAME = "scrape"
HELP = (
    "Scrape Prometheus /metrics (vLLM, SGLang, DCGM exporter) every --every for --for, writing one "
    "<node>__<UTC time>.prom per scrape and target into <landing>/telemetry/metrics/."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--targets", required=True, metavar="FILE_OR_URLS",
        help="a nodes.csv with columns node_id and metrics_url, or comma-separated URLs "
             "(node id = host_port; a URL without a path gets /metrics)",
    )
    parser.add_argument("--every", default="30s", metavar="DURATION", help="time between scrapes, e.g. 30s, 1m (at least 1s; default 30s)")
    parser.add_argument("--for", dest="for_", default=None, metavar="DURATION",
                        help="stop starting new scrapes after this long, e.g. 10m (default: no limit)")
    parser.add_argument("--max-scrapes", type=int, default=None, metavar="N",
                        help="stop after this many rounds (each round scrapes every target once)")
    parser.add_argument("--timeout", default="5s", metavar="DURATION", help="per-request timeout (default 5s)")
    parser.add_argument("--landing", default=None, metavar="DIR",
                        help="landing folder (default: $THINKTAX_LANDING or ./landing)")


def run(args: argparse.Namespace) -> int:
    from services.scraper import load_targets, parse_duration, run_scrapes  # noqa: PLC0415 (cheap CLI start)

    try:
        targets = load_targets(args.targets)
        every_s = parse_duration(args.every)
        for_s = parse_duration(args.for_) if args.for_ else None
        timeout_s = parse_duration(args.timeout)
    except (ValueError, OSError) as exc:
        print(f"scrape: {exc}", file=sys.stderr)
        return 2
    if every_s < 1:
        print("scrape: --every must be at least 1s (file names carry whole seconds)", file=sys.stderr)
        return 2
    if args.max_scrapes is not None and args.max_scrapes < 1:
        print("scrape: --max-scrapes must be at least 1", file=sys.stderr)
        return 2
    landing = Path(args.landing or os.environ.get("THINKTAX_LANDING") or "landing")
    results = run_scrapes(targets, landing, every_s=every_s, for_s=for_s, max_scrapes=args.max_scrapes,
                          timeout_s=timeout_s)
    written = sum(1 for r in results if r.path is not None)
    failed = len(results) - written
    print(f"scrape: {written} file(s) written to {landing / 'telemetry' / 'metrics'}, {failed} scrape(s) skipped")
    return 0 if written else 1
