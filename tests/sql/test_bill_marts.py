"""The bill marts (issue 4): core.billed_lines / core.billed_costs, marts.bill_reconciliation,
marts.focus_costs and the 'api_bill' rows of marts.daily_spend.

A month of usage (June 2026) with the matching cost exports, written into a tmp landing folder:

* o3 (OpenAI), one call a day at 12:00 UTC on day d = 1..30: 10,000·d prompt tokens of which
  2,000·d cached, 3,000·d completion tokens of which 2,000·d reasoning.
  Price sheet 2026-06-01: input $2, cached $0.50, output (= reasoning) $8 per 1M tokens;
  sheet 2026-06-21: output $6. Cost of day d:
    uncached 8,000·d x 2 = 0.016·d, cached 2,000·d x 0.5 = 0.001·d,
    thinking + visible output 3,000·d x 8 = 0.024·d (d <= 20) or x 6 = 0.018·d (d >= 21)
    -> 0.041·d (d <= 20), 0.035·d (d >= 21).
  The OpenAI Costs API export bills exactly that, as line items '<model>, input',
  '<model>, cached input', '<model>, output' -- except day 15, whose output line is planted
  $1.25 too high.
* claude-x (Anthropic shape), one call a day at 13:00 UTC: 1,000·d uncached input, 4,000·d cache
  reads, 2,000·d cache writes, 3,000·d output (2,500·d of it thinking). Prices $3 / $0.30 / $3.75
  / $15 per 1M: 0.003·d + 0.0012·d + 0.0075·d + 0.045·d = 0.0567·d. The cost_report bills days
  1..29 in cents (0.3·d, 0.12·d, 0.75·d, 4.5·d = 5.67·d cents), plus a web-search line of 3 cents
  on day 20 (no model). Day 30 is not in the report: unbilled usage.
* A self-hosted node n1 (nebius, 1 x H100 at $2/GPU-hour) active 2026-06-01 .. 06-03: 2 days x 24 h
  x $2 = $96 (one call on day 1; day 2 is idle).
* A FOCUS export with three lines: Nebius GPU compute on day 1 ($48, counted, no model); an OpenAI
  line for day 2 that repeats the Costs API (not counted twice); an OpenAI o3 line on 2026-07-01,
  a day the Costs API does not cover ($0.50, counted, a bill without usage).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REAL, build_warehouse, write_files
from warehouse.db import migrate
from warehouse.transform import load_tables

REPO = Path(__file__).resolve().parents[2]
DAYS = range(1, 31)
PLANTED = D("1.25")


def o3_cost(d: int) -> D:
    return (D("0.041") if d <= 20 else D("0.035")) * d


def claude_cost(d: int) -> D:
    return D("0.0567") * d


def _epoch(d: int) -> int:
    return int(dt.datetime(2026, 6, d, tzinfo=dt.UTC).timestamp())


def _calls() -> str:
    lines = []
    for d in DAYS:
        lines.append(json.dumps({
            "ts": f"2026-06-{d:02d}T12:00:00Z", "request_id": f"o{d}", "model": "o3-2025-04-16", "provider": "openai",
            "team": "search", "task_type": "qa",
            "usage": {"prompt_tokens": 10000 * d, "completion_tokens": 3000 * d,
                      "prompt_tokens_details": {"cached_tokens": 2000 * d},
                      "completion_tokens_details": {"reasoning_tokens": 2000 * d}}}))
        lines.append(json.dumps({
            "ts": f"2026-06-{d:02d}T13:00:00Z", "request_id": f"c{d}", "model": "claude-x", "provider": "anthropic",
            "team": "ops", "task_type": "review",
            "usage": {"input_tokens": 1000 * d, "cache_read_input_tokens": 4000 * d,
                      "cache_creation_input_tokens": 2000 * d, "output_tokens": 3000 * d, "thinking_tokens": 2500 * d}}))
    lines.append(json.dumps({"ts": "2026-06-01T10:00:00Z", "request_id": "s1", "model": "qwen3-32b", "node_id": "n1",
                             "team": "ops", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}))
    return "\n".join(lines) + "\n"


def _openai_costs_page(days: range, has_more: bool) -> str:
    buckets = []
    for d in days:
        out_price = 8 if d <= 20 else 6
        output = D(3000 * d * out_price) / 1_000_000 + (PLANTED if d == 15 else 0)
        items = [("input", D(8000 * d * 2) / 1_000_000, False),
                 ("cached input", D(2000 * d) * D("0.5") / 1_000_000, True),   # amount.value as a string
                 ("output", output, False)]
        buckets.append({
            "object": "bucket", "start_time": _epoch(d), "end_time": _epoch(d) + 86400,
            "results": [{"object": "organization.costs.result",
                         "amount": {"value": str(v) if as_text else float(v), "currency": "usd"},
                         "line_item": f"o3-2025-04-16, {kind}", "project_id": "proj_alpha"}
                        for kind, v, as_text in items]})
    return json.dumps({"object": "page", "data": buckets, "has_more": has_more,
                       "next_page": "page_2" if has_more else None})


def _anthropic_cost_page() -> str:
    buckets = []
    for d in range(1, 30):
        cents = [("uncached_input_tokens", D("0.3") * d), ("cache_read_input_tokens", D("0.12") * d),
                 ("cache_creation.ephemeral_5m_input_tokens", D("0.75") * d), ("output_tokens", D("4.5") * d)]
        results = [{"currency": "USD", "amount": str(c), "workspace_id": "wrkspc_1",
                    "description": f"Claude X Usage - {tt}", "cost_type": "tokens", "context_window": "0-200k",
                    "model": "claude-x-20260101", "service_tier": "standard", "token_type": tt} for tt, c in cents]
        if d == 20:
            results.append({"currency": "USD", "amount": "3", "workspace_id": "wrkspc_1", "description": "Web Search Usage",
                            "cost_type": "web_search", "context_window": None, "model": None, "service_tier": None,
                            "token_type": None})
        start = dt.datetime(2026, 6, d)
        buckets.append({"starting_at": f"{start:%Y-%m-%d}T00:00:00Z",
                        "ending_at": f"{start + dt.timedelta(days=1):%Y-%m-%d}T00:00:00Z", "results": results})
    return json.dumps({"data": buckets, "has_more": False, "next_page": None}, indent=1)


FOCUS_CSV = (
    "BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,"
    "ChargeCategory,ChargeFrequency,ChargeDescription,BilledCost,EffectiveCost,ListCost,ContractedCost,"
    "PricingQuantity,PricingUnit,ConsumedQuantity,ConsumedUnit,ProviderName,PublisherName,InvoiceIssuerName,"
    "ServiceName,ServiceCategory,SkuId,ResourceId,RegionId,SubAccountId\r\n"
    "acct-9,USD,2026-06-01T00:00:00Z,2026-07-01T00:00:00Z,2026-06-01T00:00:00Z,2026-06-02T00:00:00Z,"
    "Usage,Usage-Based,H100 GPU-hours,48.00,48.00,48.00,48.00,24,Hour,24,Hour,Nebius,Nebius,Nebius,"
    "Compute Cloud,Compute,gpu-h100-sxm,n1,eu-north1,proj-gpu\r\n"
    # day 2 again: the OpenAI Costs API bills it already (0.032 = 16,000 uncached x $2 / 1M)
    "org-acme,USD,2026-06-01T00:00:00Z,2026-07-01T00:00:00Z,2026-06-02T00:00:00Z,2026-06-03T00:00:00Z,"
    "Usage,Usage-Based,o3 input tokens,0.032,0.032,0.032,0.032,0.016,1M Tokens,16000,Tokens,OpenAI,OpenAI,OpenAI,"
    "OpenAI API,AI and Machine Learning,o3-2025-04-16-input,proj_alpha,global,proj_alpha\r\n"
    "org-acme,USD,2026-07-01T00:00:00Z,2026-08-01T00:00:00Z,2026-07-01T00:00:00Z,2026-07-02T00:00:00Z,"
    "Usage,Usage-Based,o3 output tokens,0.50,0.50,0.50,0.50,0.0625,1M Tokens,62500,Tokens,OpenAI,OpenAI,OpenAI,"
    "OpenAI API,AI and Machine Learning,o3-2025-04-16-output,proj_alpha,global,proj_alpha\r\n"
)

FILES = {
    "prices/llm/prices.2026-06-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2,0.5,,8,USD\n"
        "anthropic,claude-x,3,0.30,3.75,15,USD\n"),
    "prices/llm/prices.2026-06-21.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2,0.5,6,USD\n"),
    "catalog/nodes.csv": (
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        "n1,nebius,H100,1,qwen3-32b,fp8,2.00,2026-06-01T00:00:00Z,2026-06-03T00:00:00Z\n"),
    "telemetry/requests/calls.jsonl": _calls(),
    "bills/openai/costs__2026-06-01__p1.json": _openai_costs_page(range(1, 16), True),
    "bills/openai/costs__2026-06-01__p2.json": _openai_costs_page(range(16, 31), False),
    "bills/anthropic/cost_report__2026-06-01__p1.json": _anthropic_cost_page(),
    "bills/focus/nebius_and_openai_2026-06.csv": FOCUS_CSV,
}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    root = tmp_path_factory.mktemp("bills")
    landing = write_files(root / "landing", FILES)
    c, summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 0
    yield c
    c.close()


def rows(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


def test_staging_loaded_the_month(con):
    assert rows(con, "SELECT count(*), sum(amount_usd) FROM stg.openai_costs") == [
        # 90 lines; 0.041 x (1 + .. + 20 = 210) + 0.035 x (21 + .. + 30 = 255) + 1.25 = 8.61 + 8.925 + 1.25
        (90, D("18.785"))]
    # 29 days x 4 lines + web search; 0.0567 x (1 + .. + 29 = 435) + 0.03 = 24.6645 + 0.03
    assert rows(con, "SELECT count(*), sum(amount_usd) FROM stg.anthropic_costs") == [(117, D("24.6945"))]
    assert rows(con, "SELECT count(*), sum(billed_cost_usd) FROM stg.focus_costs") == [(3, D("48.532"))]


def test_billed_costs_by_source(con):
    got = {(str(r[0]), r[1], r[2], r[3]): r[4:] for r in rows(
        con, "SELECT day, provider, model, source_table, billed_usd, lines, is_counted FROM core.billed_costs")}
    # 30 o3 days (openai_costs) + 29 claude-x days + web search day 20 + 3 FOCUS lines
    assert len(got) == 30 + 29 + 1 + 3
    assert got["2026-06-02", "openai", "o3", "stg.openai_costs"] == (D("0.082"), 3, True)       # 0.041 x 2
    assert got["2026-06-15", "openai", "o3", "stg.openai_costs"] == (D("1.865"), 3, True)       # 0.041 x 15 + 1.25
    assert got["2026-06-21", "openai", "o3", "stg.openai_costs"] == (D("0.735"), 3, True)       # 0.035 x 21
    assert got["2026-06-10", "anthropic", "claude-x", "stg.anthropic_costs"] == (D("0.567"), 4, True)  # 56.7 cents
    assert got["2026-06-20", "anthropic", None, "stg.anthropic_costs"] == (D("0.03"), 1, True)  # web search
    # FOCUS: the day-2 OpenAI line repeats the Costs API -> kept, but not counted
    assert got["2026-06-02", "openai", "o3", "stg.focus_costs"] == (D("0.032"), 1, False)
    assert got["2026-07-01", "openai", "o3", "stg.focus_costs"] == (D("0.5"), 1, True)
    assert got["2026-06-01", "nebius", None, "stg.focus_costs"] == (D("48"), 1, True)


def test_reconciliation_zero_where_prices_match_and_the_planted_difference(con):
    recon = {(str(r[0]), r[1], r[2]): r[3:] for r in rows(
        con, "SELECT day, provider, model, billed_usd, computed_usd, difference_usd, difference_pct "
             "FROM marts.bill_reconciliation")}
    for d in DAYS:
        day = f"2026-06-{d:02d}"
        billed, computed, diff, pct = recon[day, "openai", "o3"]
        assert computed == o3_cost(d), day  # the price in force: output $8 until 06-20, $6 from 06-21
        if d == 15:
            # 0.041 x 15 = 0.615 computed; billed 0.615 + 1.25 = 1.865; 100 x 1.25 / 1.865 = 67.024 %
            assert (billed, computed, diff) == (D("1.865"), D("0.615"), D("1.25"))
            assert pct == pytest.approx(100 * 1.25 / 1.865)
        else:
            assert (billed, diff, pct) == (o3_cost(d), 0, 0.0), day
        billed, computed, diff, pct = recon[day, "anthropic", "claude-x"]
        assert computed == claude_cost(d), day
        if d == 30:  # not in the cost report: unbilled usage, 0.0567 x 30 = 1.701
            assert (billed, diff, pct) == (None, D("-1.701"), None)
        else:
            assert (billed, diff, pct) == (claude_cost(d), 0, 0.0), day
    # bills without usage
    assert recon["2026-06-20", "anthropic", None] == (D("0.03"), None, D("0.03"), 100.0)
    assert recon["2026-06-01", "nebius", None] == (D("48"), None, D("48"), 100.0)
    assert recon["2026-07-01", "openai", "o3"] == (D("0.5"), None, D("0.5"), 100.0)
    assert len(recon) == 30 + 30 + 3
    # only the planted line and the unmatched rows differ
    off = rows(con, "SELECT day::VARCHAR, provider, model FROM marts.bill_reconciliation "
                    "WHERE difference_usd <> 0 ORDER BY ALL")
    assert off == [("2026-06-01", "nebius", None), ("2026-06-15", "openai", "o3"),
                   ("2026-06-20", "anthropic", None), ("2026-06-30", "anthropic", "claude-x"),
                   ("2026-07-01", "openai", "o3")]
    types = dict(rows(con, "SELECT column_name, data_type FROM duckdb_columns() "
                           "WHERE schema_name = 'marts' AND table_name = 'bill_reconciliation'"))
    assert types["billed_usd"] == types["computed_usd"] == types["difference_usd"] == "DECIMAL(18,6)"
    assert types["difference_pct"] == "DOUBLE"


def test_daily_spend_gains_api_bill_rows(con):
    bills = rows(con, "SELECT provider, sum(cost_usd), count(*), count(calls), count(reasoning_cost_usd), "
                      "list(DISTINCT team) FROM marts.daily_spend WHERE source = 'api_bill' GROUP BY ALL ORDER BY 1")
    assert bills == [
        ("anthropic", D("24.6945"), 30, 0, 0, ["unknown"]),   # 29 claude-x days + the web-search row
        ("nebius", D("48"), 1, 0, 0, ["unknown"]),
        ("openai", D("19.285"), 31, 0, 0, ["unknown"]),       # 18.785 (Costs API) + 0.50 (FOCUS, July 1)
    ]
    # the existing sources are unchanged: the check that ties the marts together still passes
    check = (REPO / "sql" / "checks" / "spend_reconciles.sql").read_text()
    assert rows(con, check) == []
    usage = dict(rows(con, "SELECT source, sum(cost_usd) FROM marts.daily_spend WHERE source <> 'api_bill' GROUP BY 1"))
    # api: 0.041 x 210 + 0.035 x 255 + 0.0567 x 465 = 8.61 + 8.925 + 26.3655; node: 2 days x 24 h x $2
    assert usage == {"api_usage": D("43.9005"), "self_hosted": D("96")}


def test_focus_costs_add_up_to_daily_spend_per_source(con):
    focus = dict(rows(con, "SELECT x_Source, sum(BilledCost) FROM marts.focus_costs GROUP BY 1"))
    spend = dict(rows(con, "SELECT source, sum(cost_usd) FROM marts.daily_spend GROUP BY 1"))
    assert focus == spend == {"api_usage": D("43.9005"), "self_hosted": D("96"), "api_bill": D("91.9795")}
    by_day = rows(con, """
        SELECT f.day, f.source, f.usd, s.usd FROM
          (SELECT CAST(ChargePeriodStart AS DATE) AS day, x_Source AS source, sum(BilledCost) AS usd
           FROM marts.focus_costs GROUP BY ALL) f
        FULL JOIN (SELECT day, source, sum(cost_usd) AS usd FROM marts.daily_spend GROUP BY ALL) s USING (day, source)
        WHERE f.usd IS DISTINCT FROM s.usd""")
    assert by_day == []


def test_focus_costs_carry_the_mandatory_columns(con):
    cols = dict(rows(con, "SELECT column_name, data_type FROM duckdb_columns() "
                          "WHERE schema_name = 'marts' AND table_name = 'focus_costs'"))
    mandatory = ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingCurrency", "BillingPeriodStart",
                 "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeClass",
                 "ChargeDescription", "ProviderName", "PublisherName", "InvoiceIssuerName", "ServiceName",
                 "ServiceCategory", "PricingQuantity", "PricingUnit", "ConsumedQuantity", "ConsumedUnit", "SkuId",
                 "ResourceId", "ResourceName", "RegionId", "BillingAccountId", "SubAccountId"]
    assert [c for c in mandatory if c not in cols] == []
    assert {cols[c] for c in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")} == {"DECIMAL(18,6)"}
    # columns FOCUS does not allow to be null are filled on every row
    not_null = ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingCurrency", "BillingAccountId",
                "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory",
                "ChargeDescription", "ProviderName", "PublisherName", "InvoiceIssuerName", "ServiceName",
                "ServiceCategory"]
    nulls = rows(con, "SELECT " + ", ".join(f'count(*) FILTER (WHERE "{c}" IS NULL)' for c in not_null)
                 + " FROM marts.focus_costs")[0]
    assert dict(zip(not_null, nulls)) == dict.fromkeys(not_null, 0)
    # the computed API rows of o3 on 2026-06-15, one per token type (issue 15), adding up to
    # 0.041 x 15 = 0.615 USD: input 8,000 x 15 = 120,000 x $2/M = 0.24; cached 30,000 x $0.50/M =
    # 0.015; reasoning 30,000 x $8/M = 0.24; output 15,000 x $8/M = 0.12
    api = rows(con, """SELECT SkuPriceId, BilledCost, PricingQuantity, PricingUnit, ConsumedQuantity, ListUnitPrice, ChargePeriodEnd
                       FROM marts.focus_costs WHERE x_Source = 'api_usage' AND ResourceId = 'o3'
                       AND ChargePeriodStart = TIMESTAMP '2026-06-15 00:00:00' ORDER BY SkuPriceId""")
    v = "openai|o3|standard|2026-06-01|standard|"
    end = dt.datetime(2026, 6, 16)
    assert api == [(v + "cached-input", D("0.015"), D("0.03"), "1000000 Tokens", D("30000"), D("0.5"), end),
                   (v + "input", D("0.24"), D("0.12"), "1000000 Tokens", D("120000"), D("2"), end),
                   (v + "output", D("0.12"), D("0.015"), "1000000 Tokens", D("15000"), D("8"), end),
                   (v + "reasoning-output", D("0.24"), D("0.03"), "1000000 Tokens", D("30000"), D("8"), end)]
    assert sum(r[1] for r in api) == D("0.615")
    # one node-day: 24 GPU-hours x $2
    (node,) = rows(con, """SELECT BilledCost, PricingQuantity, PricingUnit, ListUnitPrice, ServiceCategory, ProviderName
                           FROM marts.focus_costs WHERE x_Source = 'self_hosted' AND ResourceId = 'n1'
                           AND ChargePeriodStart = TIMESTAMP '2026-06-02 00:00:00'""")
    assert node == (D("48"), D("24"), "GPU-Hours", D("2"), "Compute", "nebius")
    # billed lines: the FOCUS export's own columns, the API lines' project and line item
    billed = rows(con, """SELECT ChargeDescription, SubAccountId, SkuId, ResourceId, ServiceName, BilledCost
                          FROM marts.focus_costs WHERE x_Source = 'api_bill' AND ProviderName = 'openai'
                          AND ChargePeriodStart = TIMESTAMP '2026-06-15 00:00:00' ORDER BY BilledCost""")
    assert billed == [
        ("o3-2025-04-16, cached input", "proj_alpha", "o3-2025-04-16, cached input", "o3", "OpenAI API", D("0.015")),
        ("o3-2025-04-16, input", "proj_alpha", "o3-2025-04-16, input", "o3", "OpenAI API", D("0.24")),
        ("o3-2025-04-16, output", "proj_alpha", "o3-2025-04-16, output", "o3", "OpenAI API", D("1.61")),  # 0.36 + 1.25
    ]
    (gpu,) = rows(con, "SELECT ServiceName, SkuId, ResourceId, RegionId, SubAccountId, BillingAccountId, PricingUnit "
                       "FROM marts.focus_costs WHERE x_Source = 'api_bill' AND ProviderName = 'nebius'")
    assert gpu == ("Compute Cloud", "gpu-h100-sxm", "n1", "eu-north1", "proj-gpu", "acct-9", "Hour")
    # the repeated day-2 OpenAI FOCUS line is not a FOCUS row of its own
    assert rows(con, "SELECT count(*) FROM marts.focus_costs WHERE x_Source = 'api_bill' AND SkuId = 'o3-2025-04-16-input'") \
        == [(0,)]


# ---- the mapping rules of core.billed_lines, on hand-made staging rows ----

def _billed_lines_sql() -> str:
    return next(m for m in load_tables() if m.table == "core.billed_lines").sql


def test_model_and_provider_mapping_rules():
    con = duckdb.connect()
    migrate(con)
    ts = dt.datetime(2026, 6, 1)
    end = dt.datetime(2026, 6, 2)
    items = ["o3, input", "o3-2025-04-16, cached input", "gpt-4.1-mini-2025-04-14, output", "openai/gpt-4o, input",
             "web search tool calls", None]
    for i, item in enumerate(items, 1):
        con.execute("INSERT INTO stg.openai_costs VALUES (1, ?, ?, ?, 'p', ?, 1, 'USD', 1, 1)", [i, ts, end, item])
    con.execute("INSERT INTO stg.anthropic_costs (file_id, line, bucket_start, bucket_end, cost_type, token_type, model, "
                "amount, currency, fx_usd_per_unit, amount_usd) VALUES "
                "(2, 1, ?, ?, 'tokens', 'output_tokens', 'claude-sonnet-4-20250514', 1, 'USD', 1, 1), "
                "(2, 2, ?, ?, 'code_execution', NULL, NULL, 1, 'USD', 1, 1)", [ts, end, ts, end])
    focus = [  # (SkuId, ProviderName, InvoiceIssuerName, day)
        ("o3-2025-04-16-cached-input", "OpenAI, Inc.", None, 1), ("claude-sonnet-4-20250514:output-tokens", "Anthropic PBC", None, 2),
        ("gpt-4.1-mini_input", "Azure", None, 1), ("BoxUsage:m5.large", "AWS", None, 1), ("45678", None, "ACMECORP", 1),
        (None, None, None, 1)]
    for i, (sku, prov, issuer, day) in enumerate(focus, 1):
        con.execute("INSERT INTO stg.focus_costs (file_id, line, billing_currency, fx_usd_per_unit, charge_period_start, "
                    "charge_period_end, billed_cost_usd, provider_name, invoice_issuer_name, sku_id, key_occurrence) "
                    "VALUES (3, ?, 'USD', 1, ?, ?, 1, ?, ?, ?, 1)",
                    [i, dt.datetime(2026, 6, day), dt.datetime(2026, 6, day + 1), prov, issuer, sku])
    got = rows(con, f"SELECT source_table, line, provider, model, counted FROM ({_billed_lines_sql()}) ORDER BY 1, 2")
    assert got == [
        ("stg.anthropic_costs", 1, "anthropic", "claude-sonnet-4", True),
        ("stg.anthropic_costs", 2, "anthropic", None, True),
        # day 1 of 'openai' is billed by the Costs API: the FOCUS OpenAI line is not counted again
        ("stg.focus_costs", 1, "openai", "o3", False),
        ("stg.focus_costs", 2, "anthropic", "claude-sonnet-4", True),   # 2026-06-02: no cost_report line that day
        ("stg.focus_costs", 3, "azure", "gpt-4.1-mini", True),
        ("stg.focus_costs", 4, "aws", None, True),
        ("stg.focus_costs", 5, "acmecorp", None, True),
        ("stg.focus_costs", 6, "unknown", None, True),
        ("stg.openai_costs", 1, "openai", "o3", True),
        ("stg.openai_costs", 2, "openai", "o3", True),
        ("stg.openai_costs", 3, "openai", "gpt-4.1-mini", True),
        ("stg.openai_costs", 4, "openai", "gpt-4o", True),
        ("stg.openai_costs", 5, "openai", None, True),
        ("stg.openai_costs", 6, "openai", None, True),
    ]


def test_ai_lines_of_the_clouds_focus_exports():
    """AWS (FOCUS 1.2 export), Azure and Google Cloud FOCUS lines: the AI ones get the provider of
    their service (core.provider_key's names) and the model their meter, description or service
    names; their other lines keep the provider they name, with no model."""
    con = duckdb.connect()
    migrate(con)
    lines = [  # (ProviderName, ServiceName, SkuId, SkuMeter, ChargeDescription)
        ("AWS", "Amazon Bedrock", "8Y7Z6X5W4V3U", None,
         "$0.003 per 1K input tokens for Claude 3.5 Sonnet in US East (N. Virginia)"),
        ("AWS", "Amazon Bedrock Service", "K3J2H1G0F9E8", None, "Claude Sonnet 4.5 output tokens, cross-region global"),
        ("AWS", "Claude 3.7 Sonnet (Amazon Bedrock Edition)", "prod-4zq7mkxyz", None, "Units of input tokens"),
        ("AWS", "Amazon Elastic Compute Cloud", "ABCDEF123456", "BoxUsage:p5.48xlarge", "On Demand Linux p5.48xlarge Instance Hour"),
        ("Microsoft", "Azure OpenAI Service", "DZH318Z0BQ4L/0002", "gpt 4o 0513 Input global Tokens", "gpt 4o 0513 Input global Tokens"),
        ("Microsoft", "Foundry Models", "DZH318Z0C2MM/0007", "o3 0416 Inp glbl", None),
        ("Microsoft", "Cognitive Services", "DZH318Z0BXK0/001V", "gpt 4.1 mini 0414 cached Inp glbl Tokens", None),
        ("Microsoft", "Cognitive Services", "DZH318Z0BPVW/0003", "S1 Text Records", None),
        ("Microsoft", "Virtual Machines", "DZH318Z0BQ5S/00TG", "ND96isr H100 v5", None),
        ("Google Cloud", "Vertex AI", "A1B2-C3D4-E5F6", None, "Gemini 2.5 Pro Thinking Text Output - Predictions"),
        ("Google Cloud", "Vertex AI", "B2C3-D4E5-F6A7", "Gemini 2.5 Flash Lite Text Input - Predictions", None),
        ("Google Cloud", "Vertex AI", "C3D4-E5F6-A7B8", None, "Online prediction node hours"),
        ("Google Cloud", "Compute Engine", "D4E5-F6A7-B8C9", None, "N2 Instance Core running in Americas"),
        ("OpenAI", "OpenAI API", "gpt-5-output", None, "gpt-5 output tokens"),
    ]
    for i, (prov, service, sku, meter, desc) in enumerate(lines, 1):
        con.execute("INSERT INTO stg.focus_costs (file_id, line, billing_currency, fx_usd_per_unit, charge_period_start, "
                    "charge_period_end, billed_cost_usd, provider_name, service_name, sku_id, sku_meter, charge_description, "
                    "key_occurrence) VALUES (3, ?, 'USD', 1, ?, ?, 1, ?, ?, ?, ?, ?, 1)",
                    [i, dt.datetime(2026, 6, 1), dt.datetime(2026, 6, 2), prov, service, sku, meter, desc])
    got = rows(con, f"SELECT provider, model FROM ({_billed_lines_sql()}) ORDER BY line")
    assert got == [
        ("bedrock", "claude-3-5-sonnet"), ("bedrock", "claude-sonnet-4-5"), ("bedrock", "claude-3-7-sonnet"),
        ("aws", None),
        ("azure", "gpt-4o"), ("azure", "o3"), ("azure", "gpt-4.1-mini"), ("microsoft", None), ("microsoft", None),
        ("vertex_ai", "gemini-2.5-pro"), ("vertex_ai", "gemini-2.5-flash-lite"), ("vertex_ai", None), ("google cloud", None),
        ("openai", "gpt-5"),
    ]
    # the canonical names of core.provider_key, as the calls of these clouds carry them
    assert rows(con, "SELECT core.provider_key('bedrock'), core.provider_key('azure'), core.provider_key('vertex_ai')") \
        == [("bedrock", "azure", "vertex_ai")]


def test_real_focus_samples_flow_through_every_bill_mart(tmp_path):
    """The 26 FOCUS 1.2 sample exports (data/real/focus): what loads is billed, counted once, and
    focus_costs / daily_spend / bill_reconciliation all carry the same total."""
    landing = tmp_path / "landing"
    for src in sorted((REAL / "focus").rglob("*.csv")):
        dst = landing / "bills" / "focus" / src.relative_to(REAL / "focus")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
    con, _ = build_warehouse(landing, tmp_path / "wh" / "thinktax.duckdb")
    (staged,) = rows(con, "SELECT sum(billed_cost_usd) FROM stg.focus_costs")[0]
    assert staged is not None
    assert rows(con, "SELECT sum(billed_usd), bool_and(is_counted) FROM core.billed_costs") == [(staged, True)]
    focus = rows(con, "SELECT sum(BilledCost) FROM marts.focus_costs WHERE x_Source = 'api_bill'")[0][0]
    spend = rows(con, "SELECT sum(cost_usd) FROM marts.daily_spend WHERE source = 'api_bill'")[0][0]
    recon = rows(con, "SELECT sum(billed_usd), count(computed_usd) FROM marts.bill_reconciliation")[0]
    # rounded to the micro-dollar per FOCUS line vs per day x provider x model: equal when the
    # samples' amounts have at most 6 decimals
    assert focus == spend == recon[0] == staged
    assert recon[1] == 0  # no usage: every bill is unmatched
    con.close()


def test_cloud_focus_exports_land_with_their_ai_lines_recognised(tmp_path):
    """A gzip AWS FOCUS 1.2 export (as AWS Data Exports writes it, with its x_ columns) and an
    Azure FOCUS export in bills/focus/: the Bedrock and Azure OpenAI lines reach
    marts.bill_reconciliation as providers 'bedrock' / 'azure' with their models, the EC2 line
    stays 'aws' without a model, and nothing is lost."""
    import gzip

    aws = (
        "BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeDescription,"
        "ChargePeriodEnd,ChargePeriodStart,ProviderName,PublisherName,InvoiceIssuerName,ServiceCategory,ServiceName,"
        "SkuId,SkuMeter,x_UsageType,x_Operation\n"
        "1.25,111122223333,USD,2026-07-01T00:00:00Z,2026-06-01T00:00:00Z,Usage,"
        "\"$0.003 per 1K input tokens for Claude 3.5 Sonnet in US East (N. Virginia)\",2026-06-03T00:00:00Z,"
        "2026-06-02T00:00:00Z,AWS,AWS,\"Amazon Web Services, Inc.\",AI and Machine Learning,Amazon Bedrock,"
        "8Y7Z6X5W4V3U,,USE1-Claude3.5Sonnet-input-tokens,InvokeModelInference\n"
        "98.304,111122223333,USD,2026-07-01T00:00:00Z,2026-06-01T00:00:00Z,Usage,"
        "On Demand Linux p5.48xlarge Instance Hour,2026-06-03T00:00:00Z,2026-06-02T00:00:00Z,AWS,AWS,"
        "\"Amazon Web Services, Inc.\",Compute,Amazon Elastic Compute Cloud,ABCDEF123456,,USE1-BoxUsage:p5.48xlarge,RunInstances\n"
    )
    azure = (
        "BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeDescription,"
        "ChargePeriodEnd,ChargePeriodStart,ProviderName,PublisherName,InvoiceIssuerName,ServiceCategory,ServiceName,SkuId,SkuMeter\n"
        "0.40,/providers/Microsoft.Billing/billingAccounts/123,USD,2026-07-01T00:00:00Z,2026-06-01T00:00:00Z,Usage,"
        "gpt 4o 0513 Input global Tokens,2026-06-03T00:00:00Z,2026-06-02T00:00:00Z,Microsoft,Microsoft,Microsoft,"
        "AI and Machine Learning,Azure OpenAI Service,DZH318Z0BQ4L/0002,gpt 4o 0513 Input global Tokens\n"
    )
    landing = tmp_path / "landing"
    (landing / "bills" / "focus" / "aws" / "focus-export" / "data" / "BILLING_PERIOD=2026-06").mkdir(parents=True)
    (landing / "bills" / "focus" / "aws" / "focus-export" / "data" / "BILLING_PERIOD=2026-06" / "focus-00001.csv.gz") \
        .write_bytes(gzip.compress(aws.encode()))
    (landing / "bills" / "focus" / "azure").mkdir(parents=True)
    (landing / "bills" / "focus" / "azure" / "part_0_0001.csv").write_text(azure)
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    assert rows(con, "SELECT provider, model, billed_usd, counted FROM core.billed_lines ORDER BY billed_usd") == [
        ("azure", "gpt-4o", D("0.4"), True), ("bedrock", "claude-3-5-sonnet", D("1.25"), True), ("aws", None, D("98.304"), True)]
    assert rows(con, "SELECT provider, model, billed_usd FROM marts.bill_reconciliation ORDER BY billed_usd") == [
        ("azure", "gpt-4o", D("0.400000")), ("bedrock", "claude-3-5-sonnet", D("1.250000")), ("aws", None, D("98.304000"))]
    con.close()
