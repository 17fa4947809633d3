"""The Dagster code location: everything under pipelines/defs/ (see `make dev`).

Every module of pipelines/defs/ is imported and the Dagster objects it defines at module level
(assets, asset checks, jobs, schedules, sensors) are collected, with the ``thinktax`` resource.
This is what ``dg.load_from_defs_folder`` gave, without the components machinery it runs on top
(a JSON schema of every component type: ~0.15-0.3 s of every `thinktax run`).
"""

import importlib
import pkgutil

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from pipelines import defs as _defs_package
from pipelines.defs.resources import ThinktaxResource

_KINDS = {
    "assets": (dg.AssetsDefinition, dg.SourceAsset),
    "asset_checks": (dg.AssetChecksDefinition,),
    "jobs": (dg.JobDefinition, UnresolvedAssetJobDefinition),
    "schedules": (dg.ScheduleDefinition,),
    "sensors": (dg.SensorDefinition,),
}


def _collect() -> dict[str, list]:
    found: dict[str, list] = {kind: [] for kind in _KINDS}
    seen: set[int] = set()
    for info in sorted(pkgutil.iter_modules(_defs_package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{_defs_package.__name__}.{info.name}")
        for value in vars(module).values():
            if id(value) in seen:
                continue
            for kind, types in _KINDS.items():
                # an AssetChecksDefinition is an AssetsDefinition too: checks first
                if kind == "assets" and isinstance(value, dg.AssetChecksDefinition):
                    continue
                if isinstance(value, types):
                    seen.add(id(value))
                    found[kind].append(value)
                    break
    return found


defs = dg.Definitions(**_collect(), resources={"thinktax": ThinktaxResource()})
