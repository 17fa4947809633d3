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
from warehouse.outlook import (
    build_breakeven_outlook, build_deployment_offers, build_peak_capacity, build_spend_forecast,
    build_substitution_breakeven,
)

GPU_SIZING = dg.AssetKey(["marts", "gpu_sizing"])
SELF_HOST_BREAKEVEN = dg.AssetKey(["marts", "self_host_breakeven"])

CALL_PROFILES = dg.AssetKey(["core", "call_profiles"])
DIM_MODELS = dg.AssetKey(["core", "dim_models"])
DIM_DEPLOYMENTS = dg.AssetKey(["core", "dim_deployments"])
GPU_PRICE_VERSIONS = dg.AssetKey(["core", "gpu_price_versions"])
CALL_COSTS = dg.AssetKey(["core", "call_costs"])
DAILY_SPEND = dg.AssetKey(["marts", "daily_spend"])
PEAK_CONCURRENCY = dg.AssetKey(["marts", "peak_concurrency"])
SUBSTITUTIONS = dg.AssetKey(["stg", "substitutions"])
SPEND_FORECAST = dg.AssetKey(["marts", "spend_forecast"])
DEPLOYMENT_OFFERS = dg.AssetKey(["marts", "deployment_offers"])
PEAK_CAPACITY = dg.AssetKey(["marts", "peak_capacity"])
SUBSTITUTION_BREAKEVEN = dg.AssetKey(["marts", "substitution_breakeven"])
BREAKEVEN_OUTLOOK = dg.AssetKey(["marts", "breakeven_outlook"])
#: every Python-built mart (publish and the alert wait for them)
ECONOMICS_MARTS = [dg.AssetKey(["marts", "gpu_sizing"]), dg.AssetKey(["marts", "self_host_breakeven"]),
                   SPEND_FORECAST, DEPLOYMENT_OFFERS, PEAK_CAPACITY, SUBSTITUTION_BREAKEVEN, BREAKEVEN_OUTLOOK]


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

spend_forecast = _economics_asset(
    SPEND_FORECAST, [DAILY_SPEND, CALL_COSTS],
    "API and self-hosted spend forecast per month for all, each team and each model, with 80 % and 95 % "
    "intervals (statsmodels ETS, chosen per series by a 30-day backtest). grain: month x scope x scope_value x serving.",
    build_spend_forecast,
)
deployment_offers = _economics_asset(
    DEPLOYMENT_OFFERS, [DIM_MODELS, DIM_DEPLOYMENTS, GPU_PRICE_VERSIONS],
    "Every GPU price sheet row in force that can host each deployment, its monthly cost and rank; is_used marks "
    "the cheapest on-demand offer a deployment without its own price takes. grain: deployment x offer.",
    build_deployment_offers,
)
peak_capacity = _economics_asset(
    PEAK_CAPACITY, [PEAK_CONCURRENCY, CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS, SUBSTITUTIONS, CALL_COSTS],
    "Deployments needed to hold the p99 hour of concurrent calls of the last 30 days at the p95 call profile. "
    "grain: deployment x from_model.",
    build_peak_capacity,
)
substitution_breakeven = _economics_asset(
    SUBSTITUTION_BREAKEVEN, [CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS, GPU_PRICE_VERSIONS, CALL_COSTS, SUBSTITUTIONS],
    "Break-even of moving an API model's traffic to a self-hosted deployment of another model, token volumes "
    "scaled by catalog/substitutions.csv. grain: month x from_model x to_model x deployment.",
    build_substitution_breakeven,
)
breakeven_outlook = _economics_asset(
    BREAKEVEN_OUTLOOK, [SPEND_FORECAST, PEAK_CONCURRENCY, CALL_PROFILES, DIM_MODELS, DIM_DEPLOYMENTS,
                        GPU_PRICE_VERSIONS, CALL_COSTS, SUBSTITUTIONS],
    "The month forecast API spend first reaches the monthly cost of the deployments the peak needs (expected, "
    "earliest = upper 95 % bound, latest = lower 95 % bound). grain: model x to_model x deployment.",
    build_breakeven_outlook,
)
