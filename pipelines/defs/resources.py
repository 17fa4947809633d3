"""The one resource every asset uses: where the landing folder, warehouse and settings are."""

import os
from pathlib import Path

import dagster as dg

from services.config import Config, load_config, resolve_paths
from warehouse.db import Build


class ThinktaxResource(dg.ConfigurableResource):
    """Paths left empty are resolved when a run starts, from THINKTAX_LANDING / THINKTAX_WAREHOUSE /
    THINKTAX_CONFIG or the defaults (./landing, ./var/thinktax.duckdb, ./thinktax.toml)."""

    landing: str | None = None
    warehouse: str | None = None
    config_path: str | None = None

    @property
    def landing_dir(self) -> Path:
        return resolve_paths(self.landing, self.warehouse)[0]

    @property
    def warehouse_file(self) -> Path:
        return resolve_paths(self.landing, self.warehouse)[1]

    def config(self) -> Config:
        return load_config(self.config_path or os.environ.get("THINKTAX_CONFIG"))

    def build(self, run_id: str) -> Build:
        """The build file of this run (one per Dagster run)."""
        return Build(self.warehouse_file, run_id.split("-")[0])


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"thinktax": ThinktaxResource()})
