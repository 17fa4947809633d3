"""Provider payloads (issue 24, item 7): response bodies constructed from the providers' public API
documentation (each file's documentation pages and field meanings in
tests/fixtures/real/payloads/README.md), landed as thinktax's request lines, run through the real
pipeline with the real 2026-07-24 LiteLLM sheet. Bodies recorded by public test suites may only
enter the repository through shared/ (the workplace's rule on fetched repositories): none is here.

For every payload of tests/fixtures/real/payloads/manifest.json:
* the six buckets in core.calls equal the ones derived from the body by the provider's documented
  semantics (written out in the manifest);
* core.call_costs.cost_usd equals the independent pricer's (tests/independent_pricer.py) at the
  sheet entry the manifest names, to 1e-9 USD;
* core.call_costs.thinking_cost_usd equals the pricer's thinking part (the thinking tax of the call);
* a tier the call reports (Bedrock Converse serviceTier, Vertex trafficType ON_DEMAND_FLEX) is
  recorded, and priced at standard and flagged when the sheet has no rate for it;
* nothing is quarantined or unpriced; a Vertex AI PROVISIONED_THROUGHPUT call costs 0 per token
  with price_basis 'provisioned' and is counted in marts.provisioned_usage with what it would have
  cost on demand.
Provenance of each body: tests/fixtures/real/payloads/README.md.
"""

from __future__ import annotations

import json
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import build_warehouse, real_sheet_landing
from tests.independent_pricer import BUCKETS, SHEET_PATH, Buckets, load_sheet, on_demand_price, price, thinking_price

PAYLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "payloads"
MANIFEST = json.loads((PAYLOADS / "manifest.json").read_text())["payloads"]
SHEET = load_sheet()
IDS = [p["file"].removesuffix(".json") for p in MANIFEST]
TOLERANCE = D("1e-9")


def landing_line(p: dict) -> dict:
    """The line thinktax reads: the provider's response body as returned, plus the envelope at the
    top level: ts, request_id (the body's id when it has one, else the manifest's invented one),
    provider, and model when the call's model is not the body's (a Bedrock Converse body has none;
    an InvokeModel or Vertex Claude body names Anthropic's model, not the id the call was made with)."""
    body = json.loads((PAYLOADS / p["file"]).read_text())
    envelope = {"ts": p["ts"], "request_id": p["request_id"], "provider": p["provider"]}
    if p["model"] is not None:
        envelope["model"] = p["model"]
    return {**body, **envelope}


def buckets(p: dict) -> Buckets:
    return Buckets(**p["expected"])


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("real_payloads")
    landing = real_sheet_landing(root, {"real_payloads.jsonl": [landing_line(p) for p in MANIFEST]}, SHEET_PATH)
    con, _summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    cols = ", ".join(BUCKETS)
    calls = {r[0]: dict(zip(BUCKETS, r[1:])) for r in con.sql(
        f"SELECT request_id, {cols} FROM core.calls").fetchall()}
    costs = {r[0]: r[1:] for r in con.sql(
        "SELECT request_id, cost_usd, price_model, price_basis FROM core.call_costs").fetchall()}
    details = {r[0]: dict(zip(("thinking_cost_usd", "service_tier", "tier_priced_as_standard"), r[1:])) for r in con.sql(
        "SELECT request_id, thinking_cost_usd, service_tier, tier_priced_as_standard FROM core.call_costs").fetchall()}
    marts = {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'marts'").fetchall()}
    provisioned = (con.sql("SELECT * FROM marts.provisioned_usage").df().to_dict("records")
                   if "provisioned_usage" in marts else None)
    quarantined = con.sql(
        "SELECT q.line, q.field, q.reason FROM ops.quarantine q JOIN ops.ingested_files f USING (file_id) "
        "WHERE f.file LIKE 'telemetry/%' ORDER BY q.line").fetchall()
    unpriced = con.sql("SELECT * FROM marts.unpriced_usage").df().to_dict("records")
    con.close()
    return {"calls": calls, "costs": costs, "details": details, "quarantined": quarantined, "unpriced": unpriced,
            "provisioned": provisioned}


# ------------------------------------------------------------------ the corpus itself (no thinktax)

def test_manifest_names_every_payload_file_once():
    files = sorted(p.name for p in PAYLOADS.glob("*.json") if p.name != "manifest.json")
    assert sorted(p["file"] for p in MANIFEST) == files
    assert len({p["request_id"] for p in MANIFEST}) == len(MANIFEST)


@pytest.mark.parametrize("p", MANIFEST, ids=IDS)
def test_manifest_buckets_add_up_to_the_bodys_own_totals(p):
    """The expected buckets are non-overlapping and add up to the totals the body reports itself."""
    body = json.loads((PAYLOADS / p["file"]).read_text())
    b = p["expected"]
    assert b["cache_write_1h_tokens"] <= b["cache_write_tokens"]
    prompt = b["uncached_input_tokens"] + b["cached_input_tokens"] + b["cache_write_tokens"]
    completion = b["thinking_tokens"] + b["output_tokens"]
    u = body.get("usage") or body.get("usageMetadata")
    shape = p["shape"]
    if shape == "openai_chat":
        assert (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]) == (prompt, completion, prompt + completion)
    elif shape == "deepseek_chat":  # prompt_tokens = cache hits + misses; no prompt_tokens_details
        assert (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]) == (prompt, completion, prompt + completion)
        assert (u["prompt_cache_hit_tokens"], u["prompt_cache_miss_tokens"]) == (b["cached_input_tokens"], b["uncached_input_tokens"])
        assert u["completion_tokens_details"]["reasoning_tokens"] == b["thinking_tokens"]
    elif shape == "openai_responses":
        assert (u["input_tokens"], u["output_tokens"], u["total_tokens"]) == (prompt, completion, prompt + completion)
    elif shape in ("anthropic_messages", "bedrock_invoke_anthropic"):
        assert u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] == prompt
        assert u["output_tokens"] == completion
        assert (u.get("output_tokens_details") or {}).get("thinking_tokens", 0) == b["thinking_tokens"]
        assert (u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0) == b["cache_write_1h_tokens"]
    elif shape == "bedrock_converse":
        assert u["totalTokens"] == prompt + completion  # inputTokens + outputTokens + cacheRead + cacheWrite
        assert u["outputTokens"] == completion
        ttl = {d["ttl"]: d["inputTokens"] for d in u.get("cacheDetails", [])}
        assert sum(ttl.values()) == u.get("cacheWriteInputTokens", 0) == b["cache_write_tokens"]
        assert ttl.get("1h", 0) == b["cache_write_1h_tokens"]
    elif shape == "gemini_generate_content":
        assert u["totalTokenCount"] == prompt + completion
        assert u.get("thoughtsTokenCount", 0) == b["thinking_tokens"]
        assert u.get("cachedContentTokenCount", 0) == b["cached_input_tokens"]
    else:
        raise AssertionError(f"unknown shape {shape}")


@pytest.mark.parametrize("p", MANIFEST, ids=IDS)
def test_manifest_cost_is_the_independent_pricers(p):
    entry = SHEET[p["sheet_key"]]
    assert entry["litellm_provider"] == p["sheet_litellm_provider"]
    assert price(entry, buckets(p), p["tier"], p["region"], p["billing"]) == D(p["expected_cost_usd"])
    assert on_demand_price(entry, buckets(p), p["tier"], p["region"]) == D(p["expected_on_demand_cost_usd"])
    assert thinking_price(entry, buckets(p), p["tier"], p["region"], p["billing"]) == D(p["expected_thinking_cost_usd"])


# ------------------------------------------------------------------ thinktax against the corpus

def test_no_payload_is_quarantined_or_unpriced(warehouse):
    # line n of the landed file is MANIFEST[n - 1]
    quarantined = [(MANIFEST[line - 1]["file"], field, reason) for line, field, reason in warehouse["quarantined"]]
    unpriced = [(u["provider"], u["reported_model"], u["reason"]) for u in warehouse["unpriced"]]
    assert (quarantined, unpriced) == ([], [])


@pytest.mark.parametrize("p", MANIFEST, ids=IDS)
def test_buckets(warehouse, p):
    got = warehouse["calls"].get(p["request_id"])
    assert got is not None, f"{p['file']}: no row in core.calls (quarantined: {warehouse['quarantined']})"
    assert got == p["expected"]


@pytest.mark.parametrize("p", MANIFEST, ids=IDS)
def test_cost(warehouse, p):
    got = warehouse["costs"].get(p["request_id"])
    assert got is not None, f"{p['file']}: no row in core.call_costs"
    cost, price_model, basis = got
    want = price(SHEET[p["sheet_key"]], buckets(p), p["tier"], p["region"], p["billing"])
    assert cost is not None, f"{p['file']}: unpriced (price_model {price_model!r}, basis {basis!r})"
    assert abs(cost - want) <= TOLERANCE, (
        f"{p['file']}: thinktax {cost} at {price_model!r} ({basis}), independent pricer {want} at {p['sheet_key']!r}")
    if p["billing"] == "provisioned":
        assert basis == "provisioned"


@pytest.mark.parametrize("p", [p for p in MANIFEST if p["expected"]["thinking_tokens"]],
                         ids=[i for i, p in zip(IDS, MANIFEST) if p["expected"]["thinking_tokens"]])
def test_thinking_cost(warehouse, p):
    got = warehouse["details"].get(p["request_id"])
    assert got is not None, f"{p['file']}: no row in core.call_costs"
    want = thinking_price(SHEET[p["sheet_key"]], buckets(p), p["tier"], p["region"], p["billing"])
    assert got["thinking_cost_usd"] is not None and abs(got["thinking_cost_usd"] - want) <= TOLERANCE, (
        f"{p['file']}: thinking cost {got['thinking_cost_usd']}, independent pricer {want}")


TIERED = [p for p in MANIFEST if p["tier"] != "standard"]


@pytest.mark.parametrize("p", TIERED, ids=[p["file"].removesuffix(".json") for p in TIERED])
def test_reported_tier_without_a_rate_is_priced_as_standard_and_flagged(warehouse, p):
    got = warehouse["details"].get(p["request_id"])
    assert got is not None, f"{p['file']}: no row in core.call_costs"
    entry = SHEET[p["sheet_key"]]
    has_rate = any(k.endswith(f"_{p['tier']}") for k in entry)
    assert (got["service_tier"], bool(got["tier_priced_as_standard"])) == (p["tier"], not has_rate)


def test_provisioned_call_is_counted_in_provisioned_usage(warehouse):
    """Issue 24: marts.provisioned_usage (provider, model, day, calls, tokens by bucket, what they would
    have cost on demand). Column names beyond provider/model/calls are the lead's to choose: the
    would-be cost is looked for in a column whose name has both 'on_demand' and 'usd'."""
    rows = warehouse["provisioned"]
    assert rows is not None, "marts.provisioned_usage does not exist"
    for p in (p for p in MANIFEST if p["billing"] == "provisioned"):
        mine = [r for r in rows if r["provider"] == p["provider"] and str(r["model"]).endswith(p["sheet_key"].split("/")[-1])]
        assert len(mine) == 1 and mine[0]["calls"] == 1, rows
        would = [v for k, v in mine[0].items() if "on_demand" in k and "usd" in k]
        assert len(would) == 1, mine[0]
        assert abs(D(str(would[0])) - D(p["expected_on_demand_cost_usd"])) <= TOLERANCE, mine[0]
