"""`thinktax report`: the self-contained HTML report of the published warehouse."""

from __future__ import annotations

import argparse
import sys

import duckdb

from services.config import resolve_paths

NAME = "report"
HELP = "Write the self-contained HTML report (charts, works offline) of the published warehouse."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="HTML file to write (default: report.html next to the warehouse)")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")
    p.add_argument("--png", help="also render it to this PNG with headless Chromium (needs the `chromium` package)")


def run(args: argparse.Namespace) -> int:
    from services.report import screenshot, write_report  # noqa: PLC0415

    _, warehouse = resolve_paths(None, args.warehouse)
    try:
        out = write_report(warehouse, args.out)
    except FileNotFoundError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    except duckdb.Error as exc:
        print(f"thinktax: could not read {warehouse}: {exc}", file=sys.stderr)
        return 1
    print(f"report: {out}")
    if args.png:
        try:
            print(f"png:    {screenshot(out, args.png)}")
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"thinktax: {exc}", file=sys.stderr)
            return 1
    return 0
