"""`thinktax run`: ingest new landing files, rebuild, check, publish."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from services.config import ConfigError, load_config, resolve_paths

NAME = "run"
HELP = "Ingest every new file under the landing folder, rebuild the marts, run the checks and publish the warehouse."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--landing", help="landing folder (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./warehouse/thinktax.duckdb)")
    p.add_argument("--config", help="thinktax.toml (default $THINKTAX_CONFIG or ./thinktax.toml if present)")
    p.add_argument("--days", metavar="FIRST:LAST",
                   help="daily partitions (UTC) to run, e.g. 2026-11-01:2026-11-30 (default: yesterday). "
                        "Re-running days rebuilds them from staging: it replaces them, never duplicates them")
    p.add_argument("--full-rebuild", action="store_true",
                   help="rebuild every table whole instead of only the days new files touch "
                        "(same result; for after a manual change to the staging tables)")
    p.add_argument("--as-of", metavar="DAY", help="end the alert's spend window on this UTC day (default: the latest day with calls)")
    p.add_argument("--quiet", action="store_true", help="no progress display and no summary")


def run(args: argparse.Namespace) -> int:
    from thinktax.console import run_with_progress, print_summary  # noqa: PLC0415

    landing, warehouse = resolve_paths(args.landing, args.warehouse)
    try:
        load_config(args.config)
    except ConfigError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    if not landing.is_dir():
        print(f"thinktax: landing folder {landing} does not exist", file=sys.stderr)
        return 2
    from thinktax.runner import RunOptions, parse_days, partition_args  # noqa: PLC0415

    try:
        days = parse_days(args.days) if getattr(args, "days", None) else None
        if days:
            partition_args(days)  # raises if a day is not a partition
    except ValueError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    try:
        as_of = dt.date.fromisoformat(args.as_of) if getattr(args, "as_of", None) else None
    except ValueError:
        print(f"thinktax: --as-of: expected a day as YYYY-MM-DD, got {args.as_of!r}", file=sys.stderr)
        return 2
    options = RunOptions(days=days, as_of=as_of, full_rebuild=getattr(args, "full_rebuild", False))
    outcome = run_with_progress(landing, warehouse, args.config, quiet=args.quiet, options=options)
    if not outcome.success:
        return 1
    if not args.quiet:
        print_summary(warehouse)
    return 0
