"""One seam between the engines (issue 27): the data plane behind the ``Engine`` protocol.

DuckDB is the **control plane** whichever engine builds the tables: the run's build file holds
the ops tables (settings, ingested files, quarantine, the plan in ``ops.build_scope``, what each
model was built from), the staging rows the plan reads, and -- once published -- the one file BI
tools and ``thinktax report`` read. The **engine** is the data plane: where the landing files are
parsed and where the SQL tables are built and checked.

The Dagster job (pipelines/defs/warehouse_assets.py) is the only orchestrator: its steps call the
engine the ``thinktax`` resource chooses (``[engine] kind`` in thinktax.toml, ``thinktax run
--engine``, ``--spark-remote``), in this order:

1. ``ingest(con, landing)``: every new landing file into staging; the new rows end in the DuckDB
   build either way (the plan, the Great Expectations suites and the ingest checks read them there);
2. ``present()``: the model tables the engine holds (the plan rebuilds a model it lacks);
3. ``prepare(con)``: the small tables the engine needs moved to it after the plan (ops, staging);
4. ``build(con, model, scope, build_id)`` per model in dependency order, each model's SQL checks
   right after it with ``check(con, check)``;
5. ``to_control(con)``: what the Python economics and the alert read, into the DuckDB build; the
   economics marts are built there (models/ runs in Python on small rows), then
   ``from_control(con, tables)`` gives them back to the engine;
6. ``finish(con)`` before the DuckDB build is published, then ``publish()``; or ``abandon()``
   when the run is not published (a check failed, a step raised): the engine's tables are left as
   the last published run left them.

One engine per run, owned by the run's ``thinktax`` resource (``ThinktaxResource.engine`` /
``end_engine``; its Dagster teardown abandons an engine the run did not publish): no module-global
registry, nothing closed by hand.

What an engine hands back to the job (row counts, days, a check's offending rows, the ingest
accounting) is plain Python -- ``int``, never a client library's numpy integer -- since it becomes
Dagster metadata, which takes no numpy value (issue 46: Spark Connect's ``count()``). ``Rebuilt``,
``FileResult`` and ``checked`` convert at the boundary (warehouse/plain.py).

``DuckDBEngine`` does each step in the build file itself (most are no-ops); ``SparkEngine``
(warehouse/spark/engine.py, pyspark imported only when it is chosen) on Apache Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb

from warehouse.checks import SqlCheck
from warehouse.incremental import Scope
from warehouse.ingest import BUILD_COMMIT_EVERY, IngestSummary, Ingestor
from warehouse.plain import checked
from warehouse.rebuild import Rebuilt, rebuild
from warehouse.sqltable import SqlTable

KINDS = ("duckdb", "spark")


class Engine(Protocol):
    """The data plane of one run (the module doc says when the job calls each method)."""

    kind: str

    def ingest(self, con: duckdb.DuckDBPyConnection, landing: Path | str, *,
               progress: Callable[[str], None] | None = None, on_new: Callable[[], None] | None = None) -> IngestSummary: ...

    def present(self) -> set[str] | None: ...

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None: ...

    def build(self, con: duckdb.DuckDBPyConnection, model: SqlTable, scope: Scope, build_id: str | None) -> Rebuilt: ...

    def check(self, con: duckdb.DuckDBPyConnection, check: SqlCheck, sample: int = 5) -> tuple[int, list[dict[str, object]]]: ...

    def to_control(self, con: duckdb.DuckDBPyConnection) -> list[str]: ...

    def from_control(self, con: duckdb.DuckDBPyConnection, tables: list[str]) -> None: ...

    def finish(self, con: duckdb.DuckDBPyConnection) -> None: ...

    def publish(self) -> None: ...

    def abandon(self) -> None: ...


class DuckDBEngine:
    """Everything in the run's DuckDB build file: the control plane is the data plane."""

    kind = "duckdb"

    def ingest(self, con: duckdb.DuckDBPyConnection, landing: Path | str, *, progress: Callable[[str], None] | None = None,
               on_new: Callable[[], None] | None = None) -> IngestSummary:
        return Ingestor(con, Path(landing), commit_every=BUILD_COMMIT_EVERY).ingest(progress=progress, on_new=on_new)

    def present(self) -> set[str] | None:
        return None  # the build file's own tables

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        return None

    def build(self, con: duckdb.DuckDBPyConnection, model: SqlTable, scope: Scope, build_id: str | None) -> Rebuilt:
        return rebuild(con, model, scope, build_id)

    def check(self, con: duckdb.DuckDBPyConnection, check: SqlCheck, sample: int = 5) -> tuple[int, list[dict[str, object]]]:
        return checked(check.name, *check.run(con, sample))

    def to_control(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        return []

    def from_control(self, con: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
        return None

    def finish(self, con: duckdb.DuckDBPyConnection) -> None:
        return None

    def publish(self) -> None:
        return None

    def abandon(self) -> None:
        return None


if TYPE_CHECKING:  # the type checker (make lint) proves each adapter satisfies the protocol
    from warehouse.spark.engine import SparkEngine

    def _adapters_satisfy_the_protocol(duck: DuckDBEngine, spark: SparkEngine) -> tuple[Engine, Engine]:
        return duck, spark


def open_engine(kind: str, build_id: str, *, warehouse: Path, spark_remote: str | None = None,
                spark_warehouse: str | None = None, ingest: str = "spark",
                progress: Callable[[str], None] | None = None) -> Engine:
    """A new engine for build ``build_id``. Its owner keeps it for the run and ends it: the Dagster resource
    (pipelines/defs/resources.py ``ThinktaxResource``) holds one per run, its steps share it (the ingest
    step's Spark session serves the models step), and its teardown abandons one the run did not publish."""
    if kind not in KINDS:
        raise ValueError(f"engine kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "duckdb":
        return DuckDBEngine()
    from warehouse.spark.engine import SparkEngine  # noqa: PLC0415 - pyspark only when chosen

    # absolute: a Spark Connect server resolves a relative LOCATION against its own folder, not ours
    folder = Path(spark_warehouse) if spark_warehouse else warehouse.parent / "spark"
    return SparkEngine(build_id, warehouse=warehouse, remote=spark_remote or None, spark_warehouse=folder.resolve(),
                       ingest=ingest, progress=progress)
