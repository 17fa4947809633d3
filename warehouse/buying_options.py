"""``marts.buying_options``: per provider x model, the three ways to buy its calls side by side
(issue 25 item 5; docs/economics.md "Three ways to buy").

A Python mart (pipelines/defs/economics_assets.py) because two of its inputs are Python marts built
after the SQL tables: ``marts.self_host_breakeven`` and ``marts.spend_forecast``. The volumes are
gathered in SQL; the arithmetic per model row (a few rows) is Decimal, as in warehouse/economics.py.

* **Observed volume**: the API calls (``core.call_costs``, serving 'api', provisioned ones included)
  of the trailing ``[alert] window_days`` (ops.settings ``alert_window_days``) ending on the last day
  with API calls, scaled to a month: ``x hours_per_month / (24 x window_days)`` (as the alert does).
  Model = the family key ``core.cloud_model_key`` ('claude-sonnet-4-5'), provider = ``core.provider_key``.
* **On demand**: the calls' ``on_demand_cost_usd`` (what each costs per token on its basis; for a
  provisioned call what it would have cost on demand), scaled the same way. ``on_demand_usd_per_call``
  and ``on_demand_usd_per_mtok`` are the window's priced calls' averages (unpriced calls left out,
  counted in ``on_demand_unpriced_calls``).
* **Provisioned**: ``usd_per_month`` of ``marts.commitments`` (a fixed monthly cost): a catalog offer
  of the last day's month, else the latest catalog offer, else the latest invoice month; model NULL
  commitments (Azure PTU meters) name no model and are not compared here.
* **Self-hosted**: the cheapest deployment that fits (``fits``) in the newest month of
  ``marts.self_host_breakeven`` for the model, ``self_host_usd_per_month`` x the deployments the
  volume needs (``max(1, ceil(calls_per_month / capacity_calls_per_month))``).
* **Forecast**: the first month after the last day's month in ``marts.spend_forecast`` (scope 'model',
  serving 'api', summed over the model keys of the family); ``forecast_growth`` = its
  ``forecast_usd`` / the family's paid API spend of the window scaled to a month; the forecast volume
  and on-demand cost are the observed ones x growth (provisioned traffic is assumed to grow like the
  paid traffic). NULL where there is no forecast or no paid spend.
* **Cheapest**: the option with the lowest monthly cost among those known (ties: on_demand,
  provisioned, self_hosted).
* **Crossovers** (whole numbers, rounded up: the first volume at which the fixed option costs no
  more): ``provisioned_crossover_calls_per_month = ceil(provisioned_usd_per_month /
  on_demand_usd_per_call)``, tokens the same over the per-token rate; above it on demand costs more
  than the commitment. ``self_host_crossover_*`` likewise with one deployment's monthly cost (the
  ``breakeven_calls_per_month`` of marts.self_host_breakeven at this window's rate). Provisioned and
  self-hosted are both fixed: the cheaper of the two is cheaper at every volume either can carry
  (thinktax does not know a model unit's throughput, so the provisioned figures assume the committed
  units carry the volume).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa

from models.breakeven import quantize_usd
from warehouse.economics import USD6, Built, _finish, _records, _write
from warehouse.parts import has_table

BUYING_OPTIONS = "marts.buying_options"
# what it reads (warehouse/economics.py INPUTS says why declared here): two Python marts' tables among them
INPUTS: dict[str, frozenset[str]] = {
    BUYING_OPTIONS: frozenset({"ops.settings", "core.call_costs", "marts.commitments", "marts.self_host_breakeven",
                               "marts.spend_forecast"}),
}
MTOK = Decimal(1_000_000)

BUYING_OPTIONS_SCHEMA = pa.schema([
    ("provider", pa.string()), ("model", pa.string()),
    ("window_first_day", pa.date32()), ("window_last_day", pa.date32()), ("window_days", pa.int32()),
    ("calls_per_month", pa.float64()), ("tokens_per_month", pa.float64()),
    ("on_demand_usd_per_call", USD6), ("on_demand_usd_per_mtok", USD6), ("on_demand_unpriced_calls", pa.int64()),
    ("on_demand_usd_per_month", USD6),
    ("provisioned_usd_per_month", USD6), ("provisioned_source", pa.string()), ("provisioned_month", pa.date32()),
    ("self_hosted_usd_per_month", USD6), ("self_host_deployment", pa.string()),
    ("self_host_deployments_needed", pa.int64()), ("self_host_capacity_calls_per_month", pa.int64()),
    ("cheapest", pa.string()),
    ("forecast_month", pa.date32()), ("forecast_growth", pa.float64()),
    ("calls_per_month_forecast", pa.float64()), ("tokens_per_month_forecast", pa.float64()),
    ("on_demand_usd_per_month_forecast", USD6), ("self_hosted_usd_per_month_forecast", USD6),
    ("cheapest_forecast", pa.string()),
    ("provisioned_crossover_calls_per_month", pa.int64()), ("provisioned_crossover_tokens_per_month", pa.int64()),
    ("self_host_crossover_calls_per_month", pa.int64()), ("self_host_crossover_tokens_per_month", pa.int64()),
    ("build_id", pa.string()),
])

_WINDOW_SQL = """
WITH s AS (SELECT alert_window_days AS window_days FROM ops.settings),
last AS (SELECT max(day) AS last_day FROM core.call_costs WHERE serving = 'api'),
calls AS (
    SELECT core.provider_key(c.provider) AS provider, core.cloud_model_key(c.model) AS model, c.on_demand_cost_usd,
           c.cost_usd, c.uncached_input_tokens + c.cached_input_tokens + c.cache_write_tokens + c.thinking_tokens
             + c.output_tokens AS tokens
    FROM core.call_costs c, last, s
    WHERE c.serving = 'api' AND c.day <= last.last_day AND c.day > last.last_day - s.window_days
)
SELECT provider, model,
       count(*) FILTER (WHERE on_demand_cost_usd IS NOT NULL) AS priced_calls,
       count(*) FILTER (WHERE on_demand_cost_usd IS NULL) AS unpriced_calls,
       count(*) AS calls,
       sum(tokens) AS tokens,
       sum(tokens) FILTER (WHERE on_demand_cost_usd IS NOT NULL) AS priced_tokens,
       coalesce(sum(on_demand_cost_usd), 0) AS on_demand_usd,
       coalesce(sum(cost_usd), 0) AS paid_usd
FROM calls
WHERE model IS NOT NULL
GROUP BY ALL
ORDER BY provider, model
"""


def _ceil(x: Decimal | None) -> int | None:
    return None if x is None else math.ceil(x)


def _cheapest(options: dict[str, Decimal | None]) -> str | None:
    known = [(v, i, k) for i, (k, v) in enumerate(options.items()) if v is not None]
    return min(known)[2] if known else None


def buying_options_rows(con: duckdb.DuckDBPyConnection, skipped: list[str]) -> list[dict[str, Any]]:
    hours, window_days, build_id = con.execute(
        "SELECT hours_per_month, alert_window_days, build_id FROM ops.settings").fetchall()[0]
    hours = Decimal(str(hours))
    last_day: dt.date | None = con.execute("SELECT max(day) FROM core.call_costs WHERE serving = 'api'").fetchall()[0][0]
    if last_day is None:
        skipped.append("buying_options: no API calls")
        return []
    first_day = last_day - dt.timedelta(days=int(window_days) - 1)
    scale = hours / (24 * Decimal(int(window_days)))  # window -> a month of hours_per_month hours
    window = {(r["provider"], r["model"]): r for r in _records(con, _WINDOW_SQL)}

    provisioned: dict[tuple[str, str], dict[str, Any]] = {}
    if has_table(con, "marts.commitments"):
        month = last_day.replace(day=1)
        for r in _records(con, """
                SELECT provider, model, source, month, usd_per_month FROM marts.commitments
                WHERE model IS NOT NULL AND usd_per_month IS NOT NULL
                QUALIFY row_number() OVER (PARTITION BY provider, model
                                           ORDER BY source = 'catalog_offer' AND month = ? DESC,
                                                    source = 'catalog_offer' DESC, month DESC, usd_per_month) = 1""",
                          [month]):
            provisioned[(r["provider"], r["model"])] = r

    self_host: dict[str, dict[str, Any]] = {}
    if has_table(con, "marts.self_host_breakeven"):
        for r in _records(con, """
                SELECT core.cloud_model_key(model) AS model, deployment, self_host_usd_per_month, capacity_calls_per_month
                FROM marts.self_host_breakeven
                WHERE fits AND self_host_usd_per_month IS NOT NULL AND capacity_calls_per_month > 0
                QUALIFY row_number() OVER (PARTITION BY core.cloud_model_key(model)
                                           ORDER BY month DESC, self_host_usd_per_month, deployment) = 1"""):
            self_host[r["model"]] = r

    growth: dict[str, tuple[dt.date, Decimal]] = {}
    if has_table(con, "marts.spend_forecast"):
        next_month = (last_day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        paid: dict[str, Decimal] = {}
        for r in window.values():
            paid[r["model"]] = paid.get(r["model"], Decimal(0)) + Decimal(r["paid_usd"])
        for model, fc in con.execute("""
                SELECT core.cloud_model_key(scope_value) AS model, sum(forecast_usd)
                FROM marts.spend_forecast
                WHERE scope = 'model' AND serving = 'api' AND month = ? AND forecast_usd IS NOT NULL
                GROUP BY ALL""", [next_month]).fetchall():
            observed = paid.get(model, Decimal(0)) * scale
            if observed > 0 and fc is not None:
                growth[model] = (next_month, Decimal(fc) / observed)
            else:
                skipped.append(f"buying_options {model}: no paid API spend in the window, so no forecast growth")

    rows: list[dict[str, Any]] = []
    for key in sorted(set(window) | set(provisioned)):
        provider, model = key
        w = window.get(key)
        calls = Decimal(w["calls"]) if w else Decimal(0)
        tokens = Decimal(w["tokens"] or 0) if w else Decimal(0)
        od = Decimal(w["on_demand_usd"]) if w else Decimal(0)
        priced_calls = Decimal(w["priced_calls"]) if w else Decimal(0)
        priced_tokens = Decimal(w["priced_tokens"] or 0) if w else Decimal(0)
        per_call = od / priced_calls if priced_calls else None
        per_token = od / priced_tokens if priced_tokens else None
        calls_pm, tokens_pm, od_pm = calls * scale, tokens * scale, od * scale
        p = provisioned.get(key)
        prov = Decimal(p["usd_per_month"]) if p else None
        s = self_host.get(model)
        one = Decimal(s["self_host_usd_per_month"]) if s else None
        capacity = Decimal(s["capacity_calls_per_month"]) if s else None
        needed = max(1, math.ceil(calls_pm / capacity)) if s else None
        sh = one * needed if s else None
        g = growth.get(model)
        od_fc = od_pm * g[1] if g else None
        calls_fc = calls_pm * g[1] if g else None
        needed_fc = max(1, math.ceil(calls_fc / capacity)) if g and s else None
        sh_fc = one * needed_fc if needed_fc else None
        rows.append({
            "provider": provider, "model": model, "window_first_day": first_day, "window_last_day": last_day,
            "window_days": int(window_days),
            "calls_per_month": float(calls_pm), "tokens_per_month": float(tokens_pm),
            "on_demand_usd_per_call": None if per_call is None else quantize_usd(per_call),
            "on_demand_usd_per_mtok": None if per_token is None else quantize_usd(per_token * MTOK),
            "on_demand_unpriced_calls": int(w["unpriced_calls"]) if w else 0,
            "on_demand_usd_per_month": quantize_usd(od_pm),
            "provisioned_usd_per_month": None if prov is None else quantize_usd(prov),
            "provisioned_source": p["source"] if p else None, "provisioned_month": p["month"] if p else None,
            "self_hosted_usd_per_month": None if sh is None else quantize_usd(sh),
            "self_host_deployment": s["deployment"] if s else None, "self_host_deployments_needed": needed,
            "self_host_capacity_calls_per_month": int(capacity) if capacity is not None else None,
            "cheapest": _cheapest({"on_demand": od_pm, "provisioned": prov, "self_hosted": sh}),
            "forecast_month": g[0] if g else None, "forecast_growth": float(g[1]) if g else None,
            "calls_per_month_forecast": None if calls_fc is None else float(calls_fc),
            "tokens_per_month_forecast": float(tokens_pm * g[1]) if g else None,
            "on_demand_usd_per_month_forecast": None if od_fc is None else quantize_usd(od_fc),
            "self_hosted_usd_per_month_forecast": None if sh_fc is None else quantize_usd(sh_fc),
            "cheapest_forecast": _cheapest({"on_demand": od_fc, "provisioned": prov, "self_hosted": sh_fc}) if g else None,
            "provisioned_crossover_calls_per_month": _ceil(prov / per_call) if prov is not None and per_call else None,
            "provisioned_crossover_tokens_per_month": _ceil(prov / per_token) if prov is not None and per_token else None,
            "self_host_crossover_calls_per_month": _ceil(one / per_call) if one is not None and per_call else None,
            "self_host_crossover_tokens_per_month": _ceil(one / per_token) if one is not None and per_token else None,
            "build_id": build_id,
        })
    return rows


def build_buying_options(con: duckdb.DuckDBPyConnection) -> Built:
    """(Re)create ``marts.buying_options``; returns its row count and what was left out."""
    built = Built(BUYING_OPTIONS)
    built.rows = _write(con, BUYING_OPTIONS, buying_options_rows(con, built.skipped), BUYING_OPTIONS_SCHEMA)
    return _finish(built)
