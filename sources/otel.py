"""OpenTelemetry GenAI spans (``telemetry/otel/*.jsonl|.json[.gz]``): OTLP/JSON as the
OpenTelemetry Collector's file exporter writes it, one ``TracesData`` object a line
(``resourceSpans[].scopeSpans[].spans[]``); a ``.json`` file may also hold one pretty-printed
``TracesData`` document.

Reading: each line goes through the maintained OTLP protobuf definitions
(``opentelemetry.proto.trace.v1.trace_pb2.TracesData``) with protobuf's JSON mapping
(``google.protobuf.json_format``), which reads the camelCase and snake_case field names, int64 as
strings, enum numbers and the ``{key, value: {stringValue|intValue|doubleValue|boolValue}}``
attributes. OTLP/JSON writes trace and span ids as hex where the proto3 mapping expects base64;
hex digits are base64 characters and the ids' lengths (32, 16) are multiples of 4, so the bytes
the mapping decodes encode back to the exact hex text, which is what thinktax keeps. A line the
mapping rejects is quarantined with its message. The spans are flattened into Arrow tables (one
row per span, one per GenAI attribute) and everything per span is decided in one DuckDB query.

The GenAI semantic conventions (open-telemetry/semantic-conventions, docs/gen-ai) and the names
the instrumentations people run write instead:

* A span is a model call when ``gen_ai.operation.name`` is ``chat``, ``text_completion`` or
  ``generate_content``; without ``gen_ai.operation.name``, when OpenInference's
  ``openinference.span.kind`` is ``LLM`` or OpenLLMetry's older ``llm.request.type`` is ``chat`` or
  ``completion``. Those are the records of this source (rows_in); ``invoke_agent``,
  ``execute_tool``, OpenInference AGENT/CHAIN/TOOL and every other span carry no cost: their usage
  attributes, where present, sum their children and are never counted again.
* usage, each count under every name it is written under (names of one count that disagree
  quarantine the span): input I ``gen_ai.usage.input_tokens`` | ``gen_ai.usage.prompt_tokens`` |
  ``llm.token_count.prompt``; cache reads R ``gen_ai.usage.cache_read.input_tokens`` |
  ``gen_ai.usage.cache_read_input_tokens`` | ``llm.token_count.prompt_details.cache_read`` |
  ``gen_ai.usage.details.cache_read_tokens``; cache writes W ``gen_ai.usage.cache_write.input_tokens``
  (semantic-conventions-genai #440) | ``gen_ai.usage.cache_creation.input_tokens`` (its old name) |
  ``gen_ai.usage.cache_creation_input_tokens`` | ``llm.token_count.prompt_details.cache_write`` |
  ``gen_ai.usage.details.cache_write_tokens``; output O ``gen_ai.usage.output_tokens`` |
  ``gen_ai.usage.completion_tokens`` | ``llm.token_count.completion``; reasoning T
  ``gen_ai.usage.reasoning.output_tokens`` | ``gen_ai.usage.reasoning_tokens`` |
  ``llm.token_count.completion_details.reasoning`` | ``gen_ai.usage.details.reasoning_tokens``.
* What I and O hold is the instrumentation's own choice, told by the span's instrumentation scope
  (``_SCOPE_MEANINGS``). The conventions: I = the whole prompt (R and W in it), O = the whole
  completion (T in it): buckets uncached I-R-W, cached R, write W, thinking T, output O-T. Where I
  excludes the cache: uncached I. Where O excludes the reasoning: output O. Read from each package's
  code (the versions of tools/otel-instrumentations.txt; tests/sources/test_otel_instrumentations.py runs
  them against provider response bodies):

  ========================================  ==========  ===========================================  ====================
  instrumentation (scope name)              version     where I read it                              I includes R, W? O includes T?
  ========================================  ==========  ===========================================  ====================
  opentelemetry-instrumentation-openai-v2   2.4b0       openai_v2/patch.py:524 (prompt_tokens)       yes (OpenAI's); no R, no T written
  opentelemetry-instrumentation-google-     1.1b1       google_genai/generate_content.py:400-425     yes (promptTokenCount); O = candidates
  genai                                                 (output = candidates + thoughts)             + thoughts: yes
  opentelemetry-instrumentation-openai      0.62.4      openai/shared/__init__.py:283-289,           yes; T = reasoning_tokens (flat): yes
  (OpenLLMetry)                                         shared/chat_wrappers.py:336-353
  opentelemetry-instrumentation-anthropic   0.62.4      anthropic/__init__.py:226-305                yes (input+R+W added); no T written
  (OpenLLMetry)                                         (input_tokens = prompt + cache read + write)
  opentelemetry-instrumentation-bedrock     0.62.4      bedrock/span_utils.py:1070-1098 (Converse    NO: inputTokens / input_tokens as sent;
  (OpenLLMetry)                                         inputTokens), prompt_caching.py:20-70        R, W from X-Amzn-Bedrock-* headers
                                                        (InvokeModel R, W from headers)
  openlit (openlit.instrumentation.openai)  1.45.0      instrumentation/openai/utils.py:742-751,907  yes; no T written for chat
  openlit (...anthropic)                    1.45.0      instrumentation/anthropic/utils.py:577-593   NO (input_tokens as sent); no T
  openlit (...bedrock)                      1.45.0      instrumentation/bedrock/utils.py:374-413     NO (Converse inputTokens); no span
                                                                                                     for InvokeModel
  openlit (...google_ai_studio)             1.45.0      instrumentation/google_ai_studio/utils.py:   yes; O = candidatesTokenCount: NO,
                                                        548-552                                      T = gen_ai.usage.reasoning_tokens
  openinference-instrumentation-openai      0.1.66      openai/_response_attributes_extractor.py:    yes; yes
                                                        314-321
  openinference-instrumentation-anthropic   3.1.0       anthropic/_utils.py:24-57 (prompt = input    yes; yes (thinking_tokens)
                                                        + cache read + cache write)
  pydantic-ai-slim (scope pydantic-ai)      2.31.1      pydantic_ai/usage.py:101-105, 222-246        yes ("included in input_tokens");
                                                                                                     T = details.reasoning_tokens: yes
  anthropic SDK (com.anthropic.sdk.python)  2.16.0      anthropic/lib/_tracing/_response.py:56-59,   yes (input + R + W); yes
                                                        anthropic/_tracing.py:113-128
  ========================================  ==========  ===========================================  ====================

* provider = ``gen_ai.provider.name``, else the deprecated ``gen_ai.system``, OpenInference's
  ``llm.provider``, ``llm.system`` (lower case, passed through: ``aws.bedrock``, ``gcp.vertex_ai``,
  ``azure.ai.openai`` ... are normalised downstream); model = ``gen_ai.response.model``, else
  ``llm.model_name``, ``gen_ai.request.model``, ``llm.request.model_name``; ts = the span's end
  (UTC); service tier = ``openai.response.service_tier`` (as in the per-request JSONL: default/auto -> standard);
  request id = ``gen_ai.response.id``, else ``<trace id>-<span id>``.
* task = the trace id; task type = ``gen_ai.agent.name`` of the nearest ``invoke_agent``
  ancestor, else the name of the trace's root span (ancestors are looked up among the spans of
  the same file); team = the resource attribute named by ``[otel] team_attribute`` in
  thinktax.toml (default ``service.namespace``), else ``service.name``.
* Quarantined with a reason: a model-call span without usage (neither input nor output tokens),
  one of the two missing, a count that is not a whole number >= 0 or is above 10M, two names of one
  count with different values, cache reads + writes above an input that holds them, reasoning
  above an output that holds it, no model, an end time before 2015 or more than a day after
  ingest, an unknown service tier.
"""

from __future__ import annotations

import base64
import datetime as dt
import json

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import json_format
from opentelemetry.proto.trace.v1 import trace_pb2

from sources.base import Parsed, ParseContext, Reject, SourceFormatError, head_text
from sources.registry import SourceSpec
from sources.contract import MAX_TOKENS_PER_CALL as MAX_TOKENS, PRINCIPALS, secret_checks_sql
from sources.requests import _TIERS
from sources.fieldguard import Unknown, known_fields

TABLE = "stg.requests"
SIDE = "stg.agent_spans"
COST_OPERATIONS = ("chat", "text_completion", "generate_content")
OPENLLMETRY_REQUEST_TYPES = ("chat", "completion")  # llm.request.type, OpenLLMetry before gen_ai.operation.name

# the span attributes read (anything else, e.g. message contents, is never copied)
_KEYS = {
    "op": "gen_ai.operation.name",
    "oi_kind": "openinference.span.kind",
    "llm_request_type": "llm.request.type",
    "provider_name": "gen_ai.provider.name",
    "system": "gen_ai.system",
    "llm_provider": "llm.provider",
    "llm_system": "llm.system",
    "response_model": "gen_ai.response.model",
    "request_model": "gen_ai.request.model",
    "llm_model_name": "llm.model_name",
    "llm_request_model_name": "llm.request.model_name",
    "response_id": "gen_ai.response.id",
    "agent_name": "gen_ai.agent.name",
    "service_tier": "openai.response.service_tier",
    # issue 41: the conversation (GenAI conventions gen_ai.conversation.id; OpenInference session.id)
    # and the user (OpenInference user.id; the general conventions' user.id, formerly enduser.id)
    "conversation_id": "gen_ai.conversation.id",
    "oi_session_id": "session.id",
    "user_attr": "user.id",
    "enduser_attr": "enduser.id",
}
# The token counts, each bucket with every name it is written under (first = the name a reason
# gives when the bucket has none). A span may carry several names of one bucket (pydantic-ai writes
# gen_ai.usage.cache_read.input_tokens and gen_ai.usage.details.cache_read_tokens, a semconv
# upgrade may leave the old name beside the new): equal values are one count, different values
# quarantine the span.
_COUNTS = {
    "p_input": {"in_tokens": "gen_ai.usage.input_tokens", "prompt_tokens": "gen_ai.usage.prompt_tokens",
                "oi_prompt": "llm.token_count.prompt"},
    "p_output": {"out_tokens": "gen_ai.usage.output_tokens", "completion_tokens": "gen_ai.usage.completion_tokens",
                 "oi_completion": "llm.token_count.completion"},
    "p_cache_read": {"cache_read": "gen_ai.usage.cache_read.input_tokens",
                     "cache_read_flat": "gen_ai.usage.cache_read_input_tokens",
                     "oi_cache_read": "llm.token_count.prompt_details.cache_read",
                     "pa_cache_read": "gen_ai.usage.details.cache_read_tokens"},
    "p_cache_write": {"cache_write": "gen_ai.usage.cache_write.input_tokens",
                      "cache_creation": "gen_ai.usage.cache_creation.input_tokens",
                      "cache_creation_flat": "gen_ai.usage.cache_creation_input_tokens",
                      "oi_cache_write": "llm.token_count.prompt_details.cache_write",
                      "pa_cache_write": "gen_ai.usage.details.cache_write_tokens"},
    "p_reasoning": {"reasoning": "gen_ai.usage.reasoning.output_tokens",
                    "reasoning_flat": "gen_ai.usage.reasoning_tokens",
                    "oi_reasoning": "llm.token_count.completion_details.reasoning",
                    "pa_reasoning": "gen_ai.usage.details.reasoning_tokens"},
}
_KEYS.update({n: k for names in _COUNTS.values() for n, k in names.items()})
# Instrumentation scopes whose counts do not mean what the GenAI conventions say (input = all of the
# prompt, cache reads and writes included; output = all of the completion, reasoning included):
# (scope name, input includes cache reads + writes, output includes reasoning). Read from each
# package's code: the table in docs/telemetry.md says where.
_SCOPE_MEANINGS = (
    ("opentelemetry.instrumentation.bedrock", False, True),   # OpenLLMetry: Bedrock's inputTokens / Anthropic's input_tokens
    ("openlit.instrumentation.anthropic", False, True),       # openlit: Anthropic's input_tokens as sent
    ("openlit.instrumentation.bedrock", False, True),         # openlit: Converse inputTokens as sent
    ("openlit.instrumentation.google_ai_studio", True, False),  # openlit: candidatesTokenCount, thoughts beside it
)
_WANTED = frozenset(_KEYS.values())
# The unknown-field guard (issue 44, sources/fieldguard.py): span attributes are an open set, so the
# guard watches the usage namespaces only. An attribute under one of these prefixes that is not in
# _WANTED (the names read above: extend _COUNTS and the guard knows it) is an ops.unknown_fields row;
# with a non-zero value on a model call, that call is partially priced.
USAGE_NAMESPACES = ("gen_ai.usage.", "llm.token_count.")
KNOWN_FIELDS = known_fields("otlp_json", {k: "VARCHAR" for k in sorted(_WANTED)})


def _text(v) -> str | None:
    """An AnyValue as text (numbers as written), None for arrays, maps, bytes, empty."""
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "int_value":
        return str(v.int_value)
    if kind == "double_value":
        return repr(v.double_value)
    if kind == "bool_value":
        return "true" if v.bool_value else "false"
    return None


def _hex(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _documents(data: bytes, name: str) -> list[tuple[int, str]]:
    """(line, JSON text) of each TracesData record: a line each, or the whole of a pretty-printed
    .json document."""
    text = data.decode("utf-8").lstrip("\ufeff")
    lines = text.split("\n")
    records = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    if name.endswith((".json", ".json.gz")) and len(records) > 1:
        try:
            json.loads(text)
        except ValueError:
            return records  # JSON Lines after all
        return [(records[0][0], text)]
    return records


def _flatten(docs: list[tuple[int, str]]) -> tuple[pa.Table, pa.Table, pa.Table, list[Reject], pa.Table]:
    """Parse each record with the OTLP JSON mapping; spans, their GenAI attributes and the
    resources' attributes as Arrow tables (the per-row decisions are SQL, in parse())."""
    sp = {k: [] for k in ("idx", "line", "trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "res", "scope")}
    at = {"idx": [], "key": [], "value": []}
    un = {"idx": [], "key": [], "value": []}  # usage attributes the parser does not read
    rs = {"res": [], "key": [], "value": []}
    rejects: list[Reject] = []
    res_n = 0
    for line, raw in docs:
        try:
            td = json_format.Parse(raw, trace_pb2.TracesData(), ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            rejects.append(Reject(line, None, f"not OTLP/JSON TracesData: {str(exc)[:300]}", raw[:2000]))
            continue
        for resource_spans in td.resource_spans:
            res_n += 1
            for kv in resource_spans.resource.attributes:
                rs["res"].append(res_n)
                rs["key"].append(kv.key)
                rs["value"].append(_text(kv.value))
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    i = len(sp["idx"])
                    sp["idx"].append(i)
                    sp["line"].append(line)
                    sp["trace_id"].append(_hex(s.trace_id))
                    sp["span_id"].append(_hex(s.span_id))
                    sp["parent_span_id"].append(_hex(s.parent_span_id))
                    sp["name"].append(s.name)
                    sp["start_ns"].append(s.start_time_unix_nano)
                    sp["end_ns"].append(s.end_time_unix_nano)
                    sp["res"].append(res_n)
                    sp["scope"].append(scope_spans.scope.name)
                    for kv in s.attributes:
                        if kv.key in _WANTED:
                            at["idx"].append(i)
                            at["key"].append(kv.key)
                            at["value"].append(_text(kv.value))
                        elif kv.key.startswith(USAGE_NAMESPACES):  # the unknown-field guard
                            un["idx"].append(i)
                            un["key"].append(kv.key)
                            un["value"].append(_text(kv.value))
    spans = pa.table({
        "idx": pa.array(sp["idx"], pa.int64()), "line": pa.array(sp["line"], pa.int64()),
        "trace_id": pa.array(sp["trace_id"], pa.string()), "span_id": pa.array(sp["span_id"], pa.string()),
        "parent_span_id": pa.array(sp["parent_span_id"], pa.string()), "name": pa.array(sp["name"], pa.string()),
        "start_ns": pa.array(sp["start_ns"], pa.uint64()), "end_ns": pa.array(sp["end_ns"], pa.uint64()), "res": pa.array(sp["res"], pa.int64()),
        "scope": pa.array(sp["scope"], pa.string()),
    })
    attrs = pa.table({"idx": pa.array(at["idx"], pa.int64()), "key": pa.array(at["key"], pa.string()),
                      "value": pa.array(at["value"], pa.string())})
    res = pa.table({"res": pa.array(rs["res"], pa.int64()), "key": pa.array(rs["key"], pa.string()),
                    "value": pa.array(rs["value"], pa.string())})
    unknown = pa.table({"idx": pa.array(un["idx"], pa.int64()), "key": pa.array(un["key"], pa.string()),
                        "value": pa.array(un["value"], pa.string())})
    return spans, attrs, res, rejects, unknown


def _sql() -> str:
    pivot = ",\n           ".join(f"max(value) FILTER (WHERE key = '{k}') AS {n}" for n, k in _KEYS.items())
    aliases = {n: k for names in _COUNTS.values() for n, k in names.items()}
    raw = ",\n           ".join(f"c.{n} AS {n}_raw" for n in aliases)
    cast = ",\n           ".join(
        f"CASE WHEN regexp_full_match(trim({n}_raw), '[0-9]+(\\.0+)?') THEN TRY_CAST(TRY_CAST(trim({n}_raw) AS DECIMAL(38,0)) AS BIGINT) END AS {n}"
        for n in aliases)
    # a bucket = its first name present (the names' values are checked to agree below)
    buckets = ",\n           ".join(
        f"coalesce({', '.join(names)}) AS {b}, coalesce({', '.join(f'{n}_raw' for n in names)}) AS {b}_raw"
        for b, names in _COUNTS.items())
    checks = "\n            ".join(
        f"WHEN {n}_raw IS NOT NULL AND {n} IS NULL THEN struct_pack(f := '{path}', r := 'not a non-negative whole number: ' || {n}_raw)\n            "
        f"WHEN {n} > {MAX_TOKENS} THEN struct_pack(f := '{path}', r := 'above {MAX_TOKENS:,} tokens, more than any context window (an outlier): ' || {n}_raw)"
        for n, path in aliases.items())
    conflicts = "\n            ".join(
        f"WHEN len(list_distinct(list_filter([{', '.join(names)}], lambda x: x IS NOT NULL))) > 1 THEN struct_pack("
        f"f := '{next(iter(names.values()))}', r := 'names of one count disagree: ' || concat_ws(', ', "
        + ", ".join(f"CASE WHEN {n} IS NOT NULL THEN '{k} = ' || {n} END" for n, k in names.items()) + "))"
        for names in _COUNTS.values() if len(names) > 1)
    meanings = ", ".join(f"('{s}', {str(i).lower()}, {str(o).lower()})" for s, i, o in _SCOPE_MEANINGS)
    tiers = ", ".join(f"'{k}'" for k in _TIERS)
    tier_case = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in _TIERS.items())
    secrets = secret_checks_sql({"session_id": "gen_ai.conversation.id | session.id", "user_id": "user.id | enduser.id",
                                 "agent_name": "gen_ai.agent.name"})
    return f"""
WITH a AS (
    SELECT idx,
           {pivot}
    FROM attrs GROUP BY idx
),
sp AS (
    SELECT s.*, a.* EXCLUDE (idx) FROM spans s LEFT JOIN a USING (idx)
),
calls AS (
    -- a model call: gen_ai.operation.name says so; without one, OpenInference's span kind LLM or
    -- OpenLLMetry's older llm.request.type
    SELECT * FROM sp
    WHERE lower(trim(op)) IN ({", ".join(f"'{o}'" for o in COST_OPERATIONS)})
       OR (op IS NULL AND (upper(trim(oi_kind)) = 'LLM'
                           OR lower(trim(llm_request_type)) IN ({", ".join(f"'{o}'" for o in OPENLLMETRY_REQUEST_TYPES)})))
),
meanings(scope, input_has_cache, output_has_reasoning) AS (
    VALUES {meanings}
),
ancestors AS (
    -- every ancestor of a model-call span among the file's spans, nearest first (depth 1 = parent)
    WITH RECURSIVE up(idx, trace_id, anc_span_id, depth) AS (
        SELECT idx, trace_id, parent_span_id, 1 FROM calls WHERE parent_span_id <> ''
        UNION ALL
        SELECT up.idx, up.trace_id, p.parent_span_id, up.depth + 1
        FROM up JOIN sp p ON p.trace_id = up.trace_id AND p.span_id = up.anc_span_id
        WHERE p.parent_span_id <> '' AND up.depth < 256
    )
    SELECT up.idx, up.depth, p.op, p.agent_name, p.name, p.parent_span_id, p.span_id AS anc_span_id,
           coalesce(nullif(trim(p.conversation_id), ''), nullif(trim(p.oi_session_id), '')) AS session_id,
           coalesce(nullif(trim(p.user_attr), ''), nullif(trim(p.enduser_attr), '')) AS user_id
    FROM up JOIN sp p ON p.trace_id = up.trace_id AND p.span_id = up.anc_span_id
),
inherited AS (
    -- the conversation and user of the nearest ancestor that names them (an agent framework sets
    -- gen_ai.conversation.id on its invoke_agent span, not always on each chat span)
    SELECT idx, arg_min(session_id, depth) FILTER (WHERE session_id IS NOT NULL) AS session_id,
           arg_min(user_id, depth) FILTER (WHERE user_id IS NOT NULL) AS user_id
    FROM ancestors GROUP BY idx
),
agent AS (
    SELECT idx, arg_min(agent_name, depth) AS agent_name, arg_min(anc_span_id, depth) AS agent_span_id
    FROM ancestors WHERE lower(trim(op)) = 'invoke_agent' GROUP BY idx
),
roots AS (
    -- the trace's root span (no parent), else the topmost ancestor found in the file
    SELECT trace_id, min(name) AS root_name FROM sp WHERE parent_span_id = '' GROUP BY trace_id
),
top AS (
    SELECT idx, arg_max(name, depth) AS top_name FROM ancestors GROUP BY idx
),
team AS (
    SELECT res,
           coalesce(max(value) FILTER (WHERE key = $team_attribute), max(value) FILTER (WHERE key = 'service.name')) AS team
    FROM resources GROUP BY res
),
fields AS (
    SELECT c.idx, c.line, c.trace_id, c.span_id, c.name,
           nullif(trim(coalesce(c.response_id, '')), '') AS response_id,
           lower(nullif(trim(coalesce(c.provider_name, c.system, c.llm_provider, c.llm_system, '')), '')) AS provider,
           coalesce(nullif(trim(c.response_model), ''), nullif(trim(c.llm_model_name), ''),
                    nullif(trim(c.request_model), ''), nullif(trim(c.llm_request_model_name), '')) AS model,
           CASE WHEN c.end_ns > 0 THEN make_timestamp(CAST(c.end_ns // 1000 AS BIGINT)) END AS ts,
           lower(nullif(trim(c.service_tier), '')) AS tier_raw,
           nullif(trim(coalesce(ag.agent_name, r.root_name, tp.top_name, c.name)), '') AS task_type,
           nullif(trim(t.team), '') AS team,
           nullif(c.parent_span_id, '') AS parent_span_id,
           nullif(trim(ag.agent_name), '') AS agent_name, ag.agent_span_id,
           coalesce(nullif(trim(c.conversation_id), ''), nullif(trim(c.oi_session_id), ''), inh.session_id) AS session_id,
           coalesce(nullif(trim(c.user_attr), ''), nullif(trim(c.enduser_attr), ''), inh.user_id) AS user_id,
           coalesce(m.input_has_cache, true) AS input_has_cache,
           coalesce(m.output_has_reasoning, true) AS output_has_reasoning,
           {raw}
    FROM calls c
    LEFT JOIN agent ag USING (idx)
    LEFT JOIN inherited inh USING (idx)
    LEFT JOIN top tp USING (idx)
    LEFT JOIN roots r ON r.trace_id = c.trace_id
    LEFT JOIN team t ON t.res = c.res
    LEFT JOIN meanings m ON m.scope = c.scope
),
typed AS (
    SELECT *, {cast}
    FROM fields
),
counted AS (
    SELECT *, {buckets}
    FROM typed
),
judged AS (
    SELECT *,
        -- the buckets do not overlap: uncached + cached + cache writes = the whole prompt,
        -- thinking + output = the whole completion, whatever the instrumentation's input/output hold
        p_input - CASE WHEN input_has_cache THEN coalesce(p_cache_read, 0) + coalesce(p_cache_write, 0) ELSE 0 END AS uncached_input_tokens,
        p_output - CASE WHEN output_has_reasoning THEN coalesce(p_reasoning, 0) ELSE 0 END AS output_tokens,
        CASE
            -- ids as OTLP/JSON writes them: hex (the JSON mapping reads any base64 text, so check)
            WHEN NOT regexp_full_match(trace_id, '[0-9a-fA-F]{{32}}') THEN struct_pack(f := 'traceId', r := 'not 32 hex digits')
            WHEN NOT regexp_full_match(span_id, '[0-9a-fA-F]{{16}}') THEN struct_pack(f := 'spanId', r := 'not 16 hex digits')
            WHEN p_input_raw IS NULL AND p_output_raw IS NULL
                THEN struct_pack(f := 'gen_ai.usage', r := 'model call without usage (no gen_ai.usage.input_tokens / output_tokens, nor the old prompt_tokens / completion_tokens)')
            {checks}
            {conflicts}
            WHEN p_input IS NULL THEN struct_pack(f := 'gen_ai.usage.input_tokens', r := 'missing')
            WHEN p_output IS NULL THEN struct_pack(f := 'gen_ai.usage.output_tokens', r := 'missing')
            WHEN model IS NULL THEN struct_pack(f := 'gen_ai.response.model', r := 'missing (and no gen_ai.request.model)')
            WHEN ts IS NULL THEN struct_pack(f := 'endTimeUnixNano', r := 'missing')
            WHEN ts < TIMESTAMP '2015-01-01' THEN struct_pack(f := 'endTimeUnixNano', r := 'before 2015: ' || CAST(ts AS VARCHAR))
            WHEN ts > $latest_ts THEN struct_pack(f := 'endTimeUnixNano', r := 'in the future (more than a day after ingest): ' || CAST(ts AS VARCHAR))
            WHEN input_has_cache AND coalesce(p_cache_read, 0) + coalesce(p_cache_write, 0) > p_input
                THEN struct_pack(f := 'gen_ai.usage.cache_read.input_tokens', r := 'cache reads + writes exceed the input tokens they are part of')
            WHEN output_has_reasoning AND coalesce(p_reasoning, 0) > p_output
                THEN struct_pack(f := 'gen_ai.usage.reasoning.output_tokens', r := 'reasoning tokens exceed the output tokens they are part of')
            WHEN tier_raw IS NOT NULL AND tier_raw NOT IN ({tiers})
                THEN struct_pack(f := 'openai.response.service_tier', r := 'unknown service tier "' || tier_raw || '"')
            {secrets}
        END AS problem
    FROM counted
)
SELECT line, problem.f AS reject_field, problem.r AS reject_reason,
       'span ' || span_id || ' (' || name || ') of trace ' || trace_id AS raw,
       ts, coalesce(response_id, trace_id || '-' || span_id) AS request_id, model, provider,
       CAST(NULL AS VARCHAR) AS node_id, trace_id AS task_id, task_type, team,
       CAST(NULL AS DOUBLE) AS latency_ms, CAST(NULL AS DOUBLE) AS ttft_ms, 'otel_genai' AS usage_shape,
       uncached_input_tokens, coalesce(p_cache_read, 0) AS cached_input_tokens,
       coalesce(p_cache_write, 0) AS cache_write_tokens, coalesce(p_reasoning, 0) AS thinking_tokens, output_tokens,
       CASE tier_raw {tier_case} END AS service_tier,
       CAST(NULL AS VARCHAR) AS api_key, user_id, CAST(NULL AS VARCHAR) AS end_user_id,
       CAST(NULL AS VARCHAR) AS project_id, CAST(NULL AS VARCHAR) AS workspace_id, session_id,
       lower(trace_id) AS trace_id, lower(span_id) AS span_id, lower(parent_span_id) AS parent_span_id,
       agent_name, CAST(NULL AS VARCHAR) AS tags, lower(agent_span_id) AS agent_span_id
FROM judged
ORDER BY idx
"""


# issue 41: the invoke_agent spans, each with its chain of invoke_agent ancestors (root first, itself
# last, '/'-separated span ids): marts.agent_runs explodes a call's chain (the chain of its nearest
# agent, core.calls.agent_span_id) to count it once in each ancestor, on both engines (Spark SQL has
# no recursive CTE). The usage an invoke_agent span reports about itself is never read.
_AGENTS_QUERY = """
WITH a AS (
    SELECT idx, max(value) FILTER (WHERE key = 'gen_ai.operation.name') AS op,
           max(value) FILTER (WHERE key = 'gen_ai.agent.name') AS agent_name
    FROM attrs GROUP BY idx
),
sp AS (
    SELECT s.*, a.op, a.agent_name FROM spans s LEFT JOIN a USING (idx)
),
agents AS (
    SELECT * FROM sp WHERE lower(trim(op)) = 'invoke_agent'
      AND regexp_full_match(trace_id, '[0-9a-fA-F]{32}') AND regexp_full_match(span_id, '[0-9a-fA-F]{16}')
),
up AS (
    -- every ancestor span of an agent span among the file's spans (depth 0 = itself)
    WITH RECURSIVE up(idx, trace_id, anc_span_id, depth) AS (
        SELECT idx, trace_id, span_id, 0 FROM agents
        UNION ALL
        SELECT up.idx, up.trace_id, p.parent_span_id, up.depth + 1
        FROM up JOIN sp p ON p.trace_id = up.trace_id AND p.span_id = up.anc_span_id
        WHERE p.parent_span_id <> '' AND up.depth < 256
    )
    SELECT up.idx, up.depth, p.span_id, p.op
    FROM up JOIN sp p ON p.trace_id = up.trace_id AND p.span_id = up.anc_span_id
),
chains AS (
    SELECT idx, string_agg(lower(span_id), '/' ORDER BY depth DESC) AS agent_path,
           arg_min(lower(span_id), depth) FILTER (WHERE depth > 0) AS parent_agent_span_id,
           count(*) AS depth
    FROM up WHERE lower(trim(op)) = 'invoke_agent' GROUP BY idx
)
SELECT g.line, lower(g.trace_id) AS trace_id, lower(g.span_id) AS span_id, c.parent_agent_span_id,
       nullif(trim(g.agent_name), '') AS agent_name, CAST(c.depth AS INTEGER) AS depth, c.agent_path,
       CASE WHEN g.start_ns > 0 THEN make_timestamp(CAST(g.start_ns // 1000 AS BIGINT)) END AS started_at,
       CASE WHEN g.end_ns > 0 THEN make_timestamp(CAST(g.end_ns // 1000 AS BIGINT)) END AS ended_at
FROM agents g JOIN chains c USING (idx)
ORDER BY g.idx
"""

_QUERY = _sql()
_OUT = ["line", "ts", "request_id", "model", "provider", "node_id", "task_id", "task_type", "team", "latency_ms",
        "ttft_ms", "usage_shape", "uncached_input_tokens", "cached_input_tokens", "cache_write_tokens",
        "thinking_tokens", "output_tokens", "service_tier", *PRINCIPALS, "agent_span_id"]


def sniff(data: bytes, name: str) -> bool:
    head = head_text(data, 4096)
    return head.startswith("{") and ('"resourceSpans"' in head or '"resource_spans"' in head)


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    docs = _documents(data, name)
    if not docs:
        raise SourceFormatError("empty file: no OTLP JSON lines")
    spans, attrs, resources, rejects, unknown_attrs = _flatten(docs)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("spans", spans)
        con.register("attrs", attrs)
        con.register("resources", resources)
        out = con.sql(_QUERY, params={
            "team_attribute": ctx.otel_team_attribute,
            "latest_ts": ctx.ingested_at.replace(tzinfo=None) + dt.timedelta(days=1),
        }).to_arrow_table()
        agents = con.sql(_AGENTS_QUERY).to_arrow_table()
        unknown = _unknown(con, unknown_attrs) if unknown_attrs.num_rows else None
    finally:
        con.close()
    ok = pc.is_null(out["reject_reason"])
    good = out.filter(ok).select(_OUT)
    bad = out.filter(pc.invert(ok)).select(["line", "reject_field", "reject_reason", "raw"]).to_pylist()
    rejects += [Reject(r["line"], r["reject_field"], r["reject_reason"], r["raw"]) for r in bad]
    if good.num_rows == 0 and not rejects and spans.num_rows == 0:
        raise SourceFormatError("no spans in the file")
    # the agent spans of a document line are kept with its model calls (a side table: stored when one
    # of the line's calls is loaded as new, so a re-landed trace adds no second copy)
    side = {SIDE: agents} if agents.num_rows else {}
    meta = {"warnings": [] if out.num_rows else [f"{spans.num_rows} span(s), none a model call"]}
    if unknown is not None:
        meta["unknown_fields"] = unknown
    return Parsed(TABLE, good, rejects, "otlp_json", side=side, meta=meta)


def _unknown(con: duckdb.DuckDBPyConnection, unknown_attrs: pa.Table) -> Unknown:
    """The unknown-field guard's finding (sources/fieldguard.py) from the usage attributes no name of
    _KEYS reads: one row per attribute name (records = spans carrying it), and the calls whose value
    is not 0 by request id (a document line holds many spans: the line alone is not the call)."""
    con.register("unknown_attrs", unknown_attrs)
    per_span = """
        SELECT s.line, u.key AS path, u.value, coalesce(r.value, s.trace_id || '-' || s.span_id) AS request_id,
               coalesce(trim(u.value), '') NOT IN ('', '0', '0.0') AS nonzero, s.idx
        FROM unknown_attrs u JOIN spans s USING (idx)
        LEFT JOIN attrs r ON r.idx = u.idx AND r.key = 'gen_ai.response.id'"""
    rows = con.execute(f"""
        SELECT path, count(*) AS records, min(line) AS first_line, left(arg_min(value, (line, idx)), 200) AS example,
               true AS token_like, count(*) FILTER (nonzero) AS nonzero_records
        FROM ({per_span}) GROUP BY path ORDER BY path""").fetchall()
    lines = con.sql(f"SELECT DISTINCT line, path, request_id FROM ({per_span}) WHERE nonzero ORDER BY line, path, request_id").to_arrow_table()
    cols = ("path", "records", "first_line", "example", "token_like", "nonzero_records")
    return Unknown([dict(zip(cols, r, strict=True)) for r in rows], lines, False)


# the guard runs inside parse (the usage attributes are met there): KNOWN_FIELDS is for the tests and
# docs, the Ingestor takes parse's finding from Parsed.meta
SPECS = [SourceSpec("telemetry/otel", "otlp_json", sniff, parse, TABLE)]
