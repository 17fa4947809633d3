"""The demo's other sources (issue 45 item 4): what the providers bill and what the proxies and the
self-hosted nodes report about the demo's own calls, in the shapes the real clients send (the
parsers of sources/ read them; the shapes follow the fixtures of tests/fixtures/bills, tests/fixtures/
litellm and tests/fixtures/metrics, whose READMEs cite the providers' references).

* ``bills/openai/``: the Usage API (``/v1/organization/usage/completions``, daily buckets grouped by
  project and model) and the Costs API (``/v1/organization/costs``, by project and line item) for
  every OpenAI call of the demo (the gateways' logs, the agent traces, the LiteLLM proxy's calls).
* ``bills/anthropic/``: the Admin API's messages usage report and cost report (amounts in cents as
  decimal strings) for the Anthropic calls.
* ``bills/aws/``: an AWS Data Exports CUR 2.0 CSV per month with the Bedrock calls' daily token
  lines (``USE1-Claude3.7Sonnet-input-tokens`` ...), and one promotional credit a month.
* ``bills/azure/``: an Azure Cost Management "Cost and usage details (actual)" export (EA columns)
  for the ``ops-o4mini-eu`` deployment's meters.
* ``bills/gcp/``: a GCP standard usage cost export (BigQuery JSON lines) for Vertex AI's on-demand
  Gemini 2.5 Pro tokens, and one Vertex AI Search line no rule reads (marts.unattributed_invoice_lines).
* ``telemetry/litellm_spendlogs/``: the rows of a LiteLLM proxy's ``LiteLLM_SpendLogs`` for team
  data-science's notebook traffic (own seed; 150 calls a day at the default 1,700 tasks; a file a
  month), whose ``spend`` LiteLLM computed with a price map not updated after DeepSeek's price cut of
  2026-07-24 (marts.cost_crosscheck shows those calls).
* ``telemetry/metrics/``: vLLM ``/metrics`` scrapes of the two self-hosted nodes, hourly over the
  demo's last day, counters consistent with the calls each node served.
* ``telemetry/requests/self_hosted__qwen-c.jsonl``: three calls of a node someone started without
  adding it to catalog/nodes.csv (marts.unpriced_usage).
The OTel part of the traffic is the agent traces of synthetic/demo_principals.py.

Bills are the demo's calls x the rates of the two LiteLLM sheets the demo ships (RATES), in integer
pico-dollars, so that they agree with thinktax's cost to the micro-dollar except for two planted
differences, counted back from the last day (plant_days): 9 days before it OpenAI bills a project no
gateway logs (o3, 1.5M input and 250k output tokens: at $2 / $8 per 1M = $5.00 on the full demo's
2026-07-30; at $10 / $40 = $25.00 before the 07-24 cut: marts.bill_reconciliation), and 5 days before it the
CUR bills 200,000 Bedrock output tokens more than the logs hold (x $15 per 1M = $3.00: a job that
bypassed the gateway, marts.invoice_reconciliation explains it as missing_calls).

Per-call work is polars expressions (group_by / sums); Python loops only over the aggregated rows
(days x models x buckets) and the scrape files.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl

# USD per 1M tokens, from the demo's two LiteLLM sheets (data/real/litellm/, 2025-05-19 and 2026-07-24):
# model (as logged) -> [(in force from, input, cached input, 5-minute cache write, 1-hour write, output)];
# thinking is billed as output. The 1-hour write is 2 x input (Anthropic's multiplier; the sheets have none).
PRICE_CUT = dt.date(2026, 7, 24)
RATES = {
    "o3": [(dt.date(2000, 1, 1), 10, 2.5, 0, 0, 40), (PRICE_CUT, 2, 0.5, 0, 0, 8)],
    "o4-mini": [(dt.date(2000, 1, 1), 1.1, 0.275, 0, 0, 4.4)],
    "gpt-4.1-mini": [(dt.date(2000, 1, 1), 0.4, 0.1, 0, 0, 1.6)],
    "gpt-4.1-nano": [(dt.date(2000, 1, 1), 0.1, 0.025, 0, 0, 0.4)],
    "claude-3-7-sonnet-20250219": [(dt.date(2000, 1, 1), 3, 0.3, 3.75, 6, 15)],
    "deepseek-reasoner": [(dt.date(2000, 1, 1), 0.55, 0.14, 0, 0, 2.19), (PRICE_CUT, 0.28, 0.028, 0, 0, 0.42)],
    "gemini-2.5-pro": [(dt.date(2000, 1, 1), 1.25, 0.125, 0, 0, 10)],
    "gpt-4o-audio-preview": [(dt.date(2000, 1, 1), 2.5, 0, 0, 0, 10)],
}
BUCKETS = ("uncached", "cached", "cw5", "cw1h", "out")
# Audio tokens (issue 44's voice team, synthetic/demo_modalities.py), USD per 1M from the same sheets
# (input_cost_per_audio_token / output_cost_per_audio_token of gpt-4o-audio-preview): the OpenAI bills
# count them in input_audio_tokens / output_audio_tokens and cost them as line items of their own.
AUDIO_RATES = {"gpt-4o-audio-preview": [(dt.date(2000, 1, 1), 100, 200), (PRICE_CUT, 40, 80)]}
AUDIO = ("ain", "aout")
# the models' dated names as the providers' reports spell them
SNAPSHOT = {"o3": "o3-2025-04-16", "o4-mini": "o4-mini-2025-04-16", "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
            "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14"}
# the planted differences, counted back from the demo's last day
API_PLANT_DAYS_BACK, CLOUD_PLANT_DAYS_BACK = 9, 5
API_PLANT = {"project": "proj-sandbox", "model": "o3", "uncached": 1_500_000, "out": 250_000, "requests": 120}
CLOUD_PLANT_OUTPUT_TOKENS = 200_000
# the proxy's calls a day per task a day of the demo: 150 a day at the default 1,700 tasks
LITELLM_CALLS_PER_TASK = 150 / 1700
PICO = 10**12


def _rate_frame() -> pl.DataFrame:
    rows = [(m, f, *[round(r * 1_000_000) for r in rates]) for m, periods in RATES.items() for f, *rates in periods]
    text = pl.DataFrame(rows, schema=["rate_model", "rate_from", *[f"r_{b}" for b in BUCKETS]], orient="row")
    audio = pl.DataFrame([(m, f, *[round(r * 1_000_000) for r in rates]) for m, periods in AUDIO_RATES.items()
                          for f, *rates in periods], schema=["rate_model", "rate_from", *[f"r_{b}" for b in AUDIO]], orient="row")
    # one row per (model, date a rate changed): the text rates carried to the audio change dates and back
    both = text.join(audio, on=["rate_model", "rate_from"], how="full", coalesce=True).sort("rate_model", "rate_from")
    return both.with_columns(pl.col(f"r_{b}").forward_fill().over("rate_model").fill_null(0)
                             for b in (*BUCKETS, *AUDIO)).sort("rate_from")


def priced(usage: pl.DataFrame) -> pl.DataFrame:
    """``usage`` (day, rate_model, the BUCKETS token sums) with ``usd_<bucket>`` in pico-dollars:
    tokens x (USD per 1M x 10^6) = USD x 10^12, exact in int64 for a day's tokens."""
    out = usage.sort("day").join_asof(_rate_frame(), left_on="day", right_on="rate_from", by="rate_model",
                                       check_sortedness=False)  # both sorted by day above
    return out.with_columns([(pl.col(b) * pl.col(f"r_{b}")).alias(f"usd_{b}") for b in (*BUCKETS, *AUDIO) if b in usage.columns])


def _usd_text(pico: int) -> str:
    sign = "-" if pico < 0 else ""
    q, r = divmod(abs(pico), PICO)
    return f"{sign}{q}.{r:012d}".rstrip("0").rstrip(".") if r else f"{sign}{q}"


def _epoch(day: dt.date) -> int:
    return int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp())


# --- the calls the bills cover ------------------------------------------------------------------

def _main_usage(calls: pl.DataFrame) -> pl.DataFrame:
    return calls.filter(pl.col("provider").is_not_null()).select(
        "day", "provider", pl.col("model").alias("rate_model"), (pl.lit("proj-") + pl.col("team")).alias("project"),
        (pl.col("prompt") - pl.col("cached") - pl.col("cache_write")).alias("uncached"), pl.col("cached"),
        pl.col("cache_write").alias("cw5"), pl.lit(0, pl.Int64).alias("cw1h"),
        (pl.col("thinking") + pl.col("output")).alias("out"))


def _agent_usage(landing: Path) -> pl.DataFrame:
    """The chat spans of the agent traces (synthetic/demo_principals.py): a few hundred calls."""
    rows = []
    for path in sorted((landing / "telemetry" / "otel").glob("agents__*.jsonl")):
        for line in path.read_text().splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        a = {kv["key"]: next(iter(kv["value"].values())) for kv in sp["attributes"]}
                        if a.get("gen_ai.operation.name") == "chat":
                            day = dt.datetime.fromtimestamp(int(sp["startTimeUnixNano"]) // 10**9, dt.UTC).date()
                            rows.append((day, a["gen_ai.provider.name"], a["gen_ai.request.model"], "proj-search",
                                         int(a["gen_ai.usage.input_tokens"]), int(a["gen_ai.usage.output_tokens"])))
    schema = {"day": pl.Date, "provider": pl.Utf8, "rate_model": pl.Utf8, "project": pl.Utf8, "uncached": pl.Int64, "out": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit(0, pl.Int64).alias("cached"), pl.lit(0, pl.Int64).alias("cw5"), pl.lit(0, pl.Int64).alias("cw1h"))


def _voice_usage(start: dt.date, days: int, seed: int) -> pl.DataFrame:
    """The voice team's turns (synthetic/demo_modalities.py, the same draw as its request files)."""
    from synthetic.demo_modalities import voice_calls  # noqa: PLC0415 - a sibling generator

    v = voice_calls(start, days, seed)
    return v.select(pl.from_epoch(pl.col("epoch_ms"), time_unit="ms").dt.date().alias("day"),
                    pl.lit("openai").alias("provider"), pl.lit("gpt-4o-audio-preview").alias("rate_model"),
                    pl.lit("proj-voice").alias("project"), pl.col("text_in").cast(pl.Int64).alias("uncached"),
                    pl.lit(0, pl.Int64).alias("cached"), pl.lit(0, pl.Int64).alias("cw5"), pl.lit(0, pl.Int64).alias("cw1h"),
                    pl.col("text_out").cast(pl.Int64).alias("out"), pl.col("audio_in").cast(pl.Int64).alias("ain"),
                    pl.col("audio_out").cast(pl.Int64).alias("aout"))


def litellm_per_day(tasks_per_day: int) -> int:
    return max(3, round(tasks_per_day * LITELLM_CALLS_PER_TASK))


def litellm_calls(start: dt.date, days: int, seed: int, per_day: int) -> pl.DataFrame:
    """Team data-science's notebook calls through its LiteLLM proxy, drawn with their own generator."""
    rng = np.random.default_rng(seed + 45)
    n = days * per_day
    day_idx = np.repeat(np.arange(days), per_day)
    deepseek = rng.random(n) < 0.6
    prompt = np.clip(rng.lognormal(np.log(3000), 0.6, n), 200, 40000).astype(np.int64)
    cached = np.where(rng.random(n) < 0.4, (prompt * rng.uniform(0.2, 0.8, n)).astype(np.int64), 0)
    output = np.clip(rng.lognormal(np.log(350), 0.6, n), 20, 4000).astype(np.int64)
    thinking = np.where(deepseek, (output * rng.uniform(3, 15, n)).astype(np.int64), 0)
    secs = np.clip(rng.normal(13, 3, n), 0, 23.99) * 3600
    epoch = _epoch(start) + day_idx * 86400.0 + secs
    nb = rng.integers(0, 12, n)
    return pl.DataFrame({
        "epoch": epoch, "request_id": np.char.add("litellm-", np.arange(n).astype(str)),
        "provider": np.where(deepseek, "deepseek", "openai"),
        "model": np.where(deepseek, "deepseek-reasoner", "gpt-4.1-mini"),
        "session": np.char.add(np.char.add("nb-", day_idx.astype(str)), np.char.add("-", nb.astype(str))),
        "user": np.char.add("data-science-user-", (nb % 5).astype(str)),
        "prompt": prompt, "cached": cached, "thinking": thinking, "output": output,
        "latency_s": (0.5 + (thinking + output) * rng.uniform(0.005, 0.012, n)).round(3),
    }).with_columns(pl.from_epoch(pl.col("epoch"), time_unit="s").dt.date().alias("day"))


def _litellm_usage(ll: pl.DataFrame) -> pl.DataFrame:
    return ll.select("day", "provider", pl.col("model").alias("rate_model"), pl.lit("proj-data-science").alias("project"),
                     (pl.col("prompt") - pl.col("cached")).alias("uncached"), "cached",
                     pl.lit(0, pl.Int64).alias("cw5"), pl.lit(0, pl.Int64).alias("cw1h"),
                     (pl.col("thinking") + pl.col("output")).alias("out"))


def _daily(usage: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    sums = [b for b in (*BUCKETS, *AUDIO) if b in usage.columns]
    return priced(usage.group_by(["day", "rate_model", *by]).agg(
        pl.len().alias("requests"), *[pl.col(b).sum() for b in sums]).sort(["day", "rate_model", *by]))


# --- OpenAI --------------------------------------------------------------------------------------

def _pages(buckets: list[dict], per_page: int, name: str, folder: Path, start: dt.date) -> int:
    """Pages of at most ``per_page`` daily buckets, linked by has_more / next_page as the API pages."""
    folder.mkdir(parents=True, exist_ok=True)
    chunks = [buckets[i:i + per_page] for i in range(0, len(buckets), per_page)] or [[]]
    for k, chunk in enumerate(chunks, 1):
        last = k == len(chunks)
        page = {"object": "page", "data": chunk, "has_more": not last,
                "next_page": None if last else f"page_{name}_{k + 1:04d}"}
        (folder / f"{name}__{start}__p{k}.json").write_text(json.dumps(page, separators=(",", ":")) + "\n")
    return len(chunks)


def write_openai(landing: Path, usage: pl.DataFrame, plant_day: dt.date, start: dt.date) -> pl.DataFrame:
    openai = usage.filter(pl.col("provider") == "openai")
    plant = pl.DataFrame({"day": [plant_day], "provider": ["openai"], "rate_model": [API_PLANT["model"]],
                          "project": [API_PLANT["project"]], "uncached": [API_PLANT["uncached"]], "cached": [0],
                          "cw5": [0], "cw1h": [0], "out": [API_PLANT["out"]], "ain": [0], "aout": [0]}, schema=openai.schema)
    daily = _daily(pl.concat([openai, plant]), ["project"]).with_columns(
        pl.when(pl.col("project") == API_PLANT["project"]).then(API_PLANT["requests"]).otherwise(pl.col("requests"))
        .alias("requests"))
    usage_buckets, cost_buckets = [], []
    for (day,), part in daily.group_by(["day"], maintain_order=True):
        t0 = _epoch(day)
        results, costs = [], []
        for r in part.iter_rows(named=True):
            model = SNAPSHOT.get(r["rate_model"], r["rate_model"])
            # input_tokens / output_tokens include the audio tokens, also given apart
            results.append({"object": "organization.usage.completions.result",
                            "input_tokens": r["uncached"] + r["cached"] + r["ain"], "output_tokens": r["out"] + r["aout"],
                            "input_cached_tokens": r["cached"], "input_audio_tokens": r["ain"],
                            "output_audio_tokens": r["aout"], "num_model_requests": r["requests"], "project_id": r["project"],
                            "user_id": None, "api_key_id": None, "model": model, "batch": None})
            for item, b in (("input", "uncached"), ("cached input", "cached"), ("output", "out"),
                            ("audio input", "ain"), ("audio output", "aout")):
                if r[b]:
                    costs.append({"object": "organization.costs.result",
                                  "amount": {"value": float(_usd_text(r[f"usd_{b}"])), "currency": "usd"},
                                  "line_item": f"{model}, {item}", "project_id": r["project"]})
        usage_buckets.append({"object": "bucket", "start_time": t0, "end_time": t0 + 86400, "results": results})
        cost_buckets.append({"object": "bucket", "start_time": t0, "end_time": t0 + 86400, "results": costs})
    folder = landing / "bills" / "openai"
    _pages(usage_buckets, 31, "usage_completions", folder, start)
    _pages(cost_buckets, 31, "costs", folder, start)
    return daily


# --- Anthropic -----------------------------------------------------------------------------------

_ANTHROPIC_TOKEN_TYPES = (("uncached", "uncached_input_tokens", "Input Tokens"),
                          ("out", "output_tokens", "Output Tokens"),
                          ("cached", "cache_read_input_tokens", "Input Tokens, Cache Hit"),
                          ("cw5", "cache_creation.ephemeral_5m_input_tokens", "Input Tokens, Cache Write 5m"),
                          ("cw1h", "cache_creation.ephemeral_1h_input_tokens", "Input Tokens, Cache Write 1h"))


def write_anthropic(landing: Path, usage: pl.DataFrame, start: dt.date) -> pl.DataFrame:
    daily = _daily(usage.filter(pl.col("provider") == "anthropic"), [])
    usage_buckets, cost_buckets = [], []
    for (day,), part in daily.group_by(["day"], maintain_order=True):
        iso = lambda d: f"{d:%Y-%m-%d}T00:00:00Z"  # noqa: E731
        results, costs = [], []
        for r in part.iter_rows(named=True):
            results.append({"uncached_input_tokens": r["uncached"],
                            "cache_creation": {"ephemeral_1h_input_tokens": r["cw1h"], "ephemeral_5m_input_tokens": r["cw5"]},
                            "cache_read_input_tokens": r["cached"], "output_tokens": r["out"],
                            "server_tool_use": {"web_search_requests": 0}, "api_key_id": None, "workspace_id": None,
                            "model": r["rate_model"], "service_tier": "standard", "context_window": "0-200k"})
            for b, token_type, what in _ANTHROPIC_TOKEN_TYPES:
                if r[b]:
                    # "Cost amount in lowest currency units (e.g. cents) as a decimal string"
                    costs.append({"currency": "USD", "amount": _usd_text(r[f"usd_{b}"] * 100), "workspace_id": None,
                                  "description": f"Claude Sonnet 3.7 Usage - {what}", "cost_type": "tokens",
                                  "context_window": "0-200k", "model": r["rate_model"], "service_tier": "standard",
                                  "token_type": token_type})
        nxt = day + dt.timedelta(days=1)
        usage_buckets.append({"starting_at": iso(day), "ending_at": iso(nxt), "results": results})
        cost_buckets.append({"starting_at": iso(day), "ending_at": iso(nxt), "results": costs})
    folder = landing / "bills" / "anthropic"
    for name, buckets in (("usage_report_messages", usage_buckets), ("cost_report", cost_buckets)):
        folder.mkdir(parents=True, exist_ok=True)
        chunks = [buckets[i:i + 31] for i in range(0, len(buckets), 31)]
        for k, chunk in enumerate(chunks, 1):
            last = k == len(chunks)
            (folder / f"{name}__{start}__p{k}.json").write_text(json.dumps(
                {"data": chunk, "has_more": not last, "next_page": None if last else f"page_{name}_{k + 1:04d}"}) + "\n")
    return daily


# --- the clouds ----------------------------------------------------------------------------------

def _cloud_usage(cloud: pl.DataFrame) -> pl.DataFrame:
    model = (pl.when(pl.col("gateway").str.starts_with("bedrock")).then(pl.lit("claude-3-7-sonnet-20250219"))
             .when(pl.col("gateway") == "vertex_gemini").then(pl.lit("gemini-2.5-pro")).otherwise(pl.lit("o4-mini")))
    cloud_of = (pl.when(pl.col("gateway").str.starts_with("bedrock")).then(pl.lit("aws"))
                .when(pl.col("gateway") == "vertex_gemini").then(pl.lit("gcp")).otherwise(pl.lit("azure")))
    return cloud.filter(~pl.col("provisioned")).select(
        "day", cloud_of.alias("cloud"), model.alias("rate_model"), pl.lit("").alias("project"),
        (pl.col("prompt") - pl.col("cached") - pl.col("cache_write")).alias("uncached"), "cached",
        (pl.col("cache_write") - pl.col("write_1h")).alias("cw5"), pl.col("write_1h").alias("cw1h"),
        (pl.col("thinking") + pl.col("output")).alias("out"), "thinking")


CUR_COLUMNS = ("bill_billing_period_start_date,bill_invoice_id,line_item_usage_account_id,line_item_usage_start_date,"
               "line_item_usage_end_date,line_item_line_item_type,line_item_product_code,line_item_usage_type,"
               "line_item_operation,line_item_usage_amount,line_item_unblended_cost,line_item_net_unblended_cost,"
               "line_item_currency_code,line_item_resource_id,line_item_iam_principal,product_region_code,pricing_unit,"
               "pricing_term,product,resource_tags").split(",")
_CUR_KINDS = (("uncached", "input-tokens"), ("cached", "cache-read-input-token-count"),
              ("cw5", "cache-write-input-token-count"), ("cw1h", "cache-write-input-token-count-1-hour"),
              ("out", "output-tokens"))
BEDROCK_CREDIT_USD = 10


def write_aws(landing: Path, daily: pl.DataFrame, plant_day: dt.date) -> None:
    """CUR 2.0 CSV, one file per billing period, in the export's own path layout."""
    def ts(d: dt.date) -> str:
        return f"{d:%Y-%m-%d}T00:00:00.000Z"
    months: dict[dt.date, list[dict]] = {}
    product = json.dumps({"product_name": "Amazon Bedrock Service"})
    tags = json.dumps({"user_team": "platform"})
    arn = "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0"
    for r in daily.iter_rows(named=True):
        day = r["day"]
        period = day.replace(day=1)
        lines = months.setdefault(period, [])
        for b, kind in _CUR_KINDS:
            tokens, pico = r[b], r[f"usd_{b}"]
            if b == "out" and day == plant_day:  # the planted calls that bypassed the gateway
                tokens += CLOUD_PLANT_OUTPUT_TOKENS
                pico += CLOUD_PLANT_OUTPUT_TOKENS * r["r_out"]
            if not tokens:
                continue
            cost = _usd_text(pico)
            lines.append({"bill_billing_period_start_date": ts(period), "bill_invoice_id": "",
                          "line_item_usage_account_id": "111122223333", "line_item_usage_start_date": ts(day),
                          "line_item_usage_end_date": ts(day + dt.timedelta(days=1)), "line_item_line_item_type": "Usage",
                          "line_item_product_code": "AmazonBedrockService",
                          "line_item_usage_type": f"USE1-Claude3.7Sonnet-{kind}", "line_item_operation": "InvokeModelInference",
                          "line_item_usage_amount": f"{tokens / 1000:.3f}", "line_item_unblended_cost": cost,
                          "line_item_net_unblended_cost": cost, "line_item_currency_code": "USD", "line_item_resource_id": arn,
                          "line_item_iam_principal": "arn:aws:iam::111122223333:role/platform-docs", "product_region_code": "us-east-1",
                          "pricing_unit": "1K tokens", "pricing_term": "OnDemand", "product": product, "resource_tags": tags})
    for period, lines in months.items():
        # a promotional credit on the month's Bedrock output (AWS Credit line, negative cost)
        lines.append({**lines[-1], "line_item_line_item_type": "Credit", "line_item_usage_amount": "0",
                      "line_item_usage_type": "USE1-Claude3.7Sonnet-output-tokens",
                      "line_item_unblended_cost": f"-{BEDROCK_CREDIT_USD}", "line_item_net_unblended_cost": f"-{BEDROCK_CREDIT_USD}",
                      "line_item_resource_id": "", "line_item_iam_principal": "", "pricing_unit": "", "pricing_term": "",
                      "resource_tags": "{}"})
        folder = landing / "bills" / "aws" / "thinktax-cur2" / "data" / f"BILLING_PERIOD={period:%Y-%m}"
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(lines, schema={c: pl.Utf8 for c in CUR_COLUMNS}).write_csv(folder / "thinktax-cur2-00001.csv")


AZURE_COLUMNS = ("InvoiceSectionName,AccountName,AccountOwnerId,SubscriptionId,SubscriptionName,ResourceGroup,ResourceLocation,"
                 "Date,ProductName,MeterCategory,MeterSubCategory,MeterId,MeterName,MeterRegion,UnitOfMeasure,Quantity,"
                 "EffectivePrice,CostInBillingCurrency,CostCenter,ConsumedService,ResourceId,Tags,OfferId,AdditionalInfo,"
                 "ServiceInfo1,ServiceInfo2,ResourceName,ReservationId,ReservationName,UnitPrice,ProductOrderId,"
                 "ProductOrderName,Term,PublisherType,PublisherName,ChargeType,Frequency,PricingModel,AvailabilityZone,"
                 "BillingAccountId,BillingAccountName,BillingCurrencyCode,BillingPeriodStartDate,BillingPeriodEndDate,"
                 "BillingProfileId,BillingProfileName,InvoiceSectionId,IsAzureCreditEligible,PartNumber,PayGPrice,PlanName,"
                 "ServiceFamily,CostAllocationRuleName,benefitId,benefitName").split(",")
_AZURE_METERS = (("uncached", "o4 mini 0416 Inp glbl Tokens", "az-o4mini-inp"),
                 ("cached", "o4 mini 0416 cached Inp glbl Tokens", "az-o4mini-cached"),
                 ("out", "o4 mini 0416 Outp glbl Tokens", "az-o4mini-outp"))


def write_azure(landing: Path, daily: pl.DataFrame) -> None:
    """A daily actual-cost export per month, in the export's folder layout (<export>/<from-to>/<run id>/part_*.csv)."""
    sub = "0a1b2c3d-0000-4000-8000-00000000abcd"
    rid = f"/subscriptions/{sub}/resourceGroups/rg-ops/providers/Microsoft.CognitiveServices/accounts/ops-openai-eu"
    months: dict[dt.date, list[dict]] = {}
    for r in daily.iter_rows(named=True):
        day = r["day"]
        period = day.replace(day=1)
        end = (period + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        for b, meter, meter_id in _AZURE_METERS:
            if not r[b]:
                continue
            per_1k = _usd_text(r[f"r_{b}"] * 1000)  # USD per 1K tokens
            months.setdefault(period, []).append({
                "InvoiceSectionName": "Operations", "AccountName": "ops@example.com", "AccountOwnerId": "ops@example.com",
                "SubscriptionId": sub, "SubscriptionName": "ai-ops", "ResourceGroup": "rg-ops", "ResourceLocation": "swedencentral",
                "Date": f"{day:%m/%d/%Y}", "ProductName": "Azure OpenAI - o4-mini - Global", "MeterCategory": "Foundry Models",
                "MeterSubCategory": "Azure OpenAI", "MeterId": meter_id, "MeterName": meter, "UnitOfMeasure": "1K",
                "Quantity": f"{r[b] / 1000:.3f}", "EffectivePrice": per_1k, "CostInBillingCurrency": _usd_text(r[f"usd_{b}"]),
                "ConsumedService": "Microsoft.CognitiveServices", "ResourceId": rid, "Tags": '{"team": "ops"}',
                "OfferId": "MS-AZR-0017P", "ResourceName": "ops-openai-eu", "UnitPrice": per_1k, "PublisherType": "Microsoft",
                "PublisherName": "Microsoft", "ChargeType": "Usage", "Frequency": "UsageBased", "PricingModel": "OnDemand",
                "BillingAccountId": "12345678", "BillingAccountName": "Contoso", "BillingCurrencyCode": "USD",
                "BillingPeriodStartDate": f"{period:%m/%d/%Y}", "BillingPeriodEndDate": f"{end:%m/%d/%Y}",
                "IsAzureCreditEligible": "True", "PayGPrice": per_1k, "ServiceFamily": "AI + Machine Learning"})
    for period, lines in months.items():
        end = (period + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        folder = (landing / "bills" / "azure" / "daily" / "thinktax-actual" / f"{period:%Y%m%d}-{end:%Y%m%d}"
                  / f"5d1e2f3a-4b5c-4d6e-8f70-{period:%Y%m}000000")
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(lines, schema={c: pl.Utf8 for c in AZURE_COLUMNS}).write_csv(folder / "part_0_0001.csv")


_GCP_SKUS = (("uncached", "Gemini 2.5 Pro Text Input - Predictions", "B7D1-0001-0001"),
             ("cached", "Gemini 2.5 Pro Text Input Caching - Predictions", "B7D1-0001-0002"),
             ("thinking", "Gemini 2.5 Pro Thinking Text Output - Predictions", "B7D1-0001-0003"),
             ("visible", "Gemini 2.5 Pro Text Output - Predictions", "B7D1-0001-0004"))


def write_gcp(landing: Path, daily: pl.DataFrame) -> None:
    """The standard usage cost export as BigQuery writes newline-delimited JSON, one file per invoice month."""
    def row(day: dt.date, sku: str, sku_id: str, amount: int, cost: str, unit: str = "count") -> dict:
        t = f"{day:%Y-%m-%d} 00:00:00 UTC"
        return {"billing_account_id": "0A1B2C-3D4E5F-6A7B8C", "service": {"id": "C7E2-9256-1C43", "description": "Vertex AI"},
                "sku": {"id": sku_id, "description": sku}, "usage_start_time": t,
                "usage_end_time": f"{day + dt.timedelta(days=1):%Y-%m-%d} 00:00:00 UTC",
                "project": {"id": "analytics-prod-5310", "number": "210987654321", "name": "analytics-prod", "labels": [],
                            "ancestry_numbers": "/1/"},
                "labels": [{"key": "team", "value": "analytics"}], "system_labels": [],
                "location": {"location": "us-central1", "country": "US", "region": "us-central1", "zone": None},
                "export_time": f"{day + dt.timedelta(days=1):%Y-%m-%d} 04:00:00.000000 UTC", "cost": float(cost),
                "currency": "USD", "currency_conversion_rate": 1.0,
                "usage": {"amount": amount, "unit": unit, "amount_in_pricing_units": amount, "pricing_unit": unit},
                "credits": [], "invoice": {"month": f"{day:%Y%m}"}, "cost_type": "regular"}
    months: dict[str, list[str]] = {}
    for r in daily.iter_rows(named=True):
        day = r["day"]
        for b, sku, sku_id in _GCP_SKUS:
            tokens = r["out"] - r["thinking"] if b == "visible" else r[b]
            if b in ("thinking", "visible"):
                pico = tokens * r["r_out"]
            else:
                pico = r[f"usd_{b}"]
            if tokens:
                months.setdefault(f"{day:%Y-%m}", []).append(json.dumps(row(day, sku, sku_id, tokens, _usd_text(pico))))
    for month, lines in months.items():
        # a Vertex AI line no rule reads (not a model's tokens): kept in every total, listed in
        # marts.unattributed_invoice_lines
        last = dt.date.fromisoformat(json.loads(lines[-1])["usage_start_time"][:10])
        lines.append(json.dumps(row(last, "Vertex AI Search Enterprise Edition Query", "B7D1-0002-0001", 1000, "4")))
        folder = landing / "bills" / "gcp"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"billing_export_{month}.jsonl").write_text("\n".join(lines) + "\n")


# --- LiteLLM spend logs ----------------------------------------------------------------------------

def write_litellm(landing: Path, ll: pl.DataFrame) -> None:
    """LiteLLM_SpendLogs rows (schema.prisma column names), one file a month. ``spend`` is LiteLLM's cost:
    its price map still has DeepSeek's rates before the cut of 2026-07-24 (the 2025-05-19 sheet's)."""
    old = {m: periods[0][1:] for m, periods in RATES.items()}
    r_in, r_cached, r_out = ([old[m][i] for m in ("deepseek-reasoner", "gpt-4.1-mini")] for i in (0, 1, 4))
    is_ds = pl.col("model") == "deepseek-reasoner"
    rate = lambda rates: pl.when(is_ds).then(rates[0]).otherwise(rates[1])  # noqa: E731
    spend = (((pl.col("prompt") - pl.col("cached")) * rate(r_in) + pl.col("cached") * rate(r_cached)
              + (pl.col("thinking") + pl.col("output")) * rate(r_out)) / 1_000_000).round(12)
    ts = lambda e: pl.from_epoch((e * 1000).cast(pl.Int64), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")  # noqa: E731
    usage = pl.struct(pl.col("prompt").alias("prompt_tokens"), (pl.col("thinking") + pl.col("output")).alias("completion_tokens"),
                      (pl.col("prompt") + pl.col("thinking") + pl.col("output")).alias("total_tokens"),
                      pl.struct(pl.col("cached").alias("cached_tokens")).alias("prompt_tokens_details"),
                      pl.struct(pl.col("thinking").alias("reasoning_tokens")).alias("completion_tokens_details"))
    meta = pl.struct(pl.lit("key-data-science-notebooks").alias("user_api_key_alias"),
                     pl.lit("data-science").alias("user_api_key_team_alias"), pl.col("user").alias("user_api_key_user_id"),
                     pl.lit("proj-data-science").alias("project_id"), usage.alias("usage_object"))
    rows = ll.sort("epoch").select(
        "request_id", pl.lit("acompletion").alias("call_type"), pl.lit("").alias("api_key"), spend.alias("spend"),
        (pl.col("prompt") + pl.col("thinking") + pl.col("output")).alias("total_tokens"),
        pl.col("prompt").alias("prompt_tokens"), (pl.col("thinking") + pl.col("output")).alias("completion_tokens"),
        ts(pl.col("epoch")).alias("startTime"), ts(pl.col("epoch") + pl.col("latency_s")).alias("endTime"),
        (pl.col("provider") + "/" + pl.col("model")).alias("model"), pl.col("model").alias("model_group"),
        pl.col("provider").alias("custom_llm_provider"), pl.col("user"), meta.alias("metadata"),
        pl.concat_list(pl.lit("notebook_qa"), pl.lit("env:prod")).alias("request_tags"),
        pl.lit("data-science").alias("team_id"), pl.col("session").alias("session_id"), pl.lit("success").alias("status"),
        pl.col("day").dt.strftime("%Y-%m").alias("month"))
    folder = landing / "telemetry" / "litellm_spendlogs"
    folder.mkdir(parents=True, exist_ok=True)
    for (month,), part in rows.group_by(["month"], maintain_order=True):
        part.drop("month").write_ndjson(folder / f"LiteLLM_SpendLogs__{month}.jsonl")


# --- Prometheus ------------------------------------------------------------------------------------

def write_metrics(landing: Path, calls: pl.DataFrame, last_day: dt.date) -> int:
    """vLLM /metrics of each node, scraped at the last millisecond of every hour over the last day
    (25 scrapes, the first at 23:59:59.999 the day before: 24 hourly deltas, each exactly the calls
    logged in its hour, by their logged millisecond). Counters count every call the node served since
    the demo began (vLLM's counters since its start)."""
    served = calls.filter(pl.col("node_id").is_not_null()).with_columns(
        (pl.col("epoch") * 1000).cast(pl.Int64).floordiv(3_600_000).alias("h"))
    first = _epoch(last_day) // 3600 - 1
    per_hour = served.group_by(["node_id", "h"]).agg(
        pl.len().alias("n"), pl.col("prompt").sum().alias("p"), (pl.col("thinking") + pl.col("output")).sum().alias("g"),
        (pl.col("latency_ms").sum() / 1000).alias("lat"))
    scrapes = pl.DataFrame({"scrape_h": list(range(first, first + 25))})
    totals = (per_hour.join(scrapes, how="cross").filter(pl.col("h") <= pl.col("scrape_h"))
              .group_by(["node_id", "scrape_h"]).agg(pl.col("n", "p", "g", "lat").sum())
              .join(per_hour.select("node_id", pl.col("h").alias("scrape_h"), pl.col("n").alias("running")),
                    on=["node_id", "scrape_h"], how="left").sort(["node_id", "scrape_h"]))
    folder = landing / "telemetry" / "metrics"
    folder.mkdir(parents=True, exist_ok=True)
    lbl = 'engine="0",model_name="Qwen/Qwen3-32B"'
    for r in totals.iter_rows(named=True):
        t = dt.datetime.fromtimestamp(r["scrape_h"] * 3600 + 3599, dt.UTC)
        running = min(int(r["running"] or 0) // 60, 64)  # calls in the hour / 60: about those in flight
        text = (
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{{{lbl}}} {float(running)}\n"
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{{{lbl}}} {min(0.05 + running * 0.04, 0.98):.4f}\n"
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
            "# TYPE vllm:prompt_tokens_total counter\n"
            f"vllm:prompt_tokens_total{{{lbl}}} {float(r['p'])!r}\n"
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
            "# TYPE vllm:generation_tokens_total counter\n"
            f"vllm:generation_tokens_total{{{lbl}}} {float(r['g'])!r}\n"
            "# HELP vllm:request_success_total Count of successfully processed requests.\n"
            "# TYPE vllm:request_success_total counter\n"
            f'vllm:request_success_total{{{lbl},finished_reason="stop"}} {float(r["n"])}\n'
            "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
            "# TYPE vllm:e2e_request_latency_seconds histogram\n"
            f'vllm:e2e_request_latency_seconds_bucket{{{lbl},le="+Inf"}} {float(r["n"])}\n'
            f"vllm:e2e_request_latency_seconds_count{{{lbl}}} {float(r['n'])}\n"
            f"vllm:e2e_request_latency_seconds_sum{{{lbl}}} {r['lat']:.3f}\n"
        )
        (folder / f"{r['node_id']}__{t:%Y-%m-%dT%H-%M-%S}.999Z.prom").write_text(text)
    return totals.height


UNKNOWN_NODE = "qwen-c"


def write_unknown_node(landing: Path, last_day: dt.date) -> None:
    """Three calls of a node no one added to catalog/nodes.csv: unpriced, never costed at $0."""
    lines = []
    for k in range(3):
        ts = dt.datetime.combine(last_day, dt.time(10 + k, 15), dt.UTC)
        lines.append(json.dumps({
            "ts": f"{ts:%Y-%m-%dT%H:%M:%S}.000Z", "request_id": f"req-{UNKNOWN_NODE}-{k}", "model": "qwen3-32b",
            "node_id": UNKNOWN_NODE, "task_id": f"task-{UNKNOWN_NODE}-{k}", "team": "search", "task_type": "qa",
            "latency_ms": 2100.0 + 100 * k, "usage": {"prompt_tokens": 1800 + k, "completion_tokens": 400,
                                                     "prompt_tokens_details": {"cached_tokens": 0},
                                                     "completion_tokens_details": {"reasoning_tokens": 250}}}))
    (landing / "telemetry" / "requests" / f"self_hosted__{UNKNOWN_NODE}.jsonl").write_text("\n".join(lines) + "\n")


def plant_days(start: dt.date, days: int) -> tuple[dt.date, dt.date]:
    last = start + dt.timedelta(days=days - 1)
    return last - dt.timedelta(days=API_PLANT_DAYS_BACK), last - dt.timedelta(days=CLOUD_PLANT_DAYS_BACK)


def write(landing: Path, calls: pl.DataFrame, cloud_calls: pl.DataFrame | None, start: dt.date, days: int, seed: int,
          tasks_per_day: int) -> int:
    """Every file above; ``calls`` / ``cloud_calls`` are synthetic.demo's frames of the calls already
    written. Returns the number of files written."""
    last = start + dt.timedelta(days=days - 1)
    api_plant, cloud_plant = plant_days(start, days)
    ll = litellm_calls(start, days, seed, litellm_per_day(tasks_per_day))
    write_litellm(landing, ll)
    usage = pl.concat([_main_usage(calls), _agent_usage(landing), _litellm_usage(ll)], how="diagonal_relaxed")
    write_openai(landing, pl.concat([usage, _voice_usage(start, days, seed)], how="diagonal_relaxed")
                 .with_columns(pl.col(*AUDIO).fill_null(0)), api_plant, start)
    write_anthropic(landing, usage, start)
    if cloud_calls is not None:
        cloud = _cloud_usage(cloud_calls)
        for name, writer in (("aws", write_aws), ("azure", write_azure), ("gcp", write_gcp)):
            part = cloud.filter(pl.col("cloud") == name)
            if name == "aws":  # the plant's day is on the invoice even when no Bedrock call was logged on it
                part = pl.concat([part, pl.DataFrame({"day": [cloud_plant], "cloud": ["aws"],
                                                      "rate_model": ["claude-3-7-sonnet-20250219"]})], how="diagonal_relaxed")
                part = part.with_columns(pl.col(*BUCKETS, "thinking").fill_null(0))
            if part.height:
                daily = priced(part.group_by(["day", "rate_model"]).agg(
                    *[pl.col(b).sum() for b in (*BUCKETS, "thinking")]).sort("day"))
                if name == "aws":
                    writer(landing, daily, cloud_plant)
                else:
                    writer(landing, daily)
    scrapes = write_metrics(landing, calls, last)
    write_unknown_node(landing, last)
    return scrapes + sum(1 for _ in (landing / "bills").rglob("*.*")) + ll["day"].dt.month().n_unique() + 1
