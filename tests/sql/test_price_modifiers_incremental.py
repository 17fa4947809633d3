"""Issue 27 item 3: every price input core.call_costs reads comes from the versioned price table
(core.llm_price_versions), so a sheet that changes only a modifier -- the web-search fee, a
regional uplift, the 1-hour cache-write price -- is a new price version: the incremental plan
rebuilds the days from its effective date, the calls after it are costed at the new rate, the
calls before keep theirs, and the warehouse equals a full rebuild of the same landing.

Before the fix call_costs read the modifiers raw from stg.llm_prices and the plan diffed only the
token rates: such a sheet left the old costs published on every later day.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.warehouse.test_incremental import _run, _same_as_full
from warehouse.db import read_only

START = dt.date(2026, 3, 2)
DAYS = 4
HEADER = ("provider,model,effective_from,price_kind,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,"
          "cache_write_1h_usd_per_mtok,usd_per_request_fee,regional_uplift_eu")
# the base sheet: 1 / 0.1 / 4 per Mtok, 1-hour writes 3, web search 0.02 per query, EU +10%
BASE = "acme,acme-r1,{d},standard,1,0.1,4,{w1},{fee},{eu}\n"


def _day(k: int) -> dt.date:
    return START + dt.timedelta(days=k)


def _call(k: int, n: int, region: str | None) -> dict:
    rec = {"ts": f"{_day(k)}T{10 + n:02d}:00:00Z", "request_id": f"r{k}-{n}-{region or 'none'}",
           "task_id": f"t{k}-{n}-{region or 'none'}", "model": "acme-r1", "provider": "acme",
           "usage": {"input_tokens": 1_000, "output_tokens": 100, "cache_creation_input_tokens": 1_000,
                     "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_000},
                     "server_tool_use": {"web_search_requests": 2}}}
    if region:
        rec["region"] = region
    return rec


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("modifiers") / "landing"
    sheets = root / "prices" / "llm"
    sheets.mkdir(parents=True)
    first = START - dt.timedelta(days=30)
    (sheets / f"acme.{first}.csv").write_text(HEADER + "\n" + BASE.format(d=first, w1=3, fee="0.02", eu="1.1"))
    for k in range(DAYS):
        folder = root / "telemetry" / "requests" / str(_day(k))
        folder.mkdir(parents=True)
        lines = [_call(k, n, region) for n in range(2) for region in (None, "eu")]
        (folder / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return root


def _costs(wh: Path) -> dict[str, tuple[dt.date, D]]:
    with read_only(wh) as con:
        return {r: (d, c) for r, d, c in con.execute(
            "SELECT request_id, day, cost_usd FROM core.call_costs").fetchall()}


# (what the second sheet changes, its row, the cost of one call after it minus before, per region)
CHANGES = [
    # 2 web searches x (0.05 - 0.02)
    ("web-search fee", dict(w1=3, fee="0.05", eu="1.1"), {"none": D("0.06"), "eu": D("0.06")}),
    # EU uplift 1.1 -> 1.5 on 1,000 x 1 + 1,000 x 3 (1 h) + 100 x 4 = 0.0044 USD of tokens
    ("regional uplift", dict(w1=3, fee="0.02", eu="1.5"), {"none": D("0"), "eu": D("0.00176")}),
    # 1-hour writes 3 -> 5 on 1,000 tokens: +0.002 (x 1.1 in the EU)
    ("1-hour write price", dict(w1=5, fee="0.02", eu="1.1"), {"none": D("0.002"), "eu": D("0.0022")}),
]


@pytest.mark.parametrize(("what", "row", "delta"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_sheet_changing_only_a_modifier_reprices_the_days_from_its_date(landing, tmp_path, what, row, delta):
    work = tmp_path / "landing"
    shutil.copytree(landing, work)
    wh = tmp_path / "wh.duckdb"
    _run(wh, work, "one")
    before = _costs(wh)
    since = _day(2)
    (work / "prices" / "llm" / f"acme_change.{since}.csv").write_text(HEADER + "\n" + BASE.format(d=since, **row))
    scope = _run(wh, work, "two")
    assert not scope.full, scope.reason
    assert scope.price_from == since, what
    assert "core.call_costs" in scope.tables
    after = _costs(wh)
    assert after.keys() == before.keys()
    for rid, (day, cost) in after.items():
        region = rid.rsplit("-", 1)[1]
        want = before[rid][1] + (delta[region] if day >= since else 0)
        assert cost == want, (what, rid, day, before[rid][1], cost)
    _same_as_full(wh, work, tmp_path)
