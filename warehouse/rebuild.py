"""Rebuild the SQL tables the way a build's plan (warehouse/incremental.py) says, one model at a time.

A model the plan does not rebuild (``Scope.builds``) keeps its published table; only its
``build_id`` column, if any, is set to this build (every mart of a snapshot carries the same
one). Used by the Dagster step that materialises every SQL table (pipelines/defs/warehouse_assets.py),
the benchmark and the tests, so that all three run the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from warehouse import incremental
from warehouse.incremental import Scope
from warehouse.plain import plain_int
from warehouse.transform import SqlTable, build, load_tables


@dataclass(frozen=True)
class Rebuilt:
    table: str
    rows: int
    mode: str  # 'full', 'incremental', 'view' or 'kept'
    days: int = 0

    def __post_init__(self) -> None:
        # every engine's counts as Python ints, whatever library counted (warehouse/plain.py)
        object.__setattr__(self, "rows", plain_int(self.rows, f"{self.table}: rows"))
        object.__setattr__(self, "days", plain_int(self.days, f"{self.table}: days"))

    def describe(self) -> str:
        return {"kept": "kept: nothing it reads changed", "view": "view",
                "full": "full"}.get(self.mode, f"incremental: {self.days} day(s) replaced")


def rebuild(con: duckdb.DuckDBPyConnection, model: SqlTable, scope: Scope, build_id: str | None) -> Rebuilt:
    """Rebuild one model by the plan, or keep it (restamped) when nothing it reads changed."""
    if not scope.builds(model.table):
        incremental.restamp(con, model.table, build_id)
        (rows,) = con.execute(f"SELECT count(*) FROM {model.table}").fetchall()[0]
        return Rebuilt(model.table, rows, "kept")
    rows = build(con, model, scope)
    if model.view:
        return Rebuilt(model.table, rows, "view")
    if scope.is_full(model.table) or model.incremental is None:
        return Rebuilt(model.table, rows, "full")
    return Rebuilt(model.table, rows, "incremental", len(scope.model_days(model.halo)))


def rebuild_all(con: duckdb.DuckDBPyConnection, scope: Scope, build_id: str | None) -> dict[str, Rebuilt]:
    """Every model in dependency order, by the plan."""
    return {m.table: rebuild(con, m, scope, build_id) for m in load_tables()}
