"""The one resource every asset uses: where the landing folder, warehouse and settings are."""

import os
import re
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from pipelines import progress
from services.config import Config, load_config, resolve_paths
from warehouse.db import Build
from warehouse.engine import Engine, open_engine


class ThinktaxResource(dg.ConfigurableResource):
    """Paths left empty are resolved when a run starts, from THINKTAX_LANDING / THINKTAX_WAREHOUSE /
    THINKTAX_CONFIG or the defaults (./landing, ./var/thinktax.duckdb, ./thinktax.toml)."""

    landing: str | None = None
    warehouse: str | None = None
    config_path: str | None = None
    # the engine that builds the tables (warehouse/engine.py); empty: [engine] in thinktax.toml
    engine_kind: str | None = None  # 'duckdb' or 'spark' (`thinktax run --engine`)
    spark_remote: str | None = None  # 'sc://host:port' (`--spark-remote`); empty: local[2]
    spark_warehouse: str | None = None  # where the Spark tables live (`--spark-warehouse`)

    @property
    def landing_dir(self) -> Path:
        return resolve_paths(self.landing, self.warehouse)[0]

    @property
    def landing_source(self) -> Path | str:
        """The landing folder, or the URI the Spark engine's ingest reads (s3a://, gs://, file:/...)."""
        value = self.landing or os.environ.get("THINKTAX_LANDING") or ""
        return value if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]+:", value) else self.landing_dir

    @property
    def warehouse_file(self) -> Path:
        return resolve_paths(self.landing, self.warehouse)[1]

    def config(self) -> Config:
        return load_config(self.config_path or os.environ.get("THINKTAX_CONFIG"))

    def build(self, run_id: str) -> Build:
        """The build file of this run (one per Dagster run)."""
        return Build(self.warehouse_file, run_id.split("-")[0])

    # The engine of the run being executed, owned here (issue 43): Dagster makes this resource once per run
    # for the in-process executor the job uses (pipelines/defs/jobs.py), so every step gets the same engine,
    # and its teardown ends the run's engine whatever happened (an engine not published is abandoned).
    _engine: Engine | None = PrivateAttr(default=None)
    _engine_build: str | None = PrivateAttr(default=None)

    def engine(self, build: Build, cfg: Config | None = None) -> Engine:
        """The engine of this run's build (made on first use; the same object in every step of the run)."""
        if self._engine is not None and self._engine_build == build.build_id:
            return self._engine
        self.end_engine(published=False)  # another build's (not expected within one run): not published
        cfg = cfg or self.config()
        self._engine = open_engine(self.engine_kind or cfg.engine.kind, build.build_id, warehouse=self.warehouse_file,
                                   spark_remote=self.spark_remote or cfg.engine.spark_remote or None,
                                   spark_warehouse=self.spark_warehouse or cfg.engine.spark_warehouse or None,
                                   ingest=cfg.engine.ingest, progress=lambda line: progress.report("spark", line))
        self._engine_build = build.build_id
        return self._engine

    def end_engine(self, *, published: bool) -> None:
        """The run's engine is done: after ``publish()`` (``published``), or not published, when it is
        abandoned (the engine's tables left as the last published run left them). Then it is let go."""
        engine, self._engine, self._engine_build = self._engine, None, None
        if engine is not None and not published:
            engine.abandon()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.end_engine(published=False)  # a run that ended before publishing (a failed or skipped step)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"thinktax": ThinktaxResource()})
