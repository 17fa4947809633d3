"""Exact API cost (issue 14): one call per pricing rule, priced by the pipeline against the real
LiteLLM snapshot (data/real/litellm/model_prices_and_context_window.2026-07-24.json, in force for
calls on 2026-07-30), each worked out by hand from the provider's published rule below.

Rates used (USD per million tokens, from the snapshot's per-token fields x 10^6):
  o3                      standard 2 / cached 0.5 / output 8; flex 1 / 0.25 / 4; priority 3.5 / 0.875 / 14
  gpt-5.4                 standard 2.5 / 0.25 / 15; batches 1.25 / - / 7.5; priority 5 / 0.5 / 30;
                          above_272k_tokens 5 / 0.5 / 22.5; regional uplift eu 1.1, us 1.1
  gpt-4.1                 standard 2 / 0.5 / 8; batches 1 / - / 4
  xai/grok-4-1-fast-reasoning  0.2 / 0.05 / 0.5; above_128k_tokens 0.4 / - / 1
  gpt-4o-search-preview   2.5 / 1.25 / 10; web search per query low 0.03, medium 0.035, high 0.05
  claude-sonnet-4-5       3 / read 0.3 / write 3.75 / 1h write 6 / output 15; no batch rates;
                          above_200k_tokens 6 / 0.6 / 7.5 / 1h 12 / 22.5; web search 0.01 per query
  claude-sonnet-4-20250514  as claude-sonnet-4-5 but no 1-hour price above 200k tokens
  claude-opus-4-1         15 / 1.5 / 18.75 / 1h 30 / 75
  claude-opus-4-6         5 / 0.5 / 6.25 / 1h 10 / 25; provider_specific_entry us 1.1 (Anthropic US-only inference)
  gemini/gemini-2.5-pro   1.25 / 0.125 / 10; above_200k_tokens 2.5 / 0.25 / 15;
                          above_200k_tokens_priority 2.5 / - / 15
Published rules: OpenAI flex / priority / batch processing are priced per tier (batch: 50% off);
Anthropic Message Batches: 50% of standard prices, prompt-caching multipliers stack with it; a
1-hour cache write is 2x the base input price; Claude Sonnet 4/4.5 and Gemini 2.5 Pro: a prompt
over 200k tokens bills the whole request at the long-context rates; OpenAI regional processing
(data residency) +10% on gpt-5.4+; web search is billed per query.
"""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import build_warehouse, real_sheet_landing

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"
TS = "2026-07-30T12:00:00Z"


def chat(rid, model, prompt, cached, completion, reasoning, **top):
    return {"ts": TS, "request_id": rid, "model": model, "provider": "openai", **top,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "prompt_tokens_details": {"cached_tokens": cached},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}}}


def resp(rid, model, inp, cached, out, reasoning, usage_extra=None, **top):
    return {"ts": TS, "request_id": rid, "model": model, "provider": "openai", **top,
            "usage": {"input_tokens": inp, "output_tokens": out, "input_tokens_details": {"cached_tokens": cached},
                      "output_tokens_details": {"reasoning_tokens": reasoning}, **(usage_extra or {})}}


def anth(rid, model, inp, read, write, out, thinking=0, **usage_extra):
    return {"ts": TS, "request_id": rid, "model": model, "provider": "anthropic",
            "usage": {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
                      "output_tokens": out, "thinking_tokens": thinking, **usage_extra}}


def gem(rid, prompt, cached, candidates, thoughts, tool=0, **top):
    return {"ts": TS, "request_id": rid, "model": "gemini/gemini-2.5-pro", "provider": "gemini", **top,
            "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
                              "candidatesTokenCount": candidates, "thoughtsTokenCount": thoughts,
                              "toolUsePromptTokenCount": tool}}


CALLS = [
    # ---- 1. service tier (the tier the provider reports)
    chat("flex_chat", "o3", 10_000, 4_000, 3_000, 2_000, service_tier="flex"),
    resp("priority_resp", "o3", 10_000, 4_000, 3_000, 2_000, service_tier="priority"),
    chat("default_tier", "o3", 10_000, 4_000, 3_000, 2_000, service_tier="default"),
    chat("scale_tier", "o3", 10_000, 4_000, 3_000, 2_000, service_tier="scale"),
    anth("anth_priority", "claude-sonnet-4-5", 1_000, 0, 0, 1_000, service_tier="priority"),
    # ---- 2. batch
    resp("batch_sheet", "gpt-5.4", 10_000, 2_000, 1_000, 400, batch=True),
    anth("batch_half", "claude-sonnet-4-5", 1_000, 2_000, 400, 600, service_tier="batch"),
    # ---- 3. long context
    anth("lc_claude", "claude-sonnet-4-5", 50_000, 150_000, 60_000, 2_000, 500,
         cache_creation={"ephemeral_5m_input_tokens": 20_000, "ephemeral_1h_input_tokens": 40_000}),
    anth("lc_edge", "claude-sonnet-4-5", 200_000, 0, 0, 1_000),
    gem("lc_gemini_priority", 300_000, 100_000, 1_000, 3_000, service_tier="priority"),
    chat("lc_gpt54_priority", "gpt-5.4", 300_000, 0, 1_000, 0, service_tier="priority"),
    chat("lc_gpt54_batch", "gpt-5.4", 300_000, 0, 1_000, 0, batch=True),
    {**chat("lc_xai_at_threshold", "xai/grok-4-1-fast-reasoning", 128_000, 0, 1_000, 0), "provider": "xai"},
    # ---- 4. 1-hour cache writes
    anth("ttl_1h", "claude-opus-4-1", 1_000, 0, 10_000, 100,
         cache_creation={"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 10_000}),
    anth("ttl_lc_default", "claude-sonnet-4-20250514", 100_000, 0, 150_000, 1_000,
         cache_creation={"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 150_000}),
    # ---- 5. regional uplift
    resp("region_eu", "gpt-5.4", 1_000, 0, 1_000, 0, region="eu"),
    resp("region_us_batch", "gpt-5.4", 1_000, 0, 1_000, 0, usage_extra={"inference_geo": "us"}, batch=True),
    anth("region_global", "claude-sonnet-4-5", 1_000, 0, 0, 1_000, inference_geo="global"),
    anth("region_anthropic_us", "claude-opus-4-6", 1_000, 0, 0, 1_000, inference_geo="us"),
    # ---- 6. per-request fees
    anth("fees_anthropic", "claude-sonnet-4-5", 1_000, 0, 0, 1_000, server_tool_use={"web_search_requests": 3}),
    resp("fees_openai_high", "gpt-4o-search-preview", 1_000, 0, 500, 0,
         tools=[{"type": "web_search_preview", "search_context_size": "high"}],
         output=[{"type": "web_search_call"}, {"type": "web_search_call"}, {"type": "message"}]),
    resp("fees_openai_medium", "gpt-4o-search-preview", 1_000, 0, 500, 0,
         output=[{"type": "web_search_call"}, {"type": "message"}]),
    # ---- 7. Gemini usage shape
    gem("gemini_shape", 1_200, 400, 300, 700, tool=50),
    # ---- 9. thinktax price CSV kinds
    resp("csv_flex", "acme-r1", 1_000, 0, 1_000, 0, provider="acme", service_tier="flex"),
    resp("csv_lc_1h", "acme-r1", 150_000, 0, 1_000, 0, provider="acme"),
    {"ts": TS, "request_id": "csv_1h", "model": "acme-r1", "provider": "acme",
     "usage": {"input_tokens": 1_000, "output_tokens": 0, "cache_creation_input_tokens": 1_000,
               "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_000},
               "server_tool_use": {"web_search_requests": 2}}},
]

CSV = """provider,model,price_kind,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,cache_write_1h_usd_per_mtok,usd_per_request_fee
acme,acme-r1,standard,1,0.1,4,3,0.02
acme,acme-r1,flex,0.5,,2,,
acme,acme-r1,above_100k_tokens,2,0.2,8,,
"""

OPENAI_BATCH = {"id": "batch_req_1", "custom_id": "t1", "response": {"status_code": 200, "body": {
    "id": "chatcmpl-batch1", "created": 1785412800, "model": "gpt-4.1", "service_tier": "default",
    "usage": {"prompt_tokens": 1_000, "completion_tokens": 500, "prompt_tokens_details": {"cached_tokens": 200}}}}, "error": None}
ANTHROPIC_BATCH = {"custom_id": "q1", "result": {"type": "succeeded", "message": {
    "id": "msg_batch1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1_000, "output_tokens": 1_000, "service_tier": "batch"}}}}

# request_id: (cost_usd, price_basis, cost_at_standard_usd), worked by hand
EXPECTED = {
    # o3 flex: 6,000 uncached x 1 + 4,000 cached x 0.25 + 2,000 reasoning x 4 + 1,000 output x 4
    #   = 0.006 + 0.001 + 0.008 + 0.004 = 0.019; standard 0.012 + 0.002 + 0.016 + 0.008 = 0.038
    "flex_chat": ("0.019", "flex", "0.038"),
    # o3 priority (Responses): 6,000 x 3.5 + 4,000 x 0.875 + 3,000 x 14 = 0.021 + 0.0035 + 0.042 = 0.0665
    "priority_resp": ("0.0665", "priority", "0.038"),
    # "default" is the standard tier
    "default_tier": ("0.038", "standard", "0.038"),
    # scale: no rate on the sheet -> standard, flagged
    "scale_tier": ("0.038", "standard", "0.038"),
    # Anthropic priority: no rate on the sheet -> standard 1,000 x 3 + 1,000 x 15 = 0.018, flagged
    "anth_priority": ("0.018", "standard", "0.018"),
    # gpt-5.4 batch: 8,000 x 1.25 + 2,000 cached x (50% of 0.25 = 0.125, no batch cached rate)
    #   + 400 reasoning x 7.5 + 600 x 7.5 = 0.01 + 0.00025 + 0.003 + 0.0045 = 0.01775
    #   standard: 8,000 x 2.5 + 2,000 x 0.25 + 1,000 x 15 = 0.02 + 0.0005 + 0.015 = 0.0355
    "batch_sheet": ("0.01775", "batch", "0.0355"),
    # Sonnet 4.5 via Message Batches, no batch rate on the sheet: 50% of everything
    #   1,000 x 1.5 + 2,000 x 0.15 + 400 x 1.875 + 600 x 7.5 = 0.0015 + 0.0003 + 0.00075 + 0.0045 = 0.00705
    #   standard: 0.003 + 0.0006 + 0.0015 + 0.009 = 0.0141
    "batch_half": ("0.00705", "batch", "0.0141"),
    # prompt 50,000 + 150,000 + 60,000 = 260,000 > 200,000: everything at the long-context rates
    #   50,000 x 6 + 150,000 x 0.6 + 20,000 x 7.5 (5 min) + 40,000 x 12 (1 h) + 500 thinking x 22.5 + 1,500 x 22.5
    #   = 0.3 + 0.09 + 0.15 + 0.48 + 0.01125 + 0.03375 = 1.065
    #   standard: 0.15 + 0.045 + 0.075 + 0.24 (40,000 x 6) + 0.03 (2,000 x 15) = 0.54
    "lc_claude": ("1.065", "above_200k_tokens", "0.54"),
    # exactly 200,000 is not above: 200,000 x 3 + 1,000 x 15 = 0.615
    "lc_edge": ("0.615", "standard", "0.615"),
    # Gemini 300,000 prompt incl. 100,000 cached, priority: above_200k_tokens_priority 2.5 / 15, its cached
    #   rate not given -> the long-context one 0.25: 200,000 x 2.5 + 100,000 x 0.25 + 3,000 thoughts x 15
    #   + 1,000 x 15 = 0.5 + 0.025 + 0.045 + 0.015 = 0.585; standard 0.25 + 0.0125 + 0.03 + 0.01 = 0.3025
    "lc_gemini_priority": ("0.585", "above_200k_tokens+priority", "0.3025"),
    # gpt-5.4 priority over 272k, no combined rate: the long-context rate 300,000 x 5 + 1,000 x 22.5 = 1.5225
    #   standard 300,000 x 2.5 + 1,000 x 15 = 0.765
    "lc_gpt54_priority": ("1.5225", "above_272k_tokens+priority", "0.765"),
    # gpt-5.4 batch over 272k: the sheet has no long-context batch rate -> 50% of the long-context rates
    #   300,000 x 2.5 + 1,000 x 11.25 = 0.75 + 0.01125 = 0.76125
    "lc_gpt54_batch": ("0.76125", "above_272k_tokens+batch", "0.765"),
    # xAI bills the higher tier from the threshold on (LiteLLM's inclusive providers): exactly 128,000
    #   -> 128,000 x 0.4 + 1,000 x 1 = 0.0512 + 0.001 = 0.0522; standard 128,000 x 0.2 + 1,000 x 0.5 = 0.0261
    "lc_xai_at_threshold": ("0.0522", "above_128k_tokens", "0.0261"),
    # Opus 4.1 1-hour writes at 30 (= 2 x 15): 1,000 x 15 + 10,000 x 30 + 100 x 75 = 0.015 + 0.3 + 0.0075 = 0.3225
    "ttl_1h": ("0.3225", "standard", "0.3225"),
    # Sonnet 4 over 200k, the sheet has no long-context 1-hour price: 2 x 6 = 12
    #   100,000 x 6 + 150,000 x 12 + 1,000 x 22.5 = 0.6 + 1.8 + 0.0225 = 2.4225
    #   standard: 100,000 x 3 + 150,000 x 6 + 1,000 x 15 = 0.3 + 0.9 + 0.015 = 1.215
    "ttl_lc_default": ("2.4225", "above_200k_tokens", "1.215"),
    # gpt-5.4 in the EU: 1,000 x 2.5 x 1.1 + 1,000 x 15 x 1.1 = 0.00275 + 0.0165 = 0.01925; standard 0.0175
    "region_eu": ("0.01925", "regional_eu", "0.0175"),
    # batch + US: 1,000 x 1.25 x 1.1 + 1,000 x 7.5 x 1.1 = 0.001375 + 0.00825 = 0.009625
    "region_us_batch": ("0.009625", "batch+regional_us", "0.0175"),
    # Opus 4.6 served in the US (usage.inference_geo, the sheet's provider_specific_entry us 1.1):
    #   1,000 x 5 x 1.1 + 1,000 x 25 x 1.1 = 0.0055 + 0.0275 = 0.033; standard 0.005 + 0.025 = 0.03
    "region_anthropic_us": ("0.033", "regional_us", "0.03"),
    # 'global' has no multiplier on the sheet: standard 0.018
    "region_global": ("0.018", "standard", "0.018"),
    # 3 web searches x 0.01 + 0.018 tokens = 0.048 (fees also in the standard cost)
    "fees_anthropic": ("0.048", "standard", "0.048"),
    # 2 searches at the high context size 0.05 + 1,000 x 2.5 + 500 x 10 = 0.1 + 0.0025 + 0.005 = 0.1075
    "fees_openai_high": ("0.1075", "standard", "0.1075"),
    # 1 search, no size given = medium 0.035 + 0.0075 = 0.0425
    "fees_openai_medium": ("0.0425", "standard", "0.0425"),
    # Gemini: uncached 1,200 - 400 + 50 tool = 850 x 1.25 + 400 x 0.125 + 700 thoughts x 10 + 300 x 10
    #   = 0.0010625 + 0.00005 + 0.007 + 0.003 = 0.0111125
    "gemini_shape": ("0.0111125", "standard", "0.0111125"),
    # CSV flex kind: 1,000 x 0.5 + 1,000 x 2 = 0.0025; standard 0.001 + 0.004 = 0.005
    "csv_flex": ("0.0025", "flex", "0.005"),
    # CSV above_100k_tokens: 150,000 x 2 + 1,000 x 8 = 0.308; standard 0.15 + 0.004 = 0.154
    "csv_lc_1h": ("0.308", "above_100k_tokens", "0.154"),
    # CSV 1-hour write price 3 and fee 0.02: 1,000 x 1 + 1,000 x 3 + 2 x 0.02 = 0.001 + 0.003 + 0.04 = 0.044
    "csv_1h": ("0.044", "standard", "0.044"),
    # OpenAI Batch output, gpt-4.1 (batches 1 / 4, cached 50% of 0.5): 800 x 1 + 200 x 0.25 + 500 x 4
    #   = 0.0008 + 0.00005 + 0.002 = 0.00285; standard 0.0016 + 0.0001 + 0.004 = 0.0057
    "chatcmpl-batch1": ("0.00285", "batch", "0.0057"),
    # Anthropic Message Batches, Sonnet 4.5 at 50%: 1,000 x 1.5 + 1,000 x 7.5 = 0.009; standard 0.018
    "msg_batch1": ("0.009", "batch", "0.018"),
}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    root = tmp_path_factory.mktemp("pricing")
    landing = real_sheet_landing(root, {"calls.jsonl": CALLS, "batch_output.jsonl": [OPENAI_BATCH],
                                        "msgbatch_results.2026-07-30.jsonl": [ANTHROPIC_BATCH]}, REAL)
    (landing / "prices" / "llm" / "acme.2026-07-01.csv").write_text(CSV)
    c, summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 16  # the LiteLLM snapshot's own 16 bad entries, nothing of ours
    yield c
    c.close()


def test_every_rule_costs_what_was_worked_by_hand(con):
    got = {r[0]: r[1:] for r in con.sql(
        "SELECT request_id, cost_usd, price_basis, cost_at_standard_usd FROM core.call_costs").fetchall()}
    assert set(got) == set(EXPECTED)
    for rid, (cost, basis, std) in EXPECTED.items():
        assert got[rid] == (D(cost), basis, D(std)), rid


def test_flags_notes_and_fees(con):
    rows = {r[0]: r[1:] for r in con.sql(
        "SELECT request_id, tier_priced_as_standard, price_note, request_fees_usd, service_tier, is_batch "
        "FROM core.call_costs").fetchall()}
    assert rows["scale_tier"][:2] == (True, "service tier scale has no rate on the sheet: priced at standard")
    assert rows["anth_priority"][0] is True
    assert rows["flex_chat"][:2] == (False, None)
    assert rows["batch_half"][1] == "no batch rate on the sheet: 50% of the standard rates"
    assert rows["batch_sheet"][1] is None  # the sheet has gpt-5.4 batch rates
    assert rows["lc_gpt54_batch"][1] == "no long-context batch rate on the sheet: 50% of the above_272k_tokens rates"
    assert rows["fees_anthropic"][2] == D("0.03") and rows["fees_openai_high"][2] == D("0.1")
    assert rows["flex_chat"][2] == 0
    # the reported tier is kept as reported; batch files are batch calls
    assert rows["default_tier"][3:] == ("standard", False)
    assert rows["chatcmpl-batch1"][3:] == ("standard", True) and rows["msg_batch1"][3:] == ("batch", True)


def test_rates_used_are_on_the_call(con):
    (row,) = con.sql("SELECT rate_input_usd_per_mtok, rate_cached_input_usd_per_mtok, rate_cache_write_usd_per_mtok, "
                     "rate_cache_write_1h_usd_per_mtok, rate_output_usd_per_mtok, rate_reasoning_usd_per_mtok, regional_uplift "
                     "FROM core.call_costs WHERE request_id = 'lc_claude'").fetchall()
    assert row == (D(6), D("0.6"), D("7.5"), D(12), D("22.5"), D("22.5"), None)
    (row,) = con.sql("SELECT rate_input_usd_per_mtok, rate_output_usd_per_mtok, regional_uplift FROM core.call_costs "
                     "WHERE request_id = 'region_us_batch'").fetchall()
    assert row == (D("1.375"), D("8.25"), D("1.1"))  # 1.25 x 1.1, 7.5 x 1.1


def test_thinking_cost_is_at_the_rate_used(con):
    # lc_claude: 500 thinking x 22.5 = 0.01125; gemini_shape: 700 thoughts x 10 = 0.007
    got = dict(con.sql("SELECT request_id, thinking_cost_usd FROM core.call_costs "
                       "WHERE request_id IN ('lc_claude', 'gemini_shape')").fetchall())
    assert got == {"lc_claude": D("0.01125"), "gemini_shape": D("0.007")}


def test_price_basis_mix_adds_up(con):
    # flex saved 0.038 - 0.019 = 0.019 on o3; priority cost 0.0665 - 0.038 = 0.0285 extra
    got = {(r[0], r[1]): r[2:] for r in con.sql(
        "SELECT model, price_basis, calls, cost_usd, cost_at_standard_usd, premium_usd FROM marts.price_basis_mix").fetchall()}
    assert got[("o3", "flex")] == (1, D("0.019"), D("0.038"), D("-0.019"))
    assert got[("o3", "priority")] == (1, D("0.0665"), D("0.038"), D("0.0285"))
    assert got[("o3", "standard")] == (2, D("0.076"), D("0.076"), D(0))
    # the mart holds every priced API call once; each row is its calls' cost rounded to the micro-dollar
    (n, total), = con.sql("SELECT sum(calls), sum(cost_usd) FROM marts.price_basis_mix").fetchall()
    assert n == len(EXPECTED)
    exact = sum(D(v[0]) for v in EXPECTED.values())  # 7.3591375
    (rows,), = con.sql("SELECT count(*) FROM marts.price_basis_mix").fetchall()
    assert abs(total - exact) <= rows * D("0.0000005")
