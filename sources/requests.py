"""Per-request JSONL (``telemetry/requests/*.jsonl[.gz]``): one model call per line.

Required: ``ts`` (ISO-8601, or epoch seconds; epoch values above 1e11 are read as
milliseconds), ``request_id``, ``model``, ``usage``. Optional: ``task_id``, ``task_type``,
``team``, ``provider`` or ``node_id``, ``latency_ms``, ``ttft_ms``, ``metadata`` (an object where
``team``, ``task_type``, ``task_id`` are also looked for — LiteLLM proxy logs put them there,
team also as ``user_api_key_team_alias``). An ISO timestamp without an offset is read as UTC.

``usage`` comes in three shapes; each call is split into non-overlapping buckets, so that
uncached + cached + cache_write = the whole prompt and thinking + output = the whole completion:

=====================  =========================================  =====================================
shape                  reported                                   buckets
=====================  =========================================  =====================================
OpenAI Chat            prompt_tokens P (incl. cached C),          uncached P-C, cached C, write 0,
                       completion_tokens O (incl. reasoning R)    thinking R, output O-R
OpenAI Responses       input_tokens I (incl. cached C),           uncached I-C, cached C, write 0,
                       output_tokens O (incl. reasoning R)        thinking R, output O-R
Anthropic Messages     input_tokens I (excl. cache), cache_read   uncached I, cached CR, write CW,
                       CR, cache_creation CW, output_tokens O     thinking T, output O-T
                       (incl. thinking T = thinking_tokens)
=====================  =========================================  =====================================

Reasoning is never counted on top of the completion. A call that reports reasoning_tokens as 0
or null is counted as reported (0 thinking), even if its text shows thinking: thinktax costs what
the provider bills, and providers bill what they report.

The shape is Anthropic when any of cache_read_input_tokens / cache_creation_input_tokens /
thinking_tokens is present or the provider is 'anthropic'; Chat when prompt_tokens or
completion_tokens is present; Responses otherwise. Parsing runs in an in-memory DuckDB
(one JSON parse per line via json_transform), not a Python loop.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sources.base import Parsed, ParseContext, Reject, SourceFormatError, head_text
from sources.base import SourceSpec

TABLE = "stg.requests"
# No model reads or writes more than this in one call (the largest context window, Llama 4 Scout,
# is 10M tokens): a count above it is a unit or logging error, e.g. a 10^6x outlier.
MAX_TOKENS = 10_000_000

_STRUCTURE = {
    "ts": "VARCHAR", "request_id": "VARCHAR", "model": "VARCHAR", "provider": "VARCHAR",
    "node_id": "VARCHAR", "task_id": "VARCHAR", "task_type": "VARCHAR", "team": "VARCHAR",
    "latency_ms": "VARCHAR", "ttft_ms": "VARCHAR",
    "metadata": {"team": "VARCHAR", "task_type": "VARCHAR", "task_id": "VARCHAR", "user_api_key_team_alias": "VARCHAR"},
    "usage": {
        "prompt_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
        "input_tokens": "VARCHAR", "output_tokens": "VARCHAR",
        "cache_read_input_tokens": "VARCHAR", "cache_creation_input_tokens": "VARCHAR",
        "thinking_tokens": "VARCHAR",
        "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
        "completion_tokens_details": {"reasoning_tokens": "VARCHAR"},
        "input_tokens_details": {"cached_tokens": "VARCHAR"},
        "output_tokens_details": {"reasoning_tokens": "VARCHAR"},
    },
}

# Each integer field: (output name, expression over the parsed struct j, json path for messages).
_INTS = {
    "p_prompt": ("j.usage.prompt_tokens", "usage.prompt_tokens"),
    "p_completion": ("j.usage.completion_tokens", "usage.completion_tokens"),
    "p_input": ("j.usage.input_tokens", "usage.input_tokens"),
    "p_output": ("j.usage.output_tokens", "usage.output_tokens"),
    "p_cache_read": ("j.usage.cache_read_input_tokens", "usage.cache_read_input_tokens"),
    "p_cache_write": ("j.usage.cache_creation_input_tokens", "usage.cache_creation_input_tokens"),
    "p_thinking": ("j.usage.thinking_tokens", "usage.thinking_tokens"),
    "p_chat_cached": ("j.usage.prompt_tokens_details.cached_tokens", "usage.prompt_tokens_details.cached_tokens"),
    "p_chat_reasoning": ("j.usage.completion_tokens_details.reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens"),
    "p_resp_cached": ("j.usage.input_tokens_details.cached_tokens", "usage.input_tokens_details.cached_tokens"),
    "p_resp_reasoning": ("j.usage.output_tokens_details.reasoning_tokens", "usage.output_tokens_details.reasoning_tokens"),
}

_SQL = """
WITH src AS (
    -- blank lines (LF or CRLF) are not records (a regex, not trim(): trim copies every line)
    SELECT line, raw FROM lines WHERE NOT regexp_full_match(raw, '[ \t\r]*')
),
parsed_once AS (
    -- one JSON parse per good line: a line json_transform read (valid JSON) that starts with '{{'
    -- is an object; only the other lines are diagnosed with json_valid / json_type
    SELECT line, raw, j0, j0 IS NOT NULL AND starts_with(raw, '{{') AS fast
    FROM (SELECT line, raw, try(json_transform(raw, $structure)) AS j0 FROM src)
),
objects AS (
    SELECT line, raw, j0, fast,
           CASE WHEN fast THEN true
                WHEN json_valid(raw) THEN coalesce(json_type(raw) = 'OBJECT', false)
                ELSE false END AS is_object
    FROM parsed_once
),
typed AS (
    SELECT line, raw, is_object,
           -- usage is an object if json_transform found any of its fields (a number, string or
           -- array there leaves them all NULL); otherwise ask json_type
           CASE WHEN NOT is_object THEN NULL
                WHEN fast AND (j0.usage.prompt_tokens IS NOT NULL OR j0.usage.completion_tokens IS NOT NULL
                               OR j0.usage.input_tokens IS NOT NULL OR j0.usage.output_tokens IS NOT NULL)
                     THEN 'OBJECT'
                ELSE json_type(raw, '$.usage') END AS usage_type,
           -- a line json_transform failed on that is an object: read it again without try(), so
           -- that its error stops the file exactly as before
           CASE WHEN fast THEN j0 WHEN is_object THEN coalesce(j0, json_transform(raw, $structure)) END AS j
    FROM objects
),
fields AS (
    SELECT line, raw, is_object, usage_type,
           j.ts AS ts_raw, nullif(trim(j.request_id), '') AS request_id, nullif(trim(j.model), '') AS model,
           lower(nullif(trim(j.provider), '')) AS provider, nullif(trim(j.node_id), '') AS node_id,
           coalesce(nullif(trim(j.task_id), ''), nullif(trim(j.metadata.task_id), '')) AS task_id_raw,
           coalesce(nullif(trim(j.task_type), ''), nullif(trim(j.metadata.task_type), '')) AS task_type,
           coalesce(nullif(trim(j.team), ''), nullif(trim(j.metadata.team), ''),
                    nullif(trim(j.metadata.user_api_key_team_alias), '')) AS team,
           j.latency_ms AS latency_raw, j.ttft_ms AS ttft_raw,
           {int_raw}
    FROM typed
),
plain AS (
    -- most counts are plain digits (JSON 12 or "12"): up to 18 of them are read as BIGINT directly;
    -- only the other values are trimmed and tested as whole numbers (12.0, " 12 ", 1e3, -1, ...);
    -- ts_trim is trim(ts_raw) (see _trimmed)
    SELECT *,
           {ts_trim} AS ts_trim,
           {int_plain}
    FROM fields
),
whole AS (
    -- which integer fields are written as whole numbers (JSON 12, "12" or 12.0): tested once
    SELECT *,
           {int_whole}
    FROM plain
),
parsed AS (
    SELECT *,
           -- epoch seconds/ms contain no ':', so ISO text skips the regex
           CASE WHEN NOT contains(ts_raw, ':') AND regexp_full_match(ts_trim, '-?[0-9]+(\\.[0-9]+)?')
                THEN to_timestamp(CASE WHEN abs(ts_raw::DOUBLE) > 1e11 THEN ts_raw::DOUBLE / 1000 ELSE ts_raw::DOUBLE END)
                ELSE try_cast(ts_trim AS TIMESTAMPTZ) END AS ts_utc,
           try_cast(latency_raw AS DOUBLE) AS latency_ms, try_cast(ttft_raw AS DOUBLE) AS ttft_ms,
           {int_cast}
    FROM whole
),
timed AS (
    -- the UTC wall clock of the instant: its microseconds since the epoch (same as AT TIME ZONE
    -- 'UTC', without ICU's calendar per row); +-infinity still goes through AT TIME ZONE
    SELECT *,
           CASE WHEN isfinite(ts_utc) THEN make_timestamp(epoch_us(ts_utc)) ELSE ts_utc AT TIME ZONE 'UTC' END AS ts
    FROM parsed
),
shaped AS (
    SELECT *,
           CASE WHEN p_cache_read_raw IS NOT NULL OR p_cache_write_raw IS NOT NULL OR p_thinking_raw IS NOT NULL
                     OR provider = 'anthropic' THEN 'anthropic'
                WHEN p_prompt_raw IS NOT NULL OR p_completion_raw IS NOT NULL THEN 'openai_chat'
                ELSE 'openai_responses' END AS usage_shape
    FROM timed
),
buckets AS (
    SELECT *,
           CASE usage_shape WHEN 'openai_chat' THEN p_prompt - coalesce(p_chat_cached, 0)
                            WHEN 'openai_responses' THEN p_input - coalesce(p_resp_cached, 0)
                            ELSE p_input END AS uncached_input_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN coalesce(p_chat_cached, 0)
                            WHEN 'openai_responses' THEN coalesce(p_resp_cached, 0)
                            ELSE coalesce(p_cache_read, 0) END AS cached_input_tokens,
           CASE usage_shape WHEN 'anthropic' THEN coalesce(p_cache_write, 0) ELSE 0 END AS cache_write_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN coalesce(p_chat_reasoning, 0)
                            WHEN 'openai_responses' THEN coalesce(p_resp_reasoning, 0)
                            ELSE coalesce(p_thinking, 0) END AS thinking_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN p_completion ELSE p_output END AS completion_total
    FROM shaped
),
judged AS (
    SELECT *,
        CASE
            WHEN NOT is_object THEN struct_pack(f := NULL, r := 'not a JSON object (invalid JSON line)')
            WHEN ts_raw IS NULL THEN struct_pack(f := 'ts', r := 'missing')
            WHEN ts IS NULL THEN struct_pack(f := 'ts', r := 'not an ISO-8601 timestamp or epoch seconds: ' || ts_raw)
            WHEN ts < TIMESTAMP '2015-01-01' THEN struct_pack(f := 'ts', r := 'before 2015: ' || ts_raw)
            WHEN ts > $latest_ts THEN struct_pack(f := 'ts', r := 'in the future (more than a day after ingest): ' || ts_raw)
            WHEN request_id IS NULL THEN struct_pack(f := 'request_id', r := 'missing')
            WHEN model IS NULL THEN struct_pack(f := 'model', r := 'missing')
            WHEN usage_type IS NULL THEN struct_pack(f := 'usage', r := 'missing')
            WHEN usage_type <> 'OBJECT' THEN struct_pack(f := 'usage', r := 'not an object')
            {int_checks}
            WHEN usage_shape = 'openai_chat' AND p_prompt IS NULL THEN struct_pack(f := 'usage.prompt_tokens', r := 'missing')
            WHEN usage_shape = 'openai_chat' AND p_completion IS NULL THEN struct_pack(f := 'usage.completion_tokens', r := 'missing')
            WHEN usage_shape <> 'openai_chat' AND p_input IS NULL THEN struct_pack(f := 'usage.input_tokens', r := 'missing')
            WHEN usage_shape <> 'openai_chat' AND p_output IS NULL THEN struct_pack(f := 'usage.output_tokens', r := 'missing')
            WHEN uncached_input_tokens < 0 THEN struct_pack(f := 'usage.cached_tokens', r := 'cached tokens exceed the prompt tokens they are part of')
            WHEN thinking_tokens > completion_total THEN struct_pack(f := 'usage.reasoning_tokens', r := 'reasoning/thinking tokens exceed the output tokens they are part of')
            WHEN latency_raw IS NOT NULL AND (latency_ms IS NULL OR latency_ms < 0 OR isnan(latency_ms) OR isinf(latency_ms)) THEN struct_pack(f := 'latency_ms', r := 'not a non-negative number: ' || latency_raw)
            WHEN ttft_raw IS NOT NULL AND (ttft_ms IS NULL OR ttft_ms < 0 OR isnan(ttft_ms) OR isinf(ttft_ms)) THEN struct_pack(f := 'ttft_ms', r := 'not a non-negative number: ' || ttft_raw)
        END AS problem
    FROM buckets
)
SELECT line, CASE WHEN problem IS NOT NULL THEN raw END AS raw,  -- kept for rejects only
       problem.f AS reject_field, problem.r AS reject_reason,
       ts::TIMESTAMP AS ts, request_id, model, provider, node_id,
       coalesce(task_id_raw, request_id) AS task_id, task_type, team, latency_ms, ttft_ms, usage_shape,
       uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens,
       completion_total - thinking_tokens AS output_tokens
FROM judged
"""

_OUT_COLUMNS = [
    "line", "ts", "request_id", "model", "provider", "node_id", "task_id", "task_type", "team",
    "latency_ms", "ttft_ms", "usage_shape", "uncached_input_tokens", "cached_input_tokens",
    "cache_write_tokens", "thinking_tokens", "output_tokens",
]


def _trimmed(expr: str) -> str:
    """``trim(expr)`` without trim()'s copy of every string: an ASCII string (as many bytes as
    characters) that neither starts nor ends with a space is already trimmed (trim() removes
    Unicode space separators, and the only ASCII one is the space)."""
    return (f"CASE WHEN strlen({expr}) = length({expr}) AND NOT starts_with({expr}, ' ') AND NOT ends_with({expr}, ' ') "
            f"THEN {expr} ELSE trim({expr}) END")


def _nonblank(expr: str) -> str:
    """``nullif(trim(expr), '')``, see _trimmed."""
    return f"nullif({_trimmed(expr)}, '')"


def _sql() -> str:
    int_raw = ",\n           ".join(f"{expr} AS {name}_raw" for name, (expr, _) in _INTS.items())
    # An integer field must be a whole number >= 0 (JSON 12 or "12"; 12.0 is accepted as 12).
    # try_cast: a number too long for BIGINT is a reject below, never a crash of the whole file.
    int_plain = ",\n           ".join(
        f"regexp_full_match({name}_raw, '[0-9]{{1,18}}') AS {name}_plain, "
        f"CASE WHEN NOT {name}_plain THEN trim({name}_raw) END AS {name}_other"
        for name in _INTS
    )
    # A plain value is a whole number whose BIGINT cast cannot fail; any other is a whole number
    # if it matches below, and is read through DECIMAL(38,0) as before.
    int_whole = ",\n           ".join(
        f"{name}_plain OR regexp_full_match({name}_other, '[0-9]+(\\.0+)?') AS {name}_whole" for name in _INTS
    )
    int_cast = ",\n           ".join(
        f"CASE WHEN {name}_plain THEN CAST({name}_raw AS BIGINT) WHEN {name}_whole "
        f"THEN TRY_CAST(TRY_CAST({name}_other AS DECIMAL(38,0)) AS BIGINT) END AS {name}"
        for name in _INTS
    )
    int_checks = "\n            ".join(
        f"WHEN {name}_whole AND ({name} IS NULL OR {name} > {MAX_TOKENS}) "
        f"THEN struct_pack(f := '{path}', r := 'above {MAX_TOKENS:,} tokens, more than any context window (an outlier): ' || {name}_raw)\n            "
        f"WHEN {name}_raw IS NOT NULL AND {name} IS NULL THEN struct_pack(f := '{path}', r := 'not a non-negative whole number: ' || {name}_raw)"
        for name, (_, path) in _INTS.items()
    )
    ts_trim = _trimmed("ts_raw")
    sql = _SQL.format(ts_trim=ts_trim, int_raw=int_raw, int_plain=int_plain, int_whole=int_whole, int_cast=int_cast, int_checks=int_checks)
    return re.sub(r"nullif\(trim\((j\.[a-z_.]+)\), ''\)", lambda m: _nonblank(m.group(1)), sql)


_QUERY = _sql()


def sniff(data: bytes, name: str) -> bool:
    head = head_text(data, 2048)
    return head.startswith("{") and ('"usage"' in head or name.endswith((".jsonl", ".jsonl.gz", ".ndjson")))


def _lines(data: bytes) -> pa.Table:
    """(line, raw): the text split at every "\n" exactly as ``str.split("\n")`` splits it (after
    leading BOMs; without the empty part after a final "\n"), built in Arrow from the newline
    offsets: no Python string per line."""
    while data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.endswith(b"\n"):
        data += b"\n"  # ends the last line (a copy of the file, so only when it is needed)
    # A file that ends in "\n" is read in place: str.split's empty last part is a blank line,
    # which is not a record, so it is left out.
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    offsets[1:] = ends + 1
    with_newline = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(buf))
    try:
        with_newline.validate(full=True)
    except pa.ArrowInvalid:
        data.decode("utf-8")  # raises the UnicodeDecodeError that names the bad byte
        raise
    return pa.table({
        "line": pa.array(np.arange(1, len(ends) + 1, dtype=np.int64)),
        "raw": pc.utf8_slice_codeunits(with_newline, 0, -1),
    })


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    table = _lines(data)
    con = duckdb.connect()
    try:
        # rows come out in line order without an ORDER BY: the query only projects and filters one
        # scan, and DuckDB keeps insertion order for that (the default, set here to say so)
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true")
        con.register("lines", table)
        out = con.sql(
            _QUERY,
            params={"structure": json.dumps(_STRUCTURE), "latest_ts": ctx.ingested_at.replace(tzinfo=None) + dt.timedelta(days=1)},
        ).to_arrow_table()
    finally:
        con.close()
    if out.num_rows == 0:
        raise SourceFormatError("empty file: no JSON lines")
    reason = out["reject_reason"]
    if reason.null_count == out.num_rows:  # no rejects (the usual file): no copy of the good rows
        good, bad = out.select(_OUT_COLUMNS), []
    else:
        good = out.filter(pc.is_null(reason)).select(_OUT_COLUMNS)
        bad = out.select(["line", "reject_field", "reject_reason", "raw"]).filter(pc.is_valid(reason)).to_pylist()
    rejects = [Reject(r["line"], r["reject_field"], r["reject_reason"], r["raw"][:2000]) for r in bad]
    return Parsed(TABLE, good, rejects, "requests_jsonl")


SPECS = [SourceSpec("telemetry/requests", "requests_jsonl", sniff, parse, key=("request_id",))]
