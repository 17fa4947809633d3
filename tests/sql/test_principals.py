"""Who made each call (issue 41): the principals every source carries, through stg.requests ->
core.calls -> core.call_costs, a secret-looking key quarantined, and cache_savings_usd by hand.

Prices (USD per 1M tokens): o3 input 2.50, cached 0.625, output 12; claude-x input 3, cached 0.30,
cache write 3.75, output 15.

* p1 (OpenAI Responses body, its own top-level ``user``, LiteLLM-style metadata keys): 8,000 input
  of which 2,000 cached. Cache savings = 2,000 x (2.50 - 0.625) / 1e6 = 0.00375.
* p2 (Anthropic body, plain metadata keys): 1,000 uncached, 4,000 cache reads, 2,000 cache writes.
  Savings = reads 4,000 x (3 - 0.30) = 0.0108, less the writes' premium 2,000 x (3.75 - 3) = 0.0015
  -> 0.0093.
* p3: 100 uncached, 0 cache reads, 10,000 cache writes: 0 - 10,000 x (3.75 - 3) = -0.0075 (caching
  cost more than it saved; shown as it is).
* p4: metadata.api_key holds ``sk-ant-api03-...``: quarantined, the key neither in stg.requests nor
  in ops.quarantine's raw text.
"""

from __future__ import annotations

import json
from decimal import Decimal as D

from tests.conftest import build_warehouse, write_files
from tests.sources.test_otel import span, traces

PRICES = {
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2.50,0.625,,12,USD\n"
        "anthropic,claude-x,3,0.30,3.75,15,USD\n"
    ),
}
SECRET = "sk-ant-api03-Zq8xY2mN4pR6tV8wA0cE2gI4kM6oQ8sU0wY2aC4eG6iK8mO0qS2uW4yA6cE8gI0"
KEY_HASH = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"

REQUESTS = [
    # an OpenAI Responses body (its "user" and "metadata" are fields of the response object,
    # platform.openai.com/docs/api-reference/responses/object) with the proxy's keys added
    {"ts": "2026-06-30T10:00:00Z", "id": "resp_p1", "object": "response", "model": "o3", "provider": "openai",
     "team": "search", "user": "alice@example.com",
     "metadata": {"user_api_key_hash": KEY_HASH, "user_api_key_end_user_id": "cust-42", "project_id": "proj_abc",
                  "session_id": "conv-1", "tags": ["env:prod", "batchjob"]},
     "usage": {"input_tokens": 8000, "output_tokens": 500, "input_tokens_details": {"cached_tokens": 2000},
               "output_tokens_details": {"reasoning_tokens": 0}}},
    {"ts": "2026-06-30T11:00:00Z", "id": "msg_p2", "type": "message", "model": "claude-x", "provider": "anthropic",
     "metadata": {"api_key_id": "apikey_01Rj2N8SVvo6BePZj99NhmiT", "user_id": "bob", "workspace_id": "wrkspc_01JwQvzr7rXLA5AGx3HKfFUJ",
                  "agent_name": "reviewer", "trace_id": "0af7651916cd43dd8448eb211c80319c", "tags": {"env": "dev"}},
     "usage": {"input_tokens": 1000, "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 2000, "output_tokens": 300}},
    {"ts": "2026-06-30T12:00:00Z", "id": "msg_p3", "type": "message", "model": "claude-x", "provider": "anthropic",
     "metadata": {"user_api_key_alias": "ci-bot"},
     "usage": {"input_tokens": 100, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 10000, "output_tokens": 10}},
    {"ts": "2026-06-30T13:00:00Z", "id": "msg_p4", "type": "message", "model": "claude-x", "provider": "anthropic",
     "metadata": {"api_key": SECRET},
     "usage": {"input_tokens": 100, "output_tokens": 10}},
]

# LiteLLM_SpendLogs rows (schema.prisma: api_key is the hashed token, user, end_user, team_id,
# request_tags, session_id, agent_id)
SPENDLOGS = [
    {"request_id": "ll-1", "call_type": "acompletion", "api_key": KEY_HASH, "spend": 0.001, "prompt_tokens": 1000,
     "completion_tokens": 100, "startTime": "2026-06-30T10:00:00.000000", "endTime": "2026-06-30T10:00:02.000000",
     "model": "o3", "custom_llm_provider": "openai", "user": "carol", "end_user": "cust-7", "team_id": "team-a",
     "metadata": {"user_api_key_team_alias": "search", "project_id": "proj_ll"}, "request_tags": ["support", "tier:gold"],
     "session_id": "sess-9", "agent_id": "triage", "status": "success"},
]

T = "5d0a2c8e9b7f41a3b6c4d2e1f0a9b8c7"  # not the trace of tests/sql/test_agent_runs.py (the Spark parity lands both)
OTLP = traces({"service.name": "agents"}, [
    span(T, "aaaaaaaaaaaaaaaa", "", "invoke_agent boss", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "boss", "gen_ai.conversation.id": "conv-otel"}),
    span(T, "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "chat o3", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "o3",
        "gen_ai.response.id": "otel-1", "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10,
        "user.id": "dave"}),
]) + "\n"

PRINCIPAL_COLS = ("api_key, user_id, end_user_id, project_id, workspace_id, session_id, trace_id, span_id, "
                  "parent_span_id, agent_name, tags")


def _build(tmp_path, extra=None):
    landing = write_files(tmp_path / "landing", {
        **PRICES, **(extra or {}),
        "telemetry/requests/calls.jsonl": "".join(json.dumps(r) + "\n" for r in REQUESTS),
        "telemetry/litellm_spendlogs/spend.jsonl": "".join(json.dumps(r) + "\n" for r in SPENDLOGS),
        "telemetry/otel/traces.jsonl": OTLP,
    })
    return build_warehouse(landing, tmp_path / "w.duckdb")


def test_principals_from_every_call_source(tmp_path):
    con, summary = _build(tmp_path)
    rows = {r[0]: r[1:] for r in con.execute(f"SELECT request_id, {PRINCIPAL_COLS} FROM core.call_costs").fetchall()}
    assert rows["resp_p1"] == (KEY_HASH, "alice@example.com", "cust-42", "proj_abc", None, "conv-1", None, None, None,
                               None, '{"env":"prod","batchjob":""}')
    assert rows["msg_p2"] == ("apikey_01Rj2N8SVvo6BePZj99NhmiT", "bob", None, None, "wrkspc_01JwQvzr7rXLA5AGx3HKfFUJ",
                              None, "0af7651916cd43dd8448eb211c80319c", None, None, "reviewer", '{"env":"dev"}')
    assert rows["msg_p3"][0] == "ci-bot"
    assert rows["ll-1"] == (KEY_HASH, "carol", "cust-7", "proj_ll", None, "sess-9", None, None, None, "triage",
                            '{"support":"","tier":"gold"}')
    # OTel: the conversation is on the invoke_agent ancestor, the user on the chat span
    assert rows["otel-1"] == (None, "dave", None, None, None, "conv-otel", T, "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa",
                              "boss", None)
    # core.calls carries the same columns
    assert con.execute(f"SELECT {PRINCIPAL_COLS} FROM core.calls WHERE request_id = 'msg_p2'").fetchone() == rows["msg_p2"]


def test_secret_looking_key_is_quarantined_and_never_stored(tmp_path):
    con, summary = _build(tmp_path)
    (f,) = [r for r in summary.files if r.file.endswith("calls.jsonl")]
    assert (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) == (4, 3, 0, 1)
    (line, field, reason, raw), = con.execute(
        "SELECT line, field, reason, raw FROM ops.quarantine WHERE file_id = (SELECT file_id FROM ops.ingested_files "
        "WHERE file LIKE '%calls.jsonl')").fetchall()
    assert line == 4 and "metadata.api_key" in field and "secret" in reason
    assert SECRET not in raw and "<redacted>" in raw
    assert con.execute("SELECT count(*) FROM stg.requests WHERE request_id = 'msg_p4'").fetchone()[0] == 0
    stored = con.execute("SELECT count(*) FROM ops.quarantine WHERE contains(coalesce(raw, '') || coalesce(reason, ''), ?)",
                         [SECRET[:30]]).fetchone()[0]
    assert stored == 0


def test_cache_savings_by_hand(tmp_path):
    con, _ = _build(tmp_path)
    got = dict(con.execute("SELECT request_id, cache_savings_usd FROM core.call_costs "
                           "WHERE request_id IN ('resp_p1', 'msg_p2', 'msg_p3')").fetchall())
    assert got == {"resp_p1": D("0.00375"), "msg_p2": D("0.0093"), "msg_p3": D("-0.0075")}


# catalog/cost_centers.csv: line 1 is the header; lines 5 and 8 are bad rows
COST_CENTERS = """cost_center,field,pattern
platform,api_key,ci-*
research,tag:env,dev
gold-support,tag:tier,gold
bad-field,colour,red
growth,user,alice@*
agents-cc,team,agent?
bad-glob,api_key,[abc
catch-all-search,team,search
"""
MORE = [
    # no team, no principal: 'unallocated'
    {"ts": "2026-06-30T14:00:00Z", "id": "msg_p5", "type": "message", "model": "claude-x", "provider": "anthropic",
     "usage": {"input_tokens": 10, "output_tokens": 1}},
    # a team no rule names: its team
    {"ts": "2026-06-30T15:00:00Z", "id": "msg_p6", "type": "message", "model": "claude-x", "provider": "anthropic",
     "team": "ops", "usage": {"input_tokens": 10, "output_tokens": 1}},
]


def test_cost_centers_first_matching_rule_wins(tmp_path):
    """resp_p1 (team search, user alice@...): rule 'growth' (line 6) comes before 'catch-all-search'
    (line 9), so growth. msg_p2: tag env=dev -> research (line 3). msg_p3: key alias ci-bot ->
    platform (line 2). ll-1: tag tier=gold (line 4) before its team search (line 9) -> gold-support.
    otel-1: team 'agents' = agent? -> agents-cc. msg_p5: nothing, no team -> unallocated. msg_p6: no
    rule, team ops -> ops."""
    con, summary = _build(tmp_path, {
        "catalog/cost_centers.csv": COST_CENTERS,
        "telemetry/requests/more.jsonl": "".join(json.dumps(r) + "\n" for r in MORE),
    })
    got = dict(con.execute("SELECT request_id, cost_center FROM core.call_costs").fetchall())
    assert got == {"resp_p1": "growth", "msg_p2": "research", "msg_p3": "platform", "ll-1": "gold-support",
                   "otel-1": "agents-cc", "msg_p5": "unallocated", "msg_p6": "ops"}
    (f,) = [r for r in summary.files if r.file.endswith("cost_centers.csv")]
    assert (f.rows_in, f.rows_loaded, f.rows_quarantined) == (8, 6, 2)
    bad = con.execute("SELECT line, field, reason FROM ops.quarantine WHERE file_id = (SELECT file_id FROM "
                      "ops.ingested_files WHERE file LIKE '%cost_centers.csv') ORDER BY line").fetchall()
    assert [(b[0], b[1]) for b in bad] == [(5, "field"), (8, "pattern")]
    assert "unknown field 'colour'" in bad[0][2] and "without its ']'" in bad[1][2]
