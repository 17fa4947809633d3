"""The bill families' natural keys, through the real ingest engine (warehouse/ingest.py).

Requirement (issue 4): the same export saved twice and overlapping exports add nothing; an
amended line (same key, other amount) is quarantined as ``conflicting_duplicate``, never
silently dropped or double counted. Also: parsed rows fit the staging tables of
warehouse/migrations/040_bills.sql, and DECIMAL sums in DuckDB are exact.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from sources import bills_anthropic as ba
from sources import bills_focus as bf
from sources import bills_openai as bo
from warehouse.db import migrate
from warehouse.ingest import Ingestor

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "bills"
REAL_FOCUS = ROOT / "data" / "real" / "focus"
CONFLICT = "conflicting_duplicate: same key as a loaded row, other values"


class Warehouse:
    def __init__(self, landing: Path):
        self.landing = landing
        self.con = duckdb.connect()
        migrate(self.con)
        self.ingestor = Ingestor(self.con, landing, now=dt.datetime(2025, 7, 1),
                                 specs=[*bo.SPECS, *ba.SPECS, *bf.SPECS])

    def land(self, rel: str, data: bytes):
        path = self.landing / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        (result,) = self.ingestor.ingest([path]).files
        if result.status == "loaded":
            assert result.rows_in == result.rows_loaded + result.rows_duplicate + result.rows_quarantined
        return result

    def counts(self, result):
        return (result.rows_loaded, result.rows_duplicate, result.rows_quarantined)

    def one(self, sql: str):
        return self.con.execute(sql).fetchall()[0][0]

    def quarantine(self, file: str):
        return self.con.execute(
            "SELECT line, reason FROM ops.quarantine WHERE file = ? ORDER BY line", [file]).fetchall()


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "landing")


def read(rel: str) -> bytes:
    return (FIX / rel).read_bytes()


def test_openai_usage_twice_overlap_and_amended(wh):
    p1, p2 = json.loads(read("openai/usage_completions__2025-06-01__p1.json")), json.loads(
        read("openai/usage_completions__2025-06-01__p2.json"))
    r = wh.land("bills/openai/usage_completions__2025-06-01__p1.json", read("openai/usage_completions__2025-06-01__p1.json"))
    assert (r.format, r.table, wh.counts(r)) == ("openai_usage_json", "stg.openai_usage", (3, 0, 0))
    # The same bytes under another name: skipped by content hash.
    assert wh.land("bills/openai/copy.json", read("openai/usage_completions__2025-06-01__p1.json")).status == "already_ingested"
    # The same export saved again with other bytes (compact, both pages in one list): p1 adds nothing.
    r = wh.land("bills/openai/export_again.json", json.dumps([p1, p2]).encode())
    assert wh.counts(r) == (1, 3, 0)
    # An overlapping export (days 2 and 3) adds nothing.
    overlap = {"object": "page", "data": [p1["data"][1], p2["data"][0]], "has_more": False, "next_page": None}
    assert wh.counts(wh.land("bills/openai/overlap.json", json.dumps(overlap).encode())) == (0, 2, 0)
    # Day 2 restated with one more output token: quarantined as a conflict, the first version stays.
    amended = json.loads(json.dumps(overlap))
    amended["data"][0]["results"][0]["output_tokens"] = 30001
    r = wh.land("bills/openai/amended.jsonl", "\n".join(json.dumps(p) for p in [amended]).encode())
    assert wh.counts(r) == (0, 1, 1)
    assert wh.quarantine("bills/openai/amended.jsonl") == [(1, CONFLICT)]
    # o3 output 45,000 + 30,000 + 10,000 = 85,000, counted once.
    assert wh.one("SELECT sum(output_tokens) FROM stg.openai_usage WHERE model = 'o3-2025-04-16'") == 85000
    assert wh.one("SELECT count(*) FROM stg.openai_usage") == 4


def test_openai_costs_exact_sum_resave_and_amended_line(wh):
    costs = read("openai/costs__2025-06-01__p1.json")
    assert wh.counts(wh.land("bills/openai/costs__2025-06-01__p1.json", costs)) == (10, 0, 0)
    # Re-saved with the float artefact written as a plain string: same values after parsing.
    resaved = costs.replace(b"0.36000000000000004", b'"0.36"')
    assert wh.counts(wh.land("bills/openai/costs_resaved.json", resaved)) == (0, 10, 0)
    amended = costs.replace(b'{"value":0.24,', b'{"value":"0.25",')
    assert amended != costs
    r = wh.land("bills/openai/costs_amended.json", amended)
    assert wh.counts(r) == (0, 9, 1)
    assert wh.quarantine("bills/openai/costs_amended.json") == [(8, CONFLICT)]
    total = wh.one("SELECT sum(amount_usd) FROM stg.openai_costs")
    assert total == Decimal("1.13328")  # DECIMAL sum in DuckDB, exact
    assert wh.one("SELECT typeof(amount_usd) FROM stg.openai_costs LIMIT 1") == "DECIMAL(38,12)"


def test_anthropic_pages_twice_and_amended_cents(wh):
    p1, p2 = (read(f"anthropic/usage_report_messages__2025-06-01__p{n}.json") for n in (1, 2))
    assert wh.counts(wh.land("bills/anthropic/usage_report_messages__2025-06-01__p1.json", p1)) == (3, 0, 0)
    assert wh.counts(wh.land("bills/anthropic/usage_report_messages__2025-06-01__p2.json", p2)) == (1, 0, 0)
    both = json.dumps([json.loads(p1), json.loads(p2)]).encode()
    assert wh.counts(wh.land("bills/anthropic/usage_again.json", both)) == (0, 4, 0)

    cost = read("anthropic/cost_report__2025-06-01__p1.json")
    r = wh.land("bills/anthropic/cost_report__2025-06-01__p1.json", cost)
    assert (r.table, wh.counts(r)) == ("stg.anthropic_costs", (15, 0, 0))
    amended = cost.replace(b'"123.4567"', b'"123.4568"')
    assert wh.counts(wh.land("bills/anthropic/cost_report_amended.json", amended)) == (0, 14, 1)
    assert wh.one("SELECT sum(amount_usd) FROM stg.anthropic_costs") == Decimal("3.407567")  # 340.7567 cents
    assert wh.one("SELECT amount_usd FROM stg.anthropic_costs WHERE cost_type = 'code_execution'") == Decimal("1.234567")


def test_focus_exports_overlap_and_amended_line(wh):
    r1 = wh.land("bills/focus/llm_api_2025-06-01_02.csv", read("focus/llm_api_2025-06-01_02.csv"))
    assert (r1.table, wh.counts(r1)) == ("stg.focus_costs", (4, 0, 1))  # line 7: BilledCost 'n/a'
    r2 = wh.land("bills/focus/llm_api_2025-06-02_03.csv", read("focus/llm_api_2025-06-02_03.csv"))
    assert wh.counts(r2) == (2, 2, 0)  # day 2 again (written differently) + day 3
    r3 = wh.land("bills/focus/llm_api_2025-06-02_amended.csv", read("focus/llm_api_2025-06-02_amended.csv"))
    assert wh.counts(r3) == (0, 1, 1)
    assert wh.quarantine("bills/focus/llm_api_2025-06-02_amended.csv") == [(2, CONFLICT)]
    # The first export re-saved with LF line ends (other bytes): nothing new; its bad line again.
    lf = read("focus/llm_api_2025-06-01_02.csv").replace(b"\r\n", b"\n")
    assert wh.counts(wh.land("bills/focus/llm_api_2025-06-01_02.lf.csv", lf)) == (0, 4, 1)
    # 0.20 + 0.36 + 0.12 + 0.24 + 0.10 + 0.08 = 1.10, the amended 0.125 not counted
    assert wh.one("SELECT sum(billed_cost_usd) FROM stg.focus_costs") == Decimal("1.10")


def test_real_focus_samples_through_the_engine(tmp_path):
    """All 26 samples in one landing. (Each alone loads every row but the two hour-30 rows:
    tests/sources/test_bills_focus.py.) The scenarios describe one fictitious account in
    alternative ways, so later files restate earlier lines with other amounts: the engine flags
    those as conflicting duplicates instead of adding them up, and counts exact restatements
    as duplicates."""
    together = Warehouse(tmp_path / "together")
    for f in sorted(REAL_FOCUS.rglob("*.csv")):
        dst = together.landing / "bills" / "focus" / f.relative_to(REAL_FOCUS)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dst)
    summary = together.ingestor.ingest()
    assert all(r.status == "loaded" for r in summary.files)
    assert all(r.rows_in == r.rows_loaded + r.rows_duplicate + r.rows_quarantined for r in summary.files)
    assert (summary.total("rows_in"), summary.total("rows_loaded"), summary.total("rows_duplicate"),
            summary.total("rows_quarantined")) == (81, 58, 8, 15)
    reasons = together.con.execute("SELECT reason, count(*) FROM ops.quarantine GROUP BY 1 ORDER BY 1").fetchall()
    assert reasons == [("ChargePeriodEnd: not a date/time: '2023-02-01T30:00:00Z'", 2), (CONFLICT, 13)]
