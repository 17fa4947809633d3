"""The economics marts as assets: marts/gpu_sizing and marts/self_host_breakeven.

Wiring only: the reading, arithmetic and writing are in warehouse/economics.py (which calls the
pure models/ package). Both run after the core tables they read and before publish
(ops/published_warehouse lists them in its deps). A deployment or model that cannot be sized is
left out with a warning naming it and why (also in the materialisation's metadata).
"""

from collections.abc import Callable

import dagster as dg
import duckdb

from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.warehouse_assets import SETTINGS
from thinktax import progress
from warehouse.economics import Built, build_gpu_sizing, build_self_host_breakeven

GPU_SIZING = dg.AssetKey(["marts", "gpu_sizing"])
SELF_HOST_BREAKEVEN = dg.AssetKey(["marts", "self_host_breakeven"])

CALL_PROFILES = dg.AssetKey(["core", "call_profiles"])
DIM_MODELS = dg.AssetKey(["core", "dim_models"])
DIM_DEPLOYMENTS = dg.AssetKey(["core", "dim_deployments"])
GPU_PRICE_VERSIONS = dg.AssetKey(["core", "gpu_price_versions"])
CALL_COSTS = dg.AssetKey(["core", "call_costs"])


def _result(context: dg.AssetExecutionContext, built: Built) -> dg.MaterializeResult:
    for reason in built.skipped:
        context.log.info(f"{built.table}: left out: {reason}")  # expected (e.g. API-only models); also in metadata
    return dg.MaterializeResult(metadata={
        "dagster/row_count": built.rows,
        "skipped": dg.MetadataValue.json(built.skipped),
    })


def _economics_asset(key: dg.AssetKey, deps: list[dg.AssetKey], description: str,
                     builder: Callable[[duckdb.DuckDBPyConnection], Built]) -> dg.AssetsDefinition:
    table = ".".join(key.path)

    @dg.asset(key=key, deps=[SETTINGS, *deps], group_name="marts", kinds={"duckdb", "python"},
              description=description)
    def _asset(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
        progress.report("build", table)
        with thinktax.build(context.run.run_id).connect() as con:
            built = builder(con)
        return _result(context, built)

    return _asset


gpu_sizing = _economics_asset(
    GPU_SIZING, [CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS],
    "Whether and how each deployment's model fits its GPU set-up, on the model's observed p50 and "
    "p95 call profiles (newest month). grain: model x gpu_type x gpus x precision x profile.",
    build_gpu_sizing,
)
self_host_breakeven = _economics_asset(
    SELF_HOST_BREAKEVEN, [CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS, GPU_PRICE_VERSIONS, CALL_COSTS],
    "Self-hosting each candidate deployment against the model's observed API calls and spend: cost, "
    "capacity, deployments needed, break-even volume, savings, verdict. grain: month x model x deployment.",
    build_self_host_breakeven,
)
