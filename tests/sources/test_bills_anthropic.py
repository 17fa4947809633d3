"""Anthropic Admin API usage_report/messages and cost_report pages (sources/bills_anthropic.py).

Fixtures: tests/fixtures/bills/anthropic/ (hand-written from the API reference; see its README).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from sources import bills_anthropic as ba
from sources.base import ParseContext, SourceFormatError

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "bills" / "anthropic"
USAGE_P1 = FIX / "usage_report_messages__2025-06-01__p1.json"
USAGE_P2 = FIX / "usage_report_messages__2025-06-01__p2.json"
COSTS = FIX / "cost_report__2025-06-01__p1.json"
CTX = ParseContext(ingested_at=dt.datetime(2025, 7, 1))
SONNET, OPUS = "claude-sonnet-4-20250514", "claude-opus-4-20250514"


def check_contract(parsed, schema, table):
    assert parsed.table == table
    assert parsed.rows.schema.equals(schema)
    assert parsed.rows_in == parsed.rows.num_rows + len(parsed.rejects)
    assert all(r.line is not None and r.line >= 1 for r in parsed.rejects)


def usage(data: bytes, name: str = "usage.json"):
    p = ba.parse_usage(data, name, CTX)
    check_contract(p, ba.USAGE_SCHEMA, "stg.anthropic_usage")
    return p


def costs(data: bytes, name: str = "cost_report.json", ctx: ParseContext = CTX):
    p = ba.parse_costs(data, name, ctx)
    check_contract(p, ba.COSTS_SCHEMA, "stg.anthropic_costs")
    return p


def page(results, start="2025-06-01T00:00:00Z", end="2025-06-02T00:00:00Z"):
    return json.dumps({"data": [{"starting_at": start, "ending_at": end, "results": results}],
                       "has_more": False, "next_page": None}).encode()


def usage_result(**over):
    r = {"uncached_input_tokens": 10, "cache_read_input_tokens": 0, "output_tokens": 5,
         "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
         "server_tool_use": {"web_search_requests": 0}, "model": SONNET, "workspace_id": None}
    r.update(over)
    return r


def cost_result(amount, currency="USD", **over):
    r = {"amount": amount, "currency": currency, "description": "Claude Sonnet 4 Usage - Input Tokens",
         "cost_type": "tokens", "token_type": "uncached_input_tokens", "model": SONNET, "workspace_id": None,
         "service_tier": "standard", "context_window": "0-200k"}
    r.update(over)
    return r


# ---------------------------------------------------------------- sniffing


def test_each_fixture_is_taken_by_exactly_one_spec():
    # The cost report names "uncached_input_tokens" as a token_type *value*: still a cost report.
    for path, fmt in [(USAGE_P1, "anthropic_usage_report_json"), (USAGE_P2, "anthropic_usage_report_json"),
                      (COSTS, "anthropic_cost_report_json")]:
        data = path.read_bytes()
        assert [s.format for s in ba.SPECS if s.sniff(data, path.name)] == [fmt]


def test_empty_page_goes_by_name_and_foreign_json_is_not_taken():
    empty = b'{"data": [], "has_more": false, "next_page": null}'
    assert ba.sniff_costs(empty, "bills/anthropic/cost_report__2025-06-01__p1.json")
    assert ba.sniff_usage(empty, "bills/anthropic/usage_report_messages__2025-06-01__p1.json")
    assert not any(s.sniff(b'{"model": "x", "usage": {"input_tokens": 3}}', "x.json") for s in ba.SPECS)


# ---------------------------------------------------------------- usage


def test_usage_page_figures():
    p = usage(USAGE_P1.read_bytes(), USAGE_P1.name)
    rows = p.rows.to_pylist()
    assert [r["line"] for r in rows] == [1, 2, 3]
    sonnet1, opus1, sonnet2 = rows
    assert (sonnet1["bucket_start"], sonnet1["bucket_end"]) == (dt.datetime(2025, 6, 1), dt.datetime(2025, 6, 2))
    assert {k: sonnet1[k] for k in ("model", "service_tier", "context_window", "uncached_input_tokens",
                                    "cache_read_input_tokens", "cache_creation_5m_tokens",
                                    "cache_creation_1h_tokens", "output_tokens", "web_search_requests",
                                    "api_key_id")} == {
        "model": SONNET, "service_tier": "standard", "context_window": "0-200k", "uncached_input_tokens": 100000,
        "cache_read_input_tokens": 50000, "cache_creation_5m_tokens": 20000, "cache_creation_1h_tokens": 0,
        "output_tokens": 40000, "web_search_requests": 3, "api_key_id": None}
    assert (opus1["model"], opus1["service_tier"], opus1["cache_creation_1h_tokens"]) == (OPUS, "batch", 4000)
    assert sonnet2["bucket_start"] == dt.datetime(2025, 6, 2) and sonnet2["uncached_input_tokens"] == 80000
    assert p.meta["has_more"] is True and p.meta["next_page"] == "page_MjAyNS0wNi0wM1QwMDowMDowMFo="


def test_usage_variants_offsets_and_flattened_cache_fields():
    flat = usage_result(cache_creation=None, server_tool_use=None, cache_creation_5m_input_tokens=7,
                        cache_creation_1h_input_tokens=9)
    p = usage(page([flat], start="2025-06-01T02:00:00+02:00", end="2025-06-02T00:00:00.000Z"))
    row = p.rows.to_pylist()[0]
    assert (row["cache_creation_5m_tokens"], row["cache_creation_1h_tokens"], row["web_search_requests"]) == (7, 9, 0)
    assert row["bucket_start"] == dt.datetime(2025, 6, 1, 0, 0)  # 02:00+02:00 = 00:00 UTC


def test_bad_usage_results_are_rejected_with_their_field():
    p = usage(page([
        usage_result(),
        usage_result(uncached_input_tokens=-1),
        usage_result(output_tokens="many"),
        usage_result(cache_creation={"ephemeral_5m_input_tokens": -3}),
        usage_result(server_tool_use=[1]),
        cost_result("5"),
        {"model": "x"},
    ]))
    assert p.rows.num_rows == 1
    assert [(r.line, r.field) for r in p.rejects] == [
        (2, "uncached_input_tokens"), (3, "output_tokens"), (4, "cache_creation.ephemeral_5m_input_tokens"),
        (5, "server_tool_use"), (6, "results"), (7, "results")]
    assert "a costs result in a usage file" in p.rejects[4].reason
    p = usage(page([usage_result()], start="June 1st"))
    assert [r.field for r in p.rejects] == ["starting_at"]


# ---------------------------------------------------------------- costs


def test_cost_amounts_are_cents_divided_exactly():
    p = costs(COSTS.read_bytes(), COSTS.name)
    rows = p.rows.to_pylist()
    assert len(rows) == 15
    by = {(r["bucket_start"].day, r["description"]): r for r in rows}
    code = by[(3, "Code Execution Usage")]
    assert code["amount_usd"] == Decimal("1.234567")  # "123.4567" cents / 100
    assert (code["cost_type"], code["model"], code["token_type"]) == ("code_execution", None, None)
    hit = by[(1, "Claude Sonnet 4 Usage - Input Tokens, Cache Hit")]
    assert hit["amount_usd"] == Decimal("0.015")  # "1.5" cents
    assert (hit["token_type"], hit["model"], hit["service_tier"]) == ("cache_read_input_tokens", SONNET, "standard")
    assert by[(3, "Claude Sonnet 4 Usage - Input Tokens, Cache Hit")]["amount_usd"] == Decimal("0.003")  # "0.3"
    write1h = by[(1, "Claude Opus 4 Batch Usage - Input Tokens, Cache Write 1h")]
    assert write1h["token_type"] == "cache_creation.ephemeral_1h_input_tokens" and write1h["amount_usd"] == Decimal("0.06")
    # 102 + 43.5 + 54 + 141.2567 = 340.7567 cents
    assert sum(r["amount_usd"] for r in rows) == Decimal("3.407567")
    assert {r["currency"] for r in rows} == {"USD"}
    assert sum(r["amount_usd"] for r in rows if r["bucket_start"].day == 1) == Decimal("1.455")


def test_cents_precision_and_forms():
    p = costs(page([cost_result("0.0000000001"), cost_result(12, token_type="output_tokens"),
                    cost_result("1e2", token_type="cache_read_input_tokens")]))
    # 1e-10 cents = 1e-12 USD (the table's quantum); 12 cents; 1e2 cents = 1 USD
    assert p.rows.column("amount_usd").to_pylist() == [Decimal("1E-12"), Decimal("0.12"), Decimal("1")]


def test_bad_cost_results_and_currency():
    data = page([
        cost_result("12,5"),
        cost_result("NaN"),
        cost_result("3", currency=None),
        cost_result("3", currency="EUR", token_type="output_tokens"),
        usage_result(),
        cost_result("-250", description="Credit"),
    ])
    p = costs(data)
    assert [(r.line, r.field) for r in p.rejects] == [(1, "amount"), (2, "amount"), (3, "currency"),
                                                      (4, "currency"), (5, "results")]
    assert p.rows.column("amount_usd").to_pylist() == [Decimal("-2.5")]
    fx = costs(data, ctx=ParseContext(ingested_at=CTX.ingested_at, fx_usd_per_unit={"EUR": 1.1}))
    eur = [r for r in fx.rows.to_pylist() if r["currency"] == "EUR"][0]
    assert (eur["amount"], eur["amount_usd"]) == (Decimal("0.03"), Decimal("0.033"))  # 3 cents x 1.1


def test_unreadable_files_raise():
    with pytest.raises(SourceFormatError) as exc:
        ba.parse_costs(COSTS.read_bytes()[:1000], COSTS.name, CTX)
    assert exc.value.line is not None and exc.value.line > 1
    with pytest.raises(SourceFormatError, match="no 'data' list"):
        ba.parse_usage(b'{"type": "error", "error": {"type": "rate_limit_error"}}', "u.json", CTX)
