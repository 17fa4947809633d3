"""`thinktax run`: ingest new landing files, rebuild, check, publish."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from services.config import ConfigError, load_config, resolve_paths

NAME = "run"
EXIT_FAST = True  # exits without the interpreter teardown (thinktax/cli.py entry)
HELP = "Ingest every new file under the landing folder, rebuild the marts, run the checks and publish the warehouse."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--landing", help="landing folder (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")
    p.add_argument("--config", help="thinktax.toml (default $THINKTAX_CONFIG or ./thinktax.toml if present)")
    p.add_argument("--days", metavar="FIRST:LAST",
                   help="daily partitions (UTC) to run, e.g. 2026-11-01:2026-11-30 (default: yesterday). "
                        "Re-running days rebuilds them from staging: it replaces them, never duplicates them")
    p.add_argument("--full-rebuild", action="store_true",
                   help="rebuild every table whole instead of only the days new files touch "
                        "(same result; for after a manual change to the staging tables)")
    p.add_argument("--as-of", metavar="DAY", help="end the alert's spend window on this UTC day (default: the latest day with calls)")
    p.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    p.add_argument("--engine", choices=["duckdb", "spark"],
                   help="where the SQL tables are built (default: [engine] kind in thinktax.toml, else duckdb)")
    p.add_argument("--spark-remote", metavar="sc://HOST:PORT",
                   help="--engine spark: a cluster through Spark Connect (default: a local[2] session)")
    p.add_argument("--spark-warehouse", metavar="DIR_OR_URI",
                   help="--engine spark: where the Spark tables live (default: <warehouse folder>/spark)")


def run(args: argparse.Namespace) -> int:
    from thinktax.console import run_with_progress, print_summary  # noqa: PLC0415

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    spark = (getattr(args, "engine", None) or cfg.engine.kind) == "spark"
    landing, warehouse = resolve_paths(args.landing, args.warehouse, folder=spark)
    uri = _landing_uri(args.landing)
    if uri is not None:
        if not spark or cfg.engine.ingest != "spark":
            print(f"thinktax: a landing URI ({uri}) is read by the Spark engine's ingest only "
                  "(--engine spark, [engine] ingest = \"spark\")", file=sys.stderr)
            return 2
        landing = uri  # any path Spark reads (s3a://, abfss://, gs://, file:/); Spark says if it is missing
    elif not landing.is_dir():
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
    if spark:
        try:
            import pyspark  # noqa: F401, PLC0415
        except ImportError as exc:
            print(f"thinktax: --engine spark needs pyspark ({exc}); install the 'spark' extra: "
                  "pip install 'thinktax[spark]'", file=sys.stderr)
            return 2
    # one orchestrator (issue 27): a Spark run is the same Dagster job, its engine chosen by the resource
    options = RunOptions(days=days, as_of=as_of, full_rebuild=getattr(args, "full_rebuild", False),
                         engine="spark" if spark else "duckdb",
                         spark_remote=getattr(args, "spark_remote", None) or None,
                         spark_warehouse=getattr(args, "spark_warehouse", None) or None)
    outcome = run_with_progress(landing, warehouse, args.config, quiet=args.quiet, options=options)
    if not outcome.success:
        return 1
    if not args.quiet:
        if spark:
            print(f"engine: spark; Dagster run {outcome.run_id}")
        print_summary(warehouse)
    return 0


def _landing_uri(landing: str | None) -> str | None:
    """``--landing`` (or $THINKTAX_LANDING) when it is a URI (``scheme:...``, not a Windows drive)."""
    import os  # noqa: PLC0415
    import re  # noqa: PLC0415

    value = landing or os.environ.get("THINKTAX_LANDING") or ""
    return value if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]+:", value) else None
