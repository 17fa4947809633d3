"""The Dagster code location: everything under pipelines/defs/ (see `make dev`).

Every module of pipelines/defs/ is imported and its assets, asset checks, jobs, schedules and
sensors collected (``dg.load_definitions_from_modules``), with the ``thinktax`` resource. This is
what ``dg.load_from_defs_folder`` gave, without the components machinery it runs on top (a JSON
schema of every component type, ~0.15-0.3 s of every `thinktax run`).
"""

import importlib
import pkgutil

import dagster as dg

from pipelines import defs as _defs_package
from pipelines.defs.resources import ThinktaxResource

_MODULES = [importlib.import_module(f"{_defs_package.__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(_defs_package.__path__), key=lambda m: m.name)]

defs = dg.load_definitions_from_modules(_MODULES, resources={"thinktax": ThinktaxResource()})
