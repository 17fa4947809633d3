"""`thinktax export focus`: marts.focus_costs as monthly FOCUS 1.2 files (Parquet or CSV).

One file per calendar month of ChargePeriodStart: ``focus_costs_YYYY-MM.parquet`` (or ``.csv``).
Every FOCUS column of the mart is written as it is, plus the custom columns ``x_Source`` and
``x_BuildId`` (the mart's build_id: FOCUS custom columns carry the ``x_`` prefix). Each file is
written to a temporary name in the output folder and renamed into place, so a file that exists is
complete. The files pass ``focus-validator`` 2.2.1 (rule set 1.2.0.1) up to the one InvoiceId
rule the validator cannot pass on any non-empty dataset (docs/bi.md).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import duckdb

from services.config import resolve_paths
from warehouse.db import read_only

NAME = "export"
HELP = "Export a standard dataset from the published warehouse: 'focus' writes monthly FOCUS 1.2 files."

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", choices=["focus"], help="'focus': marts.focus_costs as FOCUS 1.2 cost and usage files")
    p.add_argument("--out", required=True, help="folder to write the files into (created if missing)")
    p.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    p.add_argument("--month", help="only this month of ChargePeriodStart (YYYY-MM); default: every month")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")


def export_focus(con: duckdb.DuckDBPyConnection, out: Path, fmt: str = "parquet", month: str | None = None) -> list[tuple[Path, int]]:
    """Write the monthly files; returns (path, rows) for each file written."""
    out.mkdir(parents=True, exist_ok=True)
    where = "" if month is None else "WHERE strftime(ChargePeriodStart, '%Y-%m') = $month"
    params = {} if month is None else {"month": month}
    months = [r[0] for r in con.execute(
        f"SELECT DISTINCT strftime(ChargePeriodStart, '%Y-%m') AS m FROM marts.focus_costs {where} ORDER BY m", params
    ).fetchall()]
    written = []
    for m in months:
        path = out / f"focus_costs_{m}.{fmt}"
        tmp = out / f".{path.name}.tmp-{os.getpid()}"
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true, TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%SZ'"
        # ORDER BY: the same warehouse always gives the same file
        con.execute(
            f"""COPY (SELECT * EXCLUDE (build_id), build_id AS x_BuildId FROM marts.focus_costs
                      WHERE strftime(ChargePeriodStart, '%Y-%m') = $m
                      ORDER BY ChargePeriodStart, x_Source, ProviderName, ResourceId, SkuPriceId, ChargeDescription)
                TO '{tmp.as_posix()}' ({options})""",
            {"m": m},
        )
        os.replace(tmp, path)
        rows = con.execute("SELECT count(*) FROM marts.focus_costs WHERE strftime(ChargePeriodStart, '%Y-%m') = $m", {"m": m}).fetchone()[0]
        written.append((path, rows))
    return written


def run(args: argparse.Namespace) -> int:
    if args.month is not None and not _MONTH.fullmatch(args.month):
        print(f"thinktax: --month must be YYYY-MM, got {args.month!r}", file=sys.stderr)
        return 2
    _, warehouse = resolve_paths(None, args.warehouse)
    try:
        with read_only(warehouse) as con:
            written = export_focus(con, Path(args.out), args.format, args.month)
    except FileNotFoundError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    except duckdb.Error as exc:
        print(f"thinktax: export failed: {exc}", file=sys.stderr)
        return 1
    if not written:
        print(f"thinktax: no FOCUS rows{' in ' + args.month if args.month else ''} in {warehouse}", file=sys.stderr)
        return 1
    for path, rows in written:
        print(f"{path}: {rows:,} rows")
    return 0
