"""The economics marts, ``marts.gpu_sizing`` and ``marts.self_host_breakeven``, from the warehouse.

Inputs (all read from the build's DuckDB connection): the model catalog (``core.dim_models``:
a ``config.json`` or ``params_total_b`` + ``kv_bytes_per_token_bf16``), the candidate
deployments (``core.dim_deployments``), observed call profiles (``core.call_profiles``), API
volume and spend (``core.call_costs``), GPU prices (``core.gpu_price_versions``) and
``hours_per_month`` (``ops.settings``). The arithmetic is the pure ``models/`` package
(``docs/economics.md`` section 10); this module only reads, loops and writes.

Resolving a deployment (a row of deployments.csv):

* model: ``dim_deployments.model_key = dim_models.model_key``; the spec comes from the config
  (``ModelSpec.from_config``, catalog params/weights override), else from the catalog
  (``ModelSpec.from_catalog``, needs ``params_total_b`` and ``kv_bytes_per_token_bf16``);
* GPU: ``models.gpus.gpu_spec(gpu_type)``; ``gpu_mem_gb`` replaces the table's memory;
* precision: the deployment's, else ``bf16`` (a checkpoint's native precision);
* ``usd_per_gpu_hour``: the deployment's, else the cheapest on-demand price now in force
  (``effective_to IS NULL``: the newest sheet of each series) for its provider and GPU (names
  compared after ``normalize_gpu_name``), over all regions and instance types;
* ``calls_per_minute``: the deployment's, else ``estimate_throughput`` on the month's p50
  profile (memory-bound roofline, ``models/throughput.py``).

A deployment that cannot be resolved (model not in the catalog, no config and no catalog KV
figure, unknown GPU, no price) is left out with a logged reason, returned in ``skipped``.

``marts.gpu_sizing`` (model x gpu_type x gpus x precision x profile): every distinct set-up of
the deployments, sized on its model's p50 and p95 profiles of the newest month with calls (the
``month`` column says which); a model without calls has no profile and no rows.

``marts.self_host_breakeven`` (month x model x deployment): for every month with priced API
calls of the deployment's model, ``models.breakeven.evaluate`` with the observed API calls and
spend (unpriced calls, see ``marts.unpriced_usage``, are left out of both), the month's p95
profile deciding ``fits`` and the p50 profile the estimated capacity. ``deployments_needed`` and
``savings_usd`` are NULL where the verdict is ``infeasible``. ``offer`` names the price sheet row a
sheet-priced deployment took (``provider/region/instance_type/pricing``: the cheapest on-demand one
of its provider whose instance holds its GPUs, as ``marts.deployment_offers`` marks it), NULL where deployments.csv gives the price. Money is DECIMAL(18,6) (rounded
half-even); ``breakeven_calls_per_month`` is computed from the unrounded cost per call. The two
counts of calls are integers: ``capacity_calls_per_month`` rounded down (a deployment cannot
serve part of a call), ``breakeven_calls_per_month`` rounded up (the first whole volume at which
self-hosting costs no more than the API).

The API spend is at the invoice's net rate where a cloud invoice shows one (issue 25 item 3,
``net_rate_sql``): each provider's calls of a model family take ``marts.effective_rates.net_to_list``
of their month, else of the latest earlier invoice month (a month's invoice arrives after it
ends: the running month and the forecast keep the last rate seen); calls before the first
invoice month and providers without a cloud invoice stay at list. ``api_spend_list_usd`` keeps the
list figure and ``api_price_basis`` says which it is: ``'invoice_net'`` (every provider's calls of
the model-month took an invoice rate), ``'partly_invoice_net'`` or ``'list'``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa

from models.breakeven import capacity_calls_per_month, evaluate, quantize_usd, self_host_usd_per_month
from models.gpus import GpuSpec, UnknownGpuError, gpu_spec, normalize_gpu_name
from models.sizing import Deployment, Sizing, size
from models.spec import CallProfile, ModelSpec
from warehouse.incremental import has_table
from models.throughput import estimate_throughput
from models.weights import BYTES_PER_PARAM

log = logging.getLogger(__name__)

GPU_SIZING = "marts.gpu_sizing"
SELF_HOST_BREAKEVEN = "marts.self_host_breakeven"
DEPLOYMENT_OFFERS = "marts.deployment_offers"  # built in warehouse/outlook.py; the break-even reads it

# What each Python mart reads (issue 43 item 2): the one declaration of a mart's inputs, here and next
# to the builders of warehouse/outlook.py, buying_options.py and anomalies.py (their INPUTS). Dagster's
# deps (pipelines/defs/economics_assets.py) and the core tables a Spark run brings into the DuckDB build
# (warehouse/spark/economics.py) are taken from them. A mart that needs another Python mart's figures
# reads its table (built before it in the run) and lists it, rather than computing them again.
# (marts.effective_rates: the invoice's net rates of ``net_rate_sql``.)
INPUTS: dict[str, frozenset[str]] = {
    GPU_SIZING: frozenset({"ops.settings", "core.call_profiles", "core.dim_models", "core.dim_deployments"}),
    SELF_HOST_BREAKEVEN: frozenset({"ops.settings", "core.call_profiles", "core.dim_models", "core.dim_deployments",
                                    "core.gpu_price_versions", "core.call_costs", "marts.effective_rates",
                                    DEPLOYMENT_OFFERS}),
}
DEFAULT_PRECISION = "bf16"
PROFILES = ("p50", "p95")

USD6 = pa.decimal128(18, 6)

GPU_SIZING_SCHEMA = pa.schema([
    ("model", pa.string()), ("gpu_type", pa.string()), ("gpus", pa.int32()), ("precision", pa.string()),
    ("profile", pa.string()), ("month", pa.date32()),
    ("prompt_tokens", pa.int64()), ("thinking_tokens", pa.int64()), ("output_tokens", pa.int64()),
    ("kv_dtype", pa.string()), ("weights_gb", pa.float64()), ("kv_bytes_per_token", pa.float64()),
    ("kv_gb_per_call", pa.float64()), ("kv_gb_per_call_allocated", pa.float64()), ("kv_budget_gb", pa.float64()),
    ("max_concurrent_calls", pa.int64()), ("fits", pa.bool_()), ("build_id", pa.string()),
])

SELF_HOST_BREAKEVEN_SCHEMA = pa.schema([
    ("month", pa.date32()), ("model", pa.string()), ("deployment", pa.string()), ("provider", pa.string()),
    ("gpu_type", pa.string()), ("gpus", pa.int32()), ("precision", pa.string()),
    ("api_calls", pa.int64()), ("api_spend_usd", USD6), ("api_cost_per_call_usd", USD6),
    ("usd_per_gpu_hour", USD6), ("usd_per_gpu_hour_source", pa.string()),
    ("self_host_usd_per_month", USD6),
    ("calls_per_minute", pa.float64()), ("calls_per_minute_source", pa.string()),
    ("capacity_calls_per_month", pa.int64()), ("deployments_needed", pa.int64()),
    ("breakeven_calls_per_month", pa.int64()), ("breakeven_api_spend_usd", USD6),
    ("breakeven_within_capacity", pa.bool_()), ("savings_usd", USD6),
    ("fits", pa.bool_()), ("verdict", pa.string()), ("offer", pa.string()),
    ("api_spend_list_usd", USD6), ("api_price_basis", pa.string()), ("build_id", pa.string()),
])


@dataclass(frozen=True)
class Candidate:
    """A deployments.csv row resolved to a model spec and a GPU set-up."""

    deployment: str
    model: str          # catalog name (models.csv)
    model_key: str      # name calls are matched by (core.model_key)
    provider: str | None
    spec: ModelSpec
    setup: Deployment
    calls_per_minute: float | None
    usd_per_gpu_hour: Decimal | None


@dataclass
class Built:
    """What a mart build wrote: its row count and the deployments/models it left out, and why."""

    table: str
    rows: int = 0
    skipped: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading inputs
def _records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _settings(con: duckdb.DuckDBPyConnection) -> tuple[Decimal, str | None]:
    hours, build_id = con.execute("SELECT hours_per_month, build_id FROM ops.settings").fetchone()
    return Decimal(str(hours)), build_id


def model_specs(con: duckdb.DuckDBPyConnection, skipped: list[str]) -> dict[str, tuple[str, ModelSpec]]:
    """``model_key -> (catalog name, ModelSpec)`` for every catalog model that can be sized."""
    out: dict[str, tuple[str, ModelSpec]] = {}
    rows = _records(con, "SELECT model, model_key, params_total_b, params_active_b, weights_gb_fp8, "
                         "kv_bytes_per_token_bf16, config_json, config_text FROM core.dim_models ORDER BY model")
    for r in rows:
        if r["model_key"] in out:
            skipped.append(f"model {r['model']}: same match key {r['model_key']!r} as {out[r['model_key']][0]}; first kept")
            continue
        try:
            spec = _spec(r)
        except (ValueError, KeyError, TypeError) as exc:
            skipped.append(f"model {r['model']}: cannot read its config {r['config_json']!r}: {exc}")
            continue
        if spec is None:
            if r["config_json"]:
                skipped.append(f"model {r['model']}: config {r['config_json']!r} was not landed, and models.csv "
                               "gives no params_total_b + kv_bytes_per_token_bf16")
            else:
                skipped.append(f"model {r['model']}: no config_json and no params_total_b + kv_bytes_per_token_bf16")
            continue
        out[r["model_key"]] = (r["model"], spec)
    return out


def _spec(r: dict[str, Any]) -> ModelSpec | None:
    if r["config_text"]:
        cfg = json.loads(r["config_text"])
        return ModelSpec.from_config(cfg, name=r["model"], params_total_b=r["params_total_b"],
                                     params_active_b=r["params_active_b"], weights_gb_fp8=r["weights_gb_fp8"])
    if r["params_total_b"] and r["kv_bytes_per_token_bf16"]:
        return ModelSpec.from_catalog(name=r["model"], params_total_b=r["params_total_b"],
                                      params_active_b=r["params_active_b"],
                                      kv_bytes_per_token_bf16=r["kv_bytes_per_token_bf16"],
                                      weights_gb_fp8=r["weights_gb_fp8"])
    return None


def candidates(con: duckdb.DuckDBPyConnection, skipped: list[str]) -> list[Candidate]:
    """Every deployment in force that resolves to a known model and GPU (module docstring)."""
    specs = model_specs(con, skipped)
    out: list[Candidate] = []
    rows = _records(con, "SELECT deployment, model, model_key, provider, gpu_type, gpus, precision, gpu_mem_gb, "
                         "calls_per_minute, usd_per_gpu_hour FROM core.dim_deployments ORDER BY deployment")
    for r in rows:
        name = r["deployment"]
        if r["model_key"] not in specs:
            skipped.append(f"deployment {name}: model {r['model']!r} is not in models.csv, or cannot be sized")
            continue
        try:
            gpu: GpuSpec = gpu_spec(r["gpu_type"])
        except UnknownGpuError as exc:
            skipped.append(f"deployment {name}: {exc}")
            continue
        if r["gpu_mem_gb"]:
            gpu = replace(gpu, memory_gb=float(r["gpu_mem_gb"]))
        precision = (r["precision"] or DEFAULT_PRECISION).lower()
        if precision not in BYTES_PER_PARAM:
            skipped.append(f"deployment {name}: unknown precision {r['precision']!r}; expected {sorted(BYTES_PER_PARAM)}")
            continue
        model, spec = specs[r["model_key"]]
        out.append(Candidate(
            deployment=name, model=model, model_key=r["model_key"], provider=r["provider"], spec=spec,
            setup=Deployment(gpu, int(r["gpus"]), precision),
            calls_per_minute=r["calls_per_minute"], usd_per_gpu_hour=r["usd_per_gpu_hour"],
        ))
    return out


def _gpu_key(name: str) -> str:
    try:
        return normalize_gpu_name(name)
    except UnknownGpuError:
        return name.upper()


def on_demand_prices(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], Decimal]:
    """``(provider, GPU table key) -> cheapest on-demand USD per GPU-hour in force now``."""
    return {k: v[0] for k, v in on_demand_offers(con).items()}


def offer_label(provider: str, region: str | None, instance_type: str | None, pricing: str) -> str:
    """How a price sheet row is named in the marts: 'nebius/eu-north1/gpu-h200-sxm_8gpu.../on_demand'."""
    return "/".join([provider, region or "-", instance_type or "-", pricing])


def on_demand_offers(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple[Decimal, str]]:
    """``(provider, GPU table key) -> (cheapest on-demand USD per GPU-hour in force now, its offer label)``;
    ties go to the first label in sort order."""
    rows = con.execute("SELECT provider, gpu_type, usd_per_gpu_hour, region, instance_type, pricing "
                       "FROM core.gpu_price_versions WHERE pricing = 'on_demand' AND effective_to IS NULL "
                       "ORDER BY usd_per_gpu_hour, provider, region, instance_type").fetchall()
    best: dict[tuple[str, str], tuple[Decimal, str]] = {}
    for provider, gpu_type, price, region, instance_type, pricing in rows:
        key = (provider, _gpu_key(gpu_type))
        if key not in best:
            best[key] = (price, offer_label(provider, region, instance_type, pricing))
    return best


def call_profiles(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, dt.date], dict[str, CallProfile]]:
    """``(model_key, month) -> {'p50': CallProfile, 'p95': CallProfile}`` from core.call_profiles."""
    out: dict[tuple[str, dt.date], dict[str, CallProfile]] = {}
    for model, month, profile, prompt, thinking, output in con.execute(
        "SELECT model, month, profile, prompt_tokens, thinking_tokens, output_tokens FROM core.call_profiles"
    ).fetchall():
        out.setdefault((model, month), {})[profile] = CallProfile(int(prompt), int(thinking), int(output))
    return out


def net_rate_sql(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """``source`` (SQL with the columns ``provider``, ``model``, ``day``, ``cost_usd``: list-price API
    spend) with ``net_to_list`` (NULL: no invoice rate), ``rate_month`` (the invoice month whose rate
    was taken) and ``net_cost_usd`` (= cost_usd x net_to_list, else cost_usd) appended. The rate of
    a row is ``marts.effective_rates.net_to_list`` of its provider (core.provider_key), model family
    (core.cloud_model_key) and month, else of the latest earlier month with one (the module doc).
    A row whose provider is NULL (self-hosted spend) takes none."""
    if not has_table(con, "marts.effective_rates"):  # a build without the SQL marts (a test of the economics alone)
        return (f"SELECT s.*, CAST(NULL AS DECIMAL(18,10)) AS net_to_list, CAST(NULL AS DATE) AS rate_month, "
                f"s.cost_usd AS net_cost_usd FROM ({source}) s")
    return f"""
        WITH s AS (
            SELECT *, core.provider_key(provider) AS _rate_provider, core.cloud_model_key(model) AS _rate_model,
                   CAST(date_trunc('month', day) AS DATE) AS _rate_day
            FROM ({source})
        ),
        r AS (
            SELECT provider, model, month, net_to_list FROM marts.effective_rates
            WHERE model IS NOT NULL AND net_to_list IS NOT NULL
        )
        SELECT s.* EXCLUDE (_rate_provider, _rate_model, _rate_day), r.net_to_list, r.month AS rate_month,
               CASE WHEN r.net_to_list IS NULL THEN CAST(s.cost_usd AS DECIMAL(38,10))
                    ELSE CAST(round(s.cost_usd * r.net_to_list, 10) AS DECIMAL(38,10)) END AS net_cost_usd
        FROM s ASOF LEFT JOIN r
          ON r.provider = s._rate_provider AND r.model = s._rate_model AND r.month <= s._rate_day"""


def api_months(con: duckdb.DuckDBPyConnection) -> list[tuple[str, dt.date, int, Decimal, Decimal, str]]:
    """``(model_key, month, priced API calls, their spend at the invoice's net rate where there is one,
    their spend at list, api_price_basis)`` per month, from core.call_costs (module doc)."""
    per_provider = ("SELECT provider, model, CAST(date_trunc('month', day) AS DATE) AS day, count(*) AS calls, "
                    "sum(cost_usd) AS cost_usd FROM core.call_costs WHERE serving = 'api' AND cost_usd IS NOT NULL "
                    "GROUP BY ALL")
    return con.execute(f"""
        SELECT model, day AS month, sum(calls) AS api_calls, sum(net_cost_usd) AS api_spend_usd,
               sum(cost_usd) AS api_spend_list_usd,
               CASE WHEN count(net_to_list) = 0 THEN 'list' WHEN count(net_to_list) = count(*) THEN 'invoice_net'
                    ELSE 'partly_invoice_net' END AS api_price_basis
        FROM ({net_rate_sql(con, per_provider)}) GROUP BY ALL ORDER BY ALL""").fetchall()


# --------------------------------------------------------------------------- the marts
def gpu_sizing_rows(cands: Iterable[Candidate], profiles: dict[tuple[str, dt.date], dict[str, CallProfile]],
                    build_id: str | None, skipped: list[str]) -> list[dict[str, Any]]:
    """One row per distinct set-up x profile, on the newest month's profiles of the model."""
    newest: dict[str, dt.date] = {}
    for model_key, month in profiles:
        newest[model_key] = max(month, newest.get(model_key, month))
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, int, str]] = set()
    for c in cands:
        d = c.setup
        key = (c.model, d.gpu.name, d.gpus, d.precision)
        if key in seen:
            continue
        seen.add(key)
        month = newest.get(c.model_key)
        if month is None:
            skipped.append(f"gpu_sizing {c.model} on {d.gpus} x {d.gpu.name}: no calls of {c.model_key!r}, so no call profile")
            continue
        for name in PROFILES:
            p = profiles[(c.model_key, month)][name]
            s: Sizing = size(c.spec, d, p)
            rows.append({
                "model": c.model, "gpu_type": d.gpu.name, "gpus": d.gpus, "precision": d.precision,
                "profile": name, "month": month,
                "prompt_tokens": p.prompt_tokens, "thinking_tokens": p.thinking_tokens, "output_tokens": p.output_tokens,
                "kv_dtype": s.kv_dtype, "weights_gb": s.weights_gb, "kv_bytes_per_token": s.kv_bytes_per_token,
                "kv_gb_per_call": s.kv_gb_per_call, "kv_gb_per_call_allocated": s.kv_gb_per_call_allocated,
                "kv_budget_gb": s.kv_budget_gb, "max_concurrent_calls": s.max_concurrent_calls, "fits": s.fits,
                "build_id": build_id,
            })
    return rows


def self_host_breakeven_rows(
    cands: Iterable[Candidate],
    profiles: dict[tuple[str, dt.date], dict[str, CallProfile]],
    months: list[tuple[str, dt.date, int, Decimal, Decimal, str]],
    prices: dict[tuple[str, str], tuple[Decimal, str]],
    hours_per_month: Decimal,
    build_id: str | None,
    skipped: list[str],
) -> list[dict[str, Any]]:
    """One row per month with priced API calls x deployment of that model (module docstring)."""
    by_model: dict[str, list[tuple[dt.date, int, Decimal, Decimal, str]]] = {}
    for model_key, month, calls, spend, list_spend, basis in months:
        by_model.setdefault(model_key, []).append((month, int(calls), Decimal(spend), Decimal(list_spend), basis))
    rows: list[dict[str, Any]] = []
    for c in cands:
        d = c.setup
        if c.model_key not in by_model:
            skipped.append(f"self_host_breakeven {c.deployment}: no priced API calls of {c.model_key!r}")
            continue
        price, price_source, offer = c.usd_per_gpu_hour, "deployment", None
        if price is None:
            price, offer = prices.get(c.deployment) or prices.get((c.provider or "", d.gpu.name), (None, None))
            price_source = "gpu_price_sheet"
        if price is None:
            skipped.append(f"self_host_breakeven {c.deployment}: no usd_per_gpu_hour and no on-demand price "
                           f"for ({c.provider}, {d.gpu.name}) in the GPU price sheets")
            continue
        monthly = self_host_usd_per_month(d.gpus, Decimal(price), hours_per_month)
        for month, calls, spend, list_spend, basis in by_model[c.model_key]:
            prof = profiles[(c.model_key, month)]
            fits = size(c.spec, d, prof["p95"]).fits
            if c.calls_per_minute is not None:
                cpm, cpm_source = float(c.calls_per_minute), "deployment"
            else:
                cpm, cpm_source = estimate_throughput(c.spec, d, prof["p50"]).calls_per_minute, "estimated"
            capacity = capacity_calls_per_month(cpm, hours_per_month)
            b = evaluate(api_calls=calls, api_spend_usd=spend, self_host_usd_per_month=monthly,
                         capacity_calls_per_month=capacity, fits=fits)
            rows.append({
                "month": month, "model": c.model_key, "deployment": c.deployment, "provider": c.provider,
                "gpu_type": d.gpu.name, "gpus": d.gpus, "precision": d.precision,
                "api_calls": b.api_calls, "api_spend_usd": quantize_usd(b.api_spend_usd),
                "api_cost_per_call_usd": quantize_usd(b.api_cost_per_call_usd),
                "usd_per_gpu_hour": quantize_usd(Decimal(price)), "usd_per_gpu_hour_source": price_source,
                "self_host_usd_per_month": quantize_usd(b.self_host_usd_per_month),
                "calls_per_minute": cpm, "calls_per_minute_source": cpm_source,
                # counts of calls are whole: what one deployment can serve (rounded down), the volume
                # from which self-hosting costs no more than the API (rounded up)
                "capacity_calls_per_month": math.floor(b.capacity_calls_per_month),
                "deployments_needed": b.deployments_needed,
                "breakeven_calls_per_month": None if b.breakeven_calls_per_month is None else math.ceil(b.breakeven_calls_per_month),
                "breakeven_api_spend_usd": None if b.breakeven_api_spend_usd is None else quantize_usd(b.breakeven_api_spend_usd),
                "breakeven_within_capacity": b.breakeven_within_capacity,
                "savings_usd": None if b.savings_usd is None else quantize_usd(b.savings_usd),
                "fits": fits, "verdict": b.verdict, "offer": offer,
                "api_spend_list_usd": quantize_usd(list_spend), "api_price_basis": basis, "build_id": build_id,
            })
    return rows


def _write(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]], schema: pa.Schema) -> int:
    arrow = pa.Table.from_pylist(rows, schema=schema)
    con.register("_economics_rows", arrow)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _economics_rows")
    finally:
        con.unregister("_economics_rows")
    return arrow.num_rows


def _finish(built: Built) -> Built:
    # The Dagster asset logs these as warnings on the run; here they go to the module logger.
    for reason in built.skipped:
        log.info("%s: left out: %s", built.table, reason)
    return built


def build_gpu_sizing(con: duckdb.DuckDBPyConnection) -> Built:
    """(Re)create ``marts.gpu_sizing``; returns its row count and what was left out."""
    built = Built(GPU_SIZING)
    _, build_id = _settings(con)
    cands = candidates(con, built.skipped)
    rows = gpu_sizing_rows(cands, call_profiles(con), build_id, built.skipped)
    built.rows = _write(con, GPU_SIZING, rows, GPU_SIZING_SCHEMA)
    return _finish(built)


def hosts(gpus_per_node: int | None, gpus: int) -> bool:
    """Can an instance of ``gpus_per_node`` GPUs host a tensor-parallel deployment of ``gpus``? One
    instance holds it whole, or it spans whole 8-GPU-or-larger nodes (NVLink inside, a fast fabric
    between); an unknown node size is taken to fit."""
    return gpus_per_node is None or gpus_per_node >= gpus or (gpus_per_node >= 8 and gpus % gpus_per_node == 0)


def offers(con: duckdb.DuckDBPyConnection, cands: list[Candidate], hours: Decimal,
           build_id: str | None) -> tuple[list[dict[str, Any]], dict[str, tuple[Decimal, str, str]]]:
    """Offer rows, and per deployment ``(usd_per_gpu_hour, source, offer)`` as the break-even takes it."""
    sheet = _records(con, "SELECT provider, gpu_type, gpus_per_node, pricing, region, instance_type, usd_per_gpu_hour "
                          "FROM core.gpu_price_versions WHERE effective_to IS NULL")
    rows: list[dict[str, Any]] = []
    used: dict[str, tuple[Decimal, str, str]] = {}
    for c in cands:
        d = c.setup
        mine = [r for r in sheet if _gpu_key(r["gpu_type"]) == d.gpu.name and hosts(r["gpus_per_node"], d.gpus)]
        mine.sort(key=lambda r: (r["usd_per_gpu_hour"], r["provider"], r["region"] or "", r["instance_type"] or "", r["pricing"]))
        eligible = [r for r in mine if r["pricing"] == "on_demand" and (not c.provider or r["provider"] == c.provider)]
        chosen = eligible[0] if eligible and c.usd_per_gpu_hour is None else None
        if c.usd_per_gpu_hour is not None:
            used[c.deployment] = (Decimal(c.usd_per_gpu_hour), "deployment", None)
        elif chosen is not None:
            used[c.deployment] = (chosen["usd_per_gpu_hour"], "gpu_price_sheet",
                                  offer_label(chosen["provider"], chosen["region"], chosen["instance_type"], chosen["pricing"]))
        for rank, r in enumerate(mine, start=1):
            per_node = r["gpus_per_node"]
            rows.append({
                "deployment": c.deployment, "model": c.model_key, "gpu_type": d.gpu.name, "gpus": d.gpus,
                "provider": r["provider"], "region": r["region"], "instance_type": r["instance_type"],
                "pricing": r["pricing"], "gpus_per_node": per_node,
                "nodes_needed": math.ceil(d.gpus / per_node) if per_node else None,
                "offer": offer_label(r["provider"], r["region"], r["instance_type"], r["pricing"]),
                "usd_per_gpu_hour": quantize_usd(r["usd_per_gpu_hour"]),
                "self_host_usd_per_month": quantize_usd(self_host_usd_per_month(d.gpus, r["usd_per_gpu_hour"], hours)),
                "rank": rank, "same_provider": not c.provider or r["provider"] == c.provider,
                "is_used": r is chosen, "build_id": build_id,
            })
    return rows, used


def used_offers(con: duckdb.DuckDBPyConnection, cands: list[Candidate], hours: Decimal,
                build_id: str | None) -> dict[str, tuple[Decimal, str, str | None]]:
    """Per deployment ``(usd_per_gpu_hour, source, offer)`` as the break-even takes it (``offers``):
    its own price, else the offer ``marts.deployment_offers`` marks ``is_used``, read from that table
    (built earlier in the run). Computed by ``offers`` only where the build has no such table (a
    builder called on its own, as by a test)."""
    if not has_table(con, DEPLOYMENT_OFFERS):
        return offers(con, cands, hours, build_id)[1]
    marked = {d: (p, o) for d, p, o in con.execute(
        f"SELECT deployment, usd_per_gpu_hour, offer FROM {DEPLOYMENT_OFFERS} WHERE is_used").fetchall()}
    used: dict[str, tuple[Decimal, str, str | None]] = {}
    for c in cands:
        if c.usd_per_gpu_hour is not None:
            used[c.deployment] = (Decimal(c.usd_per_gpu_hour), "deployment", None)
        elif c.deployment in marked:
            price, offer = marked[c.deployment]
            used[c.deployment] = (price, "gpu_price_sheet", offer)
    return used


def build_self_host_breakeven(con: duckdb.DuckDBPyConnection) -> Built:
    """(Re)create ``marts.self_host_breakeven``; returns its row count and what was left out."""
    built = Built(SELF_HOST_BREAKEVEN)
    hours, build_id = _settings(con)
    cands = candidates(con, built.skipped)
    # the offer each deployment takes (marts.deployment_offers: an instance that holds its GPUs),
    # else the cheapest on-demand price of its provider and GPU
    used = used_offers(con, cands, hours, build_id)
    prices: dict = on_demand_offers(con) | {name: (p, o) for name, (p, src, o) in used.items() if src == "gpu_price_sheet"}
    rows = self_host_breakeven_rows(cands, call_profiles(con), api_months(con), prices,
                                    hours, build_id, built.skipped)
    built.rows = _write(con, SELF_HOST_BREAKEVEN, rows, SELF_HOST_BREAKEVEN_SCHEMA)
    return _finish(built)
