"""The bad-input corpus: every case in tests/corpus/ through the real parsers and the real ingest.

Each case is a small landing folder (tests/corpus/<case>/, described in tests/corpus/README.md).
For every file the outcome is asserted -- loaded, already ingested, quarantined rows with their
line, field and reason, or unreadable with a message naming line/field -- and so is the
accounting: rows_in = loaded + duplicate + quarantined, rows_in = the records in the file
(counted by hand below), the quarantine holds exactly the quarantined rows, staging exactly the
loaded ones. Nothing crashes, no row is lost.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from warehouse.checks import load_checks
from warehouse.db import migrate
from warehouse.ingest import Ingestor
from warehouse.transform import build, load_tables

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NOW = dt.datetime(2025, 8, 1)  # "today" for every case: the corpus data is from June-July 2025


@dataclass(frozen=True)
class Out:
    """Expected outcome of one landing file."""

    status: str  # 'loaded', 'unreadable', 'already_ingested'
    rows_in: int = 0  # the records in the file, counted by hand
    loaded: int = 0
    duplicate: int = 0
    quarantined: int = 0
    # each (line, field, reason substring) must match one quarantine row of the file
    reasons: tuple[tuple[int | None, str | None, str], ...] = ()
    skipped: int = 0  # a cloud invoice's non-AI lines: counted, not kept (ops.ingested_files.rows_skipped)

    @staticmethod
    def unreadable(line: int | None, fld: str | None, reason: str) -> Out:
        return Out("unreadable", 1, 0, 0, 1, ((line, fld, reason),))


SAME = Out("already_ingested")


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    files: dict[str, Out]
    fx: dict[str, Decimal] = field(default_factory=dict)
    check: Callable[[duckdb.DuckDBPyConnection], None] | None = None  # more assertions on the warehouse


def q(con, sql: str, params=None):
    return con.execute(sql, params or []).fetchall()


# --------------------------------------------------------------------------------- extra checks

def _usage_shapes(con):
    # chat: 1000 prompt, 500 completion of which 300 reasoning -> 1000 / 0 / 0 / 300 / 200
    # responses: 800 input of which 100 cached, 400 output of which 250 reasoning -> 700 / 100 / 0 / 250 / 150
    # anthropic: 50 uncached, 2000 cache read, 300 cache write, 900 output of which 600 thinking -> 50 / 2000 / 300 / 600 / 300
    assert q(con, "SELECT request_id, usage_shape, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                  "thinking_tokens, output_tokens FROM stg.requests ORDER BY line") == [
        ("chat", "openai_chat", 1000, 0, 0, 300, 200),
        ("resp", "openai_responses", 700, 100, 0, 250, 150),
        ("anth", "anthropic", 50, 2000, 300, 600, 300),
    ]


def _pricing_modifiers(con):
    # flex: Chat 1000 prompt of which 200 cached, 500 completion of which 300 reasoning -> 800 / 200 / 0 / 300 / 200
    # gem: Gemini promptTokenCount 1200 includes 400 cached, + 50 tool-use prompt -> uncached 1200 - 400 + 50 = 850;
    #      candidatesTokenCount 300 excludes the 700 thoughts -> thinking 700, output 300
    # ttl: Anthropic 50 uncached, 2000 read, 300 written of which 200 with the 1-hour TTL; tier 'batch' in usage,
    #      inference_geo 'US' -> 'us', 3 web searches. The standard tier, false and zero counts are stored as NULL
    #      (a call loaded before these columns existed and its re-export are one row).
    assert q(con, "SELECT request_id, usage_shape, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                  "thinking_tokens, output_tokens, service_tier, is_batch, cache_write_1h_tokens, processing_region, "
                  "web_search_requests FROM stg.requests ORDER BY line") == [
        ("flex", "openai_chat", 800, 200, 0, 300, 200, "flex", None, None, None, None),
        ("gem", "gemini", 850, 400, 0, 700, 300, None, None, None, None, None),
        ("ttl", "anthropic", 50, 2000, 300, 0, 900, "batch", None, 200, "us", 3),
    ]


def _cloud_usage_shapes(con):
    # msg_01 Anthropic: input_tokens 120 excludes the 3000 read and 500 written (100 of them with the 1-hour
    #   TTL); output_tokens 900 includes output_tokens_details.thinking_tokens 700 -> output 200
    # msg_bdrk_02 Bedrock InvokeModel (the Anthropic body, no cache fields): 80 uncached, 450 out of which 400 thinking
    # cv-03 Bedrock Converse: inputTokens 15 excludes cacheRead 1000 and cacheWrite 2000 (cacheDetails: 1500 1h +
    #   500 5m); totalTokens 3075 = 15 + 60 + 1000 + 2000; Converse reports no thinking count
    # vx-04 Vertex AI: promptTokenCount 1200 includes 200 cached -> 1000; candidates 300 exclude 900 thoughts;
    #   trafficType PROVISIONED_THROUGHPUT -> billing 'provisioned'
    assert q(con, "SELECT request_id, provider, usage_shape, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                  "cache_write_1h_tokens, thinking_tokens, output_tokens, billing FROM stg.requests ORDER BY line") == [
        ("msg_01", "anthropic", "anthropic", 120, 3000, 500, 100, 700, 200, None),
        ("msg_bdrk_02", "bedrock", "anthropic", 80, 0, 0, None, 400, 50, None),
        ("cv-03", "aws.bedrock", "bedrock_converse", 15, 1000, 2000, 1500, 0, 60, None),
        ("vx-04", "vertex_ai", "gemini", 1000, 200, 0, None, 900, 300, "provisioned"),
    ]


def _anomaly_feedback(con) -> None:
    # scope and label are read case-insensitively and kept lower case
    assert con.execute("SELECT scope, scope_value, from_day, to_day, label FROM stg.anomaly_feedback ORDER BY line").fetchall() == [
        ("team", "search", dt.date(2026, 7, 1), dt.date(2026, 7, 3), "planned"),
        ("model", "gpt-5", dt.date(2026, 7, 1), dt.date(2026, 7, 1), "not_anomaly")]


def _commitments(con):
    # the provider as written (lower case); marts.commitments normalises it with core.provider_key;
    # an empty end is start + commit_months months
    assert q(con, "SELECT provider, model, units, usd_per_unit_hour, commit_months, commit_start, commit_end, "
                  "core.provider_key(provider) FROM stg.commitments ORDER BY line") == [
        ("aws.bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", Decimal("1"), Decimal("39.6"), 1,
         dt.datetime(2026, 7, 1), dt.datetime(2026, 8, 1), "bedrock"),
        ("azure_openai", "gpt-4o", Decimal("50"), Decimal("1"), 0, dt.datetime(2026, 7, 1), dt.datetime(2026, 8, 1),
         "azure"),
    ]


def _endpoints(con):
    assert q(con, "SELECT provider, endpoint, model, sheet_provider, deployment_type, region, billing "
                  "FROM stg.endpoints ORDER BY line") == [
        ("bedrock", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
         "anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_converse", "data_zone_us", "us-east-1", "on_demand"),
        ("azure", "prod-gpt5-eu", "gpt-5-2025-08-07", "azure", "data_zone_eu", "swedencentral", "on_demand"),
        ("azure", "ptu-o3", "o3-2025-04-16", None, "global", "eastus2", "provisioned"),
    ]


def _openai_batch(con):
    # created 1751364000 = 2025-07-01 10:00:00 UTC (1751328000 is midnight); Responses body: created_at
    assert q(con, "SELECT request_id, ts, model, provider, usage_shape, uncached_input_tokens, cached_input_tokens, "
                  "thinking_tokens, output_tokens, service_tier, is_batch FROM stg.requests ORDER BY line") == [
        ("chatcmpl-b1", dt.datetime(2025, 7, 1, 10, 0), "o3-2025-04-16", "openai", "openai_chat", 800, 200, 300, 200, None, True),
        ("resp_b3", dt.datetime(2025, 7, 1, 10, 1), "o3", "openai", "openai_responses", 800, 0, 250, 150, None, True),
    ]


def _anthropic_batch(con):
    # no time in the results: the date in the file name, 00:00 UTC
    assert q(con, "SELECT request_id, ts, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                  "cache_write_1h_tokens, output_tokens, service_tier, is_batch FROM stg.requests ORDER BY line") == [
        ("msg_01", dt.datetime(2025, 7, 1), 50, 2000, 300, None, 900, "batch", True),
        ("msg_03", dt.datetime(2025, 7, 1), 10, 0, 0, None, 20, "batch", True),
    ]


def _all_ten_utc(con):
    # naive = UTC; 12:00+02:00 = 10:00Z; epoch 1751364000 s and ms = 2025-07-01T10:00:00Z
    assert q(con, "SELECT DISTINCT ts FROM stg.requests") == [(dt.datetime(2025, 7, 1, 10),)]


def _eur_converted(con):
    # 2 EUR x 1.08 = 2.16 USD; 5 x 1.08 = 5.40; 0.5 x 1.08 = 0.54; 1.5 x 1.08 = 1.62 -- exact decimals, stored as USD
    assert q(con, "SELECT model, input_usd_per_mtok, output_usd_per_mtok, currency FROM stg.llm_prices ORDER BY line") == [
        ("magistral-medium", Decimal("2.16"), Decimal("5.40"), "USD"),
        ("magistral-small", Decimal("0.54"), Decimal("1.62"), "USD"),
    ]


def _nodes(con):
    # n6: 02:00+02:00 is midnight UTC; provider and precision lower-cased; empty active_to = open
    assert q(con, "SELECT node_id, provider, precision, gpus, usd_per_gpu_hour, active_from, active_to "
                  "FROM stg.nodes ORDER BY line") == [
        ("n1", "nebius", "fp8", 8, Decimal("2.95"), dt.datetime(2025, 7, 1), None),
        ("n6", "nebius", "fp8", 8, Decimal("2.95"), dt.datetime(2025, 7, 1), dt.datetime(2025, 7, 2)),
    ]


def _models(con):
    # BOM and CRLF gone, quoted commas and doubled quotes kept inside the field
    assert q(con, "SELECT model, family, reasoning FROM stg.models ORDER BY line") == [
        ("qwen3-32b", "Qwen3, dense", True), ("deepseek-r1", 'DeepSeek, MoE "R1"', True)]


def _counter_deltas(con):
    # scrapes ingested 10:10 first (an earlier sync), then 10:00 and 10:05; in time order prompt tokens 1000, 1600, 250:
    # deltas NULL, 600, then a restart: 250 (the new value, never negative). Generation 300, 420, 50.
    build(con, next(m for m in load_tables() if m.table == "core.metric_deltas"))
    assert q(con, "SELECT metric, strftime(scrape_ts, '%H:%M'), delta, is_reset FROM core.metric_deltas "
                  "ORDER BY metric, scrape_ts") == [
        ("generation_tokens_total", "10:00", None, False), ("generation_tokens_total", "10:05", 120.0, False),
        ("generation_tokens_total", "10:10", 50.0, True),
        ("prompt_tokens_total", "10:00", None, False), ("prompt_tokens_total", "10:05", 600.0, False),
        ("prompt_tokens_total", "10:10", 250.0, True),
    ]


def _duplicate_scrapes(con):
    # the scrape at 10:00:00 is stored once per series, whichever file name spelled the time
    assert q(con, "SELECT count(*), count(DISTINCT scrape_ts) FROM stg.metric_samples") == [(3, 1)]


def _openai_usage(con):
    # two pages + a re-saved page + a page re-exported with the same bucket: 4 results once each;
    # input tokens o3 270,000 + gpt-4.1-mini 5,000 (tests/fixtures/bills/README.md)
    assert q(con, "SELECT count(*), sum(input_tokens) FROM stg.openai_usage") == [(4, 275_000)]


def _focus(con):
    assert q(con, "SELECT count(*) FROM stg.focus_costs") == [(6,)]


def _focus_parquet(con):
    # the Parquet rows as written: $0.30 + $1.50 billed, 100 K tokens each, Tags JSON from the MAP
    assert q(con, "SELECT sum(billed_cost_usd), sum(list_cost_usd), sum(pricing_quantity) FROM stg.focus_costs "
                  "WHERE provider_name = 'AWS'") == [(Decimal("1.8"), Decimal("1.8"), Decimal("200"))]
    assert q(con, "SELECT DISTINCT tags_json, charge_period_start FROM stg.focus_costs WHERE provider_name = 'AWS'") == [
        ('{"team":"search"}', dt.datetime(2025, 6, 3))]
    assert q(con, "SELECT format, count(*) FROM ops.ingested_files GROUP BY ALL ORDER BY 1") == [
        ("focus_csv", 1), ("focus_parquet", 1)]


# --------------------------------------------------------------------------------- the cases

REQ = "telemetry/requests/"
LLM = "prices/llm/"
GPU = "prices/gpu/"
MET = "telemetry/metrics/"
NOT_WHOLE = "not a non-negative whole number"

def _eur_converted_from_fx_file(con: duckdb.DuckDBPyConnection) -> None:
    # magistral-medium at EUR 2 / 5 per million tokens, EUR 1 = USD 1.08: 2.16 / 5.40 USD
    got = con.sql("SELECT input_usd_per_mtok, output_usd_per_mtok, currency FROM stg.llm_prices").fetchall()
    assert got == [(Decimal("2.16"), Decimal("5.40"), "USD")]


def _bills_converted_from_fx_file(con: duckdb.DuckDBPyConnection) -> None:
    # the rate file's EUR 1 = USD 1.08 reaches the bill parsers as stg.fx_rates holds it (a Decimal):
    # OpenAI cost lines EUR 0.2 and 0.01 -> USD 0.216 and 0.0108; the FOCUS line's BilledCost
    # EUR 0.12 -> USD 0.1296 and its ListUnitPrice EUR 2 -> USD 2.16
    got = sorted(con.sql("SELECT amount, amount_usd, currency, fx_usd_per_unit FROM stg.openai_costs").fetchall())
    assert got == [(Decimal("0.01"), Decimal("0.0108"), "EUR", Decimal("1.08")),
                   (Decimal("0.2"), Decimal("0.216"), "EUR", Decimal("1.08"))]
    got = con.sql("SELECT billed_cost_usd, list_unit_price_usd, billing_currency, fx_usd_per_unit FROM stg.focus_costs").fetchall()
    assert got == [(Decimal("0.1296"), Decimal("2.16"), "EUR", Decimal("1.08"))]


CASES = [
    # ---- per-request telemetry (sources/requests.py)
    Case("req_three_usage_shapes", "requests", {REQ + "calls.jsonl": Out("loaded", 3, 3)}, check=_usage_shapes),
    Case("req_same_file_new_name", "requests", {REQ + "a.jsonl": Out("loaded", 2, 2), REQ + "b-renamed-copy.jsonl": SAME}),
    Case("req_overlapping_exports", "requests", {
        REQ + "export-1.jsonl": Out("loaded", 3, 3),
        REQ + "export-2.jsonl": Out("loaded", 3, 1, 2)}),
    Case("req_conflicting_resend", "requests", {
        REQ + "a.jsonl": Out("loaded", 1, 1),
        REQ + "b.jsonl": Out("loaded", 1, 0, 0, 1, ((1, "request_id", "conflicting_duplicate"),))}),
    Case("accounting_mixed_file", "requests", {
        REQ + "1-first.jsonl": Out("loaded", 2, 2),
        # m1 duplicate, m2 conflict, m3 + m4 new, m4 again (duplicate in the file), m5 bad value
        REQ + "2-resent.jsonl": Out("loaded", 6, 2, 2, 2, (
            (2, "request_id", "conflicting_duplicate"), (6, "usage.prompt_tokens", NOT_WHOLE)))}),
    Case("req_truncated_last_line", "requests", {
        REQ + "calls.jsonl": Out("loaded", 2, 1, 0, 1, ((2, None, "not a JSON object"),))}),
    Case("req_bad_numbers", "requests", {REQ + "calls.jsonl": Out("loaded", 12, 1, 0, 11, (
        (2, "usage.prompt_tokens", f"{NOT_WHOLE}: abc"),
        (3, "usage.prompt_tokens", f"{NOT_WHOLE}: 1,23"),
        (4, "usage.prompt_tokens", f"{NOT_WHOLE}: 1,000"),
        (5, "usage.prompt_tokens", f"{NOT_WHOLE}: -5"),
        (6, "usage.prompt_tokens", f"{NOT_WHOLE}: 12.5"),
        (7, "usage.prompt_tokens", f"{NOT_WHOLE}: NaN"),
        (8, "usage.prompt_tokens", f"{NOT_WHOLE}: Infinity"),
        (9, "usage.prompt_tokens", "above 10,000,000 tokens"),     # 10^6 x outlier
        (10, "usage.prompt_tokens", "above 10,000,000 tokens"),    # 24 digits: crashed the parse before
        (11, "usage.cached_tokens", "cached tokens exceed the prompt"),
        (12, "usage.reasoning_tokens", "exceed the output tokens"),
    ))}),
    Case("req_bad_and_future_dates", "requests", {REQ + "calls.jsonl": Out("loaded", 6, 1, 0, 5, (
        (2, "ts", "not an ISO-8601 timestamp"), (3, "ts", "not an ISO-8601 timestamp"),
        (4, "ts", "in the future"), (5, "ts", "before 2015"), (6, "ts", "missing")))}),
    Case("req_naive_vs_utc_timestamps", "requests", {REQ + "calls.jsonl": Out("loaded", 5, 5)}, check=_all_ten_utc),
    # blank lines (LF and CRLF) are not records; before the fix a CRLF blank line was quarantined
    Case("req_bom_crlf_blank_lines", "requests", {REQ + "calls.jsonl": Out("loaded", 2, 2)}),
    Case("req_gzip_good_and_corrupt", "requests", {
        REQ + "good.jsonl.gz": Out("loaded", 1, 1),
        REQ + "corrupt.jsonl.gz": Out.unreadable(None, None, "corrupt gzip")}),
    Case("req_not_utf8", "requests", {REQ + "latin1.jsonl": Out.unreadable(2, None, "not UTF-8 (byte 0xe9)")}),
    Case("req_empty_file", "requests", {REQ + "empty.jsonl": Out.unreadable(None, None, "unknown format")}),
    Case("req_missing_fields", "requests", {REQ + "calls.jsonl": Out("loaded", 6, 1, 0, 5, (
        (1, "request_id", "missing"), (2, "model", "missing"), (3, "usage", "missing"),
        (4, "usage", "not an object"), (5, None, "not a JSON object")))}),
    # ---- pricing modifiers and batch result files (issue 14)
    Case("req_pricing_modifiers", "requests", {REQ + "calls.jsonl": Out("loaded", 7, 3, 0, 4, (
        (2, "service_tier", 'unknown service tier "turbo"'), (3, "batch", "not a JSON boolean"),
        (4, "usage.cache_creation", "= 200, not cache_creation_input_tokens = 300"),
        (5, "usage.server_tool_use.web_search_requests", NOT_WHOLE)))}, check=_pricing_modifiers),
    # the same calls exported again with the tier, a zero 1-hour split and zero searches: duplicates, not conflicts
    Case("req_reexport_with_tier_fields", "requests", {REQ + "a.jsonl": Out("loaded", 2, 2),
                                                        REQ + "b.jsonl": Out("loaded", 3, 1, 2, 0)}),
    Case("req_openai_batch_output", "requests", {REQ + "batch_68a1_output.jsonl": Out("loaded", 4, 2, 0, 2, (
        (2, "response", "failed with status 400: Invalid model"), (4, "response", "completion window expired")))},
        check=_openai_batch),
    Case("req_anthropic_batch_results", "requests", {REQ + "msgbatch_01_results.2025-07-01.jsonl": Out("loaded", 5, 2, 0, 3, (
        (2, "result", "errored: max_tokens: Field required"), (4, "result", "expired"), (5, "result", "canceled")))},
        check=_anthropic_batch),
    # issue 24: Claude thinking (output_tokens_details), Bedrock InvokeModel / Converse, Vertex AI provisioned, and
    # the bad ones: totalTokens that disagrees with its parts, two thinking counts that disagree, thinking above the
    # output, an unknown trafficType, cacheDetails that do not add up, a usage object of no known shape
    Case("req_cloud_usage_shapes", "requests", {REQ + "clouds.jsonl": Out("loaded", 10, 4, 0, 6, (
        (5, "usage.totalTokens", "is not inputTokens + outputTokens + cacheReadInputTokens + cacheWriteInputTokens = 75"),
        (6, "usage.output_tokens_details.thinking_tokens", "disagrees with usage.thinking_tokens (its older alias): 400 vs 300"),
        (7, "usage.output_tokens_details.thinking_tokens", "exceed the output tokens"),
        (8, "usageMetadata.trafficType", 'unknown traffic type "SPOT_MAYBE"'),
        (9, "usage.cacheDetails", "add up to 90, not cacheWriteInputTokens = 100"),
        (10, "usage", "matches no known usage shape")))}, check=_cloud_usage_shapes),
    # ---- LLM price sheets (sources/prices_llm.py)
    # BOM, CRLF, odd header case, columns reordered, an extra column with quoted commas
    Case("llm_csv_columns_case_order_extra", "prices_llm", {LLM + "sheet.2025-06-01.csv": Out("loaded", 3, 3)}),
    Case("llm_csv_bad_values", "prices_llm", {LLM + "bad.2025-06-01.csv": Out("loaded", 15, 2, 0, 13, (
        (3, "input_usd_per_mtok", "not a number: 'abc'"),
        (4, "input_usd_per_mtok", "decimal comma or thousands separator"),
        (5, "output_usd_per_mtok", "'NaN'"),
        (6, "input_usd_per_mtok", "'Inf'"),
        (7, "input_usd_per_mtok", "negative price"),
        (8, "output_usd_per_mtok", "above the plausible maximum 1000"),
        (9, "currency", "'EUR' without an FX rate"),
        (10, "effective_from", "no such day"),
        (11, "effective_from", "expected YYYY-MM-DD"),
        (12, "output_usd_per_mtok", "missing"),
        (13, None, "7 fields but the header has 6"),
        (14, "provider", "empty provider"),
        (17, "input_usd_per_mtok", "'x1'"),   # after a quoted field spanning lines 15-16
    ))}),
    Case("llm_csv_renamed_column", "prices_llm", {LLM + "renamed.2025-06-01.csv": Out.unreadable(None, None, "unknown format")}),
    Case("llm_csv_dropped_column", "prices_llm", {
        LLM + "dropped.2025-06-01.csv": Out.unreadable(1, "output_usd_per_mtok", "missing required column")}),
    Case("llm_csv_header_only", "prices_llm", {LLM + "header-only.2025-06-01.csv": Out("loaded", 0)}),
    Case("llm_csv_amended_price", "prices_llm", {
        LLM + "a.2025-06-01.csv": Out("loaded", 2, 2),
        LLM + "b.2025-06-01.csv": Out("loaded", 2, 0, 1, 1, (
            (3, "provider, model, price_kind, effective_from", "conflicting_duplicate"),))}),
    Case("llm_csv_per_1k_prices", "prices_llm", {LLM + "per1k.2025-06-01.csv": Out("loaded", 4, 2, 0, 2, (
        (4, "input_usd_per_mtok", "price per 1K mistaken for per 1M"),
        (5, "output_usd_per_mtok", "price per 1K mistaken for per 1M")))}),
    Case("llm_csv_eur_with_fx", "prices_llm", {LLM + "eur.2025-06-01.csv": Out("loaded", 2, 2)},
         fx={"EUR": Decimal("1.08")}, check=_eur_converted),
    Case("llm_csv_eur_without_fx", "prices_llm", {LLM + "eur.2025-06-01.csv": Out("loaded", 2, 1, 0, 1, (
        (2, "currency", "without an FX rate"),))}),
    # 21 rows in, 15 loaded since issue 44: dall-e-3 (output_cost_per_image) is a per-image price row now
    Case("litellm_per_token_json", "prices_llm", {LLM + "litellm.2025-06-01.json": Out("loaded", 21, 15, 0, 6, (
        (89, "input_cost_per_token", "negative price"), (94, "input_cost_per_token", "not a finite number: NaN"),
        (99, "input_cost_per_token", "above the plausible maximum"), (104, "litellm_provider", "missing")))}),
    Case("litellm_truncated_json", "prices_llm", {
        LLM + "litellm.2025-06-01.json": Out.unreadable(22, None, "truncated JSON")}),
    Case("openrouter_json", "prices_llm", {LLM + "openrouter.2025-06-01.json": Out("loaded", 6, 4, 0, 2, (
        (6, "pricing.prompt", "not a number: 'abc'"), (7, "pricing.completion", "above the plausible maximum")))}),
    # ---- GPU price sheets (sources/prices_gpu.py)
    Case("gpu_csv_good", "prices_gpu", {GPU + "gpu.2025-06-01.csv": Out("loaded", 4, 4)}),
    Case("gpu_csv_bad_values", "prices_gpu", {GPU + "gpu-bad.2025-06-01.csv": Out("loaded", 10, 1, 0, 9, (
        (3, "pricing", "'hourly'"), (4, "usd_per_gpu_hour", "'abc'"), (5, "usd_per_gpu_hour", "not positive"),
        (6, "usd_per_gpu_hour", "not positive"), (7, "usd_per_gpu_hour", "per-node price"),
        (8, "gpus_per_node", "not a whole number"), (9, "effective_from", "no such day"),
        (10, "gpu_type", "empty"), (11, "usd_per_gpu_hour", "decimal comma")))}),
    Case("skypilot_bad_rows", "prices_gpu", {GPU + "vms.csv": Out("loaded", 9, 3, 0, 6, (
        (2, "Price", "'abc'"), (3, "AcceleratorCount", "'0'"), (5, "Price", "per-node price"),
        (6, "SpotPrice", "not positive"), (8, "Price", "empty Price"), (10, "AcceleratorCount", "negative")))}),
    # ---- catalog (sources/catalog.py)
    Case("catalog_nodes_bad_rows", "catalog", {"catalog/nodes.csv": Out("loaded", 7, 2, 0, 5, (
        (3, "gpus", "'abc'"), (4, "active_to", "not after active_from"), (5, "node_id", "missing"),
        (6, "usd_per_gpu_hour", "'2,95'"), (8, "active_from", "not an ISO-8601 timestamp")))}, check=_nodes),
    Case("catalog_models_bom_crlf_quotes", "catalog", {"catalog/models.csv": Out("loaded", 3, 2, 0, 1, (
        (4, "reasoning", "not a boolean: 'maybe'"),))}, check=_models),
    Case("catalog_endpoints_bad_rows", "catalog", {"catalog/endpoints.csv": Out("loaded", 6, 3, 0, 3, (
        (5, "endpoint", "missing"), (6, "billing", "not on_demand or provisioned: 'monthly'"),
        (7, "deployment_type", "'cross-region'")))}, check=_endpoints),
    Case("catalog_deployments_dropped_column", "catalog", {
        "catalog/deployments.csv": Out.unreadable(1, "gpus", "missing required column")}),
    # ---- bills (sources/bills_openai.py, bills_anthropic.py, bills_focus.py)
    Case("bills_openai_relanded_and_overlapping", "bills_openai", {
        "bills/openai/costs__2025-06-01__p1.json": Out("loaded", 10, 10),
        "bills/openai/usage_completions__2025-06-01__p1.json": Out("loaded", 3, 3),
        "bills/openai/usage_completions__2025-06-01__p1.saved-again.json": SAME,
        "bills/openai/usage_completions__2025-06-01__p2.json": Out("loaded", 1, 1),
        "bills/openai/usage_completions__2025-06-03__p1.json": Out("loaded", 1, 0, 1)}, check=_openai_usage),
    Case("bills_openai_amended_line", "bills_openai", {
        "bills/openai/costs__2025-06-01__p1.amended.json": Out("loaded", 2, 2),
        "bills/openai/costs__2025-06-01__p1.json": Out("loaded", 2, 0, 1, 1, (
            (1, "bucket_start, bucket_end, project_id, line_item", "conflicting_duplicate"),))}),
    Case("bills_openai_costs_in_eur_without_fx", "bills_openai", {
        "bills/openai/costs__2025-06-01__p1.json": Out("loaded", 2, 0, 0, 2, (
            (1, "amount.currency", "EUR has no FX rate"), (2, "amount.currency", "EUR has no FX rate")))}),
    Case("bills_anthropic_pages", "bills_anthropic", {
        "bills/anthropic/cost_report__2025-06-01__p1.json": Out("loaded", 15, 15),
        "bills/anthropic/usage_report_messages__2025-06-01__p1.json": Out("loaded", 3, 3),
        "bills/anthropic/usage_report_messages__2025-06-01__p2.json": Out("loaded", 1, 1)}),
    Case("bills_anthropic_truncated_page", "bills_anthropic", {
        "bills/anthropic/cost_report__2025-06-01__p1.json": Out.unreadable(11, None, "invalid JSON")}),
    Case("bills_focus_bom_crlf_amended", "bills_focus", {
        "bills/focus/llm_api_2025-06-01_02.csv": Out("loaded", 5, 4, 0, 1, ((7, "BilledCost", "not a number: 'n/a'"),)),
        "bills/focus/llm_api_2025-06-02_03.csv": Out("loaded", 4, 2, 2),
        "bills/focus/llm_api_2025-06-02_amended.csv": Out("loaded", 2, 0, 1, 1, ((2, None, "conflicting_duplicate"),))},
         check=_focus),
    Case("bills_focus_parquet", "bills_focus", {
        # a FOCUS export as AWS Data Exports writes it (Parquet, typed columns, Tags a MAP) beside a CSV
        "bills/focus/aws-focus/data/BILLING_PERIOD=2025-06/aws-focus-00001.snappy.parquet": Out("loaded", 3, 2, 0, 1, (
            (3, "ChargePeriodEnd", "ChargePeriodEnd is before ChargePeriodStart"),)),
        "bills/focus/llm_api_2025-06-01_02.csv": Out("loaded", 5, 4, 0, 1, ((7, "BilledCost", "not a number: 'n/a'"),))},
         check=_focus_parquet),
    # ---- Prometheus scrapes (sources/prometheus.py)
    Case("prom_counter_reset_out_of_order", "prometheus", {
        MET + "1-synced-first/gpu-a__2025-07-01T10-10-00Z.prom": Out("loaded", 3, 3),
        MET + "2-synced-later/gpu-a__2025-07-01T10-00-00Z.prom": Out("loaded", 3, 3),
        MET + "2-synced-later/gpu-a__2025-07-01T10-05-00Z.prom": Out("loaded", 3, 3)}, check=_counter_deltas),
    Case("prom_duplicate_scrapes", "prometheus", {
        MET + "gpu-a__2025-07-01T10-00-00+00-00.prom": Out("loaded", 3, 3),
        # same time spelled otherwise: 2 identical samples are duplicates, the changed counter a conflict
        MET + "gpu-a__2025-07-01T10-00-00.000Z.prom": Out("loaded", 3, 0, 2, 1, (
            (5, "node_id, scrape_ts, source_metric, labels", "conflicting_duplicate"),)),
        MET + "gpu-a__2025-07-01T10-00-00Z.prom": SAME}, check=_duplicate_scrapes),
    Case("prom_garbage_line", "prometheus", {
        MET + "gpu-b__2025-07-01T10-00-00Z.prom": Out.unreadable(8, None, "not Prometheus text exposition")}),
    Case("prom_no_node_in_name_or_labels", "prometheus", {
        MET + "gpu-a.prom": Out.unreadable(None, "node_id", "no node id")}),
    # DESIGN.md: only USD is accepted unless an fx/ rate file is present; fx/ files are read first
    Case("llm_csv_eur_fx_file_in_landing", "prices_llm", {
        "fx/rates.2025-06-01.csv": Out("loaded", 1, 1),
        LLM + "eur.2025-06-01.csv": Out("loaded", 1, 1)}, check=_eur_converted_from_fx_file),
    # bills in EUR with the rate file in the landing folder (before the fix: a crash of the whole run,
    # decimal.InvalidOperation on the Decimal rate read back from stg.fx_rates)
    Case("bills_in_eur_with_fx_file", "bills_openai", {
        "fx/rates.2025-06-01.csv": Out("loaded", 1, 1),
        "bills/openai/costs__2025-06-01__p1.json": Out("loaded", 2, 2),
        "bills/focus/llm_api_eur_2025-06-02_03.csv": Out("loaded", 1, 1)}, check=_bills_converted_from_fx_file),
    # a NaN sample is not loaded but accounted for: quarantined with its reason
    Case("prom_nan_sample_is_accounted", "prometheus", {
        MET + "gpu-a__2025-07-01T10-00-00Z.prom": Out("loaded", 3, 2, 0, 1)}),
]

# ---- issue 15: OpenTelemetry GenAI spans and LiteLLM proxy spend logs
OTEL = "telemetry/otel/"
SPEND = "telemetry/litellm_spendlogs/"


def _otel_buckets(con):
    # the one good span: input 1,200 of which 200 cache reads, output 300 of which 100 reasoning
    # -> 1,000 / 200 / 0 / 100 / 200; task type = the invoke_agent ancestor's gen_ai.agent.name;
    # the agent's own usage (999 / 999) is an aggregate and is never loaded
    assert q(con, "SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, "
                  "output_tokens, task_type, team FROM stg.requests") == [("ok-1", 1000, 200, 0, 100, 200, "triage", "corpus")]


def _spendlog_buckets(con):
    # ok-1: usage_object prompt 1,000 of which 400 cached, completion 100 of which 60 reasoning;
    # ok-2: no usage_object -> the row's prompt_tokens 1,000 / completion_tokens 100, no detail
    assert q(con, "SELECT request_id, uncached_input_tokens, cached_input_tokens, thinking_tokens, output_tokens "
                  "FROM stg.requests ORDER BY request_id") == [("ok-1", 600, 400, 60, 40), ("ok-2", 1000, 0, 0, 100)]
    assert q(con, "SELECT request_id, reported_cost_usd FROM stg.reported_costs ORDER BY request_id") == [
        ("ok-1", Decimal("0.001")), ("ok-2", Decimal("0.001"))]


CASES += [
    Case("otel_bad_spans", "otel", {OTEL + "spans.jsonl": Out("loaded", 8, 1, 0, 7, (
        (1, "gen_ai.usage", "model call without usage"),
        (1, "gen_ai.usage.cache_read.input_tokens", "cache reads + writes exceed the input tokens"),
        (1, "gen_ai.usage.reasoning.output_tokens", "reasoning tokens exceed the output tokens"),
        (1, "gen_ai.usage.input_tokens", NOT_WHOLE + ": abc"),
        (1, "gen_ai.response.model", "missing"),
        (2, None, "not OTLP/JSON TracesData"),
        (3, "traceId", "not 32 hex digits")))}, check=_otel_buckets),
    Case("spendlogs_bad_rows", "litellm_spendlogs", {SPEND + "spendlogs.20250701.jsonl": Out("loaded", 9, 2, 0, 7, (
        (3, "status", "failed call (status failure)"),
        (4, "request_id", "missing"),
        (5, "spend", "not a number >= 0: abc"),
        (6, "metadata.usage_object.prompt_tokens_details", "cached + cache-write tokens exceed the prompt"),
        (7, "metadata.usage_object.completion_tokens_details.reasoning_tokens", "reasoning tokens exceed the completion"),
        (8, None, "not a JSON object"),
        (9, "prompt_tokens", NOT_WHOLE + ": -5")))}, check=_spendlog_buckets),
]

# ---- issue 25: cloud invoices (AWS CUR 2.0, Azure cost details, GCP billing export)
AWS = "bills/aws/"
AZ = "bills/azure/"
GCP = "bills/gcp/"


def _cloud_negative_usage(con):
    # the Refund line keeps its negative amount (a refund, not usage)
    assert q(con, "SELECT charge_kind, quantity, cost_usd FROM stg.cloud_bill_lines ORDER BY line") == [
        ("usage", Decimal(100), Decimal("0.3")), ("refund", Decimal(-20), Decimal("-0.3"))]


def _cloud_overlap(con):
    # the June 3 output line is kept at 0.15 (the first file), its 0.16 is quarantined; nothing twice
    assert q(con, "SELECT CAST(usage_start AS DATE), bucket, cost_usd FROM stg.cloud_bill_lines ORDER BY 1, 2") == [
        (dt.date(2025, 6, 3), "input", Decimal("0.3")), (dt.date(2025, 6, 3), "output", Decimal("0.15")),
        (dt.date(2025, 6, 4), "input", Decimal("0.15"))]


def _cloud_reissued(con):
    old, new = (f"{AZ}costs/20250601-20250630/{r}/part_0_0001.csv" for r in (
        "11111111-aaaa-4bbb-8ccc-000000000001", "22222222-aaaa-4bbb-8ccc-000000000002"))
    ids = dict(q(con, "SELECT file, file_id FROM ops.ingested_files"))
    assert q(con, "SELECT file, replaced_by_file_id, export_key FROM ops.ingested_files ORDER BY file_id") == [
        (old, ids[new], f"azure|2025-06|{AZ}costs/20250601-20250630/*/part_0_0001.csv"),
        (new, None, f"azure|2025-06|{AZ}costs/20250601-20250630/*/part_0_0001.csv")]
    # the month as the newer export bills it: 0.18 + 0.08 + 0.55; the older run's rows kept in ops, not counted
    assert q(con, "SELECT count(*), sum(cost_usd) FROM stg.cloud_bill_lines") == [(3, Decimal("0.81"))]
    assert q(con, "SELECT count(*), sum(cost_usd), min(replaced_by_file_id) FROM ops.replaced_cloud_bill_lines") == [
        (2, Decimal("0.28"), ids[new])]


def _cloud_formats(con):
    got = {(c, s): (m, b, t, d, lc, tok, team, p) for c, s, m, b, t, d, lc, tok, team, p in q(
        con, "SELECT cloud, sku, model, bucket, tier, deployment_type, long_context, tokens, team, principal "
             "FROM stg.cloud_bill_lines")}
    assert got == {
        # Parquet, MAP columns
        ("aws", "USE1-Claude4.5Sonnet-output-tokens-batch"): (
            "claude-sonnet-4-5", "output", "batch", "in_region", False, 10_000, "research", "arn:aws:iam::111122223333:user/alice"),
        ("aws", "USE1-MP:USE1_OutputTokenCount-Units"): (
            "claude-3-5-sonnet", "output", "standard", "in_region", False, 2_000, "research", None),
        # Parquet: an EC2 instance-hour line, kept narrow to price a node (no model, tokens, tags)
        ("aws", "USE1-BoxUsage:p5.48xlarge"): (None, "instance_hours", None, None, None, None, None, None),
        # gzip, BOM, CRLF
        ("aws", "EUC1-Claude3.7Sonnet-cache-write-input-token-count-1-hour"): (
            "claude-3-7-sonnet", "cache_write_1h", "standard", "in_region", False, 4_000, None, None),
        ("aws", "USE1-Claude3.7Sonnet-input-tokens-priority"): (
            "claude-3-7-sonnet", "input", "priority", "in_region", False, 10_000, None, None),
        # flattened GCP columns, nested GCP Parquet
        ("gcp", "Gemini 2.5 Pro Text Input (Long) - Predictions"): (
            "gemini-2.5-pro", "input", "standard", None, True, 100_000, "search", None),
        ("gcp", "Gemini 2.5 Pro Text Caching Storage - Predictions"): (
            "gemini-2.5-pro", "cache_storage", "standard", None, False, None, None, None),
        ("gcp", "Gemini 2.5 Flash Text Output (Thinking On) - Predictions"): (
            "gemini-2.5-flash", "output", "standard", None, False, 200_000, "research", None),
        # Azure MCA (camelCase columns)
        ("azure", "o4-mini 0416 Outp Dz"): ("o4-mini", "output", "standard", "data_zone", False, 50_000, "research", None),
    }
    assert q(con, "SELECT credits_usd, net_cost_usd FROM stg.cloud_bill_lines WHERE credits_usd IS NOT NULL") == [
        (Decimal("-0.5"), Decimal("0"))]


CASES += [
    Case("catalog_cloud_principals", "catalog", {"catalog/cloud_principals.csv": Out("loaded", 2, 1, 0, 1, (
        (3, "team", "missing"),))}),
    Case("catalog_cost_centers_bad_rows", "catalog", {"catalog/cost_centers.csv": Out("loaded", 7, 3, 0, 4, (
        (4, "field", "unknown field 'colour'"), (5, "field", "tag:<key> with a key of letters"),
        (6, "cost_center", "missing"), (7, "pattern", "without its ']'")))}),
    Case("catalog_commitments_bad_rows", "catalog", {"catalog/commitments.csv": Out("loaded", 8, 2, 0, 6, (
        (4, "units", "not positive: 0"), (5, "usd_per_unit_hour", "not positive: -3"),
        (6, "end", "not after start"), (7, "end", "no commit_months"), (8, "provider", "missing"),
        (9, "commit_months", "0 to 120 months")))},
         check=_commitments),
    Case("catalog_anomaly_feedback_bad_rows", "catalog", {"catalog/anomaly_feedback.csv": Out("loaded", 7, 2, 0, 5, (
        (4, "scope", "not a scope of marts.spend_anomalies"), (5, "label", "not planned or not_anomaly"),
        (6, "to", "before from"), (7, "from", "not an ISO date"), (8, "scope_value", "missing")))},
         check=_anomaly_feedback),
    Case("bills_cloud_not_a_cost_export", "bills_cloud", {
        AWS + "exports/not-a-cur.csv": Out.unreadable(None, None, "unknown format"),
        AZ + "notes.txt": Out.unreadable(None, None, "unknown format")}),
    Case("bills_cloud_currency_without_fx", "bills_cloud", {
        # the D4s v5 line is a Virtual Machines line, but not a GPU (N-series) VM: skipped, not a compute line
        AZ + "costs/20250601-20250630/run-a/part_0_0001.csv": Out("loaded", 3, 0, 0, 2, (
            (2, "BillingCurrency", "currency EUR: no FX rate"), (3, "BillingCurrency", "currency EUR: no FX rate")),
            skipped=1)}),
    Case("bills_cloud_negative_usage", "bills_cloud", {
        AWS + "cur/BILLING_PERIOD=2025-06/cur-00001.csv": Out("loaded", 5, 2, 0, 2, (
            (3, "line_item_usage_amount", "negative usage amount -20"),
            (5, "line_item_usage_amount", "not a number: 'abc'")), skipped=1)}, check=_cloud_negative_usage),
    Case("bills_cloud_overlapping_periods", "bills_cloud", {
        AWS + "cur/BILLING_PERIOD=2025-06/cur-00001.csv": Out("loaded", 2, 2),
        AWS + "manual/bedrock-june-3-to-4.csv": Out("loaded", 3, 1, 1, 1, (
            (3, None, "conflicting_duplicate"),))}, check=_cloud_overlap),
    Case("bills_cloud_reissued_month", "bills_cloud", {
        AZ + "costs/20250601-20250630/11111111-aaaa-4bbb-8ccc-000000000001/part_0_0001.csv": Out("loaded", 2, 2),
        AZ + "costs/20250601-20250630/22222222-aaaa-4bbb-8ccc-000000000002/part_0_0001.csv": Out("loaded", 3, 3)},
        check=_cloud_reissued),
    Case("bills_cloud_formats", "bills_cloud", {
        AWS + "cur2-gzip/data/BILLING_PERIOD=2025-06/cur2-gzip-00001.csv.gz": Out("loaded", 3, 2, skipped=1),
        # its EC2 p5.48xlarge line names an instance: a compute line (issue 25 item 4), loaded
        AWS + "cur2-parquet/data/BILLING_PERIOD=2025-06/cur2-parquet-00001.snappy.parquet": Out("loaded", 3, 3),
        AZ + "mca/cost-details_2025-06.csv": Out("loaded", 2, 1, skipped=1),
        GCP + "flat/billing_2025-06.csv": Out("loaded", 3, 2, skipped=1),
        GCP + "parquet/gcp_billing_export_v1_2025-06.parquet": Out("loaded", 2, 1, skipped=1)}, check=_cloud_formats),
]

# Cases that show a gap in code other engineers own: strict xfail, so the fix shows up as XPASS.
GAPS = [
]


def ingest_case(case: Case) -> tuple[duckdb.DuckDBPyConnection, dict]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    migrate(con)
    ingestor = Ingestor(con, CORPUS / case.name, now=NOW)
    if case.fx:
        ingestor.ctx = dataclasses.replace(ingestor.ctx, fx_usd_per_unit=case.fx)
    summary = ingestor.ingest()
    return con, {f.file: f for f in summary.files}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES]
                         + [pytest.param(*p.values, marks=p.marks, id=p.values[0].name) for p in GAPS])
def test_corpus_case(case: Case):
    con, results = ingest_case(case)
    assert set(results) == set(case.files), "every file of the case has an expected outcome"
    for rel, want in case.files.items():
        got = results[rel]
        assert got.status == want.status, (rel, got.message)
        counts = (got.rows_in, got.rows_loaded, got.rows_duplicate, got.rows_quarantined)
        assert counts == (want.rows_in, want.loaded, want.duplicate, want.quarantined), rel
        assert want.rows_in == want.loaded + want.duplicate + want.quarantined + want.skipped  # nothing lost
        assert got.rows_skipped == want.skipped, rel
        if want.status == "already_ingested":
            continue
        file_id, stored = q(con, "SELECT file_id, (rows_in, rows_loaded, rows_duplicate, rows_quarantined) "
                                 "FROM ops.ingested_files WHERE file = ?", [rel])[0]
        assert tuple(stored.values() if isinstance(stored, dict) else stored) == counts
        table = got.table
        if table == "stg.cloud_bill_lines":  # a re-issued export moved the rows it replaced to ops
            assert q(con, "SELECT (SELECT count(*) FROM stg.cloud_bill_lines WHERE file_id = $f) + (SELECT count(*) "
                          "FROM ops.replaced_cloud_bill_lines WHERE file_id = $f)", {"f": file_id}) == [(want.loaded,)]
        elif table:
            assert q(con, f"SELECT count(*) FROM {table} WHERE file_id = ?", [file_id]) == [(want.loaded,)]
        quarantine = q(con, "SELECT line, field, reason FROM ops.quarantine WHERE file_id = ?", [file_id])
        assert len(quarantine) == want.quarantined, (rel, quarantine)
        for line, fld, reason in want.reasons:
            assert any(r[0] == line and (fld is None or r[1] == fld) and reason in r[2] for r in quarantine), (
                rel, (line, fld, reason), quarantine)
        if want.status == "unreadable":
            assert want.reasons[0][2] in got.message
    accounting = next(c for c in load_checks() if c.name == "ingest_accounting")
    assert accounting.run(con)[0] == 0
    if case.check:
        case.check(con)
    # landing the same folder again adds nothing
    before = q(con, "SELECT count(*), sum(rows_in) FROM ops.ingested_files")
    again = Ingestor(con, CORPUS / case.name, now=NOW).ingest()
    assert {f.status for f in again.files} == {"already_ingested"}
    assert q(con, "SELECT count(*), sum(rows_in) FROM ops.ingested_files") == before
    con.close()


def test_corpus_is_complete():
    """>= 25 cases over every source family; every case folder is listed here and in the README."""
    folders = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    listed = {c.name for c in CASES} | {p.values[0].name for p in GAPS}
    assert folders == listed
    assert len(CASES) + len(GAPS) >= 25
    assert {c.family for c in CASES} == {"requests", "prices_llm", "prices_gpu", "catalog", "bills_openai",
                                         "bills_anthropic", "bills_focus", "bills_cloud", "prometheus", "otel", "litellm_spendlogs"}
    readme = (CORPUS / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in folders)


def test_accounting_check_fails_when_the_books_do_not_balance():
    """The SQL check that guards the invariant can fail: on the mixed file, lose a row from the books."""
    case = next(c for c in CASES if c.name == "accounting_mixed_file")
    con, _ = ingest_case(case)
    accounting = next(c for c in load_checks() if c.name == "ingest_accounting")
    assert accounting.run(con)[0] == 0
    con.execute("UPDATE ops.ingested_files SET rows_duplicate = rows_duplicate - 1 WHERE file LIKE '%2-resent%'")
    bad, sample = accounting.run(con)
    assert bad == 1 and sample[0]["file"] == REQ + "2-resent.jsonl"
    con.execute("UPDATE ops.ingested_files SET rows_duplicate = rows_duplicate + 1 WHERE file LIKE '%2-resent%'")
    con.execute("DELETE FROM ops.quarantine WHERE file LIKE '%2-resent%' AND line = 6")  # a quarantined row vanishes
    assert accounting.run(con)[0] == 1


def test_great_expectations_pass_on_everything_the_parsers_let_through():
    """The GX suites agree with the parsers: whatever the corpus loaded into staging is valid.

    Every case's staging rows are gathered into one warehouse (file ids renumbered per case), then
    each table is validated once (GX costs ~0.3 s per validation, whatever the row count).
    """
    from warehouse.expectations import validate_new_rows

    combined = duckdb.connect()
    combined.execute("SET TimeZone = 'UTC'")
    migrate(combined)
    tables: set[str] = set()
    for n, case in enumerate(CASES):
        con, results = ingest_case(case)
        offset = 1000 * (n + 1)
        files = con.sql("SELECT * REPLACE (file_id + $o AS file_id, sha256 || '-' || $o AS sha256) FROM ops.ingested_files", params={"o": offset}).to_arrow_table()  # noqa: F841  (read by name in the INSERT below: a DuckDB replacement scan)
        combined.execute("INSERT INTO ops.ingested_files SELECT * FROM files")
        for table in {f.table for f in results.values() if f.table}:
            # request ids are unique per case, not across cases
            ids = ", $o || '-' || request_id AS request_id" if table == "stg.requests" else ""
            rows = con.sql(f"SELECT * REPLACE (file_id + $o AS file_id{ids}) FROM {table}",  # noqa: F841  (read by name in the INSERT below)
                           params={"o": offset}).to_arrow_table()
            combined.execute(f"INSERT INTO {table} SELECT * FROM rows")
            tables.add(table)
        con.close()
    assert len(tables) >= 10
    failures = {}
    for table in sorted(tables):
        res = validate_new_rows(combined, table, 1, now=NOW)
        assert res.rows_validated > 0
        if not res.success:
            failures[table] = res.sample(5)
    assert failures == {}
