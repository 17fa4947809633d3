"""thinktax: cost analytics for reasoning-model inference.

This package is the command line (``thinktax.cli``, ``thinktax.commands``, the console and the
runner that starts the Dagster job). What the pipeline itself uses lives below it (see
services/__init__.py for the layers); the modules that used to live here are still importable
under their old names, ``thinktax.config`` etc., which resolve to the same module objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old module path -> where it lives now
MOVED = {
    "thinktax.config": "services.config",
    "thinktax.alert": "services.alert",
    "thinktax.report": "services.report",
    "thinktax.scraper": "services.scraper",
    "thinktax.billing_api": "services.billing_api",
    "thinktax.progress": "pipelines.progress",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the moved module itself (one module object, so a
    monkeypatch through either name patches both)."""

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201, ARG002
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):  # noqa: ANN001, ANN201
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:  # noqa: ANN001
        pass


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedFinder())
