"""marts.chargeback (issue 41): a month whose cost centers add up to the month's spend to the cent,
with idle node-hours, an unused commitment and an unexplained invoice line allocated.

The month is June 2026 of tests/sql/test_cloud_bills.py's AWS export (tests/fixtures/bills/cloud/aws):
calls b1 + b2 (Bedrock, $8.10), a1 (Azure, $7.50) and g1 (Vertex AI, $5.025), all team search, cost
$20.625 at the sheet's rates; the AWS CUR bills 2 model-unit
hours of Provisioned Throughput, $79.20 (no call pays it: provisioned calls cost 0 per token), and
an AI line no rule reads ('...-search-units'), $0.25. Added here:

* call x1, Bedrock Claude Sonnet 4.5, 100,000 input x $3 + 10,000 output x $15 per 1M = 0.30 + 0.15
  = $0.45, metadata.api_key_id 'key-ml-1' -> cost center 'ml' (rule `ml,api_key,key-ml-*`);
* node n9, 1 GPU at $2.00 an hour, active 2026-06-09 00:00 to 06-10 00:00 with no call: an idle
  node-day of 24 x 2.00 = $48.00.

Shared = 48.00 + 79.20 + 0.25 = $127.45 = 127,450,000 micro-dollars. Usage: search 20.625, ml 0.45,
21.075 in all (weights 20,625,000 : 450,000 = 825 : 18, of 843).
* proportional: ml 127,450,000 x 18 / 843 = 2,294,100,000 / 843 = 2,721,352.31 -> floor 2,721,352
  (remainder .31); search 127,450,000 x 825 / 843 = 124,728,647.69 -> floor 124,728,647 (remainder
  .69); the floors leave 1 micro-dollar, which goes to the larger remainder, search: 124,728,648.
  Totals: search 20.625 + 124.728648 = 145.353648; ml 0.45 + 2.721352 = 3.171352; together
  148.525 = 21.075 + 127.45.
* even: 63,725,000 each: search 20.625 + 63.725 = 84.35, ml 0.45 + 63.725 = 64.175.
* shared = "ml": ml 0.45 + 127.45 = 127.90, search 20.625.
"""

from __future__ import annotations

import json
from decimal import Decimal as D

from services.config import Chargeback, Config
from tests.conftest import build_warehouse
from tests.sql.test_cloud_bills import SONNET, TS, landing_with

X1 = {"ts": TS, "request_id": "x1", "provider": "bedrock", "model": SONNET,
      "metadata": {"api_key_id": "key-ml-1", "user_id": "erin"},
      "usage": {"inputTokens": 100_000, "outputTokens": 10_000}}


def _build(root, shared="proportional", extra=(), endpoints=None):
    landing = landing_with(root, "aws")
    (landing / "telemetry" / "requests" / "more.jsonl").write_text("".join(json.dumps(c) + "\n" for c in (X1, *extra)))
    if endpoints:
        (landing / "catalog" / "endpoints.csv").write_text(endpoints)
    (landing / "catalog" / "cost_centers.csv").write_text("cost_center,field,pattern\nml,api_key,key-ml-*\n")
    (landing / "catalog" / "nodes.csv").write_text(
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        "n9,nebius,H100,1,qwen3-32b,fp8,2.00,2026-06-09T00:00:00Z,2026-06-10T00:00:00Z\n")
    con, summary = build_warehouse(landing, root / "w.duckdb", config=Config(chargeback=Chargeback(shared=shared)))
    assert summary.total("rows_quarantined") == 0
    return con


def _totals(con):
    return {r[0]: r[1:] for r in con.execute(
        "SELECT cost_center, calls, usage_cost_usd, shared_cost_usd, total_cost_usd FROM marts.chargeback "
        "WHERE month = DATE '2026-06-01' AND principal_kind = '*'").fetchall()}


def test_cost_centers_add_up_to_the_months_spend_to_the_cent(tmp_path):
    con = _build(tmp_path)
    got = _totals(con)
    assert got == {"search": (4, D("20.625"), D("124.728648"), D("145.353648")),
                   "ml": (1, D("0.45"), D("2.721352"), D("3.171352"))}
    # the same month's spend from the other marts: calls + idle nodes + commitment fees + unexplained lines
    spend = con.execute("""
        SELECT (SELECT sum(cost_usd) FROM marts.daily_spend WHERE source IN ('api_usage', 'self_hosted')
                  AND day >= DATE '2026-06-01' AND day < DATE '2026-07-01')
             + (SELECT sum(paid_usd) FROM marts.commitments WHERE source = 'invoice' AND month = DATE '2026-06-01')
             + (SELECT sum(amount_usd) FROM marts.unattributed_invoice_lines WHERE day < DATE '2026-07-01')""").fetchone()[0]
    assert spend == D("148.525")
    assert sum(t[3] for t in got.values()) == spend
    # the principal rows: within ml, the key and the user; no shared cost on them
    rows = con.execute("SELECT principal_kind, principal_value, calls, usage_cost_usd, shared_cost_usd, total_cost_usd "
                       "FROM marts.chargeback WHERE cost_center = 'ml' AND principal_kind IN ('api_key', 'user')"
                       " ORDER BY 1").fetchall()
    assert rows == [("api_key", "key-ml-1", 1, D("0.45"), D("0"), D("0.45")), ("user", "erin", 1, D("0.45"), D("0"), D("0.45"))]


def test_shared_even_and_to_one_cost_center(tmp_path):
    con = _build(tmp_path / "even", "even")
    assert {k: v[2:] for k, v in _totals(con).items()} == {"search": (D("63.725"), D("84.35")),
                                                           "ml": (D("63.725"), D("64.175"))}
    con.close()
    con = _build(tmp_path / "ml", "ml")
    assert {k: v[2:] for k, v in _totals(con).items()} == {"search": (D("0"), D("20.625")),
                                                           "ml": (D("127.45"), D("127.90"))}


def test_the_report_has_the_chargeback_table(tmp_path):
    from services.report import build_html

    con = _build(tmp_path)
    html = build_html(con)
    section = html[html.index("Chargeback: who spent it"):html.index("Most expensive agent runs")]
    # search first (145.35), then ml; the key of ml's call among the top keys
    assert section.index(">search<") < section.index(">ml<")
    assert "key-ml-1" in section and "erin" in section


# Bedrock provisioned throughput consumed by calls (issue 41): the AWS CUR's $79.20 of
# Claude Sonnet 4.5 model-unit hours, and two calls through a provisioned-model ARN (catalog/endpoints.csv
# billing = provisioned: 0 per token; on demand at the sheet's $3 per 1M input tokens):
# p1, key key-ml-2 -> cost center ml, 10,000,000 input tokens = $30.00 on demand; p2 and p3, team
# search, 8,500,000 input tokens each = $25.50 each, $51.00. Used on demand 30 + 51 = $81.00 > paid $79.20, so the whole
# $79.20 = 79,200,000 micro-dollars is consumed, split 30 : 51 = 10 : 17 (of 27):
#   ml     79,200,000 x 10 / 27 = 29,333,333.33 -> 29,333,333 (remainder .33)
#   search 79,200,000 x 17 / 27 = 49,866,666.67 -> 49,866,666 (remainder .67), + the 1 left = 49,866,667
# Nothing of the commitment is left to share: shared = idle 48.00 + unexplained 0.25 = 48,250,000.
# Proportional weights = usage + commitment (micro): search 20,625,000 + 49,866,667 = 70,491,667;
# ml 450,000 + 29,333,333 = 29,783,333; in all 100,275,000; 48,250,000 / 100,275,000 = 1,930 / 4,011:
#   search 70,491,667 x 1,930 / 4,011 = 136,048,917,310 / 4,011 = 33,918,952.21 -> 33,918,952
#   ml     29,783,333 x 1,930 / 4,011 =  57,481,832,690 / 4,011 = 14,331,047.79 -> 14,331,047, + the 1 left
# Totals: search 20.625 + 49.866667 + 33.918952 = 104.410619; ml 0.45 + 29.333333 + 14.331048 = 44.114381;
# together 148.525 = calls 21.075 + idle 48.00 + commitment 79.20 + unexplained 0.25.
PT_ARN = "arn:aws:bedrock:us-east-1:111122223333:provisioned-model/pt-sonnet"
PROVISIONED = [
    {"ts": TS, "request_id": "p1", "provider": "bedrock", "model": PT_ARN, "metadata": {"api_key_id": "key-ml-2"},
     "usage": {"inputTokens": 10_000_000, "outputTokens": 0}},
    *({"ts": TS, "request_id": rid, "provider": "bedrock", "model": PT_ARN, "team": "search",
       "usage": {"inputTokens": 8_500_000, "outputTokens": 0}} for rid in ("p2", "p3")),
]
ENDPOINTS = ("provider,endpoint,model,sheet_provider,deployment_type,region,billing\n"
             f"bedrock,{PT_ARN},{SONNET},,,us-east-1,provisioned\n")


def test_the_consumed_commitment_is_charged_to_the_calls_that_consumed_it(tmp_path):
    con = _build(tmp_path, extra=PROVISIONED, endpoints=ENDPOINTS)
    assert dict(con.execute("SELECT request_id, cost_usd FROM core.call_costs WHERE billing = 'provisioned'").fetchall()) == {
        "p1": D("0"), "p2": D("0"), "p3": D("0")}
    got = {r[0]: r[1:] for r in con.execute(
        "SELECT cost_center, calls, usage_cost_usd, commitment_cost_usd, shared_cost_usd, total_cost_usd FROM marts.chargeback "
        "WHERE month = DATE '2026-06-01' AND principal_kind = '*'").fetchall()}
    assert got == {"search": (6, D("20.625"), D("49.866667"), D("33.918952"), D("104.410619")),
                   "ml": (2, D("0.45"), D("29.333333"), D("14.331048"), D("44.114381"))}
    assert sum(t[4] for t in got.values()) == D("148.525")
    # principal rows carry no commitment
    assert con.execute("SELECT DISTINCT commitment_cost_usd FROM marts.chargeback WHERE principal_kind <> '*'").fetchall() == [(D("0"),)]
    # the report's chargeback table has the commitments column with search's 49.866667
    from services.report import build_html, usd

    html = build_html(con)
    section = html[html.index("Chargeback: who spent it"):html.index("Most expensive agent runs")]
    assert "<th>commitments</th>" in section and f">{usd(D('49.866667'))}<" in section
