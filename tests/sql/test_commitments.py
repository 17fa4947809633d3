"""Provisioned throughput as a third way to buy (issue 25 item 5): catalog/commitments.csv,
marts.commitments, marts.buying_options and the report's "Buying options" section.

Every expected figure is worked by hand below from the inputs.

**Catalog offers, real LiteLLM sheet of 2026-07-24** (tests/conftest.py real_sheet_landing). Vertex AI
gemini-2.5-pro (vertex_ai-language-models): 1.25e-06 USD per input token, 1e-05 per output token,
thoughts at the output price. A call of 10,000 prompt, 1,000 candidates and 4,000 thoughts tokens
costs 10,000 x 1.25e-06 + 5,000 x 1e-05 = 0.0125 + 0.05 = $0.0625 (15,000 tokens). On 2026-07-30:
four such calls on demand (paid $0.0625 each) and four on provisioned throughput (paid 0 per token,
$0.0625 each on demand).

* Offer `vertex,gemini-2.5-pro,1,2.50,2,2026-06-01,2026-08-01`: June, a 30-day month, is 720 hours:
  paid = 1 x 2.50 x 720 = $1,800.00; July (31 days) 744 hours: 1 x 2.50 x 744 = $1,860.00. A month
  of hours_per_month = 730 hours: 1 x 2.50 x 730 = $1,825.00 (usd_per_month). July's provisioned
  calls would have cost 4 x 0.0625 = $0.25 on demand: utilisation 0.25 / 1,860 = 0.000134409. All of
  July's calls at on-demand rates: 8 x 0.0625 = $0.50 (model_on_demand_usd).
* Offer `azure_openai,o3,2,1.20,0,2026-07-10T06:00:00Z,2026-07-20T18:30:00Z` (hourly, no term): 10
  days and 12.5 hours = 252.5 hours: 2 x 1.20 x 252.5 = $606.00; unit-hours 2 x 252.5 = 505.
* Tiny-model through provider acme, priced from a thinktax price CSV at $1 / $2 per Mtok: ten calls
  of 1,000 prompt and 1,000 completion tokens, 0.001 + 0.002 = $0.003 each, $0.03 in all; its
  deployment d4 (1 x L40S at $0.50 per GPU-hour, 5 calls per minute): 1 x 0.50 x 730 = $365.00 a
  month, capacity 5 x 60 x 730 = 219,000 calls.

marts.buying_options, window = [alert] window_days 30 ending 2026-07-30 (2026-07-01 .. 07-30), scaled
to a month by 730 / (24 x 30) = 730 / 720:
* gemini-2.5-pro: 8 calls -> 8 x 730/720 = 8.1111 calls/month; 120,000 tokens -> 121,666.67;
  on demand 0.50 x 730/720 = $0.506944; $0.0625 per call, 0.50 / 120,000 x 1e6 = $4.166667 per Mtok;
  provisioned $1,825.00 (the offer of July); cheapest on demand. On demand costs more than the commitment from 1,825 / 0.0625 = 29,200 calls a month, or
  1,825 / (0.50 / 120,000) = 438,000,000 tokens a month.
* tiny-model: on demand 0.03 x 730/720 = $0.030417; self-hosted $365.00 (10.14 calls a month need
  one deployment); cheapest on demand; self-hosting costs less from ceil(365 / 0.003) =
  ceil(121,666.67) = 121,667 calls a month, or ceil(365 / (0.03 / 20,000)) = ceil(243,333,333.33) =
  243,333,334 tokens.

**Invoice commitments** (tests/fixtures/bills/cloud, one day 2026-06-10, the fixture sheet of
tests/sql/test_cloud_bills.py): Bedrock `USE1-ProvisionedThroughput-Claude4.5Sonnet-ModelUnits`
2 ModelUnit-Hrs $79.20 -> a whole month at that day's rate 79.20 x 730 / 24 = $2,409.00; Azure
`Provisioned Managed Global` 24 x `1 Hour` $48.00 (no model) -> 48 x 730 / 24 = $1,460.00; Vertex
`Gemini 2.5 Pro Provisioned Throughput` 24 hours $120.00 -> $3,650.00. Provisioned calls added: an
Azure PTU deployment (endpoints.csv) of gpt-4o, 100,000 prompt + 10,000 completion tokens at 2.5 / 10
per Mtok = 0.25 + 0.10 = $0.35 on demand; with a reserved-PTU purchase line of $500.00 on 06-01 (another
export: a fee, counted as billed) the Azure PTU row (model NULL) pays 48 + 500 = $548.00, usd_per_month
1,460 + 500 = $1,960.00, used $0.35, utilisation 0.35 / 548 = 0.000639; a Vertex provisioned call of 1,000,000 prompt, 100,000 candidates, 300,000
thoughts at 1.25 / 10 = 1.25 + 4.00 = $5.25 -> utilisation 5.25 / 120 = 0.04375; all Vertex calls
that day at on-demand rates: g1 5.025 + 5.25 = $10.275.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from decimal import Decimal as D

import duckdb
import pytest

from tests.conftest import build_warehouse, real_sheet_landing, write_files
from tests.sql.test_cloud_bills import FIXTURES, landing_with
from warehouse.buying_options import build_buying_options
from warehouse.economics import build_self_host_breakeven
from warehouse.outlook import build_spend_forecast

TS = "2026-07-30T12:00:00Z"


def _gemini(rid: str, traffic: str) -> dict:
    return {"ts": TS, "provider": "vertex_ai", "modelVersion": "gemini-2.5-pro", "responseId": rid,
            "usageMetadata": {"promptTokenCount": 10_000, "candidatesTokenCount": 1_000, "thoughtsTokenCount": 4_000,
                              "totalTokenCount": 15_000, "trafficType": traffic}}


def _tiny(rid: str) -> dict:
    return {"ts": TS, "request_id": rid, "provider": "acme", "model": "tiny-model",
            "usage": {"prompt_tokens": 1_000, "completion_tokens": 1_000}}


CALLS = ([_gemini(f"od{i}", "ON_DEMAND") for i in range(4)] + [_gemini(f"pt{i}", "PROVISIONED_THROUGHPUT") for i in range(4)]
         + [_tiny(f"t{i}") for i in range(10)])
COMMITMENTS = (
    "provider,model,units,usd_per_unit_hour,commit_months,start,end,note\n"
    "vertex,gemini-2.5-pro,1,2.50,2,2026-06-01,2026-08-01,one unit for June and July\n"
    "azure_openai,o3,2,1.20,0,2026-07-10T06:00:00Z,2026-07-20T18:30:00Z,hourly\n"
    "bedrock,claude-sonnet-4-5,0,2.50,1,2026-07-01,,no units: quarantined\n"
)
CATALOG = {
    "catalog/commitments.csv": COMMITMENTS,
    "catalog/models.csv": "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,"
                          "kv_bytes_per_token_bf16\ntiny-model,tiny,true,8,,,,131072\n",
    "catalog/deployments.csv": "deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,"
                               "usd_per_gpu_hour\nd4-tiny-l40s,tiny-model,acme,L40S,1,bf16,,5,0.5\n",
    "prices/llm/acme.2026-07-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\n"
                                      "acme,tiny-model,1,2,USD\n",
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("commitments")
    landing = write_files(real_sheet_landing(root, {"calls.jsonl": CALLS}), CATALOG)
    con, summary = build_warehouse(landing, root / "w.duckdb")
    # the offer without units (the real sheet's own rejects are tests/sql/test_price_history_real.py's business)
    assert {f.file: f.rows_quarantined for f in summary.files}["catalog/commitments.csv"] == 1
    build_self_host_breakeven(con)
    build_spend_forecast(con)
    build_buying_options(con)
    yield con
    con.close()


def test_every_call_is_priced_as_worked(wh):
    got = dict(wh.execute("SELECT request_id, on_demand_cost_usd FROM core.call_costs").fetchall())
    assert {got[f"od{i}"] for i in range(4)} == {got[f"pt{i}"] for i in range(4)} == {D("0.0625")}
    assert {got[f"t{i}"] for i in range(10)} == {D("0.003")}


def test_a_bad_offer_is_quarantined_with_its_reason(wh):
    assert wh.execute("SELECT line, field, reason FROM ops.quarantine WHERE file = 'catalog/commitments.csv'").fetchall() == [
        (4, "units", "not positive: 0")]


def test_catalog_offers_are_priced_by_the_hours_of_each_month(wh):
    got = {(p, m, mo.isoformat()): r for p, m, mo, *r in wh.execute(
        "SELECT provider, model, month, source, hours_billed, unit_hours, paid_usd, usd_per_month, used_on_demand_usd, "
        "utilisation, model_on_demand_usd FROM marts.commitments ORDER BY ALL").fetchall()}
    assert set(got) == {("vertex_ai", "gemini-2.5-pro", "2026-06-01"), ("vertex_ai", "gemini-2.5-pro", "2026-07-01"),
                        ("azure", "o3", "2026-07-01")}
    # a 30-day month: 1 unit x $2.50 x 720 h = $1,800.00; a month of 730 h: $1,825.00; no calls in June
    assert got["vertex_ai", "gemini-2.5-pro", "2026-06-01"] == [
        "catalog_offer", D("720"), D("720"), D("1800.00"), D("1825.00"), D("0"), 0.0, None]
    # July: 744 h -> $1,860.00; the provisioned calls' on-demand value $0.25; all calls $0.50
    jul = got["vertex_ai", "gemini-2.5-pro", "2026-07-01"]
    assert jul[:5] == ["catalog_offer", D("744"), D("744"), D("1860.00"), D("1825.00")]
    assert jul[5] == D("0.25") and jul[6] == pytest.approx(0.25 / 1860) and jul[7] == D("0.50")
    # hourly PTU from 07-10 06:00 to 07-20 18:30: 252.5 h x 2 units x $1.20 = $606.00
    assert got["azure", "o3", "2026-07-01"][:5] == ["catalog_offer", D("252.5"), D("505"), D("606.00"), D("1752.00")]


def test_buying_options_side_by_side(wh):
    got = {(r[0], r[1]): dict(zip([d[0] for d in wh.description], r, strict=True)) for r in wh.execute(
        "SELECT * FROM marts.buying_options").fetchall()}
    g = got["vertex_ai", "gemini-2.5-pro"]
    assert (g["window_first_day"], g["window_last_day"], g["window_days"]) == (dt.date(2026, 7, 1), dt.date(2026, 7, 30), 30)
    assert g["calls_per_month"] == pytest.approx(8 * 730 / 720)
    assert g["tokens_per_month"] == pytest.approx(120_000 * 730 / 720)
    assert (g["on_demand_usd_per_call"], g["on_demand_usd_per_mtok"]) == (D("0.0625"), D("4.166667"))
    assert g["on_demand_usd_per_month"] == D("0.506944")  # 0.50 x 730 / 720 = 0.5069444
    assert (g["provisioned_usd_per_month"], g["provisioned_source"], g["provisioned_month"]) == (
        D("1825"), "catalog_offer", dt.date(2026, 7, 1))
    assert g["self_hosted_usd_per_month"] is None and g["cheapest"] == "on_demand"
    assert g["provisioned_crossover_calls_per_month"] == 29_200  # 1,825 / 0.0625
    assert g["provisioned_crossover_tokens_per_month"] == 438_000_000  # 1,825 / (0.50 / 120,000)
    t = got["acme", "tiny-model"]
    assert t["on_demand_usd_per_month"] == D("0.030417")  # 0.03 x 730 / 720 = 0.0304167
    assert (t["self_hosted_usd_per_month"], t["self_host_deployment"], t["self_host_deployments_needed"]) == (
        D("365"), "d4-tiny-l40s", 1)
    assert t["self_host_capacity_calls_per_month"] == 219_000
    assert t["cheapest"] == "on_demand" and t["provisioned_usd_per_month"] is None
    assert t["self_host_crossover_calls_per_month"] == 121_667  # ceil(365 / 0.003)
    assert t["self_host_crossover_tokens_per_month"] == 243_333_334  # ceil(365 / (0.03 / 20,000))
    # an offer for a model without calls: on demand costs nothing at no volume
    o = got["azure", "o3"]
    assert (o["on_demand_usd_per_month"], o["provisioned_usd_per_month"], o["cheapest"]) == (D("0"), D("1752"), "on_demand")


def test_the_forecast_volume_follows_the_spend_forecast(wh):
    """At the forecast volume: the observed monthly figures x (the next month's forecast API spend /
    the window's paid API spend scaled to a month); the growth is read from marts.spend_forecast (an input)."""
    fc = wh.execute("SELECT forecast_usd FROM marts.spend_forecast WHERE scope = 'model' AND serving = 'api' "
                    "AND scope_value = 'gemini-2.5-pro' AND month = DATE '2026-08-01'").fetchall()
    assert fc, "the forecast covers August"
    growth = D(fc[0][0]) / (D("0.25") * D(730) / D(720))  # paid: the four on-demand calls, $0.25
    g = wh.execute("SELECT forecast_month, forecast_growth, on_demand_usd_per_month_forecast, calls_per_month_forecast, "
                   "cheapest_forecast FROM marts.buying_options WHERE model = 'gemini-2.5-pro'").fetchone()
    assert g[0] == dt.date(2026, 8, 1) and g[1] == pytest.approx(float(growth))
    assert g[2] == (D("0.50") * D(730) / D(720) * growth).quantize(D("0.000001"))
    assert g[3] == pytest.approx(8 * 730 / 720 * float(growth))
    assert g[4] == ("on_demand" if D("0.50") * D(730) / D(720) * growth <= 1825 else "provisioned")


def test_the_report_shows_the_buying_options(wh):
    from services.report import build_html

    html = build_html(wh)
    assert "<h2>Buying options</h2>" in html
    section = html.split("<h2>Buying options</h2>", 1)[1].split("</section>", 1)[0]
    assert "gemini-2.5-pro" in section and "$1,825 (catalog offer)" in section and "$365 (d4-tiny-l40s)" in section
    assert "29,200" in section and "121,667" in section and "on demand" in section


# ---- invoice commitments ---------------------------------------------------------------------

PROVISIONED_CALLS = [
    {"ts": "2026-06-10T12:00:00Z", "request_id": "a-ptu", "provider": "azure", "model": "ptu-gpt4o",
     "usage": {"prompt_tokens": 100_000, "completion_tokens": 10_000}},
    {"ts": "2026-06-10T12:00:00Z", "provider": "vertex_ai", "modelVersion": "gemini-2.5-pro", "responseId": "g-pt",
     "usageMetadata": {"promptTokenCount": 1_000_000, "candidatesTokenCount": 100_000, "thoughtsTokenCount": 300_000,
                       "totalTokenCount": 1_400_000, "trafficType": "PROVISIONED_THROUGHPUT"}},
]


# the reserved-PTU purchase's ReservationId, as a Microsoft Customer Agreement export writes it
RESERVATION = "/providers/Microsoft.Capacity/reservationOrders/7c1f0e2a-0000-4000-8000-00000000a001/reservations/7c1f0e2a-0000-4000-8000-00000000b001"


@pytest.fixture(scope="module")
def invoiced(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("invoiced")
    landing = landing_with(root, "aws", "azure", "gcp")
    (landing / "telemetry" / "requests" / "provisioned.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in PROVISIONED_CALLS))
    (landing / "catalog" / "endpoints.csv").write_text(
        "provider,endpoint,model,sheet_provider,deployment_type,region,billing\n"
        "azure,ptu-gpt4o,gpt-4o-2024-11-20,,global,eastus2,provisioned\n")
    # a reserved-PTU purchase (ChargeType Purchase, PricingModel Reservation) in another export of June
    src = next((FIXTURES / "azure").rglob("*.csv")).read_text().splitlines()
    head, ptu = src[0].split(","), next(csv.reader([next(r for r in src if "Provisioned Managed" in r)]))
    row = dict(zip(head, ptu, strict=True)) | {"Date": "06/01/2026", "ChargeType": "Purchase", "PricingModel": "Reservation",
                                               "Quantity": "1", "UnitOfMeasure": "1/Month", "CostInBillingCurrency": "500.00",
                                               "EffectivePrice": "500.00", "UnitPrice": "500.00",
                                               "ReservationId": RESERVATION,
                                               # "Purchases ... might be shown as blank" (the EA / MCA schema)
                                               "MeterCategory": "", "MeterSubCategory": "", "MeterName": "", "MeterId": ""}
    out = landing / "bills" / "azure" / "monthly" / "thinktax-purchases" / "20260601-20260630" / "part_0_0001.csv"
    out.parent.mkdir(parents=True)
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerow([row[h] for h in head])
    con, summary = build_warehouse(landing, root / "w.duckdb")
    assert summary.total("rows_quarantined") == 0
    yield con
    con.close()


def test_invoice_commitments_with_what_the_provisioned_calls_used(invoiced):
    got = {(p, m): r for p, m, *r in invoiced.execute(
        "SELECT provider, model, month, source, unit_hours, hours_billed, paid_usd, usd_per_month, used_on_demand_usd, "
        "utilisation, model_on_demand_usd, invoice_lines FROM marts.commitments").fetchall()}
    june = dt.date(2026, 6, 1)
    assert got["bedrock", "claude-sonnet-4-5"][:8] == [june, "invoice", D("2"), D("24"), D("79.20"), D("2409.00"), D("0"), 0.0]
    # a PTU meter names no model: it carries the provider's provisioned calls. The hourly line's day
    # at its rate for a month, 48 x 730 / 24 = 1,460.00, plus the reservation purchase as billed, 500.00:
    # 1,960.00; paid 48 + 500 = 548.00; the purchase's '1/Month' is no hour unit: unit_hours 24
    az = got["azure", None]
    assert az[:7] == [june, "invoice", D("24"), D("24"), D("548.00"), D("1960.00"), D("0.35")]
    assert az[7] == pytest.approx(0.35 / 548)
    v = got["vertex_ai", "gemini-2.5-pro"]
    assert v[:7] == [june, "invoice", D("24"), D("24"), D("120.00"), D("3650.00"), D("5.25")]
    assert v[7] == pytest.approx(5.25 / 120) and v[8] == D("10.275") and v[9] == 1


def test_buying_options_is_a_python_mart_after_its_inputs():
    from pipelines.defs.economics_assets import ECONOMICS

    order = [e.table for e in ECONOMICS]
    mart = next(e for e in ECONOMICS if e.table == "marts.buying_options")
    assert {"marts.commitments", "marts.self_host_breakeven", "marts.spend_forecast"} <= mart.deps
    assert order.index("marts.buying_options") > max(order.index("marts.self_host_breakeven"),
                                                      order.index("marts.spend_forecast"))


def test_buying_options_needs_only_the_call_columns_a_spark_run_brings_over(wh):
    """On a Spark run the DuckDB build holds core.call_costs as CALL_COSTS_COLUMNS only
    (warehouse/spark/economics.py): the mart built from those columns is the same."""
    from warehouse.spark.economics import CALL_COSTS_COLUMNS

    before = wh.execute("SELECT * EXCLUDE (build_id) FROM marts.buying_options ORDER BY ALL").fetchall()
    # a view over its Parquet files in a DuckDB build (warehouse/parts.py): put back as it was
    view = wh.execute("SELECT sql FROM duckdb_views() WHERE schema_name = 'core' AND view_name = 'call_costs'").fetchall()
    wh.execute("CREATE TABLE main.full_call_costs AS SELECT * FROM core.call_costs")
    try:
        wh.execute("DROP VIEW IF EXISTS core.call_costs")
        wh.execute(f"CREATE OR REPLACE TABLE core.call_costs AS SELECT {', '.join(CALL_COSTS_COLUMNS)} FROM main.full_call_costs")
        build_buying_options(wh)
        assert wh.execute("SELECT * EXCLUDE (build_id) FROM marts.buying_options ORDER BY ALL").fetchall() == before
    finally:
        if view:
            wh.execute("DROP TABLE IF EXISTS core.call_costs")
            wh.execute(view[0][0])
        else:
            wh.execute("CREATE OR REPLACE TABLE core.call_costs AS SELECT * FROM main.full_call_costs")
        wh.execute("DROP TABLE main.full_call_costs")
        build_buying_options(wh)


def test_the_focus_13_contract_commitment_dataset_lists_the_invoice_commitments(invoiced, tmp_path):
    """`thinktax export focus` (1.3): one Contract Commitment row per commitment the invoices bill,
    and ContractApplied on the provisioned API usage rows, worked from the fixture lines above:
    * Bedrock: the provisioned model's ARN (line_item_resource_id), 2 ModelUnit-Hrs for $79.20 on 06-10;
    * Azure: the PTU account's hourly meter, 24 x '1 Hour' for $48.00 on 06-10 (Usage, 24 PTU-hours),
      and the reserved-PTU purchase, its ReservationId, $500.00 for '1/Month' on 06-01 (no hour unit:
      a Spend commitment, no quantity);
    * Vertex AI: the line names no resource: thinktax's id for the project and model, 24 hours, $120.00.
    The Azure PTU call (100,000 input + 10,000 output tokens, gpt-4o) is applied to the account's hourly
    commitment, the only Azure one in force on 06-10 (the purchase line covers 06-01); the Vertex call
    (1,000,000 + 100,000 + 300,000 thinking tokens) to the Vertex commitment."""
    from thinktax.commands.export import COMMITMENT_COLUMNS, export_focus

    written = export_focus(invoiced, tmp_path, "csv")
    assert [(p.name, n) for p, n in written] == [("focus_costs_2026-06.csv", 19), ("focus_contract_commitment.csv", 4)]
    with written[1][0].open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [c for c, _ in COMMITMENT_COLUMNS]
    account = "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/rg-ai/providers/Microsoft.CognitiveServices/accounts/ai-ptu"
    arn = "arn:aws:bedrock:us-east-1:111122223333:provisioned-model/pt1"
    vertex = "thinktax:vertex_ai/ai-prod-4821/gemini-2.5-pro/provisioned-throughput"
    got = {r["ContractCommitmentId"]: (r["ContractCommitmentCategory"], D(r["ContractCommitmentCost"]),
                                       r["ContractCommitmentQuantity"] and D(r["ContractCommitmentQuantity"]),
                                       r["ContractCommitmentUnit"], r["ContractCommitmentPeriodStart"],
                                       r["ContractCommitmentPeriodEnd"], r["ContractCommitmentType"]) for r in rows}
    d10, d11 = "2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z"
    assert got == {
        arn: ("Usage", D("79.2"), D("2"), "Model Unit-Hours", d10, d11, "Amazon Bedrock Provisioned Throughput"),
        account: ("Usage", D("48"), D("24"), "PTU-Hours", d10, d11, "Azure OpenAI Provisioned Throughput Units"),
        RESERVATION: ("Spend", D("500"), "", "", "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z",
                      "Azure OpenAI Provisioned Throughput Units"),
        vertex: ("Usage", D("120"), D("24"), "GSU-Hours", d10, d11, "Vertex AI Provisioned Throughput"),
    }
    # ContractId = ContractCommitmentId (a commitment is its own contract); every row in USD
    assert all(r["ContractId"] == r["ContractCommitmentId"] and r["BillingCurrency"] == "USD"
               and (r["ContractPeriodStart"], r["ContractPeriodEnd"]) == (r["ContractCommitmentPeriodStart"], r["ContractCommitmentPeriodEnd"])
               for r in rows)
    applied = duckdb.sql(f"SELECT ProviderName, ResourceId, string_split(SkuPriceId, '|')[-1], ContractApplied "
                         f"FROM read_csv('{written[0][0]}') WHERE ContractApplied IS NOT NULL ORDER BY 1, 2, 3").fetchall()
    def element(cid: str, tokens: int) -> dict:
        return {"Elements": [{"ContractID": cid, "ContractCommitmentID": cid, "ContractCommitmentAppliedQuantity": tokens,
                              "ContractCommitmentAppliedUnit": "Tokens"}]}
    assert [(p, m, t, json.loads(j)) for p, m, t, j in applied] == [
        ("azure", "gpt-4o", "input", element(account, 100_000)), ("azure", "gpt-4o", "output", element(account, 10_000)),
        ("vertex_ai", "gemini-2.5-pro", "input", element(vertex, 1_000_000)),
        ("vertex_ai", "gemini-2.5-pro", "output", element(vertex, 100_000)),
        ("vertex_ai", "gemini-2.5-pro", "reasoning-output", element(vertex, 300_000))]
    # the rows applied are exactly the provisioned ones (0 per token)
    assert duckdb.sql(f"SELECT count(*), sum(BilledCost) FROM read_csv('{written[0][0]}') "
                      "WHERE string_split(SkuPriceId, '|')[-2] = 'provisioned'").fetchall() == [(5, 0)]
    # a month the commitments are not in: the file has the columns and no rows
    assert export_focus(invoiced, tmp_path / "none", "csv", "2026-07") == []
