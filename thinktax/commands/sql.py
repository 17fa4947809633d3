"""`thinktax sql`: query the published warehouse read-only."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import duckdb

from services.config import resolve_paths
from warehouse.db import read_only

NAME = "sql"
HELP = "Run a SQL query against the published warehouse (read-only)."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help='e.g. "SELECT * FROM marts.tier_mix"')
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--max-rows", type=int, default=100, help="rows shown in table format (default 100)")
    p.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                   help="spark: query the Spark tables of `thinktax run --engine spark` (the query is written "
                        "in DuckDB's dialect and rendered for Spark, as the models are)")
    p.add_argument("--spark-remote", metavar="sc://HOST:PORT", help="--engine spark: a cluster through Spark Connect")
    p.add_argument("--spark-warehouse", metavar="DIR",
                   help="--engine spark: the local Spark warehouse (default: <warehouse folder>/spark)")


def _spark_value(v):
    """A Spark value as DuckDB's Python client gives it: a struct (Row) as a dict, lists element-wise."""
    from pyspark.sql import Row  # noqa: PLC0415

    if isinstance(v, Row):
        return {k: _spark_value(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, list):
        return [_spark_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _spark_value(x) for k, x in v.items()}
    return v


def render_for_spark(spark, text: str) -> str:
    """The query (DuckDB's dialect) in Spark SQL, with ``* EXCLUDE`` / ``BY NAME`` expanded from the
    catalog's columns of the tables it reads; a query that does not parse as DuckDB SQL is passed on
    as Spark SQL."""
    import sqlglot  # noqa: PLC0415
    from sqlglot import exp  # noqa: PLC0415
    from sqlglot.errors import SqlglotError  # noqa: PLC0415

    from warehouse.spark.build import Target, _schema  # noqa: PLC0415
    from warehouse.spark.render import RenderError, to_spark  # noqa: PLC0415

    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except SqlglotError:
        return text
    tables = frozenset(f"{t.db}.{t.name}" for t in tree.find_all(exp.Table) if t.db)
    try:
        schema = _schema(spark, Target(), frozenset(t for t in tables if spark.catalog.tableExists(t)))
        return to_spark(text, path="query", schema=schema)
    except RenderError:
        return text  # already Spark SQL, or Spark says what is wrong with it


class WarehouseMismatch(Exception):
    """--warehouse names another DuckDB file than the one the Spark folder was published with."""


def paired_warehouse(where: Path, warehouse: Path, named: bool) -> Path:
    """The DuckDB file to read beside the Spark folder ``where``: the one its last local run was
    published with (recorded in its CURRENT), unless that is unknown (a folder published before it
    was recorded: ``warehouse``). ``named``: ``warehouse`` came from --warehouse; then it must be that
    same file (WarehouseMismatch otherwise), or the recorded one must be gone (the pair was moved)."""
    from warehouse.spark.engine import built_with  # noqa: PLC0415

    recorded = built_with(where)
    if recorded is None or recorded == warehouse.resolve():
        return warehouse
    if named and recorded.exists():
        raise WarehouseMismatch(
            f"the Spark warehouse {where} was published with {recorded}, not {warehouse}: answering from "
            f"one with the other would mix two warehouses (drop --warehouse, or name {recorded})")
    if named:
        print(f"thinktax: the Spark warehouse {where} was published with {recorded}, which is gone; "
              f"reading {warehouse} beside it as named by --warehouse", file=sys.stderr)
        return warehouse
    if not recorded.exists():
        raise FileNotFoundError(
            f"the Spark warehouse {where} was published with {recorded}, which is gone; name the DuckDB file "
            f"published with it by --warehouse (a moved pair)")
    return recorded


def _spark_query(args: argparse.Namespace, warehouse) -> tuple[list[str], list[tuple]]:
    from warehouse.spark.build import session  # noqa: PLC0415
    from warehouse.spark.engine import attach, local_session  # noqa: PLC0415

    if args.spark_remote:
        spark = session(args.spark_remote)
    else:
        where = Path(args.spark_warehouse) if args.spark_warehouse else warehouse.parent / "spark"
        if not where.is_dir():
            raise FileNotFoundError(f"no Spark warehouse at {where} (run `thinktax run --engine spark` first)")
        warehouse = paired_warehouse(where, warehouse, named=bool(args.warehouse))
        spark = local_session(where)
        attach(spark, where, warehouse)
    df = spark.sql(render_for_spark(spark, args.query))
    # a DECIMAL(38,0) column is DuckDB's HUGEINT (a sum of BIGINTs; warehouse/spark/render.py, and the
    # Parquet copies of the shared layout, warehouse/spark/shared.py): the integer it is, as DuckDB gives it
    from pyspark.sql.types import DecimalType  # noqa: PLC0415

    wide = {i for i, f in enumerate(df.schema.fields)
            if isinstance(f.dataType, DecimalType) and (f.dataType.precision, f.dataType.scale) == (38, 0)}
    return df.columns, [tuple(int(v) if i in wide and v is not None else _spark_value(v) for i, v in enumerate(r))
                        for r in df.collect()]


def run(args: argparse.Namespace) -> int:
    _, warehouse = resolve_paths(None, args.warehouse, folder=getattr(args, "engine", "duckdb") == "spark")
    if getattr(args, "engine", "duckdb") == "spark":
        try:
            import pyspark  # noqa: F401, PLC0415
        except ImportError as exc:
            print(f"thinktax: --engine spark needs pyspark ({exc}); pip install 'thinktax[spark]'", file=sys.stderr)
            return 2
        try:
            cols, rows = _spark_query(args, warehouse)
        except (FileNotFoundError, WarehouseMismatch) as exc:
            print(f"thinktax: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001 - pyspark's AnalysisException and friends
            print(f"thinktax: query failed on Spark: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        return _print(args, cols, rows)
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
        spark_folder = _spark_beside(args, warehouse) if isinstance(exc, duckdb.CatalogException) else None
        if spark_folder is None:
            print(f"thinktax: query failed: {exc}", file=sys.stderr)
            return 1
        # a Spark Connect run (or a local one from before the shared layout) publishes the marts to the
        # DuckDB file but keeps the per-call core tables (core.call_costs, core.calls, ...) in Spark
        # only: answer from there, and say so
        print(f"thinktax: {str(exc).splitlines()[0]} in the DuckDB file; answered from the Spark tables of the "
              f"last Spark run ({spark_folder}; --engine spark asks them directly)", file=sys.stderr)
        args.spark_warehouse = str(spark_folder)
        try:
            cols, rows = _spark_query(args, warehouse)
        except Exception as exc2:  # noqa: BLE001 - pyspark's AnalysisException and friends
            print(f"thinktax: query failed: {exc}; on Spark too: {str(exc2).splitlines()[0]}", file=sys.stderr)
            return 1
    return _print(args, cols, rows)


def _spark_beside(args: argparse.Namespace, warehouse):
    """The Spark warehouse folder a local Spark run published next to ``warehouse`` (it holds
    CURRENT, and was published with it), if any and if pyspark is installed; else None."""
    from warehouse.spark.engine import built_with  # noqa: PLC0415

    folder = Path(args.spark_warehouse) if getattr(args, "spark_warehouse", None) else warehouse.parent / "spark"
    if getattr(args, "spark_remote", None) or not (folder / "CURRENT").is_file():
        return None
    recorded = built_with(folder)
    if recorded is not None and recorded != warehouse.resolve():
        return None  # that folder was published with another DuckDB file: never answer from it
    try:
        import pyspark  # noqa: F401, PLC0415
    except ImportError:
        return None
    return folder


def _print(args: argparse.Namespace, cols: list[str], rows: list[tuple]) -> int:
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
