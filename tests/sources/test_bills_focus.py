"""FOCUS 1.x CSV exports (sources/bills_focus.py).

Real samples: data/real/focus/** (26 files from the FOCUS spec repository, see
data/real/README.md). Hand-written fixtures: tests/fixtures/bills/focus/ (see its README).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from sources import bills_focus as bf
from sources.base import ParseContext, SourceFormatError

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "data" / "real" / "focus"
FIX = ROOT / "tests" / "fixtures" / "bills" / "focus"
CTX = ParseContext(ingested_at=dt.datetime(2025, 7, 1))
REAL_FILES = sorted(REAL.rglob("*.csv"))

# The only real sample rows that do not load, and why: both files give a ChargePeriodEnd of
# 2023-02-01T30:00:00Z (hour 30), which is not a time.
EXPECTED_REAL_REJECTS = {
    "commitment_discount_scenarios/commitment_discount_purchase_scenario_2.csv": [
        (4, "ChargePeriodEnd", "ChargePeriodEnd: not a date/time: '2023-02-01T30:00:00Z'")],
    "commitment_discount_scenarios/commitment_discount_purchase_scenario_3.csv": [
        (5, "ChargePeriodEnd", "ChargePeriodEnd: not a date/time: '2023-02-01T30:00:00Z'")],
}


def parse(data: bytes, name: str = "f.csv", ctx: ParseContext = CTX):
    p = bf.parse(data, name, ctx)
    assert p.table == "stg.focus_costs" and p.format == "focus_csv"
    assert p.rows.schema.equals(bf.SCHEMA)
    assert p.rows_in == p.rows.num_rows + len(p.rejects)
    assert all(r.line is not None and r.line >= 1 for r in p.rejects)
    return p


def data_records(path: Path) -> int:
    """Non-blank physical lines after the header (none of the samples has a quoted newline)."""
    return sum(1 for line in path.read_bytes().splitlines()[1:] if line.strip())


def real(rel: str):
    return parse((REAL / rel).read_bytes(), rel)


# ---------------------------------------------------------------- the 26 real samples


def test_there_are_26_real_samples():
    assert len(REAL_FILES) == 26


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.relative_to(REAL).as_posix())
def test_every_real_sample_loads_or_quarantines_each_row(path):
    rel = path.relative_to(REAL).as_posix()
    data = path.read_bytes()
    assert bf.sniff(data, rel)
    p = parse(data, rel)
    assert p.rows_in == data_records(path)  # every record is accounted for: loaded or rejected
    assert [(r.line, r.field, r.reason) for r in p.rejects] == EXPECTED_REAL_REJECTS.get(rel, [])
    assert p.rows.num_rows == data_records(path) - len(EXPECTED_REAL_REJECTS.get(rel, []))
    assert None not in p.rows.column("billed_cost_usd").to_pylist()


def test_real_samples_totals():
    parsed = [parse(f.read_bytes(), f.name) for f in REAL_FILES]
    assert sum(p.rows.num_rows for p in parsed) == 79
    assert sum(len(p.rejects) for p in parsed) == 2


def test_saas_money_with_dollar_signs_and_mdy_dates():
    row = real("saas_examples/simple_agreements/simple_saas_agreements_a1.csv").rows.to_pylist()[0]
    assert row["line"] == 2
    assert row["billed_cost_usd"] == Decimal("10000")  # "$10,000.00 "
    assert row["list_unit_price_usd"] == Decimal("10000") and row["pricing_quantity"] == Decimal("1")
    assert (row["billing_period_start"], row["billing_period_end"]) == (dt.datetime(2025, 4, 1), dt.datetime(2025, 5, 1))
    assert (row["charge_period_start"], row["charge_period_end"]) == (dt.datetime(2025, 4, 1), dt.datetime(2026, 4, 1))
    assert (row["charge_category"], row["charge_frequency"], row["pricing_unit"]) == ("Purchase", "One-Time", "Count")
    assert (row["provider_name"], row["service_name"], row["sku_id"]) == ("ACMECORP", "ACMECORP Service", "ACS-001")
    assert row["billing_currency"] == "USD" and row["fx_usd_per_unit"] == Decimal(1)


def test_spend_agreement_amortises_to_the_commitment():
    rows = real("saas_examples/spend_agreements/saas_spend_agreements_b2.csv").rows.to_pylist()
    assert len(rows) == 14
    # Billed: the 1,200 upfront purchase, then 0 every month.
    assert sum(r["billed_cost_usd"] for r in rows) == Decimal("1200")
    # Effective: 0 (purchase) + 48 + 12 + 120 + 60 (usage / unused fees to July) + 8 x 60
    # (unused fees Aug-Mar) + 480 (end-of-contract fee) = 1,200: the commitment, amortised.
    assert sum(r["effective_cost_usd"] for r in rows) == Decimal("1200")
    assert rows[-1]["effective_cost_usd"] == Decimal("480") and rows[-1]["pricing_quantity"] == Decimal("0.4")
    assert rows[1]["consumed_quantity"] == Decimal("4") and rows[1]["consumed_unit"] == "Server Hours"


def test_bom_crlf_and_blank_lines_keep_physical_line_numbers():
    p = real("commitment_discount_flexibility/"
             "one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv")
    rows = p.rows.to_pylist()
    # Records on lines 2, 4, 6 (blank CRLF lines between). Lines 4 and 6 are the same charge
    # twice (two resources with one placeholder id): key_occurrence 1 and 2 keeps both.
    assert [(r["line"], r["key_occurrence"]) for r in rows] == [(2, 1), (4, 1), (6, 2)]
    assert [r["billed_cost_usd"] for r in rows] == [Decimal("2"), Decimal("0"), Decimal("0")]
    assert rows[0]["consumed_quantity"] is None  # the literal "null"
    assert rows[1]["commitment_discount_status"] == "Used" and rows[0]["commitment_discount_status"] is None
    assert p.meta["assumed_billing_currency"] == "USD" and p.meta["unmapped_columns"] == ["x_CommitmentDiscountUnitPrice"]
    assert p.meta["warnings"] == ["no BillingCurrency column: amounts taken as USD"]

    vc = real("saas_examples/virtual_currency_pricing_model_c.csv")  # UTF-8 BOM + CRLF
    assert sum(r["billed_cost_usd"] for r in vc.rows.to_pylist()) == Decimal("53000")  # 3,000 + 50,000
    assert vc.rows.to_pylist()[0]["pricing_unit"] == "Token"
    assert "PricingCurrencyEffectiveCost" in vc.meta["unmapped_columns"]


def test_commitment_usage_split_used_and_unused():
    rows = real("commitment_discount_scenarios/commitment_discount_usage_scenario_3.csv").rows.to_pylist()
    assert [(r["commitment_discount_status"], r["effective_cost_usd"]) for r in rows] == [
        ("Used", Decimal("0.75")), ("Unused", Decimal("0.25"))]


# ---------------------------------------------------------------- hand-written fixtures


def test_llm_fixture_first_export():
    path = FIX / "llm_api_2025-06-01_02.csv"
    p = parse(path.read_bytes(), path.name)
    rows = p.rows.to_pylist()
    assert [r["line"] for r in rows] == [2, 3, 5, 6]  # line 4 is blank
    assert [(r.line, r.field) for r in p.rejects] == [(7, "BilledCost")]
    assert p.rejects[0].reason == ("BilledCost: not a number: 'n/a'; EffectiveCost: not a number: 'n/a'; "
                                   "ListCost: not a number: 'n/a'; ContractedCost: not a number: 'n/a'")
    first = rows[0]
    assert first["billing_account_id"] == "org-acme"  # BOM not glued to the first header
    assert first["tags_json"] == '{"team":"search","env":"prod"}'
    assert (first["charge_period_start"], first["charge_period_end"]) == (dt.datetime(2025, 6, 1), dt.datetime(2025, 6, 2))
    assert (first["pricing_quantity"], first["pricing_unit"], first["consumed_quantity"]) == (
        Decimal("0.1"), "1M Tokens", Decimal("100000"))
    assert sum(r["billed_cost_usd"] for r in rows) == Decimal("0.92")  # 0.20 + 0.36 + 0.12 + 0.24


def test_same_line_written_differently_parses_to_the_same_values():
    a = parse((FIX / "llm_api_2025-06-01_02.csv").read_bytes()).rows.to_pylist()
    b = parse((FIX / "llm_api_2025-06-02_03.csv").read_bytes()).rows.to_pylist()
    strip = lambda r: {k: v for k, v in r.items() if k != "line"}  # noqa: E731
    # day 2 in M/D/YY with 0.12 / 2.00 versus ISO Z with 0.120000 / 2: identical staging values
    assert [strip(r) for r in a[2:4]] == [strip(r) for r in b[0:2]]


# ---------------------------------------------------------------- tolerance and rejects

HEADER = "BilledCost,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,EffectiveCost,ListCost"


def test_money_spellings_fx_and_row_rejects():
    text = "\r\n".join([
        "\ufeff" + HEADER,
        '"1,234.5678901234",EUR,2025-01-01,2025-01-02,($5.00),-$3',
        "",
        "10,GBP,2025-01-01T00:00:00+02:00,2025-01-02,1,1",
        '"multi\nline",USD,1/2/2025,1/3/25,,',
        "1,USD,1/2/2025",
        "1,5,USD,1/2/2025,1/3/25,1,1",
        "7,usd,1/3/25 13:45,1/2/25,x,",
        ",USD,1/2/2025,1/3/25,,",
        '0.00000000005,USD,2025-01-01T00:00:00.5Z,2025-01-01 01:00,1e3,"1,5"',
        "2,USD,2025-01-01T01:00:00+01:00,2025-01-01T00:30:00Z,1e3,null",
    ]) + "\r\n"
    p = parse(text.encode(), ctx=ParseContext(ingested_at=CTX.ingested_at, fx_usd_per_unit={"EUR": 1.085}))
    rows = p.rows.to_pylist()
    assert [r["line"] for r in rows] == [2, 12]
    eur = rows[0]
    # 1,234.5678901234 EUR x 1.085 = 1,339.506160783889 -> 1e-10: 1339.5061607839
    assert eur["billed_cost_usd"] == Decimal("1339.5061607839")
    assert eur["effective_cost_usd"] == Decimal("-5.425")  # ($5.00) x 1.085
    assert eur["list_cost_usd"] == Decimal("-3.255")  # -$3 x 1.085
    assert (eur["billing_currency"], eur["fx_usd_per_unit"]) == ("EUR", Decimal("1.085"))
    tz = rows[1]  # 01:00+01:00 is 00:00 UTC; ends 00:30 UTC
    assert (tz["charge_period_start"], tz["charge_period_end"]) == (dt.datetime(2025, 1, 1), dt.datetime(2025, 1, 1, 0, 30))
    assert tz["effective_cost_usd"] == Decimal("1000") and tz["list_cost_usd"] is None
    assert [(r.line, r.field) for r in p.rejects] == [
        (4, "BillingCurrency"),  # GBP without a rate
        (5, "BilledCost"),  # 'multi\nline' (a quoted newline: the next record starts on line 7)
        (7, None),  # 3 fields
        (8, None),  # 7 fields
        (9, "EffectiveCost"),  # 'x', and the period ends before it starts
        (10, "BilledCost"),  # empty
        (11, "ListCost"),  # '1,5' is not a thousands grouping
    ]
    by = {r.line: r for r in p.rejects}
    assert by[4].reason == "BillingCurrency GBP: no FX rate (only USD is accepted without one)"
    assert by[7].reason == "3 fields, header has 6" and by[7].raw == "1,USD,1/2/2025"
    assert by[9].reason == "EffectiveCost: not a number: 'x'; ChargePeriodEnd is before ChargePeriodStart"


def test_rounding_to_the_table_scale():
    p = parse(f"{HEADER}\n0.00000000015,USD,2025-01-01,2025-01-02,,\n".encode())
    assert p.rows.column("billed_cost_usd").to_pylist() == [Decimal("2E-10")]


def test_aliases_and_case_insensitive_headers():
    text = ("billedcost,chargeperiodstart,chargeperiodend,ChargeType,ServiceProviderName,BillingCurrency\n"
            "3.5,2025-06-01,2025-06-02,Usage,OpenAI,usd\n")
    row = parse(text.encode()).rows.to_pylist()[0]
    assert (row["billed_cost_usd"], row["charge_category"], row["provider_name"], row["billing_currency"]) == (
        Decimal("3.5"), "Usage", "OpenAI", "USD")


def test_key_occurrence_numbers_identical_lines_in_file_order():
    text = f"{HEADER}\n1,USD,2025-01-01,2025-01-02,,\n2,USD,2025-01-02,2025-01-03,,\n1,USD,2025-01-01,2025-01-02,,\n"
    rows = parse(text.encode()).rows.to_pylist()
    assert [(r["line"], r["key_occurrence"]) for r in rows] == [(2, 1), (3, 1), (4, 2)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"BilledCost,ChargePeriodStart\n1,2025-01-01\n", "no column ChargePeriodEnd"),
        (b"BilledCost,ChargePeriodStart,ChargePeriodEnd,BilledCost\n", "duplicate column names"),
        (b"BilledCost,ChargePeriodStart,ChargePeriodEnd\n1,\xe9t\xe9,x\n", "not UTF-8"),
    ],
)
def test_unreadable_files(data, message):
    with pytest.raises(SourceFormatError, match=message):
        bf.parse(data, "x.csv", CTX)


def test_sniff_takes_focus_headers_only():
    assert bf.sniff(b"\xef\xbb\xbfBilledCost,ChargePeriodStart,ChargePeriodEnd\r\n", "a.csv")
    assert not bf.sniff(b"provider,model,input_usd_per_mtok\n", "prices.csv")
    assert not bf.sniff(b'{"data": []}', "x.json")
    assert [s.folder for s in bf.SPECS] == ["bills/focus", "bills/focus"]
    assert [s.format for s in bf.SPECS] == ["focus_csv", "focus_parquet"]  # Parquet: tests/sources/test_bills_focus_parquet.py
