"""OpenTelemetry GenAI spans (telemetry/otel/, sources/otel.py) through the real ingest and models.

Hand-worked trace T1 (one OTLP/JSON line, resource service.name 'agent-svc', service.namespace 'search'):

    run                      (root, no gen_ai attributes)
    └─ invoke_agent planner  usage 9,000 in / 16,000 out = the sum of its two children (an aggregate)
       ├─ chat o3  (current names)  input 8,000 of which 2,000 cache reads, output 15,500 of which
       │                            15,000 reasoning, gen_ai.provider.name openai, response id resp_1,
       │                            openai.response.service_tier 'default'
       ├─ chat o3  (old names)      gen_ai.usage.prompt_tokens 1,000 / completion_tokens 500,
       │                            gen_ai.system openai, no response id
       ├─ execute_tool search       (no cost)
       └─ chat o3                   no usage at all -> quarantined

Prices (USD per 1M tokens): o3 input 2.50, cached 0.625, output 12 (reasoning at the output
price); claude-x input 3, cached 0.30, cache write 3.75, output 15.
* resp_1: 6,000 x 2.50 + 2,000 x 0.625 + 15,000 x 12 + 500 x 12 = 0.015 + 0.00125 + 0.18 + 0.006 = 0.20225
* the old-names call: 1,000 x 2.50 + 500 x 12 = 0.0025 + 0.006 = 0.0085
* invoke_agent's own usage, if it were counted, would add 9,000 x 2.50 + 16,000 x 12 = 0.2145 more.
Trace T2 (a second line, no invoke_agent; root span 'nightly-review' is itself a chat span's parent):
* claude-x chat: input 7,000 = 1,000 uncached + 4,000 cache reads + 2,000 cache writes, output 3,000
  of which 2,500 reasoning -> 0.003 + 0.0012 + 0.0075 + 0.0375 + 0.0075 = 0.0567; task type
  'nightly-review' (the root's name); resource without service.namespace -> team = service.name.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal as D

import pytest

from tests.conftest import build_warehouse, write_files
from services.config import Config, Otel

PRICES = {
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2.50,0.625,,12,USD\n"
        "anthropic,claude-x,3,0.30,3.75,15,USD\n"
    ),
}
T1 = "0af7651916cd43dd8448eb211c80319c"
T2 = "4bf92f3577b34da6a3ce929d0e0e4736"
END = 1782813600_000000000  # 2026-06-30T10:00:00Z in ns


def kv(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP/JSON: int64 as a string
    return {"key": key, "value": {"stringValue": value}}


def span(trace, sid, parent, name, attrs, end=END):
    return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": name, "kind": 3,
            "startTimeUnixNano": str(end - 2_000_000_000), "endTimeUnixNano": str(end),
            "attributes": [kv(k, v) for k, v in attrs.items()], "status": {}}


def traces(resource: dict, spans: list[dict]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [kv(k, v) for k, v in resource.items()]},
                                          "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                                                          "spans": spans}]}]})


AGENT = span(T1, "00f067aa0ba902b7", "b7ad6b7169203331", "invoke_agent planner", {
    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "o3", "gen_ai.usage.input_tokens": 9000, "gen_ai.usage.output_tokens": 16000})
LINE1 = traces({"service.name": "agent-svc", "service.namespace": "search", "app.team": "research"}, [
    span(T1, "b7ad6b7169203331", "", "run", {}),
    AGENT,
    span(T1, "1111111111111111", "00f067aa0ba902b7", "chat o3", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "o3",
        "gen_ai.response.model": "o3-2025-04-16", "gen_ai.response.id": "resp_1",
        "gen_ai.usage.input_tokens": 8000, "gen_ai.usage.cache_read.input_tokens": 2000,
        "gen_ai.usage.output_tokens": 15500, "gen_ai.usage.reasoning.output_tokens": 15000,
        "openai.response.service_tier": "default"}),
    span(T1, "2222222222222222", "00f067aa0ba902b7", "chat o3", {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "o3",
        "gen_ai.usage.prompt_tokens": 1000, "gen_ai.usage.completion_tokens": 500}),
    span(T1, "3333333333333333", "00f067aa0ba902b7", "execute_tool search", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}),
    span(T1, "4444444444444444", "00f067aa0ba902b7", "chat o3", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "o3"}),
])
LINE2 = traces({"service.name": "reviewer"}, [
    span(T2, "5555555555555555", "", "nightly-review", {}),
    span(T2, "6666666666666666", "5555555555555555", "chat claude-x", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-x",
        "gen_ai.response.id": "msg_1", "gen_ai.usage.input_tokens": 7000,
        "gen_ai.usage.cache_read.input_tokens": 4000, "gen_ai.usage.cache_creation.input_tokens": 2000,
        "gen_ai.usage.output_tokens": 3000, "gen_ai.usage.reasoning.output_tokens": 2500}),
])
OTLP = LINE1 + "\n" + LINE2 + "\n"


def _build(tmp_path, files, config=None):
    landing = write_files(tmp_path / "landing", {**PRICES, **files})
    return build_warehouse(landing, tmp_path / "w.duckdb", config=config)


def test_nested_agent_trace_costs_only_the_model_calls(tmp_path):
    con, summary = _build(tmp_path, {"telemetry/otel/traces.jsonl": OTLP})
    (f,) = [r for r in summary.files if r.format == "otlp_json"]
    # records = the model-call spans: 3 in T1 + 1 in T2; invoke_agent, execute_tool, run are not calls
    assert (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) == (4, 3, 0, 1)
    q = con.execute("SELECT line, field, reason, raw FROM ops.quarantine WHERE file_id = (SELECT file_id FROM "
                    "ops.ingested_files WHERE format = 'otlp_json')").fetchall()
    assert q == [(1, "gen_ai.usage", "model call without usage (no gen_ai.usage.input_tokens / output_tokens, "
                  "nor the old prompt_tokens / completion_tokens)", f"span 4444444444444444 (chat o3) of trace {T1}")]
    old = f"{T1}-2222222222222222"  # no gen_ai.response.id: trace id + span id
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT request_id, model, provider, task_id, task_type, team, service_tier, uncached_input_tokens, "
        "cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens, CAST(ts AS VARCHAR) FROM stg.requests").fetchall()}
    assert rows == {
        "resp_1": ("o3-2025-04-16", "openai", T1, "planner", "search", "standard", 6000, 2000, 0, 15000, 500, "2026-06-30 10:00:00"),
        old: ("o3", "openai", T1, "planner", "search", None, 1000, 0, 0, 0, 500, "2026-06-30 10:00:00"),
        "msg_1": ("claude-x", "anthropic", T2, "nightly-review", "reviewer", None, 1000, 4000, 2000, 2500, 500, "2026-06-30 10:00:00"),
    }
    costs = dict(con.execute("SELECT request_id, cost_usd FROM core.call_costs").fetchall())
    assert costs == {"resp_1": D("0.20225"), old: D("0.0085"), "msg_1": D("0.0567")}
    # the task (trace T1) costs its two calls, not the agent's aggregate on top: 0.20225 + 0.0085
    assert con.execute("SELECT sum(cost_usd) FROM core.call_costs WHERE task_id = ?", [T1]).fetchall() == [(D("0.21075"),)]


def test_costs_equal_the_same_calls_written_as_per_request_jsonl(tmp_path):
    con, _ = _build(tmp_path / "a", {"telemetry/otel/traces.jsonl": OTLP})
    via_otel = sorted(r[0] for r in con.execute("SELECT cost_usd FROM core.call_costs").fetchall())
    jsonl = "\n".join([
        '{"ts":"2026-06-30T10:00:00Z","request_id":"j1","model":"o3-2025-04-16","provider":"openai",'
        '"usage":{"prompt_tokens":8000,"completion_tokens":15500,"prompt_tokens_details":{"cached_tokens":2000},'
        '"completion_tokens_details":{"reasoning_tokens":15000}}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"j2","model":"o3","provider":"openai",'
        '"usage":{"prompt_tokens":1000,"completion_tokens":500}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"j3","model":"claude-x","provider":"anthropic",'
        '"usage":{"input_tokens":1000,"cache_read_input_tokens":4000,"cache_creation_input_tokens":2000,'
        '"output_tokens":3000,"thinking_tokens":2500}}',
    ]) + "\n"
    con2, _ = _build(tmp_path / "b", {"telemetry/requests/calls.jsonl": jsonl})
    via_jsonl = sorted(r[0] for r in con2.execute("SELECT cost_usd FROM core.call_costs").fetchall())
    assert via_otel == via_jsonl == [D("0.0085"), D("0.0567"), D("0.20225")]


def test_gzip_and_a_pretty_printed_json_document_read_the_same(tmp_path):
    pretty = json.dumps(json.loads(LINE2), indent=2)
    con, summary = _build(tmp_path, {"telemetry/otel/a.jsonl.gz": gzip.compress(LINE1.encode()),
                                     "telemetry/otel/b.json": pretty})
    by = {r.file: (r.rows_in, r.rows_loaded, r.rows_quarantined) for r in summary.files if r.format == "otlp_json"}
    assert by == {"telemetry/otel/a.jsonl.gz": (3, 2, 1), "telemetry/otel/b.json": (1, 1, 0)}
    assert con.execute("SELECT sum(cost_usd) FROM core.call_costs").fetchall() == [(D("0.26745"),)]  # 0.20225 + 0.0085 + 0.0567


def test_team_attribute_from_thinktax_toml(tmp_path):
    con, _ = _build(tmp_path, {"telemetry/otel/traces.jsonl": OTLP}, config=Config(otel=Otel(team_attribute="app.team")))
    # T1's resource has app.team; T2's has not: its service.name
    assert sorted(con.execute("SELECT DISTINCT team FROM stg.requests").fetchall()) == [("research",), ("reviewer",)]


def test_a_span_re_exported_is_a_duplicate_and_bad_lines_are_quarantined(tmp_path):
    bad_id = LINE2.replace('"spanId": "6666666666666666"', '"spanId": "666666666666666"')  # 15 hex digits
    outlier = LINE2.replace('"msg_1"', '"msg_2"').replace('{"intValue": "3000"}', '{"intValue": "30000000000"}')
    files = {"telemetry/otel/1.jsonl": OTLP,
             "telemetry/otel/2.jsonl": LINE2 + "\n" + bad_id + "\n" + "{not json\n" + outlier + "\n"}
    con, summary = _build(tmp_path, files)
    by = {r.file: (r.rows_in, r.rows_loaded, r.rows_duplicate, r.rows_quarantined) for r in summary.files if r.format == "otlp_json"}
    # 2.jsonl: msg_1 again (duplicate), a line with a bad span id, a line that is not JSON, an outlier count
    assert by["telemetry/otel/2.jsonl"] == (4, 0, 1, 3)
    reasons = con.execute("SELECT line, field, reason FROM ops.quarantine q JOIN ops.ingested_files f USING (file_id) "
                          "WHERE f.file = 'telemetry/otel/2.jsonl' ORDER BY line").fetchall()
    assert [r[0] for r in reasons] == [2, 3, 4]
    assert reasons[0][1:] == ("spanId", "not 16 hex digits") and reasons[1][2].startswith("not OTLP/JSON TracesData")
    assert reasons[2][1:] == ("gen_ai.usage.output_tokens", "above 10,000,000 tokens, more than any context window (an outlier): 30000000000")


@pytest.mark.parametrize("op", ["text_completion", "generate_content"])
def test_the_other_model_call_operations_are_costed(tmp_path, op):
    line = LINE2.replace('"stringValue": "chat"', f'"stringValue": "{op}"')
    con, _ = _build(tmp_path, {"telemetry/otel/t.jsonl": line + "\n"})
    assert con.execute("SELECT request_id, cost_usd FROM core.call_costs").fetchall() == [("msg_1", D("0.0567"))]


def test_thinktax_run_publishes_spans_and_spend_logs_through_every_check(tmp_path, capsys):
    """The real pipeline (Dagster, Great Expectations suites, blocking checks) on OTel spans and a
    landed LiteLLM spend log: it publishes, and marts.cost_crosscheck / marts.focus_costs read them.
    The spend log row is resp_1's call again under another request id, reported at 0.25 USD
    (thinktax: 0.20225, so it differs by 0.04775)."""
    from thinktax.cli import main

    spend = json.dumps({"request_id": "ll-1", "call_type": "acompletion", "spend": 0.25, "prompt_tokens": 8000,
                        "completion_tokens": 15500, "startTime": "2026-06-30T11:00:00", "model": "o3",
                        "custom_llm_provider": "openai", "status": "success", "request_tags": ["qa"],
                        "metadata": {"usage_object": {"prompt_tokens": 8000, "completion_tokens": 15500,
                                                      "prompt_tokens_details": {"cached_tokens": 2000},
                                                      "completion_tokens_details": {"reasoning_tokens": 15000}}}})
    landing = write_files(tmp_path / "landing", {**PRICES, "telemetry/otel/traces.jsonl.gz": gzip.compress(OTLP.encode()),
                                                 "telemetry/litellm_spendlogs/spendlogs.1.jsonl": spend + "\n"})
    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--quiet"]) == 0, capsys.readouterr().err
    assert main(["sql", "SELECT provider, model, calls, thinktax_cost_usd, reported_cost_usd, difference_usd, differing_calls "
                        "FROM marts.cost_crosscheck", "--warehouse", str(wh), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"provider": "openai", "model": "o3", "calls": 1, "thinktax_cost_usd": "0.202250",
                                                   "reported_cost_usd": "0.250000", "difference_usd": "0.047750", "differing_calls": 1}]
    # API spend in FOCUS = the four calls: 0.20225 + 0.0085 + 0.0567 + 0.20225
    assert main(["sql", "SELECT sum(BilledCost) FROM marts.focus_costs WHERE x_Source = 'api_usage'",
                 "--warehouse", str(wh), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0.469700"


# -- the names the instrumentations write (tests/sources/test_otel_instrumentations.py runs the real packages) --

T3 = "5bf92f3577b34da6a3ce929d0e0e4737"


def _one(attrs, scope="x", root_attrs=None, config=None, tmp_path=None):
    """One span (its parent the trace's root) under the scope named; (stg rows, quarantine)."""
    line = json.dumps({"resourceSpans": [{"resource": {"attributes": [kv("service.name", "svc")]}, "scopeSpans": [
        {"scope": {"name": "root"}, "spans": [span(T3, "7777777777777777", "", "job", root_attrs or {})]},
        {"scope": {"name": scope}, "spans": [span(T3, "8888888888888888", "7777777777777777", "call", attrs)]}]}]})
    con, _ = _build(tmp_path, {"telemetry/otel/t.jsonl": line + "\n"}, config)
    rows = con.execute("SELECT provider, model, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                       "thinking_tokens, output_tokens FROM stg.requests").fetchall()
    return rows, con.execute("SELECT field, reason FROM ops.quarantine").fetchall()


def test_cache_write_under_the_current_name_and_the_old_one(tmp_path):
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "AWS.Bedrock", "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 10, "gen_ai.usage.cache_read.input_tokens": 100}
    # the current name (semantic-conventions-genai #440), lower-cased provider passed through
    rows, _ = _one({**base, "gen_ai.usage.cache_write.input_tokens": 300}, tmp_path=tmp_path / "a")
    assert rows == [("aws.bedrock", "m", 600, 100, 300, 0, 10)]
    # both names, the same count: one count
    rows, q = _one({**base, "gen_ai.usage.cache_write.input_tokens": 300, "gen_ai.usage.cache_creation.input_tokens": 300},
                   tmp_path=tmp_path / "b")
    assert rows == [("aws.bedrock", "m", 600, 100, 300, 0, 10)] and q == []
    # both names, different counts: quarantined with both
    rows, q = _one({**base, "gen_ai.usage.cache_write.input_tokens": 300, "gen_ai.usage.cache_creation.input_tokens": 200},
                   tmp_path=tmp_path / "c")
    assert rows == [] and q == [("gen_ai.usage.cache_write.input_tokens", "names of one count disagree: "
                                 "gen_ai.usage.cache_write.input_tokens = 300, gen_ai.usage.cache_creation.input_tokens = 200")]


@pytest.mark.parametrize("provider", ["aws.bedrock", "gcp.vertex_ai", "gcp.gemini", "azure.ai.openai"])
def test_provider_names_pass_through_lower_cased(tmp_path, provider):
    rows, _ = _one({"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider.upper(), "gen_ai.request.model": "m",
                    "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 1}, tmp_path=tmp_path)
    assert rows == [(provider, "m", 5, 0, 0, 0, 1)]


def test_openllmetry_flat_names_and_llm_request_type(tmp_path):
    # an older OpenLLMetry span: no gen_ai.operation.name, llm.request.type = chat, flat cache names
    rows, _ = _one({"llm.request.type": "chat", "gen_ai.system": "Anthropic", "gen_ai.request.model": "claude-x",
                    "gen_ai.usage.prompt_tokens": 7000, "gen_ai.usage.completion_tokens": 3000,
                    "gen_ai.usage.cache_read_input_tokens": 4000, "gen_ai.usage.cache_creation_input_tokens": 2000,
                    "llm.usage.total_tokens": 10000}, scope="opentelemetry.instrumentation.anthropic", tmp_path=tmp_path)
    assert rows == [("anthropic", "claude-x", 1000, 4000, 2000, 0, 3000)]


def test_openinference_llm_span_is_a_model_call_and_its_agent_span_is_not(tmp_path):
    llm = {"openinference.span.kind": "LLM", "llm.provider": "anthropic", "llm.system": "anthropic",
           "llm.model_name": "claude-x", "llm.token_count.prompt": 7000, "llm.token_count.completion": 3000,
           "llm.token_count.prompt_details.cache_read": 4000, "llm.token_count.prompt_details.cache_write": 2000,
           "llm.token_count.completion_details.reasoning": 2500}
    rows, q = _one(llm, root_attrs={"openinference.span.kind": "AGENT", "llm.token_count.prompt": 9, "llm.token_count.completion": 9},
                   scope="openinference.instrumentation.anthropic", tmp_path=tmp_path)
    assert rows == [("anthropic", "claude-x", 1000, 4000, 2000, 2500, 500)] and q == []


def test_pydantic_ai_usage_details(tmp_path):
    rows, _ = _one({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "o3",
                    "gen_ai.usage.input_tokens": 1930, "gen_ai.usage.output_tokens": 466,
                    "gen_ai.usage.cache_read.input_tokens": 1792, "gen_ai.usage.details.cache_read_tokens": 1792,
                    "gen_ai.usage.details.reasoning_tokens": 384}, scope="pydantic-ai", tmp_path=tmp_path)
    assert rows == [("openai", "o3", 138, 1792, 0, 384, 82)]


@pytest.mark.parametrize("scope, want", [
    # input without the cache (Bedrock's inputTokens, Anthropic's input_tokens as sent)
    ("opentelemetry.instrumentation.bedrock", (1000, 4000, 2000, 0, 300)),
    ("openlit.instrumentation.anthropic", (1000, 4000, 2000, 0, 300)),
    ("openlit.instrumentation.bedrock", (1000, 4000, 2000, 0, 300)),
    # the conventions' meaning: input 1,000 cannot hold 6,000 of cache
    ("opentelemetry.instrumentation.anthropic", None),
])
def test_instrumentations_whose_input_excludes_the_cache(tmp_path, scope, want):
    rows, q = _one({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "aws.bedrock", "gen_ai.request.model": "m",
                    "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 300,
                    "gen_ai.usage.cache_read.input_tokens": 4000, "gen_ai.usage.cache_creation.input_tokens": 2000},
                   scope=scope, tmp_path=tmp_path)
    if want is None:
        assert rows == [] and q[0][1] == "cache reads + writes exceed the input tokens they are part of"
    else:
        assert rows == [("aws.bedrock", "m", *want)]


def test_openlit_gemini_output_excludes_the_thoughts(tmp_path):
    # openlit: output = candidatesTokenCount, gen_ai.usage.reasoning_tokens = thoughtsTokenCount beside it
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "gemini", "gen_ai.request.model": "gemini-2.5-flash",
             "gen_ai.usage.input_tokens": 12410, "gen_ai.usage.cache_read.input_tokens": 11264,
             "gen_ai.usage.output_tokens": 57, "gen_ai.usage.reasoning_tokens": 612}
    rows, _ = _one(attrs, scope="openlit.instrumentation.google_ai_studio", tmp_path=tmp_path / "a")
    assert rows == [("gemini", "gemini-2.5-flash", 1146, 11264, 0, 612, 57)]
    # the same attributes from OpenLLMetry (reasoning part of the output): 612 > 57 is quarantined
    rows, q = _one(attrs, scope="opentelemetry.instrumentation.openai", tmp_path=tmp_path / "b")
    assert rows == [] and q[0][0] == "gen_ai.usage.reasoning.output_tokens"
