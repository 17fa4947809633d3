"""Cloud invoices (issue 25 items 1 and 2): AWS CUR 2.0, Azure cost details and the GCP billing
export land in stg.cloud_bill_lines and reconcile against the logged calls to the cent.

The exports are tests/fixtures/bills/cloud/ (written with the clouds' column names and spellings;
sources in its README). One day, 2026-06-10, price sheet of 2026-06-01 (USD per 1M tokens):
Bedrock Claude Sonnet 4.5 3 / cache read 0.30 / cache write 3.75 / output 15; Azure gpt-4o 2.5 /
cached 1.25 / output 10; Vertex AI gemini-2.5-pro 1.25 / cached 0.125 / output 10.

Bedrock, calls b1 + b2: input 600,000 + 400,000 = 1,000,000 -> $3.00; cache reads 1,500,000 +
500,000 = 2,000,000 -> $0.60; cache writes 400,000 -> $1.50; output 120,000 + 80,000 = 200,000
-> $3.00; total $8.10. The CUR bills input $3.000004 (a rounding of 0.000004), cache read $0.60,
cache write $1.50, output 210 thousand tokens $3.15 (10,000 tokens of calls missing from the logs:
10,000 x 3.15 / 210,000 = $0.15), a Credit -$1.00, an EdpDiscount -$0.45, Tax $0.82, 2 model-unit
hours of Provisioned Throughput $79.20, an AI line no rule reads ('...-search-units', $0.25), and
an EC2 and an S3 line (skipped). Unexplained: 0.

Azure, call a1: prompt 2,000,000 of which 400,000 cached, completion 300,000: uncached 1,600,000
x 2.5 = $4.00; cached 400,000 x 1.25 = $0.50; output 300,000 x 10 = $3.00; total $7.50. The
export (EA columns, MM/DD/YYYY dates, 1K and 1M units mixed, Tags with and without braces) bills
$4.00, $0.50 and $3.30 for output (billed at $11/M: $0.30 unexplained: price drift), a PTU line
$48.00 (no model in a PTU meter), an unattributed 'Sora Video Gen glbl' line $0.40 and a VM line
(skipped). Unexplained: 0.30, 0.30 / 56.20 = 0.534 % of the month's usage: the invoice_mismatch
alert fires at [alert] invoice_mismatch_usd = 0.10 and invoice_mismatch_pct = 0.5.

Vertex AI, call g1: promptTokenCount 1,000,000 with 200,000 cached, candidates 100,000, thoughts
300,000: uncached 800,000 x 1.25 = $1.00; cached 200,000 x 0.125 = $0.025; output + thinking
400,000 x 10 = $4.00; total $5.025. The export (newline-delimited JSON, nested records as BigQuery
writes them) bills the same four buckets (input $1.00 with a committed-use credit of -$0.10,
caching $0.025, thinking output $3.00, output $1.00 with a free-trial credit of -$0.40), 24 hours
of provisioned throughput $120.00, an unattributed Vertex AI Search line $0.60, tax $0.51 and a
Compute Engine line (skipped). Unexplained: 0.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from services import alert
from services.config import Alert, Config
from tests.conftest import build_warehouse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bills" / "cloud"
TS = "2026-06-10T12:00:00Z"
SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
SHEET = (
    "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
    f"bedrock,{SONNET},3,0.30,3.75,15,USD\n"
    "azure,gpt-4o,2.5,1.25,,10,USD\n"
    "vertex_ai,gemini-2.5-pro,1.25,0.125,,10,USD\n"
)
CALLS = [
    {"ts": TS, "request_id": "b1", "provider": "bedrock", "model": SONNET, "team": "search",
     "usage": {"inputTokens": 600_000, "outputTokens": 120_000, "cacheReadInputTokens": 1_500_000,
               "cacheWriteInputTokens": 400_000, "totalTokens": 2_620_000}},
    {"ts": TS, "request_id": "b2", "provider": "bedrock", "model": "us." + SONNET, "team": "search",
     "usage": {"inputTokens": 400_000, "outputTokens": 80_000, "cacheReadInputTokens": 500_000, "totalTokens": 980_000}},
    {"ts": TS, "request_id": "a1", "provider": "azure", "model": "gpt-4o-2024-11-20", "team": "search",
     "usage": {"prompt_tokens": 2_000_000, "completion_tokens": 300_000,
               "prompt_tokens_details": {"cached_tokens": 400_000}}},
    {"ts": TS, "provider": "vertex_ai", "modelVersion": "gemini-2.5-pro", "responseId": "g1", "team": "search",
     "usageMetadata": {"promptTokenCount": 1_000_000, "cachedContentTokenCount": 200_000, "candidatesTokenCount": 100_000,
                       "thoughtsTokenCount": 300_000, "totalTokenCount": 1_400_000}},
]


def landing_with(root: Path, *clouds: str) -> Path:
    landing = root / "landing"
    (landing / "prices" / "llm").mkdir(parents=True)
    (landing / "prices" / "llm" / "cloud.2026-06-01.csv").write_text(SHEET)
    (landing / "telemetry" / "requests").mkdir(parents=True)
    (landing / "telemetry" / "requests" / "calls.jsonl").write_text("\n".join(json.dumps(c) for c in CALLS) + "\n")
    for cloud in clouds:
        shutil.copytree(FIXTURES / cloud, landing / "bills" / cloud)
    (landing / "catalog").mkdir()
    (landing / "catalog" / "cloud_principals.csv").write_text(
        "principal,team\narn:aws:iam::111122223333:role/batch-jobs,research\n"
        "arn:aws:iam::111122223333:role/search-app,not-used-the-tag-wins\n")
    return landing


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("cloudbills")
    con, summary = build_warehouse(landing_with(root, "aws", "azure", "gcp"), root / "w.duckdb")
    assert summary.total("rows_quarantined") == 0, [f for f in summary.files if f.rows_quarantined]
    yield con
    con.close()


def rows(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


def test_calls_cost_what_the_docstring_says(wh):
    got = dict(rows(wh, "SELECT request_id, cost_usd FROM core.call_costs"))
    assert got["b1"] + got["b2"] == D("8.10")
    assert got["a1"] == D("7.50")
    assert got["g1"] == D("5.025")


def test_files_are_accounted_with_the_skipped_non_ai_lines(wh):
    files = {f.split("/")[1]: (n, loaded, dup, q, skipped, fmt) for f, n, loaded, dup, q, skipped, fmt in rows(
        wh, "SELECT file, rows_in, rows_loaded, rows_duplicate, rows_quarantined, rows_skipped, format "
            "FROM ops.ingested_files WHERE folder LIKE 'bills/%'")}
    assert files["aws"] == (11, 9, 0, 0, 2, "aws_csv")
    assert files["azure"] == (6, 5, 0, 0, 1, "azure_csv")
    assert files["gcp"] == (8, 7, 0, 0, 1, "gcp_json")
    assert rows(wh, "SELECT count(*) FROM (SELECT * FROM ops.ingested_files) f WHERE rows_in <> "
                    "rows_loaded + rows_duplicate + rows_quarantined + coalesce(rows_skipped, 0)") == [(0,)]


def test_the_rules_read_each_line(wh):
    got = {(c, s): (m, b, t, dep, tok, rule, team) for c, s, m, b, t, dep, tok, rule, team in rows(
        wh, "SELECT cloud, sku, model, bucket, tier, deployment_type, tokens, rule, team FROM stg.cloud_bill_lines "
            "WHERE charge_kind = 'usage'")}
    assert got["aws", "USE1-Claude4.5Sonnet-input-tokens"] == (
        "claude-sonnet-4-5", "input", "standard", "in_region", 1_000_000, "aws.usage_type", "search")
    assert got["aws", "USE1-Claude4.5Sonnet-cache-read-input-token-count"][1] == "cache_read"
    assert got["aws", "USE1-ProvisionedThroughput-Claude4.5Sonnet-ModelUnits"][:2] == ("claude-sonnet-4-5", "provisioned")
    assert got["aws", "USE1-Claude4.5Sonnet-search-units"][5] == "unattributed"
    # 1K and 1M units mixed: both 10^3 / 10^6 tokens
    assert got["azure", "gpt 4o 1120 Inp glbl Tokens"] == ("gpt-4o", "input", "standard", "global", 1_600_000,
                                                          "azure.meter", "search")
    assert got["azure", "gpt 4o 1120 cached Inp glbl Tokens"][:5] == ("gpt-4o", "cache_read", "standard", "global", 400_000)
    assert got["azure", "Provisioned Managed Global"][:2] == (None, "provisioned")
    assert got["gcp", "Gemini 2.5 Pro Thinking Text Output - Predictions"][:2] == ("gemini-2.5-pro", "output")
    assert got["gcp", "Gemini 2.5 Pro Text Input Caching - Predictions"][1] == "cache_read"
    # MM/DD/YYYY is month first: 06/10/2026 is 10 June
    assert rows(wh, "SELECT DISTINCT usage_start FROM stg.cloud_bill_lines WHERE cloud = 'azure'") == [
        (dt.datetime(2026, 6, 10),)]


def test_unattributed_lines_are_listed_with_their_reason_and_kept_in_the_totals(wh):
    got = {(c, s): (a, r) for c, s, a, r in rows(
        wh, "SELECT cloud, sku, amount_usd, unattributed_reason FROM marts.unattributed_invoice_lines")}
    assert set(got) == {("aws", "USE1-Claude4.5Sonnet-search-units"), ("azure", "Sora Video Gen glbl"),
                        ("gcp", "Vertex AI Search Enterprise Edition Query")}
    assert got["aws", "USE1-Claude4.5Sonnet-search-units"] == (
        D("0.25"), "usage type 'USE1-Claude4.5Sonnet-search-units' names no token kind the rules know")
    assert rows(wh, "SELECT billed_usd FROM marts.bill_reconciliation WHERE provider = 'azure' AND model IS NULL") == [
        (D("48.40"),)]  # the PTU line (no model in the meter) + the unattributed line


def test_bill_reconciliation_gains_the_cloud_providers(wh):
    got = {(p, m): r for p, m, *r in rows(
        wh, "SELECT provider, model, billed_usd, computed_usd, difference_usd FROM marts.bill_reconciliation "
            "WHERE day = DATE '2026-06-10' AND provider IN ('bedrock', 'azure', 'vertex_ai')")}
    # usage lines gross of credits and discounts: 3.000004 + 0.60 + 1.50 + 3.15 + 79.20
    assert got["bedrock", "claude-sonnet-4-5"] == [D("87.450004"), D("8.10"), D("79.350004")]
    assert got["azure", "gpt-4o"] == [D("7.80"), D("7.50"), D("0.30")]
    # 1.00 + 0.025 + 3.00 + 1.00 + 120.00 (the credits inside the lines are not in billed_usd)
    assert got["vertex_ai", "gemini-2.5-pro"] == [D("125.025"), D("5.025"), D("120.000")]
    assert got["bedrock", None] == [D("0.25"), None, D("0.25")]
    assert got["vertex_ai", None] == [D("0.60"), None, D("0.60")]


def test_the_buckets_reconcile_to_the_cent(wh):
    got = {(p, m, b): r for p, m, b, *r in rows(
        wh, "SELECT provider, model, bucket, invoice_tokens, log_tokens, invoice_usd, logs_usd, difference_usd, "
            "explained_usd, explained_by, unexplained_usd FROM marts.invoice_reconciliation")}
    s = "claude-sonnet-4-5"
    assert got["bedrock", s, "input"] == [1_000_000, 1_000_000, D("3.000004"), D("3"), D("0.000004"), D("0.000004"),
                                          "rounding", D("0")]
    assert got["bedrock", s, "cache_read"][2:] == [D("0.6"), D("0.6"), D("0"), D("0"), None, D("0")]
    assert got["bedrock", s, "cache_write"][2:4] == [D("1.5"), D("1.5")]
    assert got["bedrock", s, "output"] == [210_000, 200_000, D("3.15"), D("3"), D("0.15"), D("0.15"), "missing_calls", D("0")]
    assert got["bedrock", s, "credit"][2:] == [D("-1"), D("0"), D("-1"), D("-1"), "credit", D("0")]
    assert got["bedrock", s, "discount"][2:] == [D("-0.45"), D("0"), D("-0.45"), D("-0.45"), "discount", D("0")]
    assert got["bedrock", None, "tax"][2:] == [D("0.82"), D("0"), D("0.82"), D("0.82"), "tax", D("0")]
    assert got["bedrock", s, "provisioned"][2:] == [D("79.2"), D("0"), D("79.2"), D("79.2"), "provisioned", D("0")]
    assert got["bedrock", None, "unattributed"][2:] == [D("0.25"), D("0"), D("0.25"), D("0.25"), "unattributed", D("0")]
    # Azure output billed at $11/M: 0.30 nobody explains
    assert got["azure", "gpt-4o", "output"] == [300_000, 300_000, D("3.3"), D("3"), D("0.3"), D("0"), None, D("0.3")]
    assert got["azure", "gpt-4o", "input"][2:] == [D("4"), D("4"), D("0"), D("0"), None, D("0")]
    assert got["azure", None, "provisioned"][2] == D("48")
    g = "gemini-2.5-pro"
    assert got["vertex_ai", g, "output"] == [400_000, 400_000, D("4"), D("4"), D("0"), D("0"), None, D("0")]
    assert got["vertex_ai", g, "input"][2:4] == [D("1"), D("1")]
    assert got["vertex_ai", g, "cache_read"][2:4] == [D("0.025"), D("0.025")]
    assert got["vertex_ai", g, "credit"][2:] == [D("-0.5"), D("0"), D("-0.5"), D("-0.5"), "credit", D("0")]
    assert got["vertex_ai", None, "tax"][2] == D("0.51")


def test_the_call_buckets_add_up_to_the_calls_cost(wh):
    by_provider = dict(rows(wh, "SELECT provider, sum(logs_usd) FROM marts.invoice_reconciliation GROUP BY ALL"))
    assert by_provider == {"bedrock": D("8.10"), "azure": D("7.50"), "vertex_ai": D("5.025")}


def test_the_month_leaves_only_the_azure_price_drift_unexplained(wh):
    got = {p: r for p, *r in rows(
        wh, "SELECT provider, invoice_usage_usd, invoice_net_usd, logs_usd, explained_usd, unexplained_usd "
            "FROM marts.invoice_mismatch WHERE month = DATE '2026-06-01'")}
    # 87.450004 + 0.25; net: - 1.00 - 0.45 + 0.82
    assert got["bedrock"] == [D("87.700004"), D("87.070004"), D("8.10"), D("78.970004"), D("0")]
    assert got["azure"] == [D("56.20"), D("56.20"), D("7.50"), D("48.40"), D("0.30")]
    # 125.025 + 0.60; net: - 0.50 + 0.51
    assert got["vertex_ai"] == [D("125.625"), D("125.635"), D("5.025"), D("120.61"), D("0")]


def test_invoice_mismatch_alerts_once_per_provider_month(wh):
    cfg = Config(alert=Alert(invoice_mismatch_usd=0.10, invoice_mismatch_pct=0.5))
    sent: list[dict] = []

    def post(url, payload):
        sent.append(payload)
        return None

    cfg = Config(alert=Alert(webhook_url="http://127.0.0.1:9/hook", invoice_mismatch_usd=0.10, invoice_mismatch_pct=0.5))
    alert.evaluate(wh, cfg, now=dt.datetime(2026, 7, 1), post=post)
    alert.evaluate(wh, cfg, now=dt.datetime(2026, 7, 2), post=post)
    mismatches = [p for p in sent if p["alert"] == "invoice_mismatch"]
    assert [(p["provider"], p["month"], p["unexplained_usd"]) for p in mismatches] == [("azure", "2026-06-01", 0.3)]
    assert rows(wh, "SELECT count(*) FROM ops.alerts WHERE alert = 'invoice_mismatch'") == [(1,)]
    # a threshold above the difference: nothing (a new subject state, re-armed)
    sent.clear()
    alert.evaluate(wh, Config(alert=Alert(webhook_url="http://127.0.0.1:9/hook", invoice_mismatch_usd=1.0,
                                          invoice_mismatch_pct=0.5)), now=dt.datetime(2026, 7, 3), post=post)
    assert [p for p in sent if p["alert"] == "invoice_mismatch"] == []


def test_effective_rates_after_credits_and_discounts(wh):
    got = {(p, m): r for p, m, *r in rows(
        wh, "SELECT provider, model, list_usd, credits_usd, discounts_usd, net_usd, effective_discount "
            "FROM marts.effective_rates WHERE month = DATE '2026-06-01'")}
    # 87.450004 - 1.00 credit - 0.45 EDP discount = 86.000004: 1.45 / 87.450004 = 1.658 % below list
    b = got["bedrock", "claude-sonnet-4-5"]
    assert b[:4] == [D("87.450004"), D("-1"), D("-0.45"), D("86.000004")]
    assert b[4] == pytest.approx(1.45 / 87.450004)
    assert got["azure", "gpt-4o"][:4] == [D("7.80"), D("0"), D("0"), D("7.80")]
    # GCP credits inside the lines: -0.10 committed use, -0.40 free trial
    assert got["vertex_ai", "gemini-2.5-pro"][:4] == [D("125.025"), D("-0.5"), D("0"), D("124.525")]


def test_the_team_is_the_tag_else_the_principals_team(wh):
    got = dict(rows(wh, "SELECT sku, team FROM core.cloud_bill_lines WHERE cloud = 'aws' AND charge_kind = 'usage'"))
    assert got["USE1-Claude4.5Sonnet-input-tokens"] == "search"  # resource_tags user_team
    # no tag: catalog/cloud_principals.csv names the team of role/batch-jobs
    assert got["USE1-Claude4.5Sonnet-cache-write-input-token-count"] == "research"
    assert got["USE1-Claude4.5Sonnet-search-units"] is None
