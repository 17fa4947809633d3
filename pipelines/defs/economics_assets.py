"""The economics marts as assets: marts/gpu_sizing and marts/self_host_breakeven.

Wiring only: the reading, arithmetic and writing are in warehouse/economics.py (which calls the
pure models/ package). Both run after the core tables they read and before publish
(ops/published_warehouse lists them in its deps). A deployment or model that cannot be sized is
left out with a warning naming it and why (also in the materialisation's metadata).
"""

import dagster as dg

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


@dg.asset(
    key=GPU_SIZING,
    deps=[SETTINGS, CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS],
    group_name="marts",
    kinds={"duckdb", "python"},
    description="Whether and how each deployment's model fits its GPU set-up, on the model's observed p50 and "
                "p95 call profiles (newest month). grain: model x gpu_type x gpus x precision x profile.",
)
def gpu_sizing(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    progress.report("build", "marts.gpu_sizing")
    with thinktax.build(context.run.run_id).connect() as con:
        built = build_gpu_sizing(con)
    return _result(context, built)


@dg.asset(
    key=SELF_HOST_BREAKEVEN,
    deps=[SETTINGS, CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS, GPU_PRICE_VERSIONS, CALL_COSTS],
    group_name="marts",
    kinds={"duckdb", "python"},
    description="Self-hosting each candidate deployment against the model's observed API calls and spend: cost, "
                "capacity, deployments needed, break-even volume, savings, verdict. grain: month x model x deployment.",
)
def self_host_breakeven(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    progress.report("build", "marts.self_host_breakeven")
    with thinktax.build(context.run.run_id).connect() as con:
        built = build_self_host_breakeven(con)
    return _result(context, built)
