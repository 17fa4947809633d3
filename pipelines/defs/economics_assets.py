"""The economics marts built in Python: marts/gpu_sizing, marts/self_host_breakeven and the
looking-ahead marts (spend_forecast, deployment_offers, peak_capacity, substitution_breakeven,
breakeven_outlook; warehouse/outlook.py) and buying_options (warehouse/buying_options.py).

Wiring only: the reading, arithmetic and writing are in warehouse/economics.py (which calls the
pure models/ package). They are materialised by the same Dagster step as the SQL tables
(pipelines/defs/warehouse_assets.py), after the core tables they read and before publish. A
deployment or model that cannot be sized is left out with a warning naming it and why (also in
the materialisation's metadata).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
import duckdb

from models import forecast
from warehouse import anomalies, buying_options, economics, outlook
from warehouse.anomalies import build_spend_anomalies
from warehouse.buying_options import build_buying_options
from warehouse.economics import Built, build_gpu_sizing, build_self_host_breakeven
from warehouse.outlook import (
    build_breakeven_outlook, build_budget_outlook, build_capacity_plan, build_deployment_offers, build_peak_capacity, build_spend_forecast,
    build_substitution_breakeven,
)

GPU_SIZING = dg.AssetKey(["marts", "gpu_sizing"])
SELF_HOST_BREAKEVEN = dg.AssetKey(["marts", "self_host_breakeven"])


@dataclass(frozen=True)
class PythonMart:
    """A mart built in Python (issue 27: not a "model": a model is a SQL table, sql/*/*.sql ->
    warehouse.sqltable.SqlTable; models/ is the pure economics the builders call)."""

    table: str
    deps: frozenset[str]  # 'schema.table' names it reads
    description: str
    builder: Callable[[duckdb.DuckDBPyConnection], Built]
    # starts importing the builder's heavy library in a background thread; the models step calls
    # it before the SQL tables when it knows this mart will be rebuilt (the import then overlaps
    # DuckDB's work, which runs without the GIL)
    warm: Callable[[], None] | None = None

    @property
    def key(self) -> dg.AssetKey:
        return dg.AssetKey(self.table.split("."))


EconomicsModel = PythonMart  # the name before issue 27

# each mart's inputs, declared once next to its builder (warehouse/economics.py INPUTS): Dagster's lineage
# is what the builders read, Python marts' tables included (a mart reads another's table, never recomputes it)
INPUTS: dict[str, frozenset[str]] = economics.INPUTS | outlook.INPUTS | buying_options.INPUTS | anomalies.INPUTS

# in the order they are built (here and on a Spark run, warehouse/spark/economics.py build_economics): a mart
# after every Python mart it reads (checked below)
ECONOMICS = (
    PythonMart(
        "marts.gpu_sizing", INPUTS["marts.gpu_sizing"],
        "Whether and how each deployment's model fits its GPU set-up, on the model's observed p50 and "
        "p95 call profiles (newest month). grain: model x gpu_type x gpus x precision x profile.",
        build_gpu_sizing,
    ),
    PythonMart(
        "marts.deployment_offers", INPUTS["marts.deployment_offers"],
        "Every GPU price sheet row in force that can host each deployment, its monthly cost and rank; is_used marks "
        "the cheapest on-demand offer a deployment without its own price takes. grain: deployment x offer.",
        build_deployment_offers,
    ),
    PythonMart(
        "marts.self_host_breakeven", INPUTS["marts.self_host_breakeven"],
        "Self-hosting each candidate deployment against the model's observed API calls and spend: cost, "
        "capacity, deployments needed, break-even volume, savings, verdict. grain: month x model x deployment.",
        build_self_host_breakeven,
    ),
    PythonMart(
        "marts.spend_forecast", INPUTS["marts.spend_forecast"],
        "API and self-hosted spend forecast per month for all, each team and each model, with 80 % and 95 % "
        "intervals (chosen per series by a rolling-origin backtest on month totals across the daily and monthly grains: "
        "naive, drift, trends, ETS, Theta, ARIMA; statsmodels). grain: month x scope x scope_value x serving.",
        build_spend_forecast,
        warm=forecast.prewarm,
    ),
    PythonMart(
        "marts.budget_outlook", INPUTS["marts.budget_outlook"],
        "Each budgeted team's forecast months (marts.spend_forecast, team scope, API + self-hosted) against its "
        "monthly budget: expected status and whether the 95 % upper bound exceeds it. grain: team x month.",
        build_budget_outlook,
    ),
    PythonMart(
        "marts.peak_capacity", INPUTS["marts.peak_capacity"],
        "Deployments needed to hold the p99 hour of concurrent calls of the last 30 days at the p95 call profile. "
        "grain: deployment x from_model.",
        build_peak_capacity,
    ),
    PythonMart(
        "marts.capacity_plan", INPUTS["marts.capacity_plan"],
        "Replicas (and GPUs) that keep the p95 / p99 queueing delay of the busiest observed hours, replayed through "
        "the deployment's KV slots, under [capacity] max_queue_seconds; next to the peak-concurrency sizing. "
        "grain: deployment x from_model.",
        build_capacity_plan,
    ),
    PythonMart(
        "marts.substitution_breakeven", INPUTS["marts.substitution_breakeven"],
        "Break-even of moving an API model's traffic to a self-hosted deployment of another model, token volumes "
        "scaled by catalog/substitutions.csv. grain: month x from_model x to_model x deployment.",
        build_substitution_breakeven,
    ),
    PythonMart(
        "marts.breakeven_outlook", INPUTS["marts.breakeven_outlook"],
        "The month forecast API spend first reaches the monthly cost of the deployments the peak or the queue needs (expected, "
        "earliest = upper 95 % bound, latest = lower 95 % bound). grain: model x to_model x deployment.",
        build_breakeven_outlook,
    ),
    PythonMart(
        "marts.buying_options", INPUTS["marts.buying_options"],
        "Each API model's three ways to buy side by side: on demand, provisioned throughput (marts.commitments) and "
        "self-hosted (marts.self_host_breakeven), monthly at the observed and the forecast volume, the cheapest, and "
        "the volumes at which the fixed options overtake on demand. grain: provider x model.",
        build_buying_options,
    ),
    PythonMart(
        "marts.spend_anomalies", INPUTS["marts.spend_anomalies"],
        "Spend, calls and reasoning tokens per call of every series (all, team, model, task type) against a robust "
        "baseline (median / MAD of the same day type over [anomaly] adapt_days): band, impact in USD and %, anomaly "
        "episodes, root cause, feedback. grain: day x metric x scope x scope_value.",
        build_spend_anomalies,
    ),
)



def _in_input_order(marts: tuple[PythonMart, ...]) -> tuple[PythonMart, ...]:
    """``marts``, checked to list each after the Python marts whose tables it reads (a run builds them in
    this order, and a mart rebuilt reads its inputs' tables of this run)."""
    seen: set[str] = set()
    for m in marts:
        early = {d for d in m.deps if d in {x.table for x in marts}} - seen
        if early:
            raise ValueError(f"{m.table} reads {sorted(early)}, built after it: ECONOMICS is out of order")
        seen.add(m.table)
    return marts


ECONOMICS = _in_input_order(ECONOMICS)

SPEND_ANOMALIES = dg.AssetKey(["marts", "spend_anomalies"])
ANOMALY_CHECK = "no_recent_anomaly"
# warns in the UI, never blocks the publish: an anomaly is news about the spend, not bad data
ANOMALY_CHECK_SPEC = dg.AssetCheckSpec(
    ANOMALY_CHECK, asset=SPEND_ANOMALIES, blocking=False,
    description="Warns when an episode of marts.spend_anomalies without feedback ended within the last "
                "7 days of data (as the spend_anomaly alert sees it); never blocks the publish.")


def anomaly_check(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """The anomaly asset check: passed when no recent episode lacks feedback, else a WARN with them."""
    from services.alert import ANOMALY_RECENT_DAYS  # noqa: PLC0415

    rows = con.execute(f"""
        WITH eps AS (
            SELECT episode_id, min(day) AS first_day, max(day) AS last_day, sum(impact_usd) AS impact_usd,
                   arg_max(root_cause, impact_usd) AS root_cause
            FROM marts.spend_anomalies
            WHERE is_anomaly AND feedback IS NULL GROUP BY episode_id
        )
        SELECT * FROM eps
        WHERE last_day > (SELECT max(day) FROM marts.spend_anomalies) - {ANOMALY_RECENT_DAYS}
        ORDER BY impact_usd DESC, episode_id""").fetchall()
    episodes = [{"episode_id": e, "first_day": str(a), "last_day": str(b), "impact_usd": float(i), "root_cause": c}
                for e, a, b, i, c in rows]
    return dg.AssetCheckResult(
        asset_key=SPEND_ANOMALIES, check_name=ANOMALY_CHECK, passed=not episodes, severity=dg.AssetCheckSeverity.WARN,
        metadata={"recent_episodes": len(episodes), "episodes": dg.MetadataValue.json(episodes[:20])})


def result_metadata(context: dg.AssetExecutionContext, built: Built) -> dict[str, object]:
    for reason in built.skipped:
        context.log.info(f"{built.table}: left out: {reason}")  # expected (e.g. API-only models); also in metadata
    return {"dagster/row_count": built.rows, "skipped": dg.MetadataValue.json(built.skipped)}
