"""`thinktax run --engine spark`: the same run with the SQL models built on Apache Spark.

What runs where (docs/operations.md, "Spark engine"):

1. ingest on Spark's executors (warehouse/spark/ingest.py: the same parsers from sources/, the
   same de-duplication, quarantine and per-file accounting as on DuckDB) into the staging and ops
   tables under ``<spark warehouse>/_staging``; the rows it added (staging, quarantine, per-file
   accounting) are appended to the DuckDB build file at ``--warehouse``, where the incremental
   plan is made by the same code (warehouse/incremental.py). With ``[engine] ingest = "duckdb"``
   the ingest runs on this machine into the DuckDB build (warehouse/ingest.py) instead;
2. the ops tables (and, with the DuckDB ingest, the staging tables) are written as Parquet under
   the Spark warehouse and registered in the Spark catalog (databases ``stg``, ``ops``);
3. every core and mart model is built on Spark from its rendered SQL (warehouse/spark/build.py):
   full models re-created, incremental ones by dynamic partition overwrite of the planned days;
4. the SQL checks (sql/checks) are rendered and run on Spark; any offending row fails the run
   before the DuckDB build is published;
5. the DuckDB build (ingest bookkeeping and staging) is published as on DuckDB.

A local session (no ``--spark-remote``) has an in-memory catalog that ends with the process, so
each local run builds every model in full from staging, into a folder of its own
(``<spark warehouse>/builds/<build id>``); the file ``<spark warehouse>/CURRENT`` names the build
that readers (`thinktax sql --engine spark`, :func:`attach`) see, and is replaced (one atomic
rename) only when the run is published. A failed run leaves CURRENT and the build it names as
they were. A session with a catalog that outlives the run (Spark Connect, or one long-lived
session) swaps each table in and can undo the run (warehouse.spark.build.Journal). Replacing only the planned days by partition overwrite needs a
catalog that keeps the tables between runs: a cluster reached through Spark Connect (its
metastore / Unity / Glue catalog), or one long-lived session (as in tests/spark/). A Derby-backed
Hive metastore was tried for local runs and took 100+ s to start on this 2-core machine.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from warehouse import comments, incremental
from warehouse.checks import load_checks
from warehouse.db import Build
from warehouse.ingest import Ingestor
from warehouse.spark.render import to_spark


@dataclass
class SparkRun:
    build_id: str
    scope: incremental.Scope
    tables: dict[str, tuple[int, float]] = field(default_factory=dict)
    failed_checks: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    files_new: int = 0
    local: bool = False  # a local session: every model rebuilt from staging (no catalog survives)
    economics: dict[str, int] = field(default_factory=dict)  # Python marts -> rows
    ingest: str = "spark"  # where the landing files were parsed: 'spark' (executors) or 'duckdb'
    alert: dict[str, object] = field(default_factory=dict)  # the alert's outcome (services.alert.Outcome)


def _alert(con, config, as_of, say, evaluate) -> dict[str, object]:  # noqa: ANN001
    """The break-even and budget alert, as on a DuckDB run: it never fails the data run."""
    try:
        outcome = evaluate(con, config, as_of=as_of)
    except Exception as exc:  # noqa: BLE001 - as pipelines/defs/alerts.py
        say(f"alert: evaluation failed; the warehouse is published anyway: {type(exc).__name__}: {exc}")
        return {"error": f"{type(exc).__name__}: {exc}"}
    meta = outcome.as_metadata()
    say("alert: " + ", ".join(f"{k} {v}" for k, v in meta.items() if not isinstance(v, list | dict)))
    return meta


def local_session(spark_warehouse: Path):  # noqa: ANN201
    """A local[2] session whose tables live under ``spark_warehouse`` (in-memory catalog)."""
    from warehouse.spark.build import session  # noqa: PLC0415

    spark_warehouse.mkdir(parents=True, exist_ok=True)
    return session(warehouse_dir=str(spark_warehouse))


CURRENT = "CURRENT"  # in the Spark warehouse folder: the name of the published local build


def current_build(spark_warehouse: Path) -> Path:
    """The folder of the published local build's model tables: ``builds/<id>`` named by CURRENT;
    the Spark warehouse folder itself for a folder written before builds had folders of their own."""
    pointer = spark_warehouse / CURRENT
    if pointer.is_file():
        name = pointer.read_text().strip()
        if name and (spark_warehouse / "builds" / name).is_dir():
            return spark_warehouse / "builds" / name
    return spark_warehouse


def _publish_local(spark_warehouse: Path, build_id: str) -> None:
    """Point CURRENT at this build (write a temporary file, then one atomic rename); builds older
    than the one it replaced are removed (that one is kept: a reader may still be on it)."""
    builds = spark_warehouse / "builds"
    previous = current_build(spark_warehouse)
    tmp = spark_warehouse / f".{CURRENT}.{build_id}"
    tmp.write_text(build_id + "\n")
    os.replace(tmp, spark_warehouse / CURRENT)
    for old in builds.iterdir() if builds.is_dir() else ():
        if old.name != build_id and old != previous:
            shutil.rmtree(old, ignore_errors=True)
    if previous == spark_warehouse:  # the layout before builds had folders: its model tables go
        for db in ("core", "marts"):
            shutil.rmtree(spark_warehouse / f"{db}.db", ignore_errors=True)


def attach(spark, spark_warehouse: Path) -> list[str]:  # noqa: ANN001
    """Register the Parquet tables of the published local build under ``spark_warehouse`` (the
    staging tables, and the model tables of the build CURRENT names) in this session's
    (in-memory) catalog, for `thinktax sql --engine spark`; returns them. Partitions are found
    from the folder layout (``day=.../``); the view models (``marts.cost_per_task``, the old name of
    ``marts.task_cost_breakdown``) are re-created over them."""
    from warehouse.sqlmodel import load_models  # noqa: PLC0415

    from warehouse.spark.build import Target, render  # noqa: PLC0415

    out = []
    models_dir = current_build(spark_warehouse)
    models = load_models()
    keys = {m.table: m.key_column for m in models}
    for t in sorted((spark_warehouse / "_staging").glob("*.*")):  # first: the models read them
        schema, name = t.name.split(".", 1)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
        if not spark.catalog.tableExists(f"{schema}.{name}"):
            spark.sql(f"CREATE TABLE {schema}.{name} USING parquet LOCATION '{t}'")
            out.append(f"{schema}.{name}")
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


def run(landing: Path | str, warehouse: Path, settings: dict[str, object], *, spark=None, remote: str | None = None,  # noqa: ANN001, C901, PLR0915
        spark_warehouse: Path | None = None, days: list[dt.date] | None = None, full: bool = False,
        config=None, as_of: dt.date | None = None, progress: Callable[[str], None] | None = None,
        economics_models: Sequence = (), evaluate_alert: Callable | None = None, ingest: str = "spark") -> SparkRun:
    """One run (the module doc). ``landing``: a local folder, or (``ingest="spark"``) any URI Spark
    reads. ``ingest``: "spark" (the parsers on Spark's executors, warehouse/spark/ingest.py; the
    default) or "duckdb" (warehouse/ingest.py on this machine, then staging copied to Spark). ``config`` (services.config.Config): the alert's settings; without
    it or without ``evaluate_alert`` (services.alert.evaluate) the alert is not evaluated.
    ``economics_models``: the Python marts to build (pipelines.defs.economics_assets.ECONOMICS).
    Both are passed in by the caller (thinktax/commands/run.py) because this module sits below
    services/ and pipelines/ in the layers (pyproject.toml, tests/test_layers.py). ``progress``:
    called with one line per step."""
    from warehouse.spark import economics  # noqa: PLC0415
    from warehouse.spark.build import build_all, load_staging, session  # noqa: PLC0415

    say = progress or (lambda _line: None)
    t0 = time.perf_counter()
    build_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    b = Build(warehouse, build_id)
    b.start(settings)
    spark_warehouse = spark_warehouse or warehouse.parent / "spark"
    local = spark is None and not remote
    build_dir = spark_warehouse / "builds" / build_id  # a local run's model tables (module doc)
    journal = None
    try:
        if spark is None:
            say(f"spark: starting {'a session on ' + remote if remote else 'a local[2] session'}")
            spark = session(remote) if remote else local_session(build_dir)
        from warehouse.spark.build import Journal  # noqa: PLC0415

        journal = None if local else Journal(spark)
        out = SparkRun(build_id, None, local=local)  # type: ignore[arg-type]
        out.seconds["session"] = time.perf_counter() - t0
        with b.connect() as con:
            t = time.perf_counter()
            if ingest == "spark":
                say(f"ingest: {landing} (on Spark executors, build {build_id})")
                summary = _spark_ingest(spark, con, landing, spark_warehouse, settings, say, bool(remote))
            else:
                say(f"ingest: {landing} (DuckDB, build {build_id})")
                summary = Ingestor(con, Path(landing)).ingest()
            out.files_new = sum(1 for f in summary.files if f.status == "loaded")
            out.ingest = ingest
            # the plan sees the tables where the models live: Spark's catalog (none survive a local session)
            present = set() if local else _spark_tables(spark)
            out.scope = scope = incremental.plan(con, build_id, extra_days=days, full=full, present=present)
            out.seconds["ingest_and_plan"] = time.perf_counter() - t
            say(f"ingest: {out.files_new} new file(s); plan: "
                + (f"full ({scope.reason})" if scope.full else f"incremental, {len(scope.days)} day(s)"))
            t = time.perf_counter()
            if ingest == "spark":  # staging is in Spark already; the small ops tables (settings, runs...) go over
                say("ops: DuckDB -> Parquet -> Spark")
                load_staging(spark, con, str(spark_warehouse) + "/_staging", schemas=("ops",))
            else:
                say("staging: DuckDB -> Parquet -> Spark")
                load_staging(spark, con, str(spark_warehouse) + "/_staging")
            out.seconds["staging_to_spark"] = time.perf_counter() - t
            t = time.perf_counter()
            out.tables = build_all(spark, None if local else scope, journal=journal,
                                   progress=lambda table, rows, secs: say(f"built {table}: {rows:,d} rows in {secs:.1f} s"))
            _record_builds(con, None if local else scope, build_id)
            out.seconds["models"] = time.perf_counter() - t
            t = time.perf_counter()
            for check in load_checks():
                n = spark.sql(to_spark(check.sql, path=f"sql/checks/{check.name}.sql")).count()
                if n:
                    out.failed_checks[check.name] = n
            out.seconds["checks"] = time.perf_counter() - t
            say(f"checks: {len(out.failed_checks)} failed" if out.failed_checks else "checks: passed")
            if not out.failed_checks:
                # economics (models/) in Python on the small rows, in the DuckDB build; then back to Spark
                t = time.perf_counter()
                say("economics: marts and their inputs Spark -> DuckDB build")
                economics.to_duckdb(spark, con, str(spark_warehouse) + "/_to_duckdb", remote=bool(remote))
                out.economics = economics.build_economics(con, economics_models, log_line=say)
                economics.to_spark(spark, con, list(out.economics), str(spark_warehouse) + "/_economics",
                                   remote=bool(remote), journal=journal)
                say("economics: " + ", ".join(f"{k} {n} rows" for k, n in out.economics.items()))
                out.seconds["economics"] = time.perf_counter() - t
                if config is not None and evaluate_alert is not None:
                    out.alert = _alert(con, config, as_of, say, evaluate_alert)
                economics.drop_per_call(con)
                comments.apply(con)
        if out.failed_checks:  # not published: readers keep the last good build, in Spark too
            _undo(journal, build_dir if local else None, say)
            b.abandon()
            return out
        say(f"publish: {warehouse}")
        b.publish(files_new=out.files_new, landing=str(landing))
        if local:
            _publish_local(spark_warehouse, build_id)
        elif journal is not None:
            journal.commit()
        out.seconds["total"] = time.perf_counter() - t0
        return out
    except BaseException:
        _undo(journal, build_dir if local else None, say)
        b.abandon()
        raise


def _undo(journal, build_dir: Path | None, say: Callable[[str], None]) -> None:  # noqa: ANN001
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


def _spark_ingest(spark, con, landing, spark_warehouse: Path, settings: dict[str, object], say, remote: bool):  # noqa: ANN001, ANN202
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


def _row_counts(con, spark) -> tuple[dict[str, int], dict[str, int]]:  # noqa: ANN001
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


def _append_to_duckdb(spark, con, table: str, path: str, where: str | None, cols: list[str], remote: bool) -> None:  # noqa: ANN001, PLR0913
    """Append the rows (``where``, if given) of a Parquet folder Spark wrote to a table of the DuckDB
    build (columns ``cols``, by name)."""
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
        client = df._session.client  # noqa: SLF001
        arrow = client.to_table(df._plan.to_proto(client))[0]  # noqa: SLF001
    else:
        arrow = pa.Table.from_batches(df._collect_as_arrow(), schema=None) if not df.isEmpty() else None  # noqa: SLF001
    if arrow is not None and arrow.num_rows:
        con.register("_spark_rows", arrow)
        try:
            con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _spark_rows")
        finally:
            con.unregister("_spark_rows")


def _spark_tables(spark) -> set[str]:  # noqa: ANN001
    """'schema.table' of every core and mart table in the Spark catalog."""
    out = set()
    for db in ("core", "marts"):
        if spark.catalog.databaseExists(db):
            out |= {f"{db}.{t.name}" for t in spark.catalog.listTables(db)}
    return out


def _record_builds(con, scope, build_id: str) -> None:  # noqa: ANN001
    """ops.model_builds as after a DuckDB build: what each Spark table was built from (the next
    plan compares its SQL and settings)."""
    from warehouse.sqlmodel import load_models  # noqa: PLC0415

    for m in load_models():
        if m.view:
            mode, n = "view", 0
        elif scope is None or scope.is_full(m.table) or m.incremental is None:
            mode, n = "full", 0
        else:
            mode, n = "incremental", len(scope.model_days(m.halo))
        incremental.record(con, m.table, m.sql, mode, n, build_id)
