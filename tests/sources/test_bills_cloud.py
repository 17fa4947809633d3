"""sources/bills_cloud.py: the rules over usage types / meters / SKUs, one spelling at a time, and the
re-issue of a CUR overwritten in place (AWS Data Exports rewrites a month's files under the same
path each refresh). The spellings and their sources: tests/fixtures/bills/cloud/README.md."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import duckdb
import pytest

from sources.bills_cloud import Reading, charge_kind, export_key, parse_time, read_aws, read_azure, read_gcp, tokens_per_unit
from warehouse.db import migrate
from warehouse.ingest import Ingestor


@pytest.mark.parametrize(("usage_type", "product", "want"), [
    ("USE1-Claude4.6Sonnet-input-tokens", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "input", "standard", "in_region", False)),
    ("USE1-Claude4.6Sonnet-output-tokens", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "output", "standard", "in_region", False)),
    ("USE1-Claude4.6Sonnet-cache-read-input-token-count", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "cache_read", "standard", "in_region", False)),
    ("USE1-Claude4.6Sonnet-cache-write-input-token-count", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "cache_write", "standard", "in_region", False)),
    ("USE1-Claude4.6Sonnet-cache-write-input-token-count-1-hour", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "cache_write_1h", "standard", "in_region", False)),
    ("USE1-Claude4.6Sonnet-input-tokens-batch", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "input", "batch", "in_region", False)),
    ("USE1-Claude4.6Sonnet-output-tokens-priority", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "output", "priority", "in_region", False)),
    ("USW2-Claude4.6Sonnet-output-tokens-flex", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "output", "flex", "in_region", False)),
    ("USE1-Claude4.6Sonnet-input-tokens-cross-region-global", None,
     Reading("aws.usage_type", "claude-sonnet-4-6", "input", "standard", "cross_region_global", False)),
    ("EUC1-Claude3.5Sonnet-v2-output-tokens", None,
     Reading("aws.usage_type", "claude-3-5-sonnet", "output", "standard", "in_region", False)),
    ("USE1-Claude3Haiku-input-tokens", None,
     Reading("aws.usage_type", "claude-3-haiku", "input", "standard", "in_region", False)),
    ("USE1-NovaPro-input-tokens", None, Reading("aws.usage_type", "nova-pro", "input", "standard", "in_region", False)),
    # CamelCase token kinds (LiteLLM #42679 quotes '<REGION>_OutputTokenCount_Global')
    ("USE1-Claude4.6Sonnet_OutputTokenCount_Global", None,
     Reading("aws.usage_type_camel", "claude-sonnet-4-6", "output", "standard", "cross_region_global", False)),
    ("USE1-MP:USE1_InputTokenCount-Units", '{"product_name": "Claude 3.5 Sonnet (Amazon Bedrock Edition)"}',
     Reading("aws.marketplace", "claude-3-5-sonnet", "input", "standard", "in_region", False)),
    ("USE1-MP:USE1_CacheReadInputTokenCount-Units", '{"product_name": "Claude Sonnet 4.5 (Amazon Bedrock Edition)"}',
     Reading("aws.marketplace", "claude-sonnet-4-5", "cache_read", "standard", "in_region", False)),
    ("USE1-ProvisionedThroughput-Claude4.5Sonnet-ModelUnits", None,
     Reading("aws.provisioned_throughput", "claude-sonnet-4-5", "provisioned", "provisioned", None, False)),
])
def test_aws_usage_types(usage_type, product, want):
    assert read_aws(usage_type, product) == want


@pytest.mark.parametrize(("usage_type", "product", "reason"), [
    ("USE1-Claude4.6Sonnet-search-units", None, "names no token kind"),
    ("USE1-Claude4.6Sonnet-input-tokens-turbo", None, "suffix 'turbo' is not one the rules know"),
    ("USE1-Claude4.6Sonnet-output-tokens-1-hour", None, "'1-hour' on a output usage type"),
    ("USE1-MP:USE1_InputTokenCount-Units", None, "without a product name"),
    ("USE1-ProvisionedThroughput-ModelUnits", None, "names no model"),
])
def test_aws_lines_no_rule_reads_are_unattributed_with_the_reason(usage_type, product, reason):
    got = read_aws(usage_type, product)
    assert got.rule == "unattributed" and got.model is None and reason in got.reason


@pytest.mark.parametrize(("meter", "pricing_model", "want"), [
    ("gpt 4o 1120 Outp glbl Tokens", "OnDemand", Reading("azure.meter", "gpt-4o", "output", "standard", "global", False)),
    ("o3 0416 Inp glbl", "OnDemand", Reading("azure.meter", "o3", "input", "standard", "global", False)),
    ("o3 0416 cached Inp glbl", "OnDemand", Reading("azure.meter", "o3", "cache_read", "standard", "global", False)),
    ("gpt 4.1 mini Inp Dz", "OnDemand", Reading("azure.meter", "gpt-4.1-mini", "input", "standard", "data_zone", False)),
    ("gpt-4.1 Outp Data Zone Tokens", "OnDemand", Reading("azure.meter", "gpt-4.1", "output", "standard", "data_zone", False)),
    ("o4-mini 0416 Outp regnl", "OnDemand", Reading("azure.meter", "o4-mini", "output", "standard", "regional", False)),
    ("gpt 4o 1120 Batch Inp glbl", "OnDemand", Reading("azure.meter", "gpt-4o", "input", "batch", "global", False)),
    ("Provisioned Managed Global", "OnDemand", Reading("azure.ptu", None, "provisioned", "provisioned", "global", False)),
    ("gpt 4o PTU Dz", "Reservation", Reading("azure.ptu", "gpt-4o", "provisioned", "provisioned", "data_zone", False)),
])
def test_azure_meters(meter, pricing_model, want):
    assert read_azure(meter, "Azure OpenAI", None, pricing_model) == want


def test_azure_meters_no_rule_reads():
    assert "names no token kind" in read_azure("Sora Video Gen glbl", None, None, "OnDemand").reason
    assert "unknown word 'realtime'" in read_azure("gpt 4o Inp realtime", None, None, "OnDemand").reason


@pytest.mark.parametrize(("sku", "want"), [
    ("Gemini 2.5 Pro Thinking Text Output - Predictions", Reading("gcp.sku", "gemini-2.5-pro", "output", "standard", None, False)),
    ("Gemini 2.5 Pro Text Input (Long) - Predictions", Reading("gcp.sku", "gemini-2.5-pro", "input", "standard", None, True)),
    ("Gemini 2.5 Flash Text Output (Thinking On) - Predictions",
     Reading("gcp.sku", "gemini-2.5-flash", "output", "standard", None, False)),
    ("Gemini 2.5 Pro Text Input Caching - Predictions", Reading("gcp.sku", "gemini-2.5-pro", "cache_read", "standard", None, False)),
    ("Gemini 2.5 Pro Text Caching Storage", Reading("gcp.sku", "gemini-2.5-pro", "cache_storage", "standard", None, False)),
    ("Gemini 2.5 Pro Batch Text Input - Predictions", Reading("gcp.sku", "gemini-2.5-pro", "input", "batch", None, False)),
    ("Gemini 2.5 Pro Provisioned Throughput", Reading("gcp.provisioned_throughput", "gemini-2.5-pro", "provisioned",
                                                      "provisioned", None, False)),
    ("Claude Sonnet 4.5 Input Tokens", Reading("gcp.sku", "claude-sonnet-4-5", "input", "standard", None, False)),
])
def test_gcp_skus(sku, want):
    assert read_gcp(sku) == want


def test_units_times_and_kinds():
    assert tokens_per_unit("azure", "1K", "input") == 1000
    assert tokens_per_unit("azure", "1M", "input") == 1_000_000
    assert tokens_per_unit("azure", "1K Tokens", "output") == 1000
    assert tokens_per_unit("aws", "Units", "input") == 1000  # Bedrock token amounts are in thousands
    assert tokens_per_unit("gcp", "count", "input") == 1
    assert tokens_per_unit("azure", "1 Hour", "provisioned") is None
    # month first, always; GCP's 'UTC' suffix; CUR 2.0's milliseconds and Z
    assert parse_time("10/01/2026") == dt.datetime(2026, 10, 1)
    assert parse_time("2026-06-10 00:00:00 UTC") == dt.datetime(2026, 6, 10)
    assert parse_time("2026-06-10T02:00:00.000+02:00") == dt.datetime(2026, 6, 10)
    assert parse_time("202606") == dt.datetime(2026, 6, 1)
    assert [charge_kind(t) for t in ("Usage", "EdpDiscount", "SavingsPlanNegation", "Credit", "Tax", "RIFee",
                                      "UnusedReservation", "rounding error", "Wibble")] == [
        "usage", "discount", "discount", "credit", "tax", "commitment", "commitment", "rounding", "other"]
    assert export_key("azure", [dt.date(2026, 6, 1)],
                      "bills/azure/x/20260601-20260630/3f2a1c9e-7b4d-4e1a-9c3b-2d5e6f7a8b9c/part_0_0001.csv") == (
        "azure|2026-06|bills/azure/x/20260601-20260630/*/part_0_0001.csv")


CUR = ("bill_billing_period_start_date,bill_invoice_id,line_item_usage_start_date,line_item_usage_end_date,"
       "line_item_line_item_type,line_item_product_code,line_item_usage_type,line_item_usage_amount,"
       "line_item_unblended_cost,line_item_currency_code\n")


def _line(invoice: str, cost: str) -> str:
    return (f"2026-06-01T00:00:00Z,{invoice},2026-06-10T00:00:00Z,2026-06-11T00:00:00Z,Usage,AmazonBedrockService,"
            f"USE1-Claude4.6Sonnet-input-tokens,100,{cost},USD\n")


def test_a_cur_overwritten_in_place_replaces_the_month(tmp_path):
    """AWS rewrites BILLING_PERIOD=2026-06/<export>-00001.csv.gz at each refresh; the final one has
    the invoice id. Landed again at the same path, it replaces the earlier version as a whole."""
    landing = tmp_path / "landing"
    path = landing / "bills/aws/exp/data/BILLING_PERIOD=2026-06/exp-00001.csv"
    path.parent.mkdir(parents=True)
    con = duckdb.connect()
    migrate(con)
    path.write_text(CUR + _line("", "0.30") + _line("", "0.30").replace("input-tokens", "output-tokens"))
    first = Ingestor(con, landing, now=dt.datetime(2026, 7, 1)).ingest().files[0]
    path.write_text(CUR + _line("INV-1", "0.33") + _line("INV-1", "0.30").replace("input-tokens", "output-tokens"))
    second = Ingestor(con, landing, now=dt.datetime(2026, 7, 5)).ingest().files[0]
    assert (first.rows_loaded, second.rows_loaded, second.rows_duplicate, second.rows_quarantined) == (2, 2, 0, 0)
    assert con.execute("SELECT file_id, replaced_by_file_id FROM ops.ingested_files ORDER BY file_id").fetchall() == [
        (1, 2), (2, None)]
    assert con.execute("SELECT count(*), sum(cost_usd), min(invoice_id) FROM stg.cloud_bill_lines").fetchall() == [
        (2, Decimal("0.63"), "INV-1")]
    assert con.execute("SELECT count(*), sum(cost_usd) FROM ops.replaced_cloud_bill_lines").fetchall() == [
        (2, Decimal("0.60"))]


# The legacy CUR's columns for each CUR 2.0 column of the fixture (AWS "Cost and Usage Report" data
# dictionary: lineItem/*, bill/*, pricing/*, product/*, resourceTags/user:<key>; its Athena / Parquet
# flavour writes them snake_case, with product attributes and tags as columns of their own).
_LEGACY = {
    "bill_billing_period_start_date": "bill/BillingPeriodStartDate", "bill_invoice_id": "bill/InvoiceId",
    "line_item_usage_account_id": "lineItem/UsageAccountId", "line_item_usage_start_date": "lineItem/UsageStartDate",
    "line_item_usage_end_date": "lineItem/UsageEndDate", "line_item_line_item_type": "lineItem/LineItemType",
    "line_item_product_code": "lineItem/ProductCode", "line_item_usage_type": "lineItem/UsageType",
    "line_item_operation": "lineItem/Operation", "line_item_usage_amount": "lineItem/UsageAmount",
    "line_item_unblended_cost": "lineItem/UnblendedCost", "line_item_net_unblended_cost": "lineItem/NetUnblendedCost",
    "line_item_currency_code": "lineItem/CurrencyCode", "line_item_resource_id": "lineItem/ResourceId",
    "product_region_code": "product/regionCode", "pricing_unit": "pricing/unit", "pricing_term": "pricing/term",
}


def _legacy_rows(flavour: str) -> tuple[list[str], list[list[str]]]:
    import csv
    import json

    from tests.sql.test_cloud_bills import FIXTURES

    src = next((FIXTURES / "aws").rglob("*.csv"))
    rows = list(csv.DictReader(src.open()))
    keys = sorted({k for r in rows for k in json.loads(r["resource_tags"] or "{}")})
    slash = flavour == "csv"
    head = [(_LEGACY[c] if slash else c) for c in _LEGACY] + [
        "product/productName" if slash else "product_product_name"] + [
        (f"resourceTags/{k.replace('user_', 'user:')}" if slash else f"resource_tags_{k}") for k in keys]
    out = []
    for r in rows:
        tags = json.loads(r["resource_tags"] or "{}")
        out.append([r[c] for c in _LEGACY] + [json.loads(r["product"]).get("product_name", "")]
                   + [tags.get(k, "") for k in keys])
    return head, out


@pytest.mark.parametrize("flavour", ["csv", "athena_parquet"])
def test_the_legacy_cur_reads_as_cur_2(tmp_path, flavour):
    """The fixture's CUR 2.0 lines written as a legacy CUR (the CSV report with 'lineItem/UsageType'
    columns, or its Athena Parquet flavour with 'product_product_name' and 'resource_tags_user_team'
    columns) give the same lines: the same model, bucket, tokens, cost and team; only the line's IAM
    principal is missing (the legacy CUR has no such column), and the CUR 2.0 line without a product
    name keeps none."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.sql.test_cloud_bills import FIXTURES

    def load(landing):
        con = duckdb.connect()
        migrate(con)
        summary = Ingestor(con, landing, now=dt.datetime(2026, 7, 1)).ingest()
        return con, summary.files[0]

    cur2 = tmp_path / "cur2"
    (cur2 / "bills" / "aws").mkdir(parents=True)
    src = next((FIXTURES / "aws").rglob("*.csv"))
    (cur2 / "bills" / "aws" / "cur.csv").write_bytes(src.read_bytes())
    legacy = tmp_path / "legacy" / "bills" / "aws"
    legacy.mkdir(parents=True)
    head, rows = _legacy_rows(flavour)
    if flavour == "csv":
        with (legacy / "legacy-1.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(head)
            w.writerows(rows)
    else:
        pq.write_table(pa.table({h: [r[i] or None for r in rows] for i, h in enumerate(head)}), legacy / "legacy-1.parquet")
    con2, f2 = load(cur2)
    conl, fl = load(tmp_path / "legacy")
    assert (fl.rows_in, fl.rows_loaded, fl.rows_quarantined, fl.rows_skipped) == (
        f2.rows_in, f2.rows_loaded, f2.rows_quarantined, f2.rows_skipped)
    cols = ("line, charge_kind, model, bucket, tier, deployment_type, tokens, cost_usd, net_cost_usd, region, "
            "resource_id, rule")
    # a Parquet row's line is its record number, a CSV line counts the header
    shift = 0 if flavour == "csv" else 1
    want = con2.execute(f"SELECT {cols} FROM stg.cloud_bill_lines ORDER BY line").fetchall()
    got = conl.execute(f"SELECT {cols.replace('line,', f'line + {shift},', 1)} FROM stg.cloud_bill_lines ORDER BY line").fetchall()
    assert want and got == want
    # the team: the tag wherever the CUR 2.0 line had one (the principal's team needs the principal)
    teams2 = dict(con2.execute("SELECT line, team FROM stg.cloud_bill_lines WHERE tags_json LIKE '%team%'").fetchall())
    assert teams2 and dict(conl.execute(f"SELECT line + {shift}, team FROM stg.cloud_bill_lines "
                                        f"WHERE line + {shift} IN ({', '.join(map(str, teams2))})").fetchall()) == teams2
