"""The floor plan: layers with arrows one way, and no import circles (import-linter contracts in
pyproject.toml, ``[tool.importlinter]``).

    tools -> thinktax (CLI) -> pipelines (Dagster) -> services -> warehouse -> sources | models | synthetic

and one seam between the engines (issue 27): the orchestrator reaches the Spark engine only
through ``warehouse.engine``.
"""

from __future__ import annotations

from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 kept, 0 broken" in out


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _check(graph, contract: dict) -> bool:  # noqa: ANN001
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
