"""The economics marts: marts/gpu_sizing and marts/self_host_breakeven.

Wiring only: the reading, arithmetic and writing are in warehouse/economics.py (which calls the
pure models/ package). They are materialised by the same Dagster step as the SQL models
(pipelines/defs/warehouse_assets.py), after the core tables they read and before publish. A
deployment or model that cannot be sized is left out with a warning naming it and why (also in
the materialisation's metadata).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
import duckdb

from warehouse.economics import Built, build_gpu_sizing, build_self_host_breakeven

GPU_SIZING = dg.AssetKey(["marts", "gpu_sizing"])
SELF_HOST_BREAKEVEN = dg.AssetKey(["marts", "self_host_breakeven"])


@dataclass(frozen=True)
class EconomicsModel:
    table: str
    deps: frozenset[str]  # 'schema.table' names it reads
    description: str
    builder: Callable[[duckdb.DuckDBPyConnection], Built]

    @property
    def key(self) -> dg.AssetKey:
        return dg.AssetKey(self.table.split("."))


ECONOMICS = (
    EconomicsModel(
        "marts.gpu_sizing", frozenset({"ops.settings", "core.call_profiles", "core.dim_models", "core.dim_deployments"}),
        "Whether and how each deployment's model fits its GPU set-up, on the model's observed p50 and "
        "p95 call profiles (newest month). grain: model x gpu_type x gpus x precision x profile.",
        build_gpu_sizing,
    ),
    EconomicsModel(
        "marts.self_host_breakeven",
        frozenset({"ops.settings", "core.call_profiles", "core.dim_models", "core.dim_deployments",
                   "core.gpu_price_versions", "core.call_costs"}),
        "Self-hosting each candidate deployment against the model's observed API calls and spend: cost, "
        "capacity, deployments needed, break-even volume, savings, verdict. grain: month x model x deployment.",
        build_self_host_breakeven,
    ),
)


def result_metadata(context: dg.AssetExecutionContext, built: Built) -> dict[str, object]:
    for reason in built.skipped:
        context.log.info(f"{built.table}: left out: {reason}")  # expected (e.g. API-only models); also in metadata
    return {"dagster/row_count": built.rows, "skipped": dg.MetadataValue.json(built.skipped)}
