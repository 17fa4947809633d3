"""`thinktax demo`: write the demo landing folder, run the pipeline on it, print the headline figures."""

from __future__ import annotations

import argparse
import sys
import time

from services.config import resolve_paths

NAME = "demo"
EXIT_FAST = True  # exits without the interpreter teardown (thinktax/cli.py entry)
HELP = "Write the deterministic demo landing folder (~250k calls over 55 days), run the pipeline on it and print a summary."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--landing", help="where to write the demo (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")
    p.add_argument("--config", help="thinktax.toml to run with")
    p.add_argument("--days", type=int, default=55, help="days of traffic (default 55)")
    p.add_argument("--tasks-per-day", type=int, default=1700, help="tasks per day (default 1700, ~4.6 calls each)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-run", action="store_true", help="only write the landing folder")
    p.add_argument("--force", action="store_true", help="write into a landing folder that holds non-demo files")


def run(args: argparse.Namespace) -> int:
    from synthetic.demo import DemoSpec, is_demo_folder, write_landing  # noqa: PLC0415

    landing, warehouse = resolve_paths(args.landing, args.warehouse)
    if not args.force and not is_demo_folder(landing):
        print(f"thinktax: {landing} holds files that are not the demo's; use --landing DIR or --force", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    counts = write_landing(landing, DemoSpec(days=args.days, tasks_per_day=args.tasks_per_day, seed=args.seed))
    print(f"demo landing written to {landing}: {counts['calls']:,} calls, {counts['tasks']:,} tasks, "
          f"{counts['days']} days, {counts['request_files']} request files ({time.monotonic() - t0:.1f} s)")
    if args.no_run:
        return 0
    from thinktax.commands import run as run_cmd  # noqa: PLC0415

    return run_cmd.run(argparse.Namespace(landing=str(landing), warehouse=str(warehouse), config=args.config, quiet=False))
