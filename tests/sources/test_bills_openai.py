"""OpenAI Usage API and Costs API pages (sources/bills_openai.py).

Fixtures: tests/fixtures/bills/openai/ (hand-written from the API reference; see its README).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from sources import bills_openai as bo
from sources.base import ParseContext, SourceFormatError

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "bills" / "openai"
USAGE_P1 = FIX / "usage_completions__2025-06-01__p1.json"
USAGE_P2 = FIX / "usage_completions__2025-06-01__p2.json"
COSTS = FIX / "costs__2025-06-01__p1.json"
CTX = ParseContext(ingested_at=dt.datetime(2025, 7, 1))
JUNE = [dt.datetime(2025, 6, d) for d in range(1, 5)]


def check_contract(parsed, schema, table):
    assert parsed.table == table
    assert parsed.rows.schema.equals(schema)
    assert parsed.rows_in == parsed.rows.num_rows + len(parsed.rejects)
    assert all(r.line is not None and r.line >= 1 for r in parsed.rejects)


def usage(data: bytes, name: str = "usage.json"):
    p = bo.parse_usage(data, name, CTX)
    check_contract(p, bo.USAGE_SCHEMA, "stg.openai_usage")
    return p


def costs(data: bytes, name: str = "costs.json", ctx: ParseContext = CTX):
    p = bo.parse_costs(data, name, ctx)
    check_contract(p, bo.COSTS_SCHEMA, "stg.openai_costs")
    return p


def page(results, start=1748736000, end=1748822400, **extra):
    return json.dumps({"object": "page", "data": [{"object": "bucket", "start_time": start, "end_time": end,
                                                   "results": results}], "has_more": False, "next_page": None,
                       **extra}).encode()


def usage_result(**over):
    r = {"object": bo.USAGE_OBJECT, "input_tokens": 10, "output_tokens": 5, "input_cached_tokens": 2,
         "num_model_requests": 1, "project_id": None, "user_id": None, "api_key_id": None, "model": "o3",
         "batch": None}
    r.update(over)
    return r


def cost_result(value, currency="usd", **over):
    r = {"object": bo.COSTS_OBJECT, "amount": {"value": value, "currency": currency}, "line_item": "o3, input",
         "project_id": "proj_a"}
    r.update(over)
    return r


# ---------------------------------------------------------------- sniffing


def test_each_fixture_is_taken_by_exactly_one_spec():
    for path, fmt in [(USAGE_P1, "openai_usage_json"), (USAGE_P2, "openai_usage_json"), (COSTS, "openai_costs_json")]:
        data = path.read_bytes()
        assert [s.format for s in bo.SPECS if s.sniff(data, path.name)] == [fmt]


def test_empty_page_goes_by_the_endpoint_in_its_name():
    empty = b'{"object": "page", "data": [], "has_more": false, "next_page": null}'
    assert bo.sniff_costs(empty, "bills/openai/costs__2025-06-01__p1.json")
    assert not bo.sniff_usage(empty, "bills/openai/costs__2025-06-01__p1.json")
    assert bo.sniff_usage(empty, "bills/openai/usage_completions__2025-06-01__p1.json")
    assert usage(empty).rows.num_rows == 0


def test_other_usage_endpoints_and_non_pages_are_not_taken():
    embeddings = page([{"object": "organization.usage.embeddings.result", "input_tokens": 3, "num_model_requests": 1}])
    assert not any(s.sniff(embeddings, "e.json") for s in bo.SPECS)
    assert not any(s.sniff(b'{"model": "o3", "input_cost_per_token": 1e-6}', "x.json") for s in bo.SPECS)
    assert not any(s.sniff(b"provider,model\nopenai,o3\n", "x.csv") for s in bo.SPECS)


# ---------------------------------------------------------------- usage


def test_usage_page_figures():
    p = usage(USAGE_P1.read_bytes(), USAGE_P1.name)
    rows = p.rows.to_pylist()
    assert [r["line"] for r in rows] == [1, 2, 3]
    o3_day1, mini_day1, o3_day2 = rows
    assert (o3_day1["bucket_start"], o3_day1["bucket_end"]) == (JUNE[0], JUNE[1])  # 1748736000 = 2025-06-01Z
    assert (o3_day2["bucket_start"], o3_day2["bucket_end"]) == (JUNE[1], JUNE[2])
    assert {
        k: o3_day1[k] for k in ("model", "project_id", "input_tokens", "input_cached_tokens", "output_tokens",
                                "num_model_requests", "batch", "user_id", "input_audio_tokens")
    } == {"model": "o3-2025-04-16", "project_id": "proj_alpha", "input_tokens": 120000, "input_cached_tokens": 20000,
          "output_tokens": 45000, "num_model_requests": 30, "batch": None, "user_id": None, "input_audio_tokens": 0}
    assert mini_day1["model"] == "gpt-4.1-mini-2025-04-14" and mini_day1["output_tokens"] == 800
    assert p.meta == {"pages": 1, "buckets": 2, "has_more": True, "next_page": "page_AAAAAGg-6QAiJdKOAAAAAGg9l4A="}
    assert p.format == "openai_usage_json"


def test_list_of_pages_and_jsonl_of_pages_read_the_same_rows():
    p1, p2 = json.loads(USAGE_P1.read_bytes()), json.loads(USAGE_P2.read_bytes())
    as_list = usage(json.dumps([p1, p2]).encode())
    as_jsonl = usage((json.dumps(p1) + "\n" + json.dumps(p2) + "\n").encode())
    assert as_list.rows.equals(as_jsonl.rows)
    rows = as_list.rows.to_pylist()
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    o3 = [r for r in rows if r["model"] == "o3-2025-04-16"]
    # 120,000 + 100,000 + 50,000 input (cached 20,000 + 40,000 + 0); output 45,000 + 30,000 + 10,000
    assert sum(r["input_tokens"] for r in o3) == 270000
    assert sum(r["input_cached_tokens"] for r in o3) == 60000
    assert sum(r["output_tokens"] for r in o3) == 85000
    assert sum(r["num_model_requests"] for r in o3) == 67
    assert as_list.meta == {"pages": 2, "buckets": 3, "has_more": False, "next_page": None}


def test_bad_usage_results_are_rejected_with_their_field():
    results = [
        usage_result(),
        usage_result(input_tokens=-4),
        usage_result(output_tokens=None),
        usage_result(input_cached_tokens=11),  # more cached than input (10)
        usage_result(batch="yes"),
        cost_result(0.5),
        usage_result(num_model_requests=2.5),
        usage_result(model="o4-mini", batch=True, input_cached_tokens=None),
    ]
    p = usage(page(results))
    assert p.rows.num_rows == 2
    assert [r["model"] for r in p.rows.to_pylist()] == ["o3", "o4-mini"]
    assert p.rows.to_pylist()[1]["batch"] is True and p.rows.to_pylist()[1]["input_cached_tokens"] == 0
    got = [(r.line, r.field) for r in p.rejects]
    assert got == [(2, "input_tokens"), (3, "output_tokens"), (4, "input_cached_tokens"), (5, "batch"),
                   (6, "object"), (7, "num_model_requests")]
    assert "negative" in p.rejects[0].reason and "page 1, data[0].results[1]" in p.rejects[0].reason
    assert json.loads(p.rejects[0].raw)["input_tokens"] == -4


def test_a_bucket_with_bad_times_rejects_its_results():
    p = usage(page([usage_result(), usage_result(model="x")], start=1748822400, end=1748736000))
    assert p.rows.num_rows == 0 and [r.field for r in p.rejects] == ["end_time", "end_time"]
    p = usage(page([usage_result()], start="yesterday"))
    assert [r.field for r in p.rejects] == ["start_time"]


# ---------------------------------------------------------------- costs


def test_costs_amounts_are_exact_decimals():
    p = costs(COSTS.read_bytes(), COSTS.name)
    rows = p.rows.to_pylist()
    assert len(rows) == 10 and [r["line"] for r in rows] == list(range(1, 11))
    by = {(r["bucket_start"].day, r["line_item"]): r for r in rows}
    # a JSON number, a string, and a float artefact kept to 1e-12 (0.36000000000000004 -> 0.360000000000)
    assert by[(1, "o3-2025-04-16, input")]["amount_usd"] == Decimal("0.2")
    assert by[(1, "o3-2025-04-16, cached input")]["amount_usd"] == Decimal("0.01")
    assert by[(1, "o3-2025-04-16, output")]["amount_usd"] == Decimal("0.360000000000")
    assert by[(1, "gpt-4.1-mini-2025-04-14, output")]["amount_usd"] == Decimal("0.00128")
    assert by[(1, "gpt-4.1-mini-2025-04-14, output")]["project_id"] == "proj_beta"
    assert {r["currency"] for r in rows} == {"USD"} and {r["fx_usd_per_unit"] for r in rows} == {Decimal(1)}
    # 0.20 + 0.01 + 0.36 + 0.002 + 0.00128 + 0.12 + 0.02 + 0.24 + 0.10 + 0.08 = 1.13328
    assert sum(r["amount_usd"] for r in rows) == Decimal("1.13328")
    assert sum(r["amount"] for r in rows) == Decimal("1.13328")


def test_costs_value_is_read_from_the_text_not_through_float():
    # 0.1 + 0.2 as floats is 0.30000000000000004; as decimals from the JSON text it is 0.3.
    p = costs(page([cost_result(0.1), cost_result("0.2", line_item="o3, output")]))
    assert sum(p.rows.column("amount_usd").to_pylist()) == Decimal("0.3")
    p = costs(page([cost_result("1.0000000000005")]))  # half way at 1e-12: rounds to even
    assert p.rows.column("amount_usd").to_pylist() == [Decimal("1.000000000000")]


def test_non_usd_needs_an_fx_rate():
    data = page([cost_result("10", "eur"), cost_result("2", "usd", line_item="o3, output")])
    p = costs(data)
    assert p.rows.num_rows == 1
    assert [(r.line, r.field) for r in p.rejects] == [(1, "amount.currency")]
    assert "EUR has no FX rate" in p.rejects[0].reason
    fx = costs(data, ctx=ParseContext(ingested_at=CTX.ingested_at, fx_usd_per_unit={"EUR": 1.085}))
    eur = fx.rows.to_pylist()[0]
    assert (eur["currency"], eur["amount"], eur["fx_usd_per_unit"]) == ("EUR", Decimal("10"), Decimal("1.085"))
    assert eur["amount_usd"] == Decimal("10.85")  # 10 x 1.085


def test_bad_cost_results_are_rejected():
    p = costs(page([
        cost_result("abc"),
        {"object": bo.COSTS_OBJECT, "line_item": "x", "project_id": None},
        cost_result(None),
        cost_result("1", currency=None),
        cost_result(True),
        usage_result(),
        cost_result("-0.05", line_item="credit"),
    ]))
    assert [(r.line, r.field) for r in p.rejects] == [(1, "amount.value"), (2, "amount"), (3, "amount.value"),
                                                      (4, "amount.currency"), (5, "amount.value"), (6, "object")]
    assert p.rows.column("amount_usd").to_pylist() == [Decimal("-0.05")]  # credits may be negative


# ---------------------------------------------------------------- unreadable files


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (COSTS.read_bytes()[:700], 1),  # truncated compact page
        (USAGE_P1.read_bytes()[:300], 13),  # truncated pretty page: line 13 is where it stops
        (b'{"object": "page", "data": [], "has_more": false}\n{"object": "pa', 2),  # bad JSON Lines page
        (b'{"object": "page", "data": [{"object": "bucket", "start_time": NaN}]}', None),
        (b"", None),
        (b'\xff\xfe{"object": "page"}', 1),
    ],
)
def test_unreadable_files_raise_with_the_line(data, line):
    with pytest.raises(SourceFormatError) as exc:
        bo.parse_usage(data, "u.json", CTX)
    assert exc.value.line == line


def test_a_json_document_that_is_not_a_page_is_unreadable():
    with pytest.raises(SourceFormatError, match="no 'data' list"):
        bo.parse_costs(b'{"object": "list", "items": []}', "c.json", CTX)
    with pytest.raises(SourceFormatError, match="not a bucket"):
        bo.parse_costs(b'{"object": "page", "data": [3]}', "c.json", CTX)
