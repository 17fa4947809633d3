"""`thinktax sql`: query the published warehouse read-only."""

from __future__ import annotations

import argparse
import csv
import json
import sys

import duckdb

from services.config import resolve_paths
from warehouse.db import read_only

NAME = "sql"
HELP = "Run a SQL query against the published warehouse (read-only)."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help='e.g. "SELECT * FROM marts.tier_mix"')
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./warehouse/thinktax.duckdb)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--max-rows", type=int, default=100, help="rows shown in table format (default 100)")


def run(args: argparse.Namespace) -> int:
    _, warehouse = resolve_paths(None, args.warehouse)
    try:
        with read_only(warehouse) as con:
            rel = con.sql(args.query)
            if rel is None:
                return 0
            cols, rows = rel.columns, rel.fetchall()
    except FileNotFoundError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    except duckdb.Error as exc:
        print(f"thinktax: query failed: {exc}", file=sys.stderr)
        return 1
    if args.format == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(cols)
        w.writerows(rows)
    elif args.format == "json":
        json.dump([dict(zip(cols, r)) for r in rows], sys.stdout, default=str, indent=1)
        print()
    else:
        from thinktax.console import print_rows  # noqa: PLC0415

        print_rows(cols, rows[: args.max_rows])
        if len(rows) > args.max_rows:
            print(f"({len(rows) - args.max_rows} more rows; use --format csv for all)")
    return 0
