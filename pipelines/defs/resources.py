"""The one resource every asset uses: where the landing folder, warehouse and settings are."""


from pathlib import Path

import dagster as dg

from thinktax.config import Config, load_config, resolve_paths
from warehouse.db import Build


class ThinktaxResource(dg.ConfigurableResource):
    landing: str
    warehouse: str
    config_path: str | None = None

    def config(self) -> Config:
        return load_config(self.config_path)

    def build(self, run_id: str) -> Build:
        """The build file of this run (one per Dagster run)."""
        return Build(Path(self.warehouse), run_id.split("-")[0])


def default_resource() -> ThinktaxResource:
    """From THINKTAX_LANDING / THINKTAX_WAREHOUSE / THINKTAX_CONFIG, else the defaults."""
    import os

    landing, warehouse = resolve_paths(None, None)
    return ThinktaxResource(landing=str(landing), warehouse=str(warehouse), config_path=os.environ.get("THINKTAX_CONFIG"))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"thinktax": default_resource()})
