"""LiteLLM proxy spend logs (``telemetry/litellm_spendlogs/*.jsonl[.gz]``): rows of the proxy's
Postgres table ``"LiteLLM_SpendLogs"`` as ``thinktax fetch-spendlogs`` lands them, one JSON object a
line whose keys are the table's column names (schema.prisma, model LiteLLM_SpendLogs; the DDL is
in tests/fixtures/litellm/LiteLLM_SpendLogs.sql).

Each row is one model call into ``stg.requests`` (costed by thinktax like any other call), and
LiteLLM's own ``spend`` for it goes to ``stg.reported_costs`` (reporter 'litellm'), so that
marts.cost_crosscheck can show where the two disagree.

Mapping (all in one DuckDB query, no Python loop per row):

* ts = ``startTime`` (UTC, as the proxy stores it); request_id = ``request_id``; model = ``model``
  (a leading ``<custom_llm_provider>/`` is dropped); provider = ``custom_llm_provider`` (lower case).
* team = ``metadata.user_api_key_team_alias``, else ``team_id``; task = ``session_id``, else the
  request; task type = the first entry of ``request_tags``.
* usage: ``metadata.usage_object`` (LiteLLM's OpenAI-format Usage) when present:
  ``prompt_tokens`` P includes cache reads R (``prompt_tokens_details.cached_tokens``, else
  ``cache_read_input_tokens``) and cache writes W (``cache_creation_input_tokens``, else
  ``prompt_tokens_details.cache_creation_tokens``; LiteLLM adds both to P for Anthropic);
  ``completion_tokens`` C includes reasoning T (``completion_tokens_details.reasoning_tokens``).
  Buckets: uncached P-R-W, cached R, write W, thinking T, output C-T. A row without usage_object
  (older proxies, some call types) takes P and C from the row's own ``prompt_tokens`` /
  ``completion_tokens`` columns: uncached P, output C, no cache or reasoning detail.
* Rejected with a reason (ops.quarantine): a failed call (``status`` 'failure': no usage, nothing
  billed), a missing request_id / model / startTime, a count that is not a whole number >= 0 or is
  above 10M, cached + cache-write above the prompt, reasoning above the completion, a spend that
  is not a number >= 0.
"""

from __future__ import annotations

import json

import duckdb
import pyarrow.compute as pc

from sources.base import Parsed, ParseContext, Reject, SourceFormatError, head_text
from sources.registry import SourceSpec
from sources.contract import MAX_TOKENS_PER_CALL as MAX_TOKENS, PRINCIPALS, redact_sql, secret_checks_sql
from sources.requests import _lines, tags_object_sql
from sources.fieldguard import known_fields

TABLE = "stg.requests"
SIDE = "stg.reported_costs"

_STRUCTURE = {
    "request_id": "VARCHAR", "call_type": "VARCHAR", "spend": "VARCHAR",
    "prompt_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
    "startTime": "VARCHAR", "endTime": "VARCHAR", "model": "VARCHAR",
    "custom_llm_provider": "VARCHAR", "team_id": "VARCHAR", "session_id": "VARCHAR", "status": "VARCHAR",
    "request_tags": "JSON", "metadata": "JSON",
    # issue 41: who made the call (schema.prisma: api_key is the hashed token, "not the actual Virtual Key")
    "api_key": "VARCHAR", "user": "VARCHAR", "end_user": "VARCHAR", "agent_id": "VARCHAR",
}

# The unknown-field guard (sources/fieldguard.py, issue 44): the row's columns read (_STRUCTURE), the
# metadata keys and the usage object's counts read (_INTS, with json_extract: named here, beside
# them), the other LiteLLM_SpendLogs columns (schema.prisma; none is a count or money) and the
# usage object's totals. ``metadata`` is free-form: only its usage_object is walked.
_USAGE_OBJECT = {
    "prompt_tokens": "VARCHAR", "completion_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
    "cache_creation_input_tokens": "VARCHAR",
    "prompt_tokens_details": {"cached_tokens": "VARCHAR", "cache_creation_tokens": "VARCHAR"},
    "completion_tokens_details": {"reasoning_tokens": "VARCHAR"},
}
_COLUMN = "a LiteLLM_SpendLogs column without tokens or money (schema.prisma)"
KNOWN_FIELDS = known_fields(
    "litellm_spendlogs",
    {**_STRUCTURE, "metadata": {"user_api_key_team_alias": "VARCHAR", "project_id": "VARCHAR", "usage_object": _USAGE_OBJECT}},
    open_objects=("metadata",),
    ignored={
        "total_tokens": "a total: prompt_tokens + completion_tokens",
        "metadata.usage_object.total_tokens": "a total: prompt_tokens + completion_tokens",
        "metadata.usage_object.completion_tokens_details.accepted_prediction_tokens": "part of completion_tokens, billed at its price",
        "metadata.usage_object.completion_tokens_details.rejected_prediction_tokens": "part of completion_tokens, billed at its price",
        **{c: _COLUMN for c in ("request_duration_ms", "completionStartTime", "model_id", "model_group", "api_base",
                                "cache_hit", "cache_key", "organization_id", "requester_ip_address", "messages",
                                "response", "mcp_namespaced_tool_name", "proxy_server_request")},
    })

# (name, expression over the row j / usage object u, path named in a reject)
_INTS = [
    ("p_prompt", "CASE WHEN has_uo THEN json_extract_string(u, '$.prompt_tokens') ELSE j.prompt_tokens END", "prompt_tokens"),
    ("p_completion", "CASE WHEN has_uo THEN json_extract_string(u, '$.completion_tokens') ELSE j.completion_tokens END", "completion_tokens"),
    ("p_cached", "coalesce(json_extract_string(u, '$.prompt_tokens_details.cached_tokens'), json_extract_string(u, '$.cache_read_input_tokens'))",
     "metadata.usage_object.prompt_tokens_details.cached_tokens"),
    ("p_write", "coalesce(json_extract_string(u, '$.cache_creation_input_tokens'), json_extract_string(u, '$.prompt_tokens_details.cache_creation_tokens'))",
     "metadata.usage_object.cache_creation_input_tokens"),
    ("p_reasoning", "json_extract_string(u, '$.completion_tokens_details.reasoning_tokens')",
     "metadata.usage_object.completion_tokens_details.reasoning_tokens"),
]


def _sql() -> str:
    raw = ",\n           ".join(f"{expr} AS {n}_raw" for n, expr, _ in _INTS)
    cast = ",\n           ".join(
        f"CASE WHEN regexp_full_match(trim({n}_raw), '[0-9]+(\\.0+)?') THEN TRY_CAST(TRY_CAST(trim({n}_raw) AS DECIMAL(38,0)) AS BIGINT) END AS {n}"
        for n, _, _ in _INTS
    )
    checks = "\n            ".join(
        f"WHEN {n}_raw IS NOT NULL AND {n} IS NULL THEN struct_pack(f := '{path}', r := 'not a non-negative whole number: ' || {n}_raw)\n            "
        f"WHEN {n} > {MAX_TOKENS} THEN struct_pack(f := '{path}', r := 'above {MAX_TOKENS:,} tokens, more than any context window (an outlier): ' || {n}_raw)"
        for n, _, path in _INTS
    )
    tags = tags_object_sql("j.request_tags")
    secrets = secret_checks_sql({"api_key": "api_key | metadata.user_api_key_alias", "user_id": "user | metadata.user_api_key_user_id",
                                 "end_user_id": "end_user | metadata.user_api_key_end_user_id", "project_id": "metadata.project_id",
                                 "session_id": "session_id", "agent_name": "agent_id", "tags": "request_tags"})
    redact = redact_sql
    return f"""
WITH src AS (
    SELECT line, raw FROM lines WHERE NOT regexp_full_match(raw, '[ \t\r]*')
),
objects AS (
    SELECT line, raw, coalesce(try(json_type(raw)) = 'OBJECT', false) AS is_object FROM src
),
rows AS (
    SELECT line, raw, is_object,
           try(json_transform(raw, $structure)) AS j
    FROM objects
),
usage_obj AS (
    SELECT *, json_extract(j.metadata, '$.usage_object') AS u,
           coalesce(json_type(j.metadata, '$.usage_object') = 'OBJECT', false) AS has_uo
    FROM rows
),
fields AS (
    SELECT line, raw, is_object, has_uo, j IS NOT NULL AS readable,
           nullif(trim(j.request_id), '') AS request_id,
           lower(nullif(trim(j.custom_llm_provider), '')) AS provider,
           nullif(trim(j.model), '') AS model_raw,
           j.startTime AS ts_raw, try_cast(j.startTime AS TIMESTAMPTZ) AS ts_utc,
           coalesce(nullif(trim(json_extract_string(j.metadata, '$.user_api_key_team_alias')), ''),
                    nullif(trim(j.team_id), '')) AS team,
           nullif(trim(j.session_id), '') AS session_id,
           CASE WHEN json_type(j.request_tags) = 'ARRAY' THEN nullif(trim(json_extract_string(j.request_tags, '$[0]')), '') END AS task_type,
           lower(trim(j.status)) AS status,
           coalesce(nullif(trim(j.api_key), ''), nullif(trim(json_extract_string(j.metadata, '$.user_api_key_alias')), '')) AS api_key,
           coalesce(nullif(trim(j.user), ''), nullif(trim(json_extract_string(j.metadata, '$.user_api_key_user_id')), '')) AS user_id,
           coalesce(nullif(trim(j.end_user), ''), nullif(trim(json_extract_string(j.metadata, '$.user_api_key_end_user_id')), '')) AS end_user_id,
           nullif(trim(json_extract_string(j.metadata, '$.project_id')), '') AS project_id,
           nullif(trim(j.agent_id), '') AS agent_name,
           {tags} AS tags,
           j.spend AS spend_raw, TRY_CAST(trim(j.spend) AS DECIMAL(38,12)) AS spend,
           {raw}
    FROM usage_obj
),
typed AS (
    SELECT *,
           CASE WHEN provider IS NOT NULL AND starts_with(model_raw, provider || '/')
                THEN substr(model_raw, length(provider) + 2) ELSE model_raw END AS model,
           CASE WHEN isfinite(ts_utc) THEN make_timestamp(epoch_us(ts_utc)) END AS ts,
           {cast}
    FROM fields
),
buckets AS (
    SELECT *,
           p_prompt - coalesce(p_cached, 0) - coalesce(p_write, 0) AS uncached_input_tokens,
           coalesce(p_cached, 0) AS cached_input_tokens,
           coalesce(p_write, 0) AS cache_write_tokens,
           coalesce(p_reasoning, 0) AS thinking_tokens,
           p_completion - coalesce(p_reasoning, 0) AS output_tokens
    FROM typed
),
judged AS (
    SELECT *,
        CASE
            WHEN NOT is_object THEN struct_pack(f := NULL, r := 'not a JSON object (invalid JSON line)')
            WHEN NOT readable THEN struct_pack(f := NULL, r := 'a JSON object whose fields cannot be read as LiteLLM_SpendLogs columns')
            WHEN status = 'failure' THEN struct_pack(f := 'status', r := 'failed call (status failure): LiteLLM logged no usage, nothing is billed')
            WHEN request_id IS NULL THEN struct_pack(f := 'request_id', r := 'missing')
            WHEN model IS NULL THEN struct_pack(f := 'model', r := 'missing')
            WHEN ts_raw IS NULL THEN struct_pack(f := 'startTime', r := 'missing')
            WHEN ts IS NULL THEN struct_pack(f := 'startTime', r := 'not an ISO-8601 timestamp: ' || ts_raw)
            WHEN ts < TIMESTAMP '2015-01-01' THEN struct_pack(f := 'startTime', r := 'before 2015: ' || ts_raw)
            WHEN ts > $latest_ts THEN struct_pack(f := 'startTime', r := 'in the future (more than a day after ingest): ' || ts_raw)
            {checks}
            WHEN p_prompt IS NULL THEN struct_pack(f := CASE WHEN has_uo THEN 'metadata.usage_object.prompt_tokens' ELSE 'prompt_tokens' END, r := 'missing')
            WHEN p_completion IS NULL THEN struct_pack(f := CASE WHEN has_uo THEN 'metadata.usage_object.completion_tokens' ELSE 'completion_tokens' END, r := 'missing')
            WHEN uncached_input_tokens < 0 THEN struct_pack(f := 'metadata.usage_object.prompt_tokens_details', r := 'cached + cache-write tokens exceed the prompt tokens they are part of')
            WHEN output_tokens < 0 THEN struct_pack(f := 'metadata.usage_object.completion_tokens_details.reasoning_tokens', r := 'reasoning tokens exceed the completion tokens they are part of')
            WHEN spend_raw IS NULL THEN struct_pack(f := 'spend', r := 'missing')
            WHEN spend IS NULL OR spend < 0 THEN struct_pack(f := 'spend', r := 'not a number >= 0: ' || spend_raw)
            {secrets}
        END AS problem
    FROM buckets
)
SELECT line, CASE WHEN problem IS NOT NULL THEN {redact('raw')} END AS raw,
       problem.f AS reject_field, problem.r AS reject_reason,
       ts, request_id, model, provider, CAST(NULL AS VARCHAR) AS node_id,
       coalesce(session_id, request_id) AS task_id, task_type, team,
       CAST(NULL AS DOUBLE) AS latency_ms, CAST(NULL AS DOUBLE) AS ttft_ms, 'litellm' AS usage_shape,
       uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens,
       api_key, user_id, end_user_id, project_id, CAST(NULL AS VARCHAR) AS workspace_id, session_id,
       CAST(NULL AS VARCHAR) AS trace_id, CAST(NULL AS VARCHAR) AS span_id, CAST(NULL AS VARCHAR) AS parent_span_id,
       agent_name, tags,
       spend AS reported_cost_usd, 'litellm' AS reporter
FROM judged
"""


_QUERY = _sql()
_OUT = ["line", "ts", "request_id", "model", "provider", "node_id", "task_id", "task_type", "team", "latency_ms",
        "ttft_ms", "usage_shape", "uncached_input_tokens", "cached_input_tokens", "cache_write_tokens",
        "thinking_tokens", "output_tokens", *PRINCIPALS]


def sniff(data: bytes, name: str) -> bool:
    head = head_text(data, 4096)
    return head.startswith("{") and '"request_id"' in head and ('"startTime"' in head or '"call_type"' in head)


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    import datetime as dt  # noqa: PLC0415

    table = _lines(data)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true")
        con.register("lines", table)
        out = con.sql(_QUERY, params={
            "structure": json.dumps(_STRUCTURE),
            "latest_ts": ctx.ingested_at.replace(tzinfo=None) + dt.timedelta(days=1),
        }).to_arrow_table()
    finally:
        con.close()
    if out.num_rows == 0:
        raise SourceFormatError("empty file: no JSON lines")
    ok = pc.is_null(out["reject_reason"])
    good = out.filter(ok)
    bad = out.filter(pc.invert(ok)).select(["line", "reject_field", "reject_reason", "raw"]).to_pylist()
    rejects = [Reject(r["line"], r["reject_field"], r["reject_reason"], (r["raw"] or "")[:2000]) for r in bad]
    side = good.select(["line", "request_id", "reporter", "reported_cost_usd"])
    return Parsed(TABLE, good.select(_OUT), rejects, "litellm_spendlogs", side={SIDE: side})


SPECS = [SourceSpec("telemetry/litellm_spendlogs", "litellm_spendlogs", sniff, parse, TABLE, known_fields=KNOWN_FIELDS)]
