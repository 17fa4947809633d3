"""`thinktax run --engine spark`: the same run with the SQL models built on Apache Spark.

What runs where (docs/operations.md, "Spark engine"):

1. ingest, de-duplication, quarantine and the per-file accounting run as on DuckDB (the same
   parsers from sources/, into the DuckDB build file at ``--warehouse``: ops.* and stg.*); the
   incremental plan is made there by the same code (warehouse/incremental.py);
2. the staging and ops tables are written as Parquet under the Spark warehouse and registered in
   the Spark catalog (databases ``stg``, ``ops``);
3. every core and mart model is built on Spark from its rendered SQL (warehouse/spark/build.py):
   full models re-created, incremental ones by dynamic partition overwrite of the planned days;
4. the SQL checks (sql/checks) are rendered and run on Spark; any offending row fails the run
   before the DuckDB build is published;
5. the DuckDB build (ingest bookkeeping and staging) is published as on DuckDB.

A local session (no ``--spark-remote``) has an in-memory catalog that ends with the process, so
each local run builds every model in full from staging (its Parquet tables are re-created under
the Spark warehouse directory). Replacing only the planned days by partition overwrite needs a
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
from dataclasses import dataclass, field
from pathlib import Path

from warehouse import incremental
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


def local_session(spark_warehouse: Path):  # noqa: ANN201
    """A local[2] session whose tables live under ``spark_warehouse`` (in-memory catalog)."""
    from warehouse.spark.build import session  # noqa: PLC0415

    spark_warehouse.mkdir(parents=True, exist_ok=True)
    return session(warehouse_dir=str(spark_warehouse))


def attach(spark, spark_warehouse: Path) -> list[str]:  # noqa: ANN001
    """Register the Parquet tables a local run left under ``spark_warehouse`` in this session's
    (in-memory) catalog, for `thinktax sql --engine spark`; returns them. Partitions are found
    from the folder layout (``day=.../``). Then the view models (``marts.cost_per_task``, the old
    name of ``marts.task_cost_breakdown``) are created anew over them."""
    from warehouse.sqlmodel import load_models  # noqa: PLC0415

    out = []
    keys = {m.table: m.key_column for m in load_models()}
    for db_dir in sorted(spark_warehouse.glob("*.db")):
        db = db_dir.name[:-3]
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        for t in sorted(p for p in db_dir.iterdir() if p.is_dir()):
            name = f"{db}.{t.name}"
            if spark.catalog.tableExists(name):
                continue
            key = keys.get(name)
            spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{t}'")  # schema and partitions inferred
            if key:
                spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
            out.append(name)
    for t in sorted((spark_warehouse / "_staging").glob("*.*")):
        schema, name = t.name.split(".", 1)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
        if not spark.catalog.tableExists(f"{schema}.{name}"):
            spark.sql(f"CREATE TABLE {schema}.{name} USING parquet LOCATION '{t}'")
            out.append(f"{schema}.{name}")
    from warehouse.spark.build import build as build_model  # noqa: PLC0415

    for m in load_models():  # dependency order: a view's tables are registered above
        if m.view and not spark.catalog.tableExists(m.table):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {m.schema}")
            build_model(spark, m)
            out.append(m.table)
    return out


def run(landing: Path, warehouse: Path, settings: dict[str, object], *, spark=None, remote: str | None = None,  # noqa: ANN001
        spark_warehouse: Path | None = None, days: list[dt.date] | None = None, full: bool = False) -> SparkRun:
    from warehouse.spark.build import build_all, load_staging, session  # noqa: PLC0415

    t0 = time.perf_counter()
    build_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    b = Build(warehouse, build_id)
    b.start(settings)
    spark_warehouse = spark_warehouse or warehouse.parent / "spark"
    try:
        with b.connect() as con:
            summary = Ingestor(con, landing).ingest()
            scope = incremental.plan(con, build_id, extra_days=days, full=full)
            out = SparkRun(build_id, scope, files_new=sum(1 for f in summary.files if f.status == "loaded"))
            out.seconds["ingest_and_plan"] = time.perf_counter() - t0
            local = spark is None and not remote
            if spark is None:
                spark = session(remote) if remote else local_session(spark_warehouse)
            if local:  # no catalog survives the last process: start the model tables afresh
                for db in ("core", "marts"):
                    shutil.rmtree(spark_warehouse / f"{db}.db", ignore_errors=True)
            t = time.perf_counter()
            folder = os.path.join(str(spark_warehouse), "_staging") if not remote else str(spark_warehouse) + "/_staging"
            load_staging(spark, con, folder)
            out.seconds["staging_to_spark"] = time.perf_counter() - t
            t = time.perf_counter()
            out.tables = build_all(spark, None if local else scope)
            out.seconds["models"] = time.perf_counter() - t
            t = time.perf_counter()
            for check in load_checks():
                n = spark.sql(to_spark(check.sql, path=f"sql/checks/{check.name}.sql")).count()
                if n:
                    out.failed_checks[check.name] = n
            out.seconds["checks"] = time.perf_counter() - t
        if out.failed_checks:  # not published: readers keep the last good build
            b.abandon()
            return out
        b.publish(files_new=out.files_new, landing=str(landing))
        out.seconds["total"] = time.perf_counter() - t0
        return out
    except BaseException:
        b.abandon()
        raise
