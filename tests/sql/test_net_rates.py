"""The break-even and forecast marts at the cloud invoice's net rate (issue 25 item 3).

Price sheet of 2026-04-01 (a thinktax CSV): Bedrock Claude Sonnet 4.5 and Anthropic's own
claude-sonnet-4-5 at $3 input / $15 output per 1M tokens. Every call is 1,000,000 input and
200,000 output tokens (150,000 of them thinking): 3.00 + 3.00 = $6.00 at list.

Calls: Bedrock on 04-10, 05-10, 06-10 and 07-10 (InvokeModel, the Anthropic body), and the same
model through Anthropic's own API on 06-10.

The CUR (two billing periods, AWS Data Exports CUR 2.0 columns):
* May: Sonnet input 1,000 thousand tokens $3.00 and output 200 thousand $3.00, each with an
  EdpDiscount of -$0.30 on its usage type: net 5.40, net_to_list = 5.40 / 6.00 = 0.9.
* June: Sonnet $3.00 + $3.00 (no discount of its own); Haiku 4.5 input $4.00 with an EdpDiscount of
  -$0.40; a Credit of -$2.00 on a usage type that names no model (the model NULL row). The credit
  is shared by list: Sonnet -2.00 x 6 / 10 = -1.20 -> (6.00 - 1.20) / 6.00 = 0.8; Haiku
  -2.00 x 4 / 10 = -0.80 -> (3.60 - 0.80) / 4.00 = 0.7.

So the Bedrock calls cost, at the net rate: April $6.00 (before the first invoice: list), May
6.00 x 0.9 = $5.40, June 6.00 x 0.8 = $4.80, July $4.80 (June's rate carried: July's invoice is not
in yet). The Anthropic call stays at $6.00 (no cloud invoice). The alert's 30-day window ending
07-10 holds the July call: $4.80.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D

import duckdb
import pytest

from services import alert
from tests.conftest import build_warehouse, write_files
from warehouse.economics import api_months, net_rate_sql
from warehouse.outlook import build_spend_forecast, build_substitution_breakeven

SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
HDR = ("bill_billing_period_start_date,bill_invoice_id,line_item_usage_account_id,line_item_usage_start_date,"
       "line_item_usage_end_date,line_item_line_item_type,line_item_product_code,line_item_usage_type,"
       "line_item_operation,line_item_usage_amount,line_item_unblended_cost,line_item_net_unblended_cost,"
       "line_item_currency_code,line_item_resource_id,line_item_iam_principal,product_region_code,pricing_unit,"
       "pricing_term,product,resource_tags\n")
PRODUCT = '"{""product_name"":""Amazon Bedrock Service""}"'


def _line(month: str, kind: str, usage_type: str, amount: str, cost: str) -> str:
    start = f"2026-{month}-10T00:00:00.000Z"
    end = f"2026-{month}-11T00:00:00.000Z"
    return (f"2026-{month}-01T00:00:00.000Z,INV-{month},111122223333,{start},{end},{kind},AmazonBedrockService,"
            f"{usage_type},InvokeModelInference,{amount},{cost},{cost},USD,,,us-east-1,1K tokens,OnDemand,{PRODUCT},{{}}\n")


CUR_MAY = HDR + "".join([
    _line("05", "Usage", "USE1-Claude4.5Sonnet-input-tokens", "1000", "3.00"),
    _line("05", "Usage", "USE1-Claude4.5Sonnet-output-tokens", "200", "3.00"),
    _line("05", "EdpDiscount", "USE1-Claude4.5Sonnet-input-tokens", "0", "-0.30"),
    _line("05", "EdpDiscount", "USE1-Claude4.5Sonnet-output-tokens", "0", "-0.30"),
])
CUR_JUN = HDR + "".join([
    _line("06", "Usage", "USE1-Claude4.5Sonnet-input-tokens", "1000", "3.00"),
    _line("06", "Usage", "USE1-Claude4.5Sonnet-output-tokens", "200", "3.00"),
    _line("06", "Usage", "USE1-Claude4.5Haiku-input-tokens", "4000", "4.00"),
    _line("06", "EdpDiscount", "USE1-Claude4.5Haiku-input-tokens", "0", "-0.40"),
    _line("06", "Credit", "USE1-PromotionalCredit", "0", "-2.00"),
])


def _call(rid: str, day: str, provider: str, model: str) -> dict:
    return {"ts": f"2026-{day}T12:00:00Z", "provider": provider, "model": model, "id": rid, "type": "message",
            "usage": {"input_tokens": 1_000_000, "output_tokens": 200_000,
                      "output_tokens_details": {"thinking_tokens": 150_000}}}


CALLS = [_call("b-apr", "04-10", "bedrock", SONNET), _call("b-may", "05-10", "bedrock", SONNET),
         _call("b-jun", "06-10", "bedrock", SONNET), _call("b-jul", "07-10", "bedrock", SONNET),
         _call("a-jun", "06-10", "anthropic", "claude-sonnet-4-5")]
FILES = {
    "prices/llm/sheet.2026-04-01.csv": ("provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\n"
                                        f"bedrock,{SONNET},3,15,USD\nanthropic,claude-sonnet-4-5,3,15,USD\n"),
    "telemetry/requests/calls.jsonl": "".join(json.dumps(c) + "\n" for c in CALLS),
    "bills/aws/cur/data/BILLING_PERIOD=2026-05/cur-00001.csv": CUR_MAY,
    "bills/aws/cur/data/BILLING_PERIOD=2026-06/cur-00001.csv": CUR_JUN,
    # moving the Sonnet traffic to a self-hosted model (marts.substitution_breakeven)
    "catalog/models.csv": ("model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,"
                           "kv_bytes_per_token_bf16\ntiny-model,tiny,true,8,,,,131072\n"),
    "catalog/deployments.csv": ("deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,"
                                "usd_per_gpu_hour\nd-tiny,tiny-model,acme,L40S,1,bf16,,5,0.5\n"),
    "catalog/substitutions.csv": f"from_model,to_model,thinking_ratio,output_ratio,note\n{SONNET},tiny-model,1,1,\n",
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("netrates")
    landing = write_files(root / "landing", FILES)
    con, summary = build_warehouse(landing, root / "w.duckdb")
    assert summary.total("rows_quarantined") == 0, [f for f in summary.files if f.rows_quarantined]
    yield con
    con.close()


def _keys(con) -> tuple[str, str]:
    bedrock = con.execute("SELECT model FROM core.call_costs WHERE request_id = 'b-apr'").fetchone()[0]
    anthropic = con.execute("SELECT model FROM core.call_costs WHERE request_id = 'a-jun'").fetchone()[0]
    return bedrock, anthropic


def test_every_call_costs_six_dollars_at_list(wh):
    assert {r[0]: r[1] for r in wh.execute("SELECT request_id, cost_usd FROM core.call_costs").fetchall()} == {
        c["id"]: D("6") for c in CALLS}


def test_net_to_list_shares_the_credit_that_names_no_model_by_list(wh):
    got = {(m, mo.isoformat()): r for m, mo, *r in wh.execute(
        "SELECT model, month, list_usd, net_usd, account_adjust_usd, net_to_list FROM marts.effective_rates "
        "WHERE provider = 'bedrock' ORDER BY ALL").fetchall()}
    assert got == {
        ("claude-sonnet-4-5", "2026-05-01"): [D("6"), D("5.4"), D("0"), D("0.9")],
        ("claude-sonnet-4-5", "2026-06-01"): [D("6"), D("6"), D("-1.2"), D("0.8")],
        ("claude-haiku-4-5", "2026-06-01"): [D("4"), D("3.6"), D("-0.8"), D("0.7")],
        (None, "2026-06-01"): [D("0"), D("-2"), None, None],
    }


def test_each_call_takes_its_months_rate_else_the_last_one_seen(wh):
    sql = net_rate_sql(wh, "SELECT request_id, provider, model, day, cost_usd FROM core.call_costs")
    got = {r[0]: r[1:] for r in wh.execute(f"SELECT request_id, net_to_list, rate_month, net_cost_usd FROM ({sql})").fetchall()}
    assert got == {
        "b-apr": (None, None, D("6")),  # before the first invoice month: list
        "b-may": (D("0.9"), dt.date(2026, 5, 1), D("5.4")),
        "b-jun": (D("0.8"), dt.date(2026, 6, 1), D("4.8")),
        "b-jul": (D("0.8"), dt.date(2026, 6, 1), D("4.8")),  # June's rate carried
        "a-jun": (None, None, D("6")),  # Anthropic's own API: no cloud invoice
    }


def test_api_months_give_the_net_spend_and_say_so(wh):
    bedrock, anthropic = _keys(wh)
    assert bedrock != anthropic  # core.call_costs keeps each provider's model key
    got = {(m, mo.isoformat()): (calls, spend, lst, basis) for m, mo, calls, spend, lst, basis in api_months(wh)}
    assert got == {
        (bedrock, "2026-04-01"): (1, D("6"), D("6"), "list"),
        (bedrock, "2026-05-01"): (1, D("5.4"), D("6"), "invoice_net"),
        (bedrock, "2026-06-01"): (1, D("4.8"), D("6"), "invoice_net"),
        (bedrock, "2026-07-01"): (1, D("4.8"), D("6"), "invoice_net"),
        (anthropic, "2026-06-01"): (1, D("6"), D("6"), "list"),
    }


def test_substitution_breakeven_compares_the_net_spend(wh):
    build_substitution_breakeven(wh)
    got = wh.execute("SELECT month, api_spend_usd, api_spend_list_usd, api_price_basis FROM marts.substitution_breakeven "
                     "WHERE to_model = 'tiny-model' ORDER BY month").fetchall()
    assert [(m.isoformat(), *r) for m, *r in got] == [
        ("2026-04-01", D("6"), D("6"), "list"), ("2026-05-01", D("5.4"), D("6"), "invoice_net"),
        ("2026-06-01", D("4.8"), D("6"), "invoice_net"), ("2026-07-01", D("4.8"), D("6"), "invoice_net")]


def test_the_spend_forecast_sees_the_net_spend(wh):
    bedrock, anthropic = _keys(wh)
    build_spend_forecast(wh)
    got = {(v, m.isoformat()): (obs, basis) for v, m, obs, basis in wh.execute(
        "SELECT scope_value, month, observed_usd, api_price_basis FROM marts.spend_forecast "
        "WHERE scope = 'model' AND serving = 'api'").fetchall()}
    # observed in the month under way (July, last day 07-10): the one Bedrock call at June's net rate
    assert got[bedrock, "2026-07-01"] == (D("4.8"), "partly_invoice_net")  # April's call was at list
    assert got[anthropic, "2026-07-01"] == (D("0"), "list")


def test_the_alert_window_spend_is_net(wh):
    bedrock, anthropic = _keys(wh)
    spend = alert.reasoning_spend(wh, dt.date(2026, 6, 11), dt.date(2026, 7, 10))
    assert spend == {bedrock: D("4.8"), anthropic: D("0")}
