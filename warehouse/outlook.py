"""Looking ahead: ``marts.spend_forecast``, ``marts.deployment_offers``, ``marts.substitution_breakeven``,
``marts.peak_capacity`` and ``marts.breakeven_outlook`` (docs/economics.md section 11).

``marts.spend_forecast`` (month x scope x scope_value x serving): every daily spend series of
``marts.daily_spend`` (sources ``api_usage`` -> serving ``api``, ``self_hosted`` -> ``self_hosted``;
``api_bill`` and the ``idle`` team left out of the team scope, kept in ``all`` and ``model``) for the
scopes ``all`` (scope_value ``*``), ``team`` and ``model``, forecast by ``models.forecast`` for
``forecast_horizon_months`` months after the last day with calls.

``marts.deployment_offers`` (deployment x price sheet row in force): every GPU price sheet row whose
GPU is the deployment's, its monthly cost ``gpus x usd_per_gpu_hour x hours_per_month`` and rank
(1 = cheapest; ties by provider, region, instance type, pricing); ``is_used`` marks the offer the
break-even takes for a deployment without its own price: the cheapest on-demand one of the
deployment's provider (of any provider when it names none).

``marts.peak_capacity`` (deployment x from_model): the deployments needed to serve the busiest
hours of the last 30 days: ``peak_calls`` = the 99th percentile (nearest rank) over the hours of the
30 days ending on the last day of ``p99_concurrent_calls`` (marts.peak_concurrency) of the traffic's
model; ``max_concurrent_calls`` = models.sizing on the traffic's p95 profile (scaled by the
substitution's ratios); ``deployments_needed = max(1, ceil(peak_calls / max_concurrent_calls))``.

``marts.substitution_breakeven`` (month x from_model x to_model x deployment): as
``marts.self_host_breakeven`` but for moving from_model's API traffic to a deployment of to_model,
the profiles scaled by catalog/substitutions.csv (thinking x thinking_ratio, output x output_ratio,
rounded half-even to whole tokens; the prompt unchanged).

``marts.breakeven_outlook`` (model x to_model x deployment): the monthly cost of the deployments the
peak needs (``threshold_usd_per_month = deployments_needed x self_host_usd_per_month``) against
the model's forecast API spend: the first forecast month whose ``forecast_usd`` (expected),
``hi95_usd`` (earliest) and ``lo95_usd`` (latest) reaches it. ``status``: ``crossed`` when the last
full month's API spend already reached it, ``within_horizon`` when the expected crossing is in the
forecast, ``not_within_horizon`` when it is not (crossing_month_expected NULL), ``infeasible``
when the model does not fit the deployment (all three months NULL), ``no_forecast`` when the model
has no API spend series.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from models.breakeven import capacity_calls_per_month, evaluate, quantize_usd, self_host_usd_per_month
from models.capacity import MAX_CALLS, mgc_replicas_for, replicas_for
from models.forecast import forecast_many, month_end, month_start
from models.sizing import size
from models.spec import CallProfile
from models.throughput import estimate_throughput
from warehouse.economics import (
    DEPLOYMENT_OFFERS, USD6, Built, Candidate, _finish, _records, _settings, _write, api_months, call_profiles,
    candidates, net_rate_sql, offers, used_offers,
)
from warehouse.incremental import has_table

SPEND_FORECAST = "marts.spend_forecast"
PEAK_CAPACITY = "marts.peak_capacity"
SUBSTITUTION_BREAKEVEN = "marts.substitution_breakeven"
BREAKEVEN_OUTLOOK = "marts.breakeven_outlook"
CAPACITY_PLAN = "marts.capacity_plan"
BUDGET_OUTLOOK = "marts.budget_outlook"
DEFAULT_MAX_QUEUE_SECONDS = 10.0
BUSIEST_HOURS = 3
DEFAULT_HORIZON_MONTHS = 12
PEAK_WINDOW_DAYS = 30

_CANDIDATES = frozenset({"core.dim_models", "core.dim_deployments"})  # economics.candidates
_PAIRS = _CANDIDATES | {"core.call_costs", "stg.substitutions"}      # pairs: reasoning API models, substitutions
# What each mart of this module reads (warehouse/economics.py INPUTS says why they are declared):
# a mart that needs another's figures reads its table (peak_capacity -> capacity_plan -> breakeven_outlook;
# deployment_offers -> substitution_breakeven, breakeven_outlook), so each is computed once per run
INPUTS: dict[str, frozenset[str]] = {
    SPEND_FORECAST: frozenset({"ops.settings", "marts.daily_spend", "core.call_costs", "marts.effective_rates"}),
    BUDGET_OUTLOOK: frozenset({"ops.settings", SPEND_FORECAST, "stg.budgets"}),
    DEPLOYMENT_OFFERS: frozenset({"ops.settings", "core.gpu_price_versions"}) | _CANDIDATES,
    PEAK_CAPACITY: frozenset({"ops.settings", "marts.peak_concurrency", "core.call_profiles"}) | _PAIRS,
    CAPACITY_PLAN: frozenset({"ops.settings", PEAK_CAPACITY, "core.call_profiles", "core.calls"}) | _PAIRS,
    SUBSTITUTION_BREAKEVEN: frozenset({"ops.settings", "core.call_profiles", "marts.effective_rates",
                                       DEPLOYMENT_OFFERS}) | _PAIRS,
    BREAKEVEN_OUTLOOK: frozenset({"ops.settings", SPEND_FORECAST, PEAK_CAPACITY, CAPACITY_PLAN, DEPLOYMENT_OFFERS,
                                  "marts.effective_rates"}) | _PAIRS,
}

SPEND_FORECAST_SCHEMA = pa.schema([
    ("month", pa.date32()), ("scope", pa.string()), ("scope_value", pa.string()), ("serving", pa.string()),
    ("observed_usd", USD6), ("forecast_days", pa.int32()), ("forecast_usd", USD6),
    ("lo80_usd", USD6), ("hi80_usd", USD6), ("lo95_usd", USD6), ("hi95_usd", USD6),
    ("method", pa.string()), ("backtest_mape_pct", pa.float64()), ("backtest_windows", pa.int32()),
    ("backtest_covered80", pa.int32()), ("backtest_covered95", pa.int32()),
    ("history_days", pa.int32()), ("last_day", pa.date32()),
    ("grain", pa.string()), ("backtest_origins", pa.int32()),
    ("backtest_coverage80", pa.float64()), ("backtest_coverage95", pa.float64()),
    ("interval_scale80", pa.float64()), ("interval_scale95", pa.float64()),
    ("runner_up_method", pa.string()), ("runner_up_mape_pct", pa.float64()),
    ("api_price_basis", pa.string()), ("build_id", pa.string()),
])
DEPLOYMENT_OFFERS_SCHEMA = pa.schema([
    ("deployment", pa.string()), ("model", pa.string()), ("gpu_type", pa.string()), ("gpus", pa.int32()),
    ("provider", pa.string()), ("region", pa.string()), ("instance_type", pa.string()), ("pricing", pa.string()),
    ("gpus_per_node", pa.int32()), ("nodes_needed", pa.int32()), ("offer", pa.string()),
    ("usd_per_gpu_hour", USD6), ("self_host_usd_per_month", USD6), ("rank", pa.int32()),
    ("same_provider", pa.bool_()), ("is_used", pa.bool_()), ("build_id", pa.string()),
])
PEAK_CAPACITY_SCHEMA = pa.schema([
    ("deployment", pa.string()), ("from_model", pa.string()), ("to_model", pa.string()),
    ("window_start", pa.date32()), ("window_end", pa.date32()), ("hours", pa.int64()),
    ("peak_calls", pa.int64()), ("profile_month", pa.date32()),
    ("prompt_tokens", pa.int64()), ("thinking_tokens", pa.int64()), ("output_tokens", pa.int64()),
    ("kv_gb_per_call", pa.float64()), ("max_concurrent_calls", pa.int64()), ("fits", pa.bool_()),
    ("deployments_needed", pa.int64()), ("build_id", pa.string()),
])
SUBSTITUTION_BREAKEVEN_SCHEMA = pa.schema([
    ("month", pa.date32()), ("from_model", pa.string()), ("to_model", pa.string()), ("deployment", pa.string()),
    ("thinking_ratio", pa.float64()), ("output_ratio", pa.float64()),
    ("gpu_type", pa.string()), ("gpus", pa.int32()), ("precision", pa.string()),
    ("api_calls", pa.int64()), ("api_spend_usd", USD6), ("api_cost_per_call_usd", USD6),
    ("usd_per_gpu_hour", USD6), ("usd_per_gpu_hour_source", pa.string()), ("offer", pa.string()),
    ("self_host_usd_per_month", USD6), ("calls_per_minute", pa.float64()),
    ("capacity_calls_per_month", pa.float64()), ("deployments_needed", pa.int64()),
    ("breakeven_calls_per_month", pa.float64()), ("breakeven_api_spend_usd", USD6),
    ("savings_usd", USD6), ("fits", pa.bool_()), ("verdict", pa.string()),
    ("api_spend_list_usd", USD6), ("api_price_basis", pa.string()), ("build_id", pa.string()),
])
CAPACITY_PLAN_SCHEMA = pa.schema([
    ("deployment", pa.string()), ("from_model", pa.string()), ("to_model", pa.string()),
    ("window_start", pa.date32()), ("window_end", pa.date32()),
    ("hours_replayed", pa.int32()), ("calls_replayed", pa.int64()),
    ("busiest_hour", pa.timestamp("us")), ("busiest_hour_calls", pa.int64()),
    ("slots_per_replica", pa.int64()), ("calls_per_minute", pa.float64()), ("seconds_per_generated_token", pa.float64()),
    ("mean_service_seconds", pa.float64()), ("p95_service_seconds", pa.float64()), ("p99_service_seconds", pa.float64()),
    ("max_queue_seconds", pa.float64()),
    ("replicas_p95", pa.int64()), ("p95_queue_seconds", pa.float64()),
    ("replicas_p99", pa.int64()), ("p99_queue_seconds", pa.float64()),
    ("replicas_needed", pa.int64()), ("gpus_needed", pa.int64()), ("mgc_replicas_p95", pa.int64()),
    ("peak_deployments_needed", pa.int64()), ("planned_replicas", pa.int64()), ("planned_gpus", pa.int64()),
    ("sizing_basis", pa.string()), ("fits", pa.bool_()), ("build_id", pa.string()),
])
BUDGET_OUTLOOK_SCHEMA = pa.schema([
    ("team", pa.string()), ("month", pa.date32()), ("budget_usd", USD6), ("soft_usd", USD6),
    ("observed_usd", USD6), ("forecast_usd", USD6), ("lo80_usd", USD6), ("hi80_usd", USD6),
    ("lo95_usd", USD6), ("hi95_usd", USD6), ("status_expected", pa.string()),
    ("over_budget_at_hi95", pa.bool_()), ("methods", pa.string()), ("last_day", pa.date32()), ("build_id", pa.string()),
])
BREAKEVEN_OUTLOOK_SCHEMA = pa.schema([
    ("model", pa.string()), ("to_model", pa.string()), ("deployment", pa.string()),
    ("threshold_usd_per_month", USD6),
    ("crossing_month_expected", pa.date32()), ("crossing_month_earliest", pa.date32()),
    ("crossing_month_latest", pa.date32()), ("status", pa.string()),
    ("months_until_expected", pa.int32()), ("deployments_needed", pa.int64()),
    ("peak_deployments_needed", pa.int64()), ("queue_replicas_needed", pa.int64()),
    ("self_host_usd_per_month", USD6), ("usd_per_gpu_hour", USD6), ("offer", pa.string()),
    ("last_full_month", pa.date32()), ("last_full_month_api_spend_usd", USD6),
    ("thinking_ratio", pa.float64()), ("output_ratio", pa.float64()),
    ("api_price_basis", pa.string()), ("build_id", pa.string()),
])


def _usd(x: float | Decimal | None) -> Decimal | None:
    return None if x is None else quantize_usd(Decimal(str(round(float(x), 6))) if isinstance(x, float) else Decimal(x))


def _setting(con: duckdb.DuckDBPyConnection, column: str, default: int) -> int:
    cols = {r[0] for r in con.execute("DESCRIBE ops.settings").fetchall()}
    if column not in cols:
        return default
    value = con.execute(f"SELECT {column} FROM ops.settings").fetchall()[0][0]
    return default if value is None else int(value)


_has = has_table  # (warehouse/incremental.py)


# --------------------------------------------------------------------------- spend forecast
# API spend at the invoice's net rate where a cloud invoice shows one (warehouse/economics.py
# net_rate_sql); self-hosted spend (provider NULL here) is what the nodes cost.
_DAILY_SPEND_SQL = """
    SELECT day, CASE source WHEN 'api_usage' THEN 'api' ELSE 'self_hosted' END AS serving,
           CASE source WHEN 'api_usage' THEN provider END AS provider, model, team, cost_usd
    FROM marts.daily_spend WHERE source IN ('api_usage', 'self_hosted') AND cost_usd IS NOT NULL
"""
_SERIES_SQL = """
WITH spend AS ({spend}),
grouped AS (
    SELECT 'all' AS scope, '*' AS scope_value, serving, day, sum(net_cost_usd) AS usd, count(net_to_list) AS net_rows,
           count(*) AS rows_ FROM spend GROUP BY ALL
    UNION ALL
    SELECT 'team', team, serving, day, sum(net_cost_usd), count(net_to_list), count(*) FROM spend WHERE team <> 'idle' GROUP BY ALL
    UNION ALL
    SELECT 'model', model, serving, day, sum(net_cost_usd), count(net_to_list), count(*) FROM spend WHERE model IS NOT NULL GROUP BY ALL
)
SELECT scope, scope_value, serving, day, CAST(usd AS DOUBLE) AS usd, net_rows, rows_ FROM grouped
WHERE scope_value IS NOT NULL ORDER BY scope, scope_value, serving, day
"""


def price_basis(net_rows: int, rows: int, serving: str) -> str | None:
    """api_price_basis of a series: 'invoice_net' when all its API spend took an invoice's net rate,
    'partly_invoice_net' when some did, 'list' when none; NULL for self-hosted spend."""
    if serving != "api":
        return None
    return "list" if net_rows == 0 else "invoice_net" if net_rows == rows else "partly_invoice_net"


def daily_series(con: duckdb.DuckDBPyConnection,
                 basis: dict[tuple[str, str, str], str | None] | None = None) -> dict[tuple[str, str, str], list[tuple[dt.date, float]]]:
    """Each scope x value x serving's daily spend (API spend at the invoice's net rate where there is
    one); ``basis``, when given, receives each series' api_price_basis."""
    out: dict[tuple[str, str, str], list[tuple[dt.date, float]]] = {}
    counts: dict[tuple[str, str, str], list[int]] = {}
    sql = _SERIES_SQL.format(spend=net_rate_sql(con, _DAILY_SPEND_SQL))
    for scope, value, serving, day, usd, net_rows, rows in con.execute(sql).fetchall():
        out.setdefault((scope, value, serving), []).append((day, usd))
        c = counts.setdefault((scope, value, serving), [0, 0])
        c[0] += net_rows
        c[1] += rows
    if basis is not None:
        basis.update({k: price_basis(n, r, k[2]) for k, (n, r) in counts.items()})
    return out


def dense(points: list[tuple[dt.date, float]], last_day: dt.date) -> tuple[dt.date, np.ndarray]:
    """The series from its first day with spend to ``last_day``, 0 on days without a row."""
    points = [(d, v) for d, v in points if v > 0] or points
    first = points[0][0]
    y = np.zeros((last_day - first).days + 1)
    idx = np.array([(d - first).days for d, _ in points])
    y[idx] = [v for _, v in points]
    return first, y


def spend_forecast_rows(con: duckdb.DuckDBPyConnection, build_id: str | None, skipped: list[str]) -> list[dict[str, Any]]:
    last_day = con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]
    if last_day is None:
        skipped.append("spend_forecast: no calls in the warehouse")
        return []
    horizon = _setting(con, "forecast_horizon_months", DEFAULT_HORIZON_MONTHS)
    rows: list[dict[str, Any]] = []
    basis: dict[tuple[str, str, str], str | None] = {}
    series = daily_series(con, basis)
    jobs = [(*dense(points, last_day), last_day, horizon) for points in series.values()]
    # the series are fitted in parallel worker processes; the same results as one by one (models/forecast.py)
    for (scope, value, serving), f in zip(series, forecast_many(jobs), strict=True):
        bt = f.backtest
        for m in f.months:
            rows.append({
                "month": m.month, "scope": scope, "scope_value": value, "serving": serving,
                "observed_usd": _usd(m.observed_usd), "forecast_days": m.forecast_days,
                "forecast_usd": _usd(m.forecast_usd),
                "lo80_usd": _usd(m.lo80_usd), "hi80_usd": _usd(m.hi80_usd),
                "lo95_usd": _usd(m.lo95_usd), "hi95_usd": _usd(m.hi95_usd),
                "method": f.method, "backtest_mape_pct": bt.mape_pct, "backtest_windows": bt.windows,
                "backtest_covered80": bt.covered80, "backtest_covered95": bt.covered95,
                "history_days": f.history_days, "last_day": last_day,
                "grain": f.grain, "backtest_origins": bt.origins,
                "backtest_coverage80": bt.coverage80, "backtest_coverage95": bt.coverage95,
                "interval_scale80": f.interval_scale80, "interval_scale95": f.interval_scale95,
                "runner_up_method": f.runner_up, "runner_up_mape_pct": f.runner_up_mape_pct,
                "api_price_basis": basis.get((scope, value, serving)), "build_id": build_id,
            })
    return rows


def build_spend_forecast(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(SPEND_FORECAST)
    _, build_id = _settings(con)
    built.rows = _write(con, SPEND_FORECAST, spend_forecast_rows(con, build_id, built.skipped), SPEND_FORECAST_SCHEMA)
    return _finish(built)


# --------------------------------------------------------------------------- budgets ahead
def budget_outlook_rows(con: duckdb.DuckDBPyConnection, build_id: str | None) -> list[dict[str, Any]]:
    """marts.budget_outlook: each budgeted team's forecast months (team scope of marts.spend_forecast,
    API + self-hosted summed; the bounds summed too, which assumes the two move together: wider, never
    narrower) against its monthly budget (the newest budgets.csv, as marts.budget_status)."""
    if not (_has(con, "stg.budgets") and _has(con, SPEND_FORECAST)):
        return []
    rows = con.execute(f"""
        WITH budgets AS (
            SELECT team, monthly_usd, soft_pct FROM stg.budgets WHERE file_id = (SELECT max(file_id) FROM stg.budgets)
            QUALIFY row_number() OVER (PARTITION BY team ORDER BY line DESC) = 1
        )
        SELECT b.team, f.month, b.monthly_usd, b.monthly_usd * CAST(b.soft_pct AS DECIMAL(18,6)) / 100,
               sum(f.observed_usd), sum(f.forecast_usd), sum(f.lo80_usd), sum(f.hi80_usd), sum(f.lo95_usd), sum(f.hi95_usd),
               count(f.lo95_usd) = count(*), string_agg(DISTINCT f.serving || ': ' || f.method, '; ' ORDER BY f.serving || ': ' || f.method),
               any_value(f.last_day)
        FROM budgets b JOIN {SPEND_FORECAST} f ON f.scope = 'team' AND f.scope_value = b.team
        GROUP BY ALL ORDER BY b.team, f.month""").fetchall()
    out = []
    for team, month, budget, soft, obs, fc, lo80, hi80, lo95, hi95, bounded, methods, last in rows:
        fc = Decimal(fc)
        status = "over_budget" if fc >= budget else "over_soft" if fc >= soft else "ok"
        out.append({
            "team": team, "month": month, "budget_usd": quantize_usd(Decimal(budget)), "soft_usd": quantize_usd(Decimal(soft)),
            "observed_usd": quantize_usd(Decimal(obs)), "forecast_usd": quantize_usd(fc),
            **{k: quantize_usd(Decimal(v)) if bounded and v is not None else None
               for k, v in (("lo80_usd", lo80), ("hi80_usd", hi80), ("lo95_usd", lo95), ("hi95_usd", hi95))},
            "status_expected": status, "over_budget_at_hi95": None if not bounded or hi95 is None else bool(hi95 >= budget),
            "methods": methods, "last_day": last, "build_id": build_id,
        })
    return out


def build_budget_outlook(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(BUDGET_OUTLOOK)
    _, build_id = _settings(con)
    built.rows = _write(con, BUDGET_OUTLOOK, budget_outlook_rows(con, build_id), BUDGET_OUTLOOK_SCHEMA)
    return _finish(built)


# --------------------------------------------------------------------------- offers
def build_deployment_offers(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(DEPLOYMENT_OFFERS)
    hours, build_id = _settings(con)
    rows, _ = offers(con, candidates(con, built.skipped), hours, build_id)
    built.rows = _write(con, DEPLOYMENT_OFFERS, rows, DEPLOYMENT_OFFERS_SCHEMA)
    return _finish(built)


# --------------------------------------------------------------------------- substitutions and the peak
def substitutions(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, float, float]]:
    """``(from model key, to model key, thinking_ratio, output_ratio)`` of the newest substitutions.csv."""
    if not _has(con, "stg.substitutions"):
        return []
    return con.execute(
        "SELECT core.model_key(from_model), core.model_key(to_model), thinking_ratio, output_ratio FROM stg.substitutions "
        "WHERE file_id = (SELECT max(file_id) FROM stg.substitutions) "
        "QUALIFY row_number() OVER (PARTITION BY from_model, to_model ORDER BY line DESC) = 1 ORDER BY ALL"
    ).fetchall()


def scale(profile: CallProfile, thinking_ratio: float, output_ratio: float) -> CallProfile:
    """The profile with thinking and output tokens scaled (half-even to whole tokens)."""
    def r(tokens: int, ratio: float) -> int:
        return int((Decimal(tokens) * Decimal(str(ratio))).quantize(Decimal(1), ROUND_HALF_EVEN))
    return replace(profile, thinking_tokens=r(profile.thinking_tokens, thinking_ratio),
                   output_tokens=r(profile.output_tokens, output_ratio))


def reasoning_api_models(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Model keys bought through an API that reason (catalog ``reasoning``, else thinking tokens seen)."""
    return [r[0] for r in con.execute("""
        WITH catalog AS (SELECT model_key, bool_or(reasoning) AS reasoning FROM core.dim_models GROUP BY model_key)
        SELECT c.model FROM core.call_costs c LEFT JOIN catalog k ON k.model_key = c.model
        WHERE c.serving = 'api' GROUP BY c.model
        HAVING coalesce(any_value(k.reasoning), bool_or(c.thinking_tokens > 0)) ORDER BY 1""").fetchall()]


def pairs(con: duckdb.DuckDBPyConnection, cands: list[Candidate]) -> list[tuple[str, Candidate, float, float]]:
    """``(traffic model, deployment, thinking_ratio, output_ratio)``: each reasoning API model on its own
    deployments (ratios 1), and each substitution on the to_model's deployments."""
    out = []
    for model in reasoning_api_models(con):
        out += [(model, c, 1.0, 1.0) for c in cands if c.model_key == model]
    for src, dst, tr, orr in substitutions(con):
        out += [(src, c, float(tr), float(orr)) for c in cands if c.model_key == dst and src != dst]
    return out


def peak_calls(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, tuple[int, int]], dt.date | None]:
    """model -> (p99 over the last 30 days' hours of the hourly p99 concurrency, hours counted)."""
    end = con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]
    if end is None or not _has(con, "marts.peak_concurrency"):
        return {}, end
    rows = con.execute(
        "SELECT model, quantile_disc(p99_concurrent_calls, 0.99), count(*) FROM marts.peak_concurrency "
        "WHERE day BETWEEN ? AND ? GROUP BY model", [end - dt.timedelta(days=PEAK_WINDOW_DAYS - 1), end]).fetchall()
    return {m: (int(p), int(n)) for m, p, n in rows}, end


def peak_capacity_rows(con, pair_list, profiles, build_id) -> tuple[list[dict[str, Any]], dict[tuple[str, str], dict]]:
    peaks, end = peak_calls(con)
    newest: dict[str, dt.date] = {}
    for model_key, month in profiles:
        newest[model_key] = max(month, newest.get(model_key, month))
    rows, by_key = [], {}
    for model, c, tr, orr in pair_list:
        month = newest.get(model)
        if month is None:
            continue
        p = scale(profiles[(model, month)]["p95"], tr, orr)
        s = size(c.spec, c.setup, p)
        calls, hours = peaks.get(model, (0, 0))
        needed = max(1, math.ceil(calls / s.max_concurrent_calls)) if s.fits else None
        row = {
            "deployment": c.deployment, "from_model": model, "to_model": c.model_key,
            "window_start": None if end is None else end - dt.timedelta(days=PEAK_WINDOW_DAYS - 1), "window_end": end,
            "hours": hours, "peak_calls": calls, "profile_month": month,
            "prompt_tokens": p.prompt_tokens, "thinking_tokens": p.thinking_tokens, "output_tokens": p.output_tokens,
            "kv_gb_per_call": s.kv_gb_per_call_allocated, "max_concurrent_calls": s.max_concurrent_calls,
            "fits": s.fits, "deployments_needed": needed, "build_id": build_id,
        }
        rows.append(row)
        by_key[(model, c.deployment)] = row
    return rows, by_key


def peak_capacity_by_key(con, pair_list, profiles, build_id) -> dict[tuple[str, str], dict[str, Any]]:
    """``(from_model, deployment) -> marts.peak_capacity's row``, read from that table (built earlier in
    the run); computed (``peak_capacity_rows`` on ``profiles``, else call_profiles) only where the build
    has no such table (a builder called on its own, as by a test)."""
    if not _has(con, PEAK_CAPACITY):
        return peak_capacity_rows(con, pair_list, call_profiles(con) if profiles is None else profiles, build_id)[1]
    return {(r["from_model"], r["deployment"]): r for r in _records(con, f"SELECT * FROM {PEAK_CAPACITY}")}


def build_peak_capacity(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(PEAK_CAPACITY)
    _, build_id = _settings(con)
    cands = candidates(con, built.skipped)
    rows, _ = peak_capacity_rows(con, pairs(con, cands), call_profiles(con), build_id)
    built.rows = _write(con, PEAK_CAPACITY, rows, PEAK_CAPACITY_SCHEMA)
    return _finish(built)


def _setting_float(con: duckdb.DuckDBPyConnection, column: str, default: float) -> float:
    cols = {r[0] for r in con.execute("DESCRIBE ops.settings").fetchall()}
    if column not in cols:
        return default
    value = con.execute(f"SELECT {column} FROM ops.settings").fetchall()[0][0]
    return default if value is None else float(value)


_BUSIEST_SQL = """
WITH c AS (
    SELECT model, request_id,
           ts - to_microseconds(CAST(round(coalesce(greatest(latency_ms, 0), 0) * 1000) AS BIGINT)) AS started,
           coalesce(thinking_tokens, 0) AS thinking_tokens, coalesce(output_tokens, 0) AS output_tokens
    FROM core.calls WHERE day BETWEEN ? AND ?
),
h AS (SELECT model, date_trunc('hour', started) AS hour, count(*) AS calls FROM c GROUP BY ALL),
top AS (
    SELECT model, hour, calls FROM h
    QUALIFY row_number() OVER (PARTITION BY model ORDER BY calls DESC, hour DESC) <= ?
)
SELECT c.model, t.hour, t.calls AS hour_calls, epoch(c.started) - epoch(t.hour) AS t,
       c.thinking_tokens, c.output_tokens
FROM c JOIN top t ON t.model = c.model AND date_trunc('hour', c.started) = t.hour
ORDER BY c.model, t.hour, c.started, c.request_id
"""


def busiest_hours(con: duckdb.DuckDBPyConnection, end: dt.date) -> dict[str, list[dict[str, Any]]]:
    """model -> its BUSIEST_HOURS hours with the most calls started in the 30 days ending ``end``
    (ties: the later hour): per hour the start second within it and the thinking / output tokens of
    each call (numpy arrays, in start order)."""
    cols = con.execute(_BUSIEST_SQL, [end - dt.timedelta(days=PEAK_WINDOW_DAYS - 1), end, BUSIEST_HOURS]).fetchnumpy()
    if len(cols["model"]) == 0:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    keys = list(zip(cols["model"], cols["hour"], strict=True))
    bounds = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        out.setdefault(str(cols["model"][a]), []).append({
            "hour": cols["hour"][a].astype("datetime64[us]").item(), "calls": int(cols["hour_calls"][a]),
            "t": cols["t"][a:b].astype(float)[:MAX_CALLS],
            "thinking": cols["thinking_tokens"][a:b].astype(float)[:MAX_CALLS],
            "output": cols["output_tokens"][a:b].astype(float)[:MAX_CALLS]})
    return out


def capacity_plan_rows(con, pair_list, profiles, build_id) -> tuple[list[dict[str, Any]], dict[tuple[str, str], dict]]:
    """marts.capacity_plan (module docstring of models/capacity.py for the queue; one row per pair)."""
    peak = peak_capacity_by_key(con, pair_list, profiles, build_id)
    end = con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]
    target = _setting_float(con, "capacity_max_queue_seconds", DEFAULT_MAX_QUEUE_SECONDS)
    # a build without core.calls has no replay: the plan is the peak sizing and says so (sizing_basis
    # 'peak_concurrency (no replay)'); a Spark run brings the replay window of core.calls over
    # (warehouse/spark/economics.py), so its plan equals DuckDB's
    replayable = _has(con, "core.calls")
    hours = busiest_hours(con, end) if end is not None and replayable else {}
    newest: dict[str, dt.date] = {}
    for model_key, month in profiles:
        newest[model_key] = max(month, newest.get(model_key, month))
    rows, by_key = [], {}
    for model, c, tr, orr in pair_list:
        cap = peak.get((model, c.deployment))
        if cap is None:
            continue
        prof = {k: scale(v, tr, orr) for k, v in profiles[(model, newest[model])].items()}
        slots = cap["max_concurrent_calls"] if cap["fits"] else 0
        groups = hours.get(model, [])
        row: dict[str, Any] = {
            "deployment": c.deployment, "from_model": model, "to_model": c.model_key,
            "window_start": cap["window_start"], "window_end": cap["window_end"],
            "hours_replayed": len(groups), "calls_replayed": int(sum(len(g["t"]) for g in groups)),
            "busiest_hour": groups[0]["hour"] if groups else None,
            "busiest_hour_calls": max((g["calls"] for g in groups), default=0),
            "slots_per_replica": slots, "max_queue_seconds": target,
            "peak_deployments_needed": cap["deployments_needed"], "fits": cap["fits"], "build_id": build_id,
        }
        spt = None
        if slots >= 1 and replayable:
            est = estimate_throughput(c.spec, c.setup, prof["p50"], batch=slots)
            cpm = float(c.calls_per_minute) if c.calls_per_minute is not None else est.calls_per_minute
            if est.decode is not None and cpm > 0:
                k = est.calls_per_minute / cpm  # calibrated to deployments.csv's calls_per_minute when given
                spt, prefill = est.decode.seconds * k, slots * est.prefill_seconds_per_call * k
        else:
            cpm = None
        row["calls_per_minute"] = cpm
        if spt is not None:
            replay = [(g["t"], (g["thinking"] * tr + g["output"] * orr) * spt + prefill) for g in groups]
            service = np.concatenate([s for _, s in replay]) if replay else np.array([])
            r95, d95 = replicas_for(replay, slots, target, 0.95)
            r99, d99 = replicas_for(replay, slots, target, 0.99)
            planned = max(r95, cap["deployments_needed"] or 1)
            row |= {
                "calls_per_minute": cpm, "seconds_per_generated_token": spt,
                "mean_service_seconds": float(service.mean()) if len(service) else None,
                "p95_service_seconds": float(np.quantile(service, 0.95, method="inverted_cdf")) if len(service) else None,
                "p99_service_seconds": float(np.quantile(service, 0.99, method="inverted_cdf")) if len(service) else None,
                "replicas_p95": r95, "p95_queue_seconds": d95, "replicas_p99": r99, "p99_queue_seconds": d99,
                "replicas_needed": r95, "gpus_needed": r95 * c.setup.gpus,
                # the M/G/c (Allen-Cunneen, Poisson arrivals at the busiest hour's rate) cross-check
                "mgc_replicas_p95": mgc_replicas_for(max((len(t_) for t_, _ in replay), default=0) / 3600.0,
                                                     service, slots, target, 0.95),
                "planned_replicas": planned, "planned_gpus": planned * c.setup.gpus,
                "sizing_basis": "queueing" if r95 > (cap["deployments_needed"] or 1) else "peak_concurrency",
            }
        if spt is None and cap["fits"]:
            row |= {"planned_replicas": cap["deployments_needed"],
                    "planned_gpus": (cap["deployments_needed"] or 1) * c.setup.gpus,
                    "sizing_basis": "peak_concurrency" if replayable else "peak_concurrency (no replay)"}
        rows.append(row)
        by_key[(model, c.deployment)] = row
    return rows, by_key


def capacity_plan_by_key(con, pair_list, build_id) -> dict[tuple[str, str], dict[str, Any]]:
    """``(from_model, deployment) -> {'replicas_needed': ...}`` of marts.capacity_plan, read from that table
    (built earlier in the run); replayed (``capacity_plan_rows``) only where the build has no such table."""
    if not _has(con, CAPACITY_PLAN):
        return capacity_plan_rows(con, pair_list, call_profiles(con), build_id)[1]
    return {(r["from_model"], r["deployment"]): r
            for r in _records(con, f"SELECT from_model, deployment, replicas_needed FROM {CAPACITY_PLAN}")}


def build_capacity_plan(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(CAPACITY_PLAN)
    _, build_id = _settings(con)
    cands = candidates(con, built.skipped)
    rows, _ = capacity_plan_rows(con, pairs(con, cands), call_profiles(con), build_id)
    built.rows = _write(con, CAPACITY_PLAN, rows, CAPACITY_PLAN_SCHEMA)
    return _finish(built)


def substitution_breakeven_rows(con, cands, hours, build_id, skipped) -> list[dict[str, Any]]:
    profiles = call_profiles(con)
    months: dict[str, list[tuple[dt.date, int, Decimal, Decimal, str]]] = {}
    for model_key, month, calls, spend, list_spend, basis in api_months(con):
        months.setdefault(model_key, []).append((month, int(calls), Decimal(spend), Decimal(list_spend), basis))
    used = used_offers(con, cands, hours, build_id)
    rows = []
    for src, c, tr, orr in [p for p in pairs(con, cands) if p[0] != p[1].model_key]:
        if c.deployment not in used:
            skipped.append(f"substitution_breakeven {src} -> {c.deployment}: no price for {c.setup.gpu.name}")
            continue
        price, source, offer = used[c.deployment]
        monthly = self_host_usd_per_month(c.setup.gpus, Decimal(price), hours)
        for month, calls, spend, list_spend, basis in months.get(src, []):
            prof = {k: scale(v, tr, orr) for k, v in profiles[(src, month)].items()}
            fits = size(c.spec, c.setup, prof["p95"]).fits
            cpm = float(c.calls_per_minute) if c.calls_per_minute is not None else \
                estimate_throughput(c.spec, c.setup, prof["p50"]).calls_per_minute
            b = evaluate(api_calls=calls, api_spend_usd=spend, self_host_usd_per_month=monthly,
                         capacity_calls_per_month=capacity_calls_per_month(cpm, hours), fits=fits)
            rows.append({
                "month": month, "from_model": src, "to_model": c.model_key, "deployment": c.deployment,
                "thinking_ratio": tr, "output_ratio": orr, "gpu_type": c.setup.gpu.name, "gpus": c.setup.gpus,
                "precision": c.setup.precision, "api_calls": calls, "api_spend_usd": quantize_usd(spend),
                "api_cost_per_call_usd": quantize_usd(b.api_cost_per_call_usd),
                "usd_per_gpu_hour": quantize_usd(Decimal(price)), "usd_per_gpu_hour_source": source, "offer": offer,
                "self_host_usd_per_month": quantize_usd(monthly), "calls_per_minute": cpm,
                "capacity_calls_per_month": float(b.capacity_calls_per_month),
                "deployments_needed": b.deployments_needed,
                "breakeven_calls_per_month": None if b.breakeven_calls_per_month is None else float(b.breakeven_calls_per_month),
                "breakeven_api_spend_usd": None if b.breakeven_api_spend_usd is None else quantize_usd(b.breakeven_api_spend_usd),
                "savings_usd": None if b.savings_usd is None else quantize_usd(b.savings_usd),
                "fits": fits, "verdict": b.verdict,
                "api_spend_list_usd": quantize_usd(list_spend), "api_price_basis": basis, "build_id": build_id,
            })
    return rows


def build_substitution_breakeven(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(SUBSTITUTION_BREAKEVEN)
    hours, build_id = _settings(con)
    rows = substitution_breakeven_rows(con, candidates(con, built.skipped), hours, build_id, built.skipped)
    built.rows = _write(con, SUBSTITUTION_BREAKEVEN, rows, SUBSTITUTION_BREAKEVEN_SCHEMA)
    return _finish(built)


# --------------------------------------------------------------------------- the outlook
def first_month(months: list[tuple[dt.date, Decimal | None]], threshold: Decimal) -> dt.date | None:
    """The first month whose value reaches ``threshold`` (>=), else None."""
    for month, value in months:
        if value is not None and value >= threshold:
            return month
    return None


def crossing(forecast: list[dict[str, Any]], threshold: Decimal, last_full: tuple[dt.date, Decimal] | None,
             feasible: bool) -> dict[str, Any]:
    """Expected / earliest / latest crossing months and the status (module docstring)."""
    none = {"crossing_month_expected": None, "crossing_month_earliest": None, "crossing_month_latest": None}
    if not feasible:
        return none | {"status": "infeasible"}
    if last_full is not None and last_full[1] >= threshold:
        m = last_full[0]
        return {"crossing_month_expected": m, "crossing_month_earliest": m, "crossing_month_latest": m, "status": "crossed"}
    if not forecast:
        return none | {"status": "no_forecast"}
    out = {
        "crossing_month_expected": first_month([(r["month"], r["forecast_usd"]) for r in forecast], threshold),
        "crossing_month_earliest": first_month([(r["month"], r["hi95_usd"]) for r in forecast], threshold),
        "crossing_month_latest": first_month([(r["month"], r["lo95_usd"]) for r in forecast], threshold),
    }
    out["status"] = "within_horizon" if out["crossing_month_expected"] is not None else "not_within_horizon"
    return out


def breakeven_outlook_rows(con: duckdb.DuckDBPyConnection, build_id: str | None, skipped: list[str]) -> list[dict[str, Any]]:
    hours, _ = _settings(con)
    cands = candidates(con, skipped)
    pair_list = pairs(con, cands)
    # the peak, the queueing plan and the offers: their marts' tables, built before this one
    capacity = peak_capacity_by_key(con, pair_list, None, build_id)
    plan = capacity_plan_by_key(con, pair_list, build_id)
    used = used_offers(con, cands, hours, build_id)
    fc: dict[str, list[dict[str, Any]]] = {}
    fc_basis: dict[str, str] = {}
    if _has(con, SPEND_FORECAST):
        for r in _records(con, "SELECT scope_value AS model, month, forecast_usd, hi95_usd, lo95_usd, api_price_basis "
                               f"FROM {SPEND_FORECAST} WHERE scope = 'model' AND serving = 'api' ORDER BY month"):
            fc.setdefault(r["model"], []).append(r)
            fc_basis[r["model"]] = r["api_price_basis"]
    last_day = con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]
    last_full: dict[str, tuple[dt.date, Decimal]] = {}
    basis: dict[str, str] = {}  # the model's api_price_basis: of its spend forecast, else of its last full month
    if last_day is not None:
        full = month_start(last_day) if last_day == month_end(last_day) else month_start(month_start(last_day) - dt.timedelta(days=1))
        for model, month, _calls, spend, _list, b in api_months(con):
            if month == full:
                last_full[model] = (full, Decimal(spend))
                basis[model] = b
    rows = []
    for model, c, tr, orr in pair_list:
        cap = capacity.get((model, c.deployment))
        if c.deployment not in used:
            skipped.append(f"breakeven_outlook {model} -> {c.deployment}: no usd_per_gpu_hour and no on-demand offer")
            continue
        if cap is None:
            skipped.append(f"breakeven_outlook {model} -> {c.deployment}: no call profile of {model}")
            continue
        price, _, offer = used[c.deployment]
        one = self_host_usd_per_month(c.setup.gpus, Decimal(price), hours)
        queue = plan.get((model, c.deployment), {}).get("replicas_needed")
        needed = max(cap["deployments_needed"] or 1, queue or 1)  # the larger of the peak and the queueing plan
        threshold = quantize_usd(one * needed)
        cross = crossing(fc.get(model, []), threshold, last_full.get(model), cap["fits"])
        expected = cross["crossing_month_expected"]
        first_fc = fc[model][0]["month"] if fc.get(model) else None
        rows.append({
            "model": model, "to_model": c.model_key, "deployment": c.deployment, "threshold_usd_per_month": threshold,
            **cross,
            "months_until_expected": None if expected is None or first_fc is None or cross["status"] == "crossed"
            else (expected.year - first_fc.year) * 12 + expected.month - first_fc.month,
            "deployments_needed": needed if cap["fits"] else None,
            "peak_deployments_needed": cap["deployments_needed"], "queue_replicas_needed": queue,
            "self_host_usd_per_month": quantize_usd(one),
            "usd_per_gpu_hour": quantize_usd(Decimal(price)), "offer": offer,
            "last_full_month": last_full.get(model, (None, None))[0],
            "last_full_month_api_spend_usd": None if model not in last_full else quantize_usd(last_full[model][1]),
            "thinking_ratio": tr, "output_ratio": orr,
            "api_price_basis": fc_basis.get(model, basis.get(model)), "build_id": build_id,
        })
    return rows


def build_breakeven_outlook(con: duckdb.DuckDBPyConnection) -> Built:
    built = Built(BREAKEVEN_OUTLOOK)
    _, build_id = _settings(con)
    built.rows = _write(con, BREAKEVEN_OUTLOOK, breakeven_outlook_rows(con, build_id, built.skipped), BREAKEVEN_OUTLOOK_SCHEMA)
    return _finish(built)
