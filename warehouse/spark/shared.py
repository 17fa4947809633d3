"""A local Spark run on the warehouse's own storage layout (issue 26 item 1).

The per-call tables (``-- @storage: parquet``) are day-partitioned Parquet files beside the
published DuckDB file, listed in its ``ops.part_files`` (warehouse/parts.py). A local Spark run
reads and writes exactly that layout, so it costs the new days as a DuckDB run does:

* **read**: each per-call table is registered in Spark's (in-memory) catalog as a partitioned table
  with one partition per live day, each partition's LOCATION the one folder that holds that day's
  files (``parts.day_folders``). Spark reads the files DuckDB wrote, and the other way round; the
  day column DuckDB keeps inside its files is read from the partition value instead.
* **write**: a per-call model's new rows (every day, or the plan's days) are written by Spark's
  ``partitionBy`` into this build's folder ``<stem>.parts/<table>/<build id>/__<key>=<day>/`` (the
  key is written into the files too, by partitioning on a copy of it, so DuckDB's view reads them as
  its own), and listed by the same bookkeeping as a DuckDB write (``parts.register``: the days
  replaced are retired, the view remade). Each column is cast to the type the model's SQL has in
  DuckDB first, so every file of a table has the same schema whichever engine wrote it.
* **the small tables** (every other SQL table: dimensions, daily marts) live in the DuckDB build,
  as after a DuckDB run. ``prepare`` copies the ones the plan keeps or replaces by day into Spark
  (partitioned by their key when incremental); each one Spark rebuilds goes back into the DuckDB
  build right after it is built, with the column types DuckDB's SQL gives it.

So the DuckDB file a local Spark run publishes holds every table and view a DuckDB run's holds, and
the incremental plan (warehouse/incremental.py) reads it as it reads a DuckDB run's: a DuckDB run
can follow a Spark run on the same warehouse and the other way round.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb

from warehouse import incremental, parts
from warehouse.sqltable import SqlTable

PART_PREFIX = "__"  # Spark partitions on a copy of the key named __<key>, so the key stays in the files
PARTS_SUFFIX = "__parts"  # a per-call table with HUGEINT columns: its partitioned table; the name is a view

_SIMPLE = {
    "VARCHAR": "string", "BIGINT": "bigint", "INTEGER": "int", "SMALLINT": "smallint", "TINYINT": "tinyint",
    "DOUBLE": "double", "FLOAT": "float", "BOOLEAN": "boolean", "DATE": "date", "BLOB": "binary",
    # DuckDB's TIMESTAMP has no time zone: Spark's TIMESTAMP_NTZ (render.SESSION_CONF); both write
    # INT64 TIMESTAMP(MICROS, isAdjustedToUTC = false)
    "TIMESTAMP": "timestamp_ntz", "TIMESTAMP WITH TIME ZONE": "timestamp",
    # Parquet has no 128-bit integer: parts._STORED_AS keeps a HUGEINT as DECIMAL(38,0)
    "HUGEINT": "decimal(38,0)", "UHUGEINT": "decimal(38,0)",
}
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
# the Spark type of a Parquet column back in DuckDB (only where the model's SQL cannot be bound in DuckDB)
_BACK = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER", "smallint": "SMALLINT", "tinyint": "TINYINT",
         "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE", "binary": "BLOB",
         "timestamp_ntz": "TIMESTAMP", "timestamp": "TIMESTAMP WITH TIME ZONE"}


def spark_type(duck: str) -> str:
    """The Spark SQL type of a DuckDB column type (the types the SQL tables use; lists and structs
    element by element). Raises ValueError for one Spark cannot hold."""
    t = duck.strip().upper()
    if t in _SIMPLE:
        return _SIMPLE[t]
    m = _DECIMAL.fullmatch(t)
    if m:
        return f"decimal({m.group(1)},{m.group(2)})"
    if t.endswith("[]"):
        return f"array<{spark_type(duck.strip()[:-2])}>"
    if t.startswith("STRUCT(") and t.endswith(")"):
        fields = []
        for name, typ in _struct_fields(duck.strip()[7:-1]):
            fields.append(f"`{name}`: {spark_type(typ)}")
        return f"struct<{', '.join(fields)}>"
    raise ValueError(f"no Spark type for the DuckDB type {duck!r}")


def _struct_fields(body: str) -> list[tuple[str, str]]:
    """'a VARCHAR, b STRUCT(c BIGINT)' -> [('a', 'VARCHAR'), ('b', 'STRUCT(c BIGINT)')]."""
    out, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            name, typ = cur.strip().split(" ", 1)
            out.append((name.strip('"'), typ.strip()))
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return out


def duck_type(spark_simple: str) -> str:
    """The DuckDB type of a Spark ``simpleString`` type (decimals, the scalar types)."""
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", spark_simple)
    if m:
        return f"DECIMAL({m.group(1)},{m.group(2)})"
    if spark_simple not in _BACK:
        raise ValueError(f"no DuckDB type for the Spark type {spark_simple!r}")
    return _BACK[spark_simple]


def _stored(duck: str) -> str:
    return parts._STORED_AS.get(duck.upper(), duck)  # noqa: SLF001 - the one place the stored types are named


def _q(name: str) -> str:
    """A column name quoted for Spark SQL (DuckDB's quoting: ``_sql_name``)."""
    return "`" + name.replace("`", "``") + "`"


_sql_name = parts._q  # noqa: SLF001 - a column name quoted for DuckDB


def duckdb_columns(con: duckdb.DuckDBPyConnection, model: SqlTable) -> list[tuple[str, str]] | None:
    """(name, type) of ``model``'s SELECT as DuckDB types it, bound against the DuckDB build (every
    table it reads is there on the shared layout: the staging tables, the small tables copied back
    as Spark builds them, the per-call views); None when it does not bind."""
    try:
        sql = incremental.render(model.sql, None, full=True)
        return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall()]
    except duckdb.Error:
        return None


# -- the per-call tables -------------------------------------------------------------------------
def register_parts_table(spark, con: duckdb.DuckDBPyConnection, table: str, root: Path) -> int:
    """(Re)register ``table`` in Spark's catalog over the live files the DuckDB build lists: one
    partition per day, at the folder of that day's files. Returns the partitions registered."""
    from warehouse.spark.build import COLUMNS_PROPERTY, _drop  # noqa: PLC0415

    columns = parts.stored_columns(con, table)
    (key,) = con.execute("SELECT key_column FROM ops.part_tables WHERE table_name = ?", [table]).fetchall()[0]
    if columns is None:
        raise RuntimeError(f"{table} is not stored as Parquet parts in the DuckDB build")
    nulls = con.execute("SELECT coalesce(sum(row_count), 0) FROM ops.part_files WHERE table_name = ? "
                        "AND retired_by IS NULL AND day IS NULL", [table]).fetchall()[0][0]
    if nulls:
        raise RuntimeError(f"{table}: {nulls:,} rows with a NULL {key}, which cannot be a Spark partition")
    types = dict(columns)
    data = ", ".join(f"{_q(n)} {spark_type(_stored(t))}" for n, t in columns if n != key)
    order = ",".join(n for n, _ in columns)
    # a HUGEINT column (a sum of BIGINTs in DuckDB) is DECIMAL(38,0) in the files; Spark computes the
    # same sum as a BIGINT, so the table's name is a view that reads it as one, over the partitioned
    # table under a name of its own (the values are token counts, far inside BIGINT)
    wide = [n for n, t in columns if t.upper() in ("HUGEINT", "UHUGEINT")]
    files_table = f"{table}{PARTS_SUFFIX}" if wide else table
    _drop(spark, table)
    _drop(spark, f"{table}{PARTS_SUFFIX}")
    home = root / "_parts" / table  # the table's own (empty) folder: every partition has its own location
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {table.split('.')[0]}")
    spark.sql(f"CREATE TABLE {files_table} ({data}, {_q(key)} {spark_type(types[key])}) USING parquet "
              f"PARTITIONED BY ({_q(key)}) LOCATION '{home}' TBLPROPERTIES ('{COLUMNS_PROPERTY}' = '{order}')")
    folders = parts.day_folders(con, table)
    items = sorted(folders.items())
    for i in range(0, len(items), 200):  # one statement per 200 days
        spec = " ".join(f"PARTITION ({_q(key)} = '{day.isoformat()}') LOCATION '{folder}'" for day, folder in items[i:i + 200])
        spark.sql(f"ALTER TABLE {files_table} ADD IF NOT EXISTS {spec}")
    if wide:
        cols = ", ".join(f"CAST({_q(n)} AS bigint) AS {_q(n)}" if n in wide else _q(n) for n, _ in columns)
        spark.sql(f"CREATE VIEW {table} AS SELECT {cols} FROM {files_table}")
    return len(folders)


def write_parts_model(spark, con: duckdb.DuckDBPyConnection, model: SqlTable, scope: incremental.Scope,
                      build_id: str, root: Path, *, full: bool) -> int:
    """Build the per-call ``model`` on Spark into the shared layout: every day (``full``) or the
    plan's days, as this build's files; listed in the DuckDB build and registered in Spark again.
    Returns the table's row count."""
    from warehouse.spark.build import Target, render  # noqa: PLC0415
    from warehouse.spark.render import to_spark  # noqa: PLC0415

    table, key = model.table, model.key_column
    sql = render(model, spark, Target(), None if full else scope, full=full)
    days = None
    if not full:
        days = scope.model_days(model.halo)
        where = incremental.render(f"core.in_build_{model.incremental}s({key})", scope, full=False, halo=model.halo)
        sql = f"SELECT * FROM ({sql}) AS _m WHERE {to_spark(where, path=model.path)}"
    columns = duckdb_columns(con, model) or parts.stored_columns(con, table)
    if columns is None:  # a first build whose inputs DuckDB cannot bind: Spark's own types
        columns = [(f.name, duck_type(f.dataType.simpleString())) for f in spark.sql(sql).schema.fields]
    select = [f"CAST({_q(n)} AS {spark_type(_stored(t))}) AS {_q(n)}" for n, t in columns if n != "build_id"]
    select.append(f"{_q(key)} AS {_q(PART_PREFIX + key)}")
    where_ = parts.location(con)
    assert where_ is not None, "the shared layout needs a build with a parts folder (ops.storage)"
    out = where_ / table / build_id
    shutil.rmtree(out, ignore_errors=True)  # a retried build of the model in this build
    (spark.sql(f"SELECT {', '.join(select)} FROM ({sql}) AS _m").write.mode("overwrite")
     .partitionBy(PART_PREFIX + key).option("compression", parts.COMPRESSION).parquet(str(out)))
    files = sorted(p for p in out.rglob("*.parquet") if not p.name.startswith((".", "_")))
    n = parts.register(con, table, key, columns, files, build_id=build_id, days=days, out=out)
    register_parts_table(spark, con, table, root)
    return n


# -- the small tables ----------------------------------------------------------------------------
def small_to_spark(spark, con: duckdb.DuckDBPyConnection, table: str, root: Path, key: str | None = None) -> None:
    """The DuckDB build's ``table`` (not a per-call one) as a Parquet table in Spark, partitioned
    by ``key`` if given (an incremental model: the plan's days can then be replaced there)."""
    from warehouse.spark.build import COLUMNS_PROPERTY, _drop  # noqa: PLC0415

    schema, name = table.split(".")
    columns = [(r[0], r[1]) for r in con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = ? AND table_name = ? ORDER BY column_index", [schema, name]).fetchall()]
    folder = root / "_from_duckdb" / table
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    proj = ", ".join(f"CAST({_sql_name(n)} AS {_stored(t)}) AS {_sql_name(n)}" for n, t in columns)
    partitioned = bool(key)
    if partitioned:
        con.execute(f"COPY (SELECT {proj} FROM {table}) TO '{folder}' (FORMAT parquet, PARTITION_BY ({_sql_name(key)}), "
                    "OVERWRITE_OR_IGNORE true)")
    else:
        con.execute(f"COPY (SELECT {proj} FROM {table}) TO '{folder / 'data.parquet'}' (FORMAT parquet)")
    types = dict(columns)
    data = ", ".join(f"{_q(n)} {spark_type(_stored(t))}" for n, t in columns if not (partitioned and n == key))
    order = ",".join(n for n, _ in columns)
    _drop(spark, table)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    if partitioned:
        spark.sql(f"CREATE TABLE {table} ({data}, {_q(key)} {spark_type(types[key])}) USING parquet "
                  f"PARTITIONED BY ({_q(key)}) LOCATION '{folder}' TBLPROPERTIES ('{COLUMNS_PROPERTY}' = '{order}')")
        spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")
    else:
        spark.sql(f"CREATE TABLE {table} ({data}) USING parquet LOCATION '{folder}'")


def small_to_duckdb(spark, con: duckdb.DuckDBPyConnection, model: SqlTable, root: Path) -> None:
    """Spark's table of ``model`` (just built) into the DuckDB build, replacing it, each column of
    the type DuckDB's SQL gives it (Spark's own where the SQL does not bind in DuckDB)."""
    from warehouse.spark.build import columns_in_model_order  # noqa: PLC0415
    from warehouse.spark.economics import _duck_drop  # noqa: PLC0415

    table = model.table
    described = duckdb_columns(con, model) or []
    fields = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    # the SQL's column order (Spark lists a partition column last)
    order = [n for n, _ in described] if sorted(n for n, _ in described) == sorted(fields) else \
        columns_in_model_order(spark, table)
    types = dict(described)
    folder = root / "_to_duckdb" / table
    shutil.rmtree(folder, ignore_errors=True)
    spark.table(table).select(*[_q(c) for c in order]).write.mode("overwrite").parquet(str(folder))
    files = sorted(str(p) for p in folder.glob("*.parquet"))
    cols = []
    for c in order:
        t = types.get(c)
        if t is None:
            try:
                t = duck_type(fields[c])
            except ValueError:
                t = None
        cols.append(f"CAST({_sql_name(c)} AS {t}) AS {_sql_name(c)}" if t else _sql_name(c))
    _duck_drop(con, table)
    if files:
        con.execute(f"CREATE TABLE {table} AS SELECT {', '.join(cols)} FROM read_parquet(?)", [files])
    else:  # no rows and no file: the columns from the SQL's types
        typed = ", ".join(f"CAST(NULL AS {types.get(c) or duck_type(fields[c])}) AS {_sql_name(c)}" for c in order)
        con.execute(f"CREATE TABLE {table} AS SELECT {typed} LIMIT 0")
    shutil.rmtree(folder, ignore_errors=True)


def attach_published(spark, con: duckdb.DuckDBPyConnection, root: Path) -> list[str]:
    """Register every table of a published warehouse on the shared layout in Spark, for reading
    (`thinktax sql --engine spark`): the per-call tables over their files, every other core and
    mart table (the economics marts too) copied from the DuckDB file, the view models over them.
    Returns the tables."""
    from warehouse.spark.build import Target, render  # noqa: PLC0415
    from warehouse.sqltable import load_tables  # noqa: PLC0415

    out = []
    stored = {r[0] for r in con.execute("SELECT table_name FROM ops.part_tables WHERE kind = 'table'").fetchall()}
    for table in sorted(stored):
        if parts.is_view(con, table):
            register_parts_table(spark, con, table, root)
            out.append(table)
    for schema, name in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name IN ('core', 'marts') ORDER BY 1, 2").fetchall():
        small_to_spark(spark, con, f"{schema}.{name}", root)
        out.append(f"{schema}.{name}")
    for m in load_tables():
        if m.view and all(spark.catalog.tableExists(d) for d in m.deps):
            spark.sql(f"CREATE OR REPLACE VIEW {m.table} AS {render(m, spark, Target(), None, full=True)}")
            out.append(m.table)
    return out


def is_shared(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a published warehouse holds its per-call tables as views over Parquet parts (a
    DuckDB run's, or a local Spark run's on the shared layout)."""
    if not incremental.has_table(con, "ops.part_tables"):
        return False
    tables = [r[0] for r in con.execute("SELECT table_name FROM ops.part_tables WHERE kind = 'table'").fetchall()]
    return any(parts.is_view(con, t) for t in tables)
