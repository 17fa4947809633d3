"""The floor plan: layers with arrows one way, and no import circles (import-linter contracts in
pyproject.toml, ``[tool.importlinter]``).

    tools -> thinktax (CLI) -> pipelines (Dagster) -> services -> warehouse -> sources | models | synthetic

and one seam between the engines (issue 27): the orchestrator reaches the Spark engine only
through ``warehouse.engine``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    # lint-imports configures logging with dictConfig, which disables every logger that exists by
    # then: a later test of the same worker that reads the log of one (test_alert's caplog of
    # "thinktax.alert") would see nothing. The loggers are put back as they were.
    loggers = [x for x in logging.root.manager.loggerDict.values() if isinstance(x, logging.Logger)]
    before = {x: x.disabled for x in loggers}
    try:
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    finally:
        for x, disabled in before.items():
            x.disabled = disabled
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 kept, 0 broken" in out


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _check(graph, contract: dict) -> bool:
    from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
    from importlinter.contracts.forbidden import ForbiddenContract
    from importlinter.contracts.layers import LayersContract

    cls = {"layers": LayersContract, "acyclic_siblings": AcyclicSiblingsContract,
           "forbidden": ForbiddenContract}[contract["type"]]
    options = {k: str(v).lower() if isinstance(v, bool) else v for k, v in contract.items() if k not in ("name", "type")}
    return cls(name=contract["name"], session_options={"root_packages": ROOTS}, contract_options=options).check(
        graph, verbose=False).kept


ROOTS = ["tools", "thinktax", "pipelines", "services", "warehouse", "sources", "models", "synthetic"]


def test_the_contracts_fail_on_the_imports_they_forbid():
    """The same contracts on the real import graph plus one planted import each: they break."""
    import grimp

    layers, acyclic, seam, engine_above = _contracts()
    assert _check(grimp.build_graph(*ROOTS), layers) and _check(grimp.build_graph(*ROOTS), acyclic)
    upward = grimp.build_graph(*ROOTS)
    upward.add_import(importer="warehouse.db", imported="pipelines.progress")  # the warehouse reaching up
    assert not _check(upward, layers)
    cli_below = grimp.build_graph(*ROOTS)
    cli_below.add_import(importer="pipelines.defs.alerts", imported="thinktax.console")  # pipelines using the CLI
    assert not _check(cli_below, layers)
    circle = grimp.build_graph(*ROOTS)
    circle.add_import(importer="sources.base", imported="sources.registry")  # registry <-> parsers again
    assert not _check(circle, acyclic)
    assert _check(grimp.build_graph(*ROOTS), seam) and _check(grimp.build_graph(*ROOTS), engine_above)
    around = grimp.build_graph(*ROOTS)
    around.add_import(importer="pipelines.defs.warehouse_assets", imported="warehouse.spark.build")  # the job past the seam
    assert not _check(around, seam)
    below = grimp.build_graph(*ROOTS)
    below.add_import(importer="warehouse.spark.build", imported="warehouse.engine")  # an engine on its protocol's module
    assert not _check(below, engine_above)


# the modules issue 17 moved out of thinktax/, and where each lives now (thinktax/__init__.py)
MOVED = {"alert": "services.alert", "billing_api": "services.billing_api", "config": "services.config",
         "report": "services.report", "scraper": "services.scraper", "benchgen": "synthetic.benchgen",
         "demo": "synthetic.demo", "progress": "pipelines.progress"}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_module_still_imports_under_its_old_name_with_a_warning(old):
    """The code and tests import the new names; the old ones stay for users' scripts. In a fresh
    interpreter (a module imported once warns once): the old name warns and is the same module."""
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module('thinktax.{old}')\n"
        f"new = importlib.import_module('{MOVED[old]}')\n"
        "msgs = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]\n"
        "print(old is new, msgs)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"True ['thinktax.{old} is deprecated: import {MOVED[old]}']"
