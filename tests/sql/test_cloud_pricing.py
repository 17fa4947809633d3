"""Bedrock, Vertex AI, the Gemini API and Azure calls priced from the real LiteLLM sheet of
2026-07-24 (data/real/litellm/), through the whole pipeline (issue 24).

Every expected cost is worked by hand below from the sheet's per-token prices (USD per token,
quoted in the comments), for prompts under 200k tokens (no long-context rate). What is checked:
which sheet entry a logged name is priced at (the exact Bedrock profile id, never the
bedrock/us-gov-east-1/ region path; the id without its profile prefix; a system inference-profile
ARN; an application-profile ARN through catalog/endpoints.csv; an Azure deployment through
endpoints.csv with its data zone; Vertex AI's and the Gemini API's own entries), provider aliases,
provisioned calls (0 per token, never unpriced, counted in marts.provisioned_usage with what they
would have cost on demand), and the reasons unpriced calls get.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse, real_sheet_landing

REPO = Path(__file__).resolve().parents[2]
SHEET = REPO / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"
TS = "2026-07-30T12:00:00Z"
ARN = "arn:aws:bedrock:us-east-1:123456789012"


def _anthropic(rid: str, provider: str, model: str, inp: int, out: int, thinking: int, **cache) -> dict:
    usage = {"input_tokens": inp, "output_tokens": out, "output_tokens_details": {"thinking_tokens": thinking}, **cache}
    return {"ts": TS, "provider": provider, "model": model, "id": rid, "type": "message", "usage": usage}


def _converse(rid: str, provider: str, model: str, inp: int, out: int, read: int = 0, write: int = 0,
              write_1h: int = 0) -> dict:
    usage = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out + read + write}
    if read:
        usage["cacheReadInputTokens"] = read
    if write:
        usage["cacheWriteInputTokens"] = write
        usage["cacheDetails"] = [d for d in ({"ttl": "1h", "inputTokens": write_1h},
                                             {"ttl": "5m", "inputTokens": write - write_1h}) if d["inputTokens"]]
    return {"ts": TS, "request_id": rid, "provider": provider, "model": model, "usage": usage, "stopReason": "end_turn"}


def _gemini(rid: str, provider: str, model: str, prompt: int, cand: int, thoughts: int, traffic: str = "ON_DEMAND") -> dict:
    return {"ts": TS, "provider": provider, "modelVersion": model, "responseId": rid,
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": cand, "thoughtsTokenCount": thoughts,
                              "totalTokenCount": prompt + cand + thoughts, "trafficType": traffic}}


def _chat(rid: str, provider: str, model: str, prompt: int, cached: int, completion: int, reasoning: int) -> dict:
    return {"ts": TS, "provider": provider, "model": model, "id": rid, "object": "chat.completion",
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "prompt_tokens_details": {"cached_tokens": cached},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}}}


SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
CALLS = [
    # InvokeModel, the Anthropic body: anthropic.claude-sonnet-4-5-20250929-v1:0 (bedrock_converse):
    # 3e-06 in, 1.5e-05 out -> 10000 x 3e-06 + 2000 x 1.5e-05 = 0.03 + 0.03 = 0.06
    # (the us-gov-east-1 region-path entry, 3.6e-06 / 1.8e-05, would give 0.072)
    _anthropic("b-invoke", "bedrock", SONNET, 10_000, 2_000, 1_500),
    # Converse through the us. profile (us.anthropic..., 10% over global): 3.3e-06 in, 1.65e-05 out, 3.3e-07 read,
    # 4.125e-06 5-minute write, 6.6e-06 1-hour write: 10000 x 3.3e-06 = 0.033; 2000 x 1.65e-05 = 0.033;
    # 100000 x 3.3e-07 = 0.033; 15000 x 4.125e-06 = 0.061875; 5000 x 6.6e-06 = 0.033 -> 0.193875
    _converse("b-us", "aws.bedrock", "us." + SONNET, 10_000, 2_000, read=100_000, write=20_000, write_1h=5_000),
    # the same call through global. (3e-06, 1.5e-05, 3e-07, 3.75e-06, 6e-06): 0.03 + 0.03 + 0.03 + 0.05625 + 0.03 = 0.17625
    _converse("b-global", "amazon-bedrock", "global." + SONNET, 10_000, 2_000, read=100_000, write=20_000, write_1h=5_000),
    # a system inference-profile ARN is its profile id: eu. (3.3e-06, 1.65e-05): 0.033 + 0.033 = 0.066
    _converse("b-arn-eu", "bedrock_converse", f"{ARN}:inference-profile/eu.{SONNET}", 10_000, 2_000),
    # an application inference profile: endpoints.csv says Sonnet 4.5 behind the us profile -> 0.033 + 0.033 = 0.066
    _converse("b-app", "bedrock", f"{ARN}:application-inference-profile/team-a", 10_000, 2_000),
    # an application inference profile endpoints.csv does not name: unpriced, with that reason
    _converse("b-app-unknown", "bedrock", f"{ARN}:application-inference-profile/zz9", 10_000, 2_000),
    # a Bedrock name without vendor and profile, as OpenLLMetry's Bedrock spans report it
    # (claude-3-7-sonnet-20250219-v1:0): the in-region anthropic.claude-3-7-sonnet-20250219-v1:0
    # (3e-06, 1.5e-05) -> 0.06
    _converse("b-novendor", "aws.bedrock", "claude-3-7-sonnet-20250219-v1:0", 10_000, 2_000),
    # a provisioned model (endpoints.csv billing = provisioned): 0 per token; on demand 0.06 (base id)
    _converse("b-pt", "bedrock", f"{ARN}:provisioned-model/pt1", 10_000, 2_000),
    # Vertex AI gemini-2.5-pro (vertex_ai-language-models): 1.25e-06 in, 1e-05 out; thoughts at the output price:
    # 10000 x 1.25e-06 + (1000 + 4000) x 1e-05 = 0.0125 + 0.05 = 0.0625
    _gemini("v-od", "gcp.vertex_ai", "gemini-2.5-pro", 10_000, 1_000, 4_000),
    # the same on provisioned throughput: 0 per token, 0.0625 on demand
    _gemini("v-pt", "vertex_ai", "gemini-2.5-pro", 10_000, 1_000, 4_000, "PROVISIONED_THROUGHPUT"),
    # the Gemini API: gemini/gemini-2.5-pro, same prices: 0.0625
    _gemini("g-api", "gemini", "gemini-2.5-pro", 10_000, 1_000, 4_000),
    # Claude on Vertex AI: vertex_ai/claude-sonnet-4-5 (the undated entry; 3e-06, 1.5e-05, as its @20250929
    # entry): 0.03 + 0.03 = 0.06
    _anthropic("v-claude", "google_vertex", "claude-sonnet-4-5@20250929", 10_000, 2_000, 1_000),
    # Azure o3-2025-04-16 -> azure/o3 (2e-06 in, 5e-07 cached, 8e-06 out):
    # 8000 x 2e-06 + 2000 x 5e-07 + 3000 x 8e-06 = 0.016 + 0.001 + 0.024 = 0.041
    _chat("az-o3", "azure.ai.openai", "o3-2025-04-16", 10_000, 2_000, 3_000, 2_500),
    # an Azure deployment name -> gpt-5-2025-08-07 in the EU data zone: azure/eu/gpt-5-2025-08-07
    # (1.375e-06 in, 1.1e-05 out): 10000 x 1.375e-06 + 1000 x 1.1e-05 = 0.01375 + 0.011 = 0.02475
    _chat("az-eu", "azure", "prod-gpt5-eu", 10_000, 0, 1_000, 800),
    # the model by its own name, no zone: azure/gpt-5 (the undated entry, 1.25e-06, 1e-05): 0.0125 + 0.01 = 0.0225
    _chat("az-global", "azure_openai", "gpt-5-2025-08-07", 10_000, 0, 1_000, 800),
    # an Azure deployment endpoints.csv does not name: unpriced, the reason says where to map it
    _chat("az-unknown", "azure", "my-team-deployment", 10_000, 0, 1_000, 0),
    # a PTU deployment (endpoints.csv billing = provisioned): 0 per token; on demand azure/o3: 0.041
    _chat("az-ptu", "azure", "ptu-o3", 10_000, 2_000, 3_000, 2_500),
]
ENDPOINTS = f"""provider,endpoint,model,sheet_provider,deployment_type,region,billing
bedrock,{ARN}:application-inference-profile/team-a,{SONNET},,us,us-east-1,
bedrock,{ARN}:provisioned-model/pt1,{SONNET},bedrock_converse,,us-east-1,provisioned
azure,prod-gpt5-eu,gpt-5-2025-08-07,azure,data_zone_eu,swedencentral,on_demand
azure,ptu-o3,o3-2025-04-16,,global,eastus2,provisioned
"""
EXPECTED = {  # request id -> (provider, price_model, cost_usd, price_basis)
    "b-invoke": ("bedrock", SONNET, "0.06", "standard"),
    "b-us": ("bedrock", "us." + SONNET, "0.193875", "standard"),
    "b-global": ("bedrock", "global." + SONNET, "0.17625", "standard"),
    "b-arn-eu": ("bedrock", "eu." + SONNET, "0.066", "standard"),
    "b-app": ("bedrock", "us." + SONNET, "0.066", "standard"),
    "b-pt": ("bedrock", SONNET, "0", "provisioned"),
    "b-novendor": ("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0", "0.06", "standard"),
    "v-od": ("vertex_ai", "gemini-2.5-pro", "0.0625", "standard"),
    "v-pt": ("vertex_ai", "gemini-2.5-pro", "0", "provisioned"),
    "g-api": ("gemini", "gemini/gemini-2.5-pro", "0.0625", "standard"),
    "v-claude": ("vertex_ai", "vertex_ai/claude-sonnet-4-5", "0.06", "standard"),
    "az-o3": ("azure", "azure/o3", "0.041", "standard"),
    "az-eu": ("azure", "azure/eu/gpt-5-2025-08-07", "0.02475", "standard"),
    "az-global": ("azure", "azure/gpt-5", "0.0225", "standard"),
    "az-ptu": ("azure", "azure/o3", "0", "provisioned"),
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("clouds")
    landing = real_sheet_landing(root, {"clouds.jsonl": CALLS}, SHEET)
    (landing / "catalog").mkdir()
    (landing / "catalog" / "endpoints.csv").write_text(ENDPOINTS)
    con, summary = build_warehouse(landing, root / "w.duckdb")
    yield con
    con.close()


def test_every_call_is_loaded(wh):
    assert wh.execute("SELECT count(*) FROM stg.requests").fetchone()[0] == len(CALLS)
    assert wh.execute("SELECT count(*) FROM ops.quarantine WHERE file LIKE 'telemetry/%'").fetchone()[0] == 0


@pytest.mark.parametrize("rid", sorted(EXPECTED))
def test_each_call_is_priced_at_its_sheet_entry(wh, rid):
    provider, price_model, cost, basis = EXPECTED[rid]
    row = wh.execute("SELECT provider, price_model, cost_usd, price_basis, unpriced FROM core.call_costs "
                     "WHERE request_id = ?", [rid]).fetchone()
    assert row[:2] == (provider, price_model)
    assert abs(row[2] - Decimal(cost)) <= Decimal("1e-9")
    assert row[3] == basis and row[4] is False


def test_the_us_profile_costs_ten_percent_more_than_global(wh):
    us, glob = (wh.execute("SELECT cost_usd FROM core.call_costs WHERE request_id = ?", [r]).fetchone()[0]
                for r in ("b-us", "b-global"))
    assert us == glob * Decimal("1.1")


def test_claude_thinking_is_kept_on_bedrock_and_vertex(wh):
    got = dict(wh.execute("SELECT request_id, thinking_tokens FROM core.calls WHERE request_id IN "
                          "('b-invoke', 'v-claude', 'v-od', 'az-o3')").fetchall())
    assert got == {"b-invoke": 1500, "v-claude": 1000, "v-od": 4000, "az-o3": 2500}


def test_provisioned_calls_are_counted_with_their_on_demand_cost(wh):
    rows = wh.execute("SELECT provider, model, calls, uncached_input_tokens, cached_input_tokens, thinking_tokens, "
                      "output_tokens, on_demand_usd, on_demand_unpriced_calls FROM marts.provisioned_usage "
                      "ORDER BY provider").fetchall()
    assert rows == [
        # az-ptu: 8000 uncached, 2000 cached, 2500 thinking, 500 output; on demand 0.041 (azure/o3)
        ("azure", "o3", 1, 8000, 2000, 2500, 500, Decimal("0.041000"), 0),
        # b-pt: 10000 in, 2000 out (Converse reports no thinking count); on demand 0.06
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", 1, 10000, 0, 0, 2000, Decimal("0.060000"), 0),
        # v-pt: 10000 in, 4000 thoughts, 1000 visible; on demand 0.0625
        ("vertex_ai", "gemini-2.5-pro", 1, 10000, 0, 4000, 1000, Decimal("0.062500"), 0),
    ]


def test_unpriced_calls_say_why_and_are_never_zero(wh):
    rows = wh.execute("SELECT provider, reported_model, reason, calls_or_hours FROM marts.unpriced_usage "
                      "ORDER BY reported_model").fetchall()
    assert rows == [
        ("bedrock", f"{ARN}:application-inference-profile/zz9", "an ARN that catalog/endpoints.csv does not name", 1),
        ("azure", "my-team-deployment", "no price sheet names this model (an Azure deployment name? map it to its "
                                        "model in catalog/endpoints.csv)", 1),
    ]
    assert wh.execute("SELECT count(*) FROM core.call_costs WHERE unpriced AND cost_usd IS NOT NULL").fetchone()[0] == 0
    # where each is: the file and line of its first call (lines 6 and 15 of clouds.jsonl), and the field
    where = wh.execute("SELECT u.reported_model, u.field, f.file, u.first_line FROM marts.unpriced_usage u "
                       "JOIN ops.ingested_files f ON f.file_id = u.first_file_id ORDER BY u.first_line").fetchall()
    assert where == [(f"{ARN}:application-inference-profile/zz9", "model", "telemetry/requests/clouds.jsonl", 6),
                     ("my-team-deployment", "model", "telemetry/requests/clouds.jsonl", 16)]
