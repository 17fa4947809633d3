"""``SparkEngine``: the ``Engine`` (warehouse/engine.py) that builds the SQL tables on Apache Spark.

A Spark run is a Dagster run like any other (issue 27: the hand-made second orchestrator
``warehouse/spark/pipeline.run`` is gone): the job's steps call this engine. What runs where
(docs/operations.md, "Spark engine"):

1. ``ingest``: the landing files parsed on Spark's executors (warehouse/spark/ingest.py: the same
   parsers from sources/, the same de-duplication, quarantine and per-file accounting as on
   DuckDB) into the staging and ops tables under ``<spark warehouse>/_staging``; the rows it added
   are appended to the DuckDB build, where the incremental plan is made by the same code
   (warehouse/incremental.py). With ``[engine] ingest = "duckdb"`` the ingest runs on this machine
   into the DuckDB build (warehouse/ingest.py) instead;
2. ``prepare``: the ops tables (and, with the DuckDB ingest, the staging tables) are written as
   Parquet under the Spark warehouse and registered in the Spark catalog (databases ``stg``, ``ops``);
3. ``build``: each core and mart model built on Spark from its rendered SQL (warehouse/spark/build.py):
   full models re-created, incremental ones by dynamic partition overwrite of the planned days;
   ``check``: the SQL checks (sql/checks) rendered and run on Spark;
4. ``to_control`` / ``from_control``: the marts and the small core tables the economics read into
   the DuckDB build, the economics marts back (warehouse/spark/economics.py);
5. ``finish`` / ``publish`` / ``abandon``: through Spark Connect the per-call projection is
   dropped from the DuckDB build before it is published; the Spark tables published with it, or
   put back.

A local session (no ``--spark-remote``) has an in-memory catalog that ends with the process, so
a local run works on the warehouse's own storage layout (warehouse/spark/shared.py): the per-call
tables are the Parquet parts the DuckDB build lists, attached in ``prepare`` and written by day as
new files (listed by the same bookkeeping as a DuckDB write); the small tables live in the DuckDB
build, copied into Spark for the run and back as each is rebuilt. The plan then reads the DuckDB
build, as on a DuckDB run (``present`` is None), and the published DuckDB file holds every table.
Spark's scratch tables of the run live in ``<spark warehouse>/builds/<build id>``; the file
``<spark warehouse>/CURRENT`` names the last published build (one atomic rename at publish). A
session with a catalog that outlives the run (Spark Connect, or one long-lived session) keeps the
model tables in that catalog, swaps each table in and can undo the run
(warehouse.spark.build.Journal); replacing only the planned days there is partition overwrite. A
Derby-backed Hive metastore was tried for local runs and took 100+ s to start on this 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse import incremental, parts
from warehouse.checks import SqlCheck
from warehouse.ingest import IngestSummary, Ingestor
from warehouse.plain import checked
from warehouse.rebuild import Rebuilt
from warehouse.spark.render import to_spark
from warehouse.sqltable import SqlTable

if TYPE_CHECKING:  # for the annotations only: pyspark is imported when a session is started
    from duckdb import DuckDBPyConnection
    from pyspark.sql import SparkSession

    from warehouse.spark.build import Journal


def local_session(spark_warehouse: Path) -> SparkSession:
    """A local[2] session whose tables live under ``spark_warehouse`` (in-memory catalog)."""
    from warehouse.spark.build import session  # noqa: PLC0415

    spark_warehouse.mkdir(parents=True, exist_ok=True)
    spark: SparkSession = session(warehouse_dir=str(spark_warehouse))
    return spark


CURRENT = "CURRENT"  # in the Spark warehouse folder: the name of the published local build


# CURRENT's lines: the build id, then ``warehouse=<absolute path>``, the DuckDB file published with
# that build (issue 40: `thinktax sql --engine spark --spark-warehouse DIR` answers from the file the
# folder was built with, never from another). A folder published before issue 40 has the first line only.
_WAREHOUSE_KEY = "warehouse="


def _current_lines(spark_warehouse: Path) -> list[str]:
    pointer = spark_warehouse / CURRENT
    return pointer.read_text().splitlines() if pointer.is_file() else []


def current_build(spark_warehouse: Path) -> Path:
    """The folder of the published local build's model tables: ``builds/<id>`` named by CURRENT;
    the Spark warehouse folder itself for a folder written before builds had folders of their own."""
    lines = _current_lines(spark_warehouse)
    name = lines[0].strip() if lines else ""
    if name and (spark_warehouse / "builds" / name).is_dir():
        return spark_warehouse / "builds" / name
    return spark_warehouse


def built_with(spark_warehouse: Path) -> Path | None:
    """The DuckDB file the published local build under ``spark_warehouse`` was published with
    (CURRENT's ``warehouse=`` line), or None where CURRENT does not say (no local build published,
    or one published before issue 40)."""
    for line in _current_lines(spark_warehouse)[1:]:
        if line.startswith(_WAREHOUSE_KEY) and line[len(_WAREHOUSE_KEY):].strip():
            return Path(line[len(_WAREHOUSE_KEY):].strip())
    return None


def _publish_local(spark_warehouse: Path, build_id: str, warehouse: Path | None = None) -> None:
    """Point CURRENT at this build (write a temporary file, then one atomic rename), recording the
    DuckDB file ``warehouse`` published with it; builds older than the one it replaced are removed
    (that one is kept: a reader may still be on it)."""
    builds = spark_warehouse / "builds"
    previous = current_build(spark_warehouse)
    tmp = spark_warehouse / f".{CURRENT}.{build_id}"
    tmp.write_text(build_id + "\n" + (f"{_WAREHOUSE_KEY}{Path(warehouse).resolve()}\n" if warehouse is not None else ""))
    os.replace(tmp, spark_warehouse / CURRENT)
    for old in builds.iterdir() if builds.is_dir() else ():
        if old.name != build_id and old != previous:
            shutil.rmtree(old, ignore_errors=True)
    if previous == spark_warehouse:  # the layout before builds had folders: its model tables go
        for db in ("core", "marts"):
            shutil.rmtree(spark_warehouse / f"{db}.db", ignore_errors=True)


def attach(spark: SparkSession, spark_warehouse: Path, published: Path | None = None) -> list[str]:
    """Register the Parquet tables of the published local build under ``spark_warehouse`` (the
    staging tables, and the model tables of the build CURRENT names) in this session's
    (in-memory) catalog, for `thinktax sql --engine spark`; returns them. Partitions are found
    from the folder layout (``day=.../``); the view models (``marts.cost_per_task``, the old name of
    ``marts.task_cost_breakdown``) are re-created over them.

    ``published``: the DuckDB file published beside it. When it holds the per-call tables as views
    over Parquet parts (a run on the shared layout, warehouse/spark/shared.py), the model tables
    are registered from it instead: the per-call ones over their files, the others copied."""
    from warehouse.sqltable import load_tables  # noqa: PLC0415

    from warehouse.spark.build import Target, render  # noqa: PLC0415

    out = []
    if published is not None and published.is_file():
        from warehouse.db import read_only  # noqa: PLC0415
        from warehouse.spark import shared  # noqa: PLC0415

        with read_only(published) as con:
            if shared.is_shared(con):
                out += _attach_staging(spark, spark_warehouse)
                root = spark_warehouse / "_attached" / f"{os.getpid()}"
                _clear_attached(root.parent)
                shutil.rmtree(root, ignore_errors=True)
                return out + shared.attach_published(spark, con, root)
    out += _attach_staging(spark, spark_warehouse)
    models_dir = current_build(spark_warehouse)
    models = load_tables()
    keys = {m.table: m.key_column for m in models}
    empty: dict[str, Path] = {}
    for db_dir in sorted(models_dir.glob("*.db")):
        db = db_dir.name[:-3]
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        for t in sorted(p for p in db_dir.iterdir() if p.is_dir()):
            name = f"{db}.{t.name}"
            if spark.catalog.tableExists(name):
                continue
            if not any(t.rglob("*.parquet")):  # an empty partitioned table has no file to infer a schema from
                empty[name] = t
                continue
            key = keys.get(name)
            spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{t}'")  # schema and partitions inferred
            if key:
                spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
            out.append(name)
    # an empty model table: its schema is its SQL's, rendered over the tables registered so far
    # (dependency order); an empty table that is no model cannot be typed and stays unregistered
    for m in models:
        if m.table in empty and all(spark.catalog.tableExists(d) for d in m.deps):
            fields = spark.sql(render(m, spark, Target(), None, full=True)).schema.fields
            cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
            part = f" PARTITIONED BY ({m.key_column})" if m.key_column else ""
            spark.sql(f"CREATE TABLE {m.table} ({cols}) USING parquet{part} LOCATION '{empty[m.table]}'")
            out.append(m.table)
    # the view models (marts.cost_per_task) are re-created over the tables just registered
    for m in models:
        if m.view and not spark.catalog.tableExists(m.table) and all(spark.catalog.tableExists(d) for d in m.deps):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {m.schema}")
            spark.sql(f"CREATE VIEW {m.table} AS {render(m, spark, Target(), None, full=True)}")
            out.append(m.table)
    return out


def _clear_attached(folder: Path) -> None:
    """Remove the copies of earlier readers (``_attached/<pid>``) whose process has ended."""
    for old in folder.iterdir() if folder.is_dir() else ():
        try:
            os.kill(int(old.name), 0)
        except ValueError:
            continue
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except PermissionError:  # another user's live process
            continue


def _attach_staging(spark: SparkSession, spark_warehouse: Path) -> list[str]:
    out = []
    for t in sorted((spark_warehouse / "_staging").glob("*.*")):  # first: the models read them
        schema, name = t.name.split(".", 1)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
        if not spark.catalog.tableExists(f"{schema}.{name}"):
            spark.sql(f"CREATE TABLE {schema}.{name} USING parquet LOCATION '{t}'")
            out.append(f"{schema}.{name}")
    return out


class SparkEngine:
    """The Spark data plane of one build (the module doc); made by warehouse.engine.open_engine."""

    kind = "spark"

    def __init__(self, build_id: str, *, warehouse: Path, spark_warehouse: Path, remote: str | None = None,
                 ingest: str = "spark", spark: SparkSession | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.build_id = build_id
        self.warehouse = warehouse
        self.spark_warehouse = spark_warehouse
        self.remote = remote
        self.ingest_on = ingest
        self.local = spark is None and not remote  # a local session keeps no catalog between runs
        self.build_dir = spark_warehouse / "builds" / build_id  # a local run's model tables (module doc)
        self.say = progress or (lambda _line: None)
        self.seconds: dict[str, float] = {}
        self._spark = spark
        self.journal: Journal | None = None
        self.attached = False  # the shared layout's tables registered in Spark (_attach_build)

    @property
    def spark(self) -> SparkSession:
        """The session, started on first use (pyspark is imported here)."""
        if self._spark is None:
            from warehouse.spark.build import Journal, session  # noqa: PLC0415

            t = time.perf_counter()
            self.say(f"spark: starting {'a session on ' + self.remote if self.remote else 'a local[2] session'}")
            self._spark = session(self.remote) if self.remote else local_session(self.build_dir)
            self.journal = None if self.local else Journal(self._spark)
            self.seconds["session"] = time.perf_counter() - t
        return self._spark

    def ingest(self, con: DuckDBPyConnection, landing: Path | str, *, progress: Callable[[str], None] | None = None,
               on_new: Callable[[], None] | None = None) -> IngestSummary:
        spark = self.spark
        if self.ingest_on == "spark":
            self.say(f"ingest: {landing} (on Spark executors, build {self.build_id})")
            settings = _settings(con)
            return _spark_ingest(spark, con, landing, self.spark_warehouse, settings, self.say, bool(self.remote))
        self.say(f"ingest: {landing} (DuckDB, build {self.build_id})")
        return Ingestor(con, Path(landing)).ingest(progress=progress, on_new=on_new)

    def present(self) -> set[str] | None:
        # the plan sees the tables where the models live: on the shared layout (a local session) the
        # DuckDB build's, as a DuckDB run (warehouse/spark/shared.py); else Spark's catalog
        return None if self.local else _spark_tables(self.spark)

    def prepare(self, con: DuckDBPyConnection) -> None:
        from warehouse.spark.build import load_staging  # noqa: PLC0415

        staging = str(self.spark_warehouse) + "/_staging"
        if self.ingest_on == "spark":  # staging is in Spark already; the small ops tables (settings, runs...) go over
            self.say("ops: DuckDB -> Parquet -> Spark")
            load_staging(self.spark, con, staging, schemas=("ops",))
        else:
            self.say("staging: DuckDB -> Parquet -> Spark")
            load_staging(self.spark, con, staging)
        for schema in ("core", "marts"):
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
        if self.local:
            self._attach_build(con)

    def _attach_build(self, con: DuckDBPyConnection) -> None:
        """The shared layout (warehouse/spark/shared.py): the tables this build keeps or replaces by
        day, registered in Spark from the DuckDB build -- the per-call tables over their Parquet
        files, the small ones copied."""
        from warehouse.spark import shared  # noqa: PLC0415
        from warehouse.sqltable import load_tables  # noqa: PLC0415

        scope = incremental.current(con, self.build_id)
        t = time.perf_counter()
        registered = copied = 0
        for m in load_tables():
            if m.view or scope.is_full(m.table) or not parts.has_table(con, m.table):
                continue
            if m.storage == "parquet":
                if parts.stored(con, m.table):
                    shared.register_parts_table(self.spark, con, m.table, self.build_dir)
                    registered += 1
            elif not parts.is_view(con, m.table):
                shared.small_to_spark(self.spark, con, m.table, self.build_dir, m.key_column if m.incremental else None)
                copied += 1
        self.attached = True
        self.seconds["attach"] = time.perf_counter() - t
        self.say(f"spark: {registered} per-call table(s) attached over the warehouse's Parquet files, "
                 f"{copied} small table(s) copied from the DuckDB build ({self.seconds['attach']:.1f} s)")

    def build(self, con: DuckDBPyConnection, model: SqlTable, scope: incremental.Scope, build_id: str | None) -> Rebuilt:
        from warehouse.spark.build import build  # noqa: PLC0415

        spark = self.spark
        if self.local:
            return self._build_shared(con, model, scope, build_id)
        if not scope.builds(model.table) and spark.catalog.tableExists(model.table):
            return Rebuilt(model.table, spark.table(model.table).count(), "kept")
        t = time.perf_counter()
        rows = build(spark, model, scope, journal=self.journal)
        self.say(f"built {model.table}: {rows:,d} rows in {time.perf_counter() - t:.1f} s")
        if model.view:
            mode, days = "view", 0
        elif scope.is_full(model.table) or model.incremental is None:
            mode, days = "full", 0
        else:
            mode, days = "incremental", len(scope.model_days(model.halo))
        # ops.model_builds as after a DuckDB build: what the Spark table was built from (the next plan compares)
        incremental.record(con, model.table, model.sql, mode, days, build_id)
        return Rebuilt(model.table, rows, mode, days)

    def _build_shared(self, con: DuckDBPyConnection, model: SqlTable, scope: incremental.Scope, build_id: str | None) -> Rebuilt:
        """One model of a local run on the shared layout (warehouse/spark/shared.py)."""
        from warehouse.spark import shared  # noqa: PLC0415
        from warehouse.spark.build import build  # noqa: PLC0415
        from warehouse.transform import build as duck_build  # noqa: PLC0415

        spark = self.spark
        if not self.attached:
            self._attach_build(con)
        table = model.table
        if not scope.builds(table) and parts.has_table(con, table) and (model.view or spark.catalog.tableExists(table)):
            incremental.restamp(con, table, build_id)  # as a DuckDB run keeps a table: this build's id
            (rows,) = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0]
            return Rebuilt(table, rows, "kept")
        t = time.perf_counter()
        full = scope.is_full(table) or model.incremental is None
        if model.view:
            build(spark, model, scope)
            rows = duck_build(con, model, scope)  # the same view in the DuckDB build
            mode = "view"
        elif model.storage == "parquet":
            full = full or not parts.stored(con, table)
            rows = shared.write_parts_model(spark, con, model, scope, build_id or self.build_id, self.build_dir, full=full)
            mode = "full" if full else "incremental"
        else:
            rows = build(spark, model, None if full else scope)
            shared.small_to_duckdb(spark, con, model, self.build_dir)
            mode = "full" if full else "incremental"
        self.say(f"built {table}: {rows:,d} rows in {time.perf_counter() - t:.1f} s ({mode})")
        days = len(scope.model_days(model.halo)) if mode == "incremental" else 0
        incremental.record(con, table, model.sql, mode, days, build_id)
        return Rebuilt(table, rows, mode, days)

    def check(self, con: DuckDBPyConnection, check: SqlCheck, sample: int = 5) -> tuple[int, list[dict[str, object]]]:
        df = self.spark.sql(to_spark(check.sql, path=f"sql/checks/{check.name}.sql"))
        bad = df.count()  # a numpy.int64 through Spark Connect: checked() makes it an int
        return checked(check.name, bad, [r.asDict() for r in df.limit(sample).collect()] if bad else [])

    def to_control(self, con: DuckDBPyConnection) -> list[str]:
        from warehouse.spark import economics  # noqa: PLC0415

        if self.local:  # the shared layout: every table is in the DuckDB build already
            return []
        self.say("economics: marts and their inputs Spark -> DuckDB build")
        return economics.to_duckdb(self.spark, con, str(self.spark_warehouse) + "/_to_duckdb", remote=bool(self.remote))

    def from_control(self, con: DuckDBPyConnection, tables: list[str]) -> None:
        from warehouse.spark import economics  # noqa: PLC0415

        if tables:
            economics.to_spark(self.spark, con, tables, str(self.spark_warehouse) + "/_economics",
                               remote=bool(self.remote), journal=self.journal)
            self.say("economics: " + ", ".join(tables) + " -> Spark")

    def finish(self, con: DuckDBPyConnection) -> None:
        from warehouse.spark import economics  # noqa: PLC0415

        if not self.local:  # the shared layout keeps the per-call views over their files, as a DuckDB run
            economics.drop_per_call(con)

    def publish(self) -> None:
        self.say(f"publish: {self.warehouse}")
        if self.local:
            _publish_local(self.spark_warehouse, self.build_id, self.warehouse)
        elif self.journal is not None:
            self.journal.commit()

    def abandon(self) -> None:
        """Not published: readers keep the last good build, in Spark too."""
        _undo(self.journal, self.build_dir if self.local else None, self.say)


def _settings(con: DuckDBPyConnection) -> dict[str, object]:
    """This build's one-row ops.settings (thinktax.toml as the SQL reads it; the ingest reads the
    OTel team attribute from it)."""
    cur = con.execute("SELECT * FROM ops.settings")
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row or (), strict=False))


def _undo(journal: Journal | None, build_dir: Path | None, say: Callable[[str], None]) -> None:
    """A run that is not published leaves the Spark tables as they were: a local run's folder is
    removed (CURRENT still names the last published build); a catalog's tables are put back."""
    if build_dir is not None:
        shutil.rmtree(build_dir, ignore_errors=True)
        say("spark: this build's tables removed; readers keep the last published build")
    elif journal is not None and journal.undo:
        try:
            journal.rollback()
            say("spark: tables put back as they were before this run")
        except Exception as exc:  # noqa: BLE001 - the run's own error is the one to report
            say(f"spark: putting the tables back failed: {type(exc).__name__}: {exc}")


def _spark_ingest(spark: SparkSession, con: DuckDBPyConnection, landing: Path | str, spark_warehouse: Path,
                  settings: dict[str, object], say: Callable[[str], None], remote: bool) -> IngestSummary:
    """Step 1 with the parsers on Spark's executors (warehouse/spark/ingest.py), into the Spark
    tables under ``<spark warehouse>/_staging``; then the new rows (staging, quarantine, per-file
    accounting) are appended to the DuckDB build, so the incremental plan runs there unchanged
    and the published file holds the ingest bookkeeping and staging as after a DuckDB ingest.

    The Spark tables must hold what the DuckDB build holds (same files ingested): when they do not
    (a warehouse built by the DuckDB engine, or a Spark warehouse folder that was removed), they are
    first re-made from the DuckDB build (load_staging)."""
    from warehouse.spark.build import load_staging  # noqa: PLC0415
    from warehouse.spark.ingest import SparkIngest  # noqa: PLC0415

    staging = str(spark_warehouse) + "/_staging"
    ing = SparkIngest(spark, str(landing), staging, str(spark_warehouse) + "/_ingest",
                      otel_team_attribute=str(settings.get("otel_team_attribute") or "service.namespace"),
                      progress=say)
    ing.ensure_tables()
    duck, ours = _row_counts(con, spark)
    if ours != duck:
        differ = sorted(t for t in duck if ours.get(t) != duck[t])
        say(f"ingest: the Spark staging tables differ from the DuckDB build ({', '.join(differ)}): "
            "re-made from the DuckDB build")
        load_staging(spark, con, staging)
        ing.ensure_tables()
    try:
        summary = ing.ingest()
        for table, parts in ing.written.items():
            for path, where, cols in parts:
                _append_to_duckdb(spark, con, table, path, where, cols, remote)
    finally:
        ing.close()
    say("ingest: " + ", ".join(f"{k} {v:.1f} s" for k, v in ing.seconds.items()))
    return summary


def _row_counts(con: DuckDBPyConnection, spark: SparkSession) -> tuple[dict[str, int], dict[str, int]]:
    """Rows of every staging table, ops.ingested_files and ops.quarantine (and the largest file_id):
    in the DuckDB build and in Spark. They differ after a run that failed after its ingest (the
    DuckDB build was not published, Spark's tables kept the new files), after a DuckDB-engine run,
    or when the Spark warehouse folder was removed: the DuckDB build, which is what was published,
    is then copied to Spark again."""
    from sources.contract import TABLES  # noqa: PLC0415

    tables = [*TABLES, "ops.ingested_files", "ops.quarantine"]
    sql = " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM {t}" for t in tables)
    sql += " UNION ALL SELECT 'max(file_id)', coalesce(max(file_id), 0) FROM ops.ingested_files"
    duck = {t: n for t, n in con.execute(sql).fetchall()}
    ours = {r["t"]: r["n"] for r in spark.sql(sql).collect()}
    return duck, ours


def _append_to_duckdb(spark: SparkSession, con: DuckDBPyConnection, table: str, path: str, where: str | None, cols: list[str], remote: bool) -> None:
    """Append the rows (``where``, if given) of a Parquet folder Spark wrote to a table of the DuckDB
    build (columns ``cols``, by name)."""
    table = parts.writable(con, table)  # stg.requests stored as Parquet: its pending table (warehouse/parts.py)
    names = ", ".join(f'"{c}"' for c in cols)
    cond = f" WHERE {where}" if where else ""
    local = path[len("file:"):] if path.startswith("file:") else path
    if not remote and os.path.isdir(local):
        files = [os.path.join(local, f) for f in os.listdir(local) if f.endswith(".parquet")]
        if files:
            con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM read_parquet(?){cond}", [files])
        return
    import pyarrow as pa  # noqa: PLC0415

    df = spark.read.parquet(path)  # a folder this machine cannot read: the rows come back as Arrow
    df = (df.where(where) if where else df).select(*[f"`{c}`" for c in cols])
    if remote:  # pyspark.sql.connect (DataFrame.toArrow arrives in pyspark 4.0)
        connect_df: Any = df  # a pyspark.sql.connect DataFrame, whose private API the classic type lacks
        client = connect_df._session.client  # noqa: SLF001
        arrow = client.to_table(connect_df._plan.to_proto(client))[0]  # noqa: SLF001
    else:
        arrow = pa.Table.from_batches(df._collect_as_arrow(), schema=None) if not df.isEmpty() else None  # noqa: SLF001
    if arrow is not None and arrow.num_rows:
        con.register("_spark_rows", arrow)
        try:
            con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _spark_rows")
        finally:
            con.unregister("_spark_rows")


def _spark_tables(spark: SparkSession) -> set[str]:
    """'schema.table' of every core and mart table in the Spark catalog."""
    out = set()
    for db in ("core", "marts"):
        if spark.catalog.databaseExists(db):
            out |= {f"{db}.{t.name}" for t in spark.catalog.listTables(db) if not t.isTemporary}
    return out
