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
OpenAI Chat            prompt_tokens P (incl. cached C and        uncached P-C-W, cached C, write W,
                       cache_write_tokens W), completion_tokens   thinking R, output O-R
                       O (incl. reasoning R)
OpenAI Responses       input_tokens I (incl. cached C and         uncached I-C-W, cached C, write W,
                       cache_write_tokens W), output_tokens O     thinking R, output O-R
                       (incl. reasoning R)
Anthropic Messages     input_tokens I (excl. cache), cache_read   uncached I, cached CR, write CW,
(also Claude on        CR, cache_creation CW, output_tokens O     thinking T, output O-T
Bedrock InvokeModel    (incl. thinking T = output_tokens_details. (1-hour writes W1h: part of CW)
and Vertex AI)         thinking_tokens; older alias thinking_tokens)
Bedrock Converse       inputTokens I (excl. cache reads/writes),  uncached I, cached CR, write CW,
(usage, camelCase)     cacheReadInputTokens CR, cache-            thinking 0 (not reported), output O
                       WriteInputTokens CW, outputTokens O,       (1-hour writes: cacheDetails ttl 1h)
                       totalTokens = I+O+CR+CW
Gemini usageMetadata   promptTokenCount P (incl. cached C),       uncached P-C+U, cached C, write 0,
(top level or usage)   cachedContentTokenCount C,                 thinking T, output O
                       candidatesTokenCount O (excl. thoughts),
                       thoughtsTokenCount T, toolUsePromptTokenCount U
=====================  =========================================  =====================================

Pricing modifiers (columns of migration 100, all nullable; see docs/economics.md "Exact API cost"):

* ``service_tier`` -- the tier the provider reports: top-level ``service_tier`` (OpenAI) or
  ``usage.service_tier`` (Anthropic): ``flex``, ``priority``, ``scale``, ``batch``; ``default`` /
  ``auto`` / ``standard`` are the standard tier and stored as NULL, like a tier not reported (so a
  call exported before and after thinktax read tiers is one row, not a conflict); any other value
  is quarantined.
* ``is_batch`` -- top-level ``batch``: a JSON ``true``/``false`` (anything else, e.g. ``"yes"``, is
  quarantined); stored true or NULL (false / absent).
* The counts below are NULL where they are 0 or absent, for the same reason.
* ``cache_write_1h_tokens`` -- ``usage.cache_creation.ephemeral_1h_input_tokens``, the 1-hour-TTL
  part of ``cache_write_tokens``. When ``cache_creation`` is given, 5m + 1h must equal
  ``cache_creation_input_tokens`` (else quarantined); without ``cache_creation_input_tokens`` the
  sum is the cache-write bucket.
* ``processing_region`` -- lower-cased ``usage.inference_geo``, else top-level ``region``, else
  ``data_residency``.
* ``web_search_requests`` -- ``usage.server_tool_use.web_search_requests`` (a non-negative whole
  number, else quarantined), else the number of ``web_search_call`` items in a Responses
  ``output``; 0 when neither. ``web_search_context_size`` -- the ``search_context_size`` of the
  first ``web_search*`` tool in ``tools`` (low/medium/high, else quarantined).
* ``request_id`` falls back to ``responseId`` (Gemini), the body's ``id`` (OpenAI, Anthropic) and
  ``ResponseMetadata.RequestId`` (a boto3 response dict); ``model`` to ``modelVersion`` (Gemini).
* Bedrock Converse: top-level ``serviceTier.type`` (``priority`` / ``flex``; ``default`` is standard;
  ``reserved`` is paid by the reservation: ``billing = 'provisioned'``). ``totalTokens`` must equal
  its four parts and ``cacheDetails`` (``[{ttl: '5m' | '1h', inputTokens}]``) must add up to
  ``cacheWriteInputTokens``, else the line is quarantined.
* ``billing`` -- ``'provisioned'`` for Gemini / Vertex AI ``usageMetadata.trafficType`` =
  ``PROVISIONED_THROUGHPUT`` (the reservation pays, not the tokens); ``ON_DEMAND_PRIORITY`` /
  ``ON_DEMAND_FLEX`` are the priority / flex tiers; another value is quarantined.
* Anthropic thinking: ``usage.output_tokens_details.thinking_tokens`` (documented), else the older
  ``usage.thinking_tokens``; both present and different: quarantined. The same for Claude on
  Bedrock InvokeModel and Vertex AI (the Anthropic body; ``"type": "message"`` marks it).
* A usage object with none of the known counts is quarantined ("matches no known usage shape").
* DeepSeek (OpenAI-compatible chat; api-docs.deepseek.com, "Context Caching"): ``usage.
  prompt_cache_hit_tokens`` is the part of ``prompt_tokens`` read from DeepSeek's disk cache (billed
  at the cache-hit price) and ``prompt_cache_miss_tokens`` the rest. The hits are the cached
  bucket where ``prompt_tokens_details.cached_tokens`` is absent; both given and different, or hits
  + misses not equal to ``prompt_tokens``: quarantined. ``deepseek-reasoner``'s chain of thought is
  ``completion_tokens_details.reasoning_tokens``, as OpenAI's.

Usage by modality (issue 44; docs/contract.md "Usage by modality"): the non-text parts of the
buckets, each part of the bucket it names and priced at its own rate: ``audio_input_tokens``,
``image_input_tokens``, ``video_input_tokens`` (of the uncached input), ``cached_audio_input_tokens``
(of the cached input), ``audio_output_tokens``, ``image_output_tokens``, ``video_output_tokens`` (of the
visible output), from OpenAI Chat ``prompt_tokens_details`` / ``completion_tokens_details``
(``audio_tokens``, ``image_tokens``, ``cached_tokens_details``), Responses and Images
``input_tokens_details`` / ``output_tokens_details`` (an Images ``usage`` with
``input_tokens_details.text_tokens`` and no ``output_tokens_details``: the output tokens are image
tokens), Realtime ``input_token_details`` / ``output_token_details``, and Gemini
``promptTokensDetails`` / ``candidatesTokensDetails`` / ``cacheTokensDetails`` (``[{modality,
tokenCount}]``; google-genai's snake_case ``usage_metadata`` too). Units that are not tokens:
``output_images`` (OpenAI Images ``data[]``, Imagen ``predictions[]``), ``output_video_seconds`` (a
completed Sora video object's ``seconds``), with ``image_size`` / ``image_quality`` (top-level
``size`` / ``quality``) and ``video_resolution`` (the shorter side of ``size``). A media response
without ``usage`` is the ``media_units`` shape (buckets 0). A modality count above its bucket is
quarantined.

Provider names are kept as logged (lower case); core.provider_key maps aliases (aws.bedrock,
gcp.vertex_ai, azure.ai.openai, ...) to one provider when the calls are priced.

Reasoning is never counted on top of the completion. A call that reports reasoning_tokens as 0
or null is counted as reported (0 thinking), even if its text shows thinking: thinktax costs what
the provider bills, and providers bill what they report.

The shape is Gemini when any of promptTokenCount / candidatesTokenCount / thoughtsTokenCount is
present; else Bedrock Converse when any of inputTokens / outputTokens / totalTokens /
cacheReadInputTokens / cacheWriteInputTokens is; else Anthropic when any of cache_read_input_tokens / cache_creation_input_tokens /
thinking_tokens / cache_creation is present or the provider is 'anthropic'; Chat when prompt_tokens or
completion_tokens is present; Responses otherwise. Parsing runs in an in-memory DuckDB
(one JSON parse per line via json_transform), not a Python loop. A large file (the ingest's
``BY_PATH_BYTES``, 32 MiB) is first read by path with DuckDB's typed ``read_json`` (``read_by_path``):
the same query without splitting the file into lines or parsing each line twice. It is used only
when it gives exactly the line path's rows (no line rejected, no blank line, no byte-order mark, no
field of another JSON type than expected outside the lenient ones); any other file goes the line path,
which names each rejected line (tests/sources/test_requests_by_path.py checks the two agree on every
request file of the repository).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sources.base import Parsed, ParseContext, Reject, SourceFormatError, head_text
from sources.base import split_lines as _lines  # the JSONL sources' one line splitter
from sources.base import SourceSpec
from sources.fieldguard import known_fields
from sources.contract import MAX_TOKENS_PER_CALL, PRINCIPALS, REQUESTS, redact_sql, secret_checks_sql

TABLE = "stg.requests"
MAX_TOKENS = MAX_TOKENS_PER_CALL  # a count above it is a unit or logging error (sources/contract.py)

# issue 44: Gemini's counts by modality, [{modality, tokenCount}] (REST, camelCase) or
# [{modality, token_count}] (google-genai's model_dump(), snake_case): one struct for both spellings
_MODALITY_LIST = [{"modality": "VARCHAR", "tokenCount": "VARCHAR", "token_count": "VARCHAR"}]
# Gemini usageMetadata (camelCase), read at the top level or inside "usage"
_GEMINI = {
    "promptTokenCount": "VARCHAR", "cachedContentTokenCount": "VARCHAR", "candidatesTokenCount": "VARCHAR",
    "thoughtsTokenCount": "VARCHAR", "toolUsePromptTokenCount": "VARCHAR", "trafficType": "VARCHAR",
    "serviceTier": "VARCHAR",
    "promptTokensDetails": _MODALITY_LIST, "candidatesTokensDetails": _MODALITY_LIST, "cacheTokensDetails": _MODALITY_LIST,
}
# the same as google-genai's python SDK dumps it (response.model_dump(): usage_metadata, snake_case)
_GEMINI_SNAKE = {
    "prompt_token_count": "VARCHAR", "cached_content_token_count": "VARCHAR", "candidates_token_count": "VARCHAR",
    "thoughts_token_count": "VARCHAR", "tool_use_prompt_token_count": "VARCHAR",
    "prompt_tokens_details": _MODALITY_LIST, "candidates_tokens_details": _MODALITY_LIST,
    "cache_tokens_details": _MODALITY_LIST,
}
# issue 44: OpenAI's token counts by modality (Chat *_tokens_details, Responses / Images
# *_tokens_details, Realtime *_token_details)
_OA_IN = {"audio_tokens": "VARCHAR", "image_tokens": "VARCHAR", "text_tokens": "VARCHAR",
          "cached_tokens_details": {"audio_tokens": "VARCHAR", "image_tokens": "VARCHAR"}}
_OA_OUT = {"audio_tokens": "VARCHAR", "image_tokens": "VARCHAR", "text_tokens": "VARCHAR"}
# Amazon Bedrock Converse / ConverseStream TokenUsage (camelCase)
_CONVERSE = {
    "inputTokens": "VARCHAR", "outputTokens": "VARCHAR", "totalTokens": "VARCHAR",
    "cacheReadInputTokens": "VARCHAR", "cacheWriteInputTokens": "VARCHAR",
    # Amazon Nova's InvokeModel body spells the cache counts ...TokenCount
    "cacheReadInputTokenCount": "VARCHAR", "cacheWriteInputTokenCount": "VARCHAR",
    "cacheDetails": [{"ttl": "VARCHAR", "inputTokens": "VARCHAR"}],
}

# issue 41: the principals read from ``metadata`` (docs/contract.md "Principals"), each from the first
# key present, in this order. LiteLLM's proxy writes user_api_key_hash / _alias / _user_id /
# _end_user_id into a call's metadata (StandardLoggingMetadata, docs.litellm.ai/docs/proxy/logging_spec);
# the others are the plain names a gateway or SDK wrapper adds. An OpenAI Responses body's own top-level
# ``user`` is read before metadata.user_id.
_PRINCIPAL_KEYS = {
    "api_key": ("user_api_key_hash", "api_key_id", "user_api_key_alias", "api_key"),
    "user_id": ("user_id", "user_api_key_user_id"),
    "end_user_id": ("end_user_id", "user_api_key_end_user_id", "end_user"),
    "project_id": ("project_id",),
    "workspace_id": ("workspace_id",),
    "session_id": ("session_id", "conversation_id"),
    "trace_id": ("trace_id",),
    "span_id": ("span_id",),
    "parent_span_id": ("parent_span_id",),
    "agent_name": ("agent_name",),
}


def _principal_exprs() -> str:
    """The principal columns of the fields CTE (trimmed, blank = NULL), and for tags the JSON value
    (``tags_json``) and its array read as an object (``tags_arr``, see ``tags_object_sql``): the
    ``tags`` column is made from them by the next CTE (``_TAGS``)."""
    out = []
    for name, keys in _PRINCIPAL_KEYS.items():
        parts = [f"nullif(trim(j.metadata.{k}), '')" for k in keys]
        if name == "user_id":
            parts.insert(0, "nullif(trim(j.user), '')")
        out.append(f"coalesce({', '.join(parts)}) AS {name}" if len(parts) > 1 else f"{parts[0]} AS {name}")
    out.append("j.metadata.tags AS tags_json")
    out.append(f"{tags_array_sql('j.metadata.tags')} AS tags_arr")
    return ",\n           ".join(out)


def _tags_array(t: str) -> str:
    return (f"nullif('{{' || array_to_string(list_transform("
            f"list_filter(CAST(json_extract_string({t}, '$[*]') AS VARCHAR[]), lambda x: nullif(trim(x), '') IS NOT NULL), "
            f"lambda x: to_json(trim(split_part(x, ':', 1))) || ':' || "
            f"to_json(CASE WHEN contains(x, ':') THEN trim(substr(x, strpos(x, ':') + 1)) ELSE '' END)), ',') || '}}', '{{}}')")


def tags_array_sql(t: str) -> str:
    """The ARRAY arm of ``tags_object_sql`` for a JSON value that is an array, NULL for any other
    value: a column of its own, computed before the CASE that picks it. Inside the CASE its lambdas
    ran under the CASE's selection of rows, ~3x slower (0.94 against 0.29 CPU s over the demo's
    233k tagged calls, DuckDB 2.0)."""
    return _tags_array(f"CASE WHEN json_type({t}) = 'ARRAY' THEN {t} END")


def tags_object_sql(t: str, arr: str | None = None) -> str:
    """A JSON tags value as a JSON object text: an object as it is (minified), an array of strings
    (LiteLLM ``tags`` / ``request_tags``) as {"key": "value"} for each ``key:value`` entry and
    {"tag": ""} for an entry without a colon; an empty object or array, or any other JSON, is NULL.
    ``arr``: a column holding ``tags_array_sql(t)``, computed in an earlier CTE."""
    return (f"CASE json_type({t}) WHEN 'OBJECT' THEN nullif(json({t})::VARCHAR, '{{}}') "
            f"WHEN 'ARRAY' THEN {arr or _tags_array(t)} END")


# the tags column (issue 41), from the fields CTE's tags_json and tags_arr
_TAGS = tags_object_sql("tags_json", "tags_arr")


_STRUCTURE = {
    "ts": "VARCHAR", "request_id": "VARCHAR", "model": "VARCHAR", "provider": "VARCHAR",
    "node_id": "VARCHAR", "task_id": "VARCHAR", "task_type": "VARCHAR", "team": "VARCHAR",
    "latency_ms": "VARCHAR", "ttft_ms": "VARCHAR",
    "service_tier": "VARCHAR", "batch": "VARCHAR", "region": "VARCHAR", "data_residency": "VARCHAR",
    "modelVersion": "VARCHAR", "responseId": "VARCHAR", "id": "VARCHAR", "type": "VARCHAR", "modelId": "VARCHAR",
    # Bedrock Converse: serviceTier {type}; boto3 keeps the HTTP request id in ResponseMetadata
    "serviceTier": {"type": "VARCHAR"}, "ResponseMetadata": {"RequestId": "VARCHAR"},
    "output": [{"type": "VARCHAR"}],
    "tools": [{"type": "VARCHAR", "search_context_size": "VARCHAR"}],
    "usageMetadata": _GEMINI,
    "usage_metadata": _GEMINI_SNAKE, "model_version": "VARCHAR", "response_id": "VARCHAR",
    # issue 44: units that are not tokens. OpenAI Images: data[] (one per image), size, quality;
    # Vertex AI Imagen predict: predictions[] (one per image); OpenAI Sora video object: object
    # 'video', status, seconds, size
    "data": [{"b64_json": "VARCHAR", "url": "VARCHAR"}],
    "predictions": [{"bytesBase64Encoded": "VARCHAR", "gcsUri": "VARCHAR"}],
    "object": "VARCHAR", "status": "VARCHAR", "seconds": "VARCHAR", "size": "VARCHAR", "quality": "VARCHAR",
    "metadata": {"team": "VARCHAR", "task_type": "VARCHAR", "task_id": "VARCHAR", "user_api_key_team_alias": "VARCHAR",
                 **{k: "VARCHAR" for keys in _PRINCIPAL_KEYS.values() for k in keys}, "tags": "JSON"},
    # OpenAI Responses: the response object's own `user` (platform.openai.com/docs/api-reference/responses/object)
    "user": "VARCHAR",
    "usage": {
        "prompt_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
        "input_tokens": "VARCHAR", "output_tokens": "VARCHAR",
        "cache_read_input_tokens": "VARCHAR", "cache_creation_input_tokens": "VARCHAR",
        "thinking_tokens": "VARCHAR",
        "prompt_tokens_details": {"cached_tokens": "VARCHAR", "cache_write_tokens": "VARCHAR", **_OA_IN},
        # DeepSeek (OpenAI-compatible chat): the cache hits and misses of prompt_tokens
        "prompt_cache_hit_tokens": "VARCHAR", "prompt_cache_miss_tokens": "VARCHAR",
        "completion_tokens_details": {"reasoning_tokens": "VARCHAR", **_OA_OUT},
        "input_tokens_details": {"cached_tokens": "VARCHAR", "cache_write_tokens": "VARCHAR", **_OA_IN},
        "output_tokens_details": {"reasoning_tokens": "VARCHAR", "thinking_tokens": "VARCHAR", **_OA_OUT},
        # OpenAI Realtime (response.done usage): input_token_details / output_token_details
        "input_token_details": {"cached_tokens": "VARCHAR", **_OA_IN}, "output_token_details": _OA_OUT,
        "service_tier": "VARCHAR", "inference_geo": "VARCHAR",
        "cache_creation": {"ephemeral_5m_input_tokens": "VARCHAR", "ephemeral_1h_input_tokens": "VARCHAR"},
        "server_tool_use": {"web_search_requests": "VARCHAR"},
        **_GEMINI,
        **{k: v for k, v in _GEMINI_SNAKE.items() if not k.endswith("_details")},
        **_CONVERSE,
    },
}

# The unknown-field guard (sources/fieldguard.py, issue 44): the paths this parser reads are those of
# _STRUCTURE (extend _STRUCTURE and the guard knows the new path); ``metadata`` (a free-form map) and
# boto3's ``ResponseMetadata`` envelope are not walked. Beside them, the documented fields of the
# provider bodies this parser deliberately does not read, each with why it is harmless. A field
# named in neither is an ops.unknown_fields row; a token-looking one with a non-zero value makes
# its call partially priced (marts.unpriced_usage).
_TOTAL = "a total: the sum of the counts read, not a bucket of its own"
_BODY = "response body field without tokens or money (the text, the request's settings, timing)"
_IGNORED = {
    "usage.total_tokens": _TOTAL, "usage.totalTokenCount": _TOTAL, "usageMetadata.totalTokenCount": _TOTAL,
    # the google-genai SDK's model_dump() of the same body (snake_case), which the modality parser reads
    "usage_metadata.total_token_count": _TOTAL,
    # OpenAI Realtime (response.done): the cached tokens split by modality; the audio part is read,
    # the text part is the rest of cached_tokens, priced at the cached text rate
    "usage.input_token_details.cached_tokens_details.text_tokens": "part of cached_tokens (the rest after the cached audio tokens read), priced as cached text",
    # OpenAI predicted outputs: both are part of completion_tokens and billed at its price
    # (platform.openai.com/docs/guides/predicted-outputs)
    "usage.completion_tokens_details.accepted_prediction_tokens": "part of completion_tokens, billed at its price",
    "usage.completion_tokens_details.rejected_prediction_tokens": "part of completion_tokens, billed at its price",
    # OpenAI Responses: the request's cap on output tokens, not a count
    "max_output_tokens": "a request setting (the cap on output tokens), not a count",
    **{k: _BODY for k in (
        # OpenAI / Azure / DeepSeek Chat Completions
        "choices", "created", "system_fingerprint", "prompt_filter_results",
        # OpenAI Responses
        "background", "completed_at", "created_at", "error", "incomplete_details", "instructions",
        "max_tool_calls", "parallel_tool_calls", "previous_response_id", "prompt_cache_key", "reasoning",
        "safety_identifier", "store", "temperature", "text", "tool_choice", "top_logprobs", "top_p",
        "truncation", "conversation", "prompt", "prompt_cache_retention",
        # Anthropic Messages (also Bedrock InvokeModel and Vertex AI rawPredict)
        "content", "role", "stop_reason", "stop_sequence", "stop_details", "container",
        # Bedrock Converse
        "metrics", "stopReason", "additionalModelResponseFields", "trace", "performanceConfig",
        # Gemini / Vertex AI generateContent
        "candidates", "createTime", "promptFeedback", "modelStatus",
        # OpenAI Images (the file format) and Videos (the job's percent done)
        "output_format", "progress",
    )},
}


_G_LISTS = {"P": ("promptTokensDetails", "prompt_tokens_details"), "C": ("cacheTokensDetails", "cache_tokens_details"),
            "O": ("candidatesTokensDetails", "candidates_tokens_details")}


def _glist(which: str) -> str:
    camel, snake = _G_LISTS[which]
    return f"coalesce(j.usageMetadata.{camel}, j.usage.{camel}, j.usage_metadata.{snake})"


def _gsum(which: str, modality: str) -> str:
    """The tokens of one modality in a Gemini *TokensDetails list, as text (NULL: no list or none of
    that modality). A count that is not a whole number is returned as it is, so the integer check
    rejects the line naming it. google-genai may dump the enum as 'MediaModality.AUDIO'."""
    lst = f"list_filter({_glist(which)}, lambda x: upper(x.modality) LIKE '%{modality}')"
    return (f"CASE WHEN {_glist(which)} IS NOT NULL THEN coalesce("
            f"list_filter(list_transform({lst}, lambda x: coalesce(x.tokenCount, x.token_count)), "
            f"lambda v: NOT coalesce(regexp_full_match(v, '[0-9]{{1,18}}'), false))[1], "
            f"CAST(list_sum(list_transform({lst}, lambda x: TRY_CAST(coalesce(x.tokenCount, x.token_count) AS BIGINT))) AS VARCHAR)) END")


def _oa(side: str, field: str) -> str:
    """coalesce( of an OpenAI modality count over Chat, Responses / Images and Realtime (left open)."""
    if side == "in":
        paths = ("prompt_tokens_details", "input_tokens_details", "input_token_details")
    elif side == "cached":
        paths = ("prompt_tokens_details.cached_tokens_details", "input_tokens_details.cached_tokens_details",
                 "input_token_details.cached_tokens_details")
    else:
        paths = ("completion_tokens_details", "output_tokens_details", "output_token_details")
    return "coalesce(" + ", ".join(f"j.usage.{p}.{field}" for p in paths)


# Each integer field: (output name, expression over the parsed struct j, json path for messages).
_INTS = {
    "p_prompt": ("j.usage.prompt_tokens", "usage.prompt_tokens"),
    "p_completion": ("j.usage.completion_tokens", "usage.completion_tokens"),
    # Bedrock Converse's camelCase counts mean what Anthropic's do (input without the cache), so they
    # are read into the same fields; the path in a message is the one the line used
    "p_input": ("coalesce(j.usage.input_tokens, j.usage.inputTokens)",
                "sql:CASE WHEN j_input_camel THEN 'usage.inputTokens' ELSE 'usage.input_tokens' END"),
    "p_output": ("coalesce(j.usage.output_tokens, j.usage.outputTokens)",
                 "sql:CASE WHEN j_output_camel THEN 'usage.outputTokens' ELSE 'usage.output_tokens' END"),
    "p_cache_read": ("coalesce(j.usage.cache_read_input_tokens, j.usage.cacheReadInputTokens, j.usage.cacheReadInputTokenCount)",
                     "sql:CASE WHEN bc_present THEN 'usage.cacheReadInputTokens' ELSE 'usage.cache_read_input_tokens' END"),
    "p_cache_write": ("coalesce(j.usage.cache_creation_input_tokens, j.usage.cacheWriteInputTokens, j.usage.cacheWriteInputTokenCount)",
                      "sql:CASE WHEN bc_present THEN 'usage.cacheWriteInputTokens' ELSE 'usage.cache_creation_input_tokens' END"),
    # Anthropic thinking: output_tokens_details.thinking_tokens (documented), else the older alias
    "p_thinking": ("coalesce(j.usage.output_tokens_details.thinking_tokens, j.usage.thinking_tokens)",
                   "sql:CASE WHEN thinking_detail_txt IS NOT NULL THEN 'usage.output_tokens_details.thinking_tokens' ELSE 'usage.thinking_tokens' END"),
    "p_bc_total": ("j.usage.totalTokens", "usage.totalTokens"),
    # cacheDetails: [{ttl: '5m' | '1h', inputTokens}] -- the cache writes by TTL (summed per TTL)
    "p_bc_cw_1h": ("CASE WHEN j.usage.cacheDetails IS NOT NULL THEN CAST(list_sum(list_transform(list_filter(j.usage.cacheDetails, lambda x: lower(trim(x.ttl)) = '1h'), lambda x: TRY_CAST(x.inputTokens AS BIGINT))) AS VARCHAR) END", "usage.cacheDetails"),
    "p_bc_cw_all": ("CASE WHEN j.usage.cacheDetails IS NOT NULL THEN CAST(list_sum(list_transform(j.usage.cacheDetails, lambda x: TRY_CAST(x.inputTokens AS BIGINT))) AS VARCHAR) END", "usage.cacheDetails"),
    # DeepSeek: prompt_cache_hit_tokens where prompt_tokens_details.cached_tokens is absent (one field,
    # not two: each integer field costs every line a parse)
    "p_chat_cached": ("coalesce(j.usage.prompt_tokens_details.cached_tokens, j.usage.prompt_cache_hit_tokens)",
                      "sql:CASE WHEN ds_hit_txt IS NOT NULL AND chat_cached_txt IS NULL THEN 'usage.prompt_cache_hit_tokens' "
                      "ELSE 'usage.prompt_tokens_details.cached_tokens' END"),
    "p_chat_reasoning": ("j.usage.completion_tokens_details.reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens"),
    "p_resp_cached": ("coalesce(j.usage.input_tokens_details.cached_tokens, j.usage.input_token_details.cached_tokens)",
                      "usage.input_tokens_details.cached_tokens"),
    # OpenAI prompt caching writes (newer models): part of prompt_tokens / input_tokens, like cached_tokens
    "p_openai_cw": ("coalesce(j.usage.prompt_tokens_details.cache_write_tokens, j.usage.input_tokens_details.cache_write_tokens)",
                    "sql:CASE WHEN j_chat_cw THEN 'usage.prompt_tokens_details.cache_write_tokens' ELSE 'usage.input_tokens_details.cache_write_tokens' END"),
    "p_resp_reasoning": ("j.usage.output_tokens_details.reasoning_tokens", "usage.output_tokens_details.reasoning_tokens"),
    "p_cw_5m": ("j.usage.cache_creation.ephemeral_5m_input_tokens", "usage.cache_creation.ephemeral_5m_input_tokens"),
    "p_cw_1h": ("j.usage.cache_creation.ephemeral_1h_input_tokens", "usage.cache_creation.ephemeral_1h_input_tokens"),
    "p_web_search": ("j.usage.server_tool_use.web_search_requests", "usage.server_tool_use.web_search_requests"),
    **{
        f"p_g_{short}": (f"coalesce(j.usageMetadata.{field}, j.usage.{field}, j.usage_metadata.{snake}, j.usage.{snake})",
                         f"usageMetadata.{field}")
        for short, field, snake in (("prompt", "promptTokenCount", "prompt_token_count"),
                                    ("cached", "cachedContentTokenCount", "cached_content_token_count"),
                                    ("candidates", "candidatesTokenCount", "candidates_token_count"),
                                    ("thoughts", "thoughtsTokenCount", "thoughts_token_count"),
                                    ("tool_prompt", "toolUsePromptTokenCount", "tool_use_prompt_token_count"))
    },
    # issue 44: the counts by modality, each the first of: OpenAI Chat (prompt_ / completion_tokens_details),
    # Responses and Images (input_ / output_tokens_details), Realtime (input_ / output_token_details), Gemini
    # (usageMetadata.*TokensDetails[].modality, or usage_metadata.*_tokens_details). The prompt's counts
    # include its cached part (OpenAI: cached_tokens_details; Gemini: cacheTokensDetails).
    "p_m_audio_in": (_oa("in", "audio_tokens") + ", " + _gsum("P", "AUDIO") + ")", "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.promptTokensDetails' ELSE 'usage.prompt_tokens_details.audio_tokens' END"),
    "p_m_image_in": (_oa("in", "image_tokens") + ", " + _gsum("P", "IMAGE") + ")", "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.promptTokensDetails' ELSE 'usage.prompt_tokens_details.image_tokens' END"),
    "p_m_video_in": (_gsum("P", "VIDEO"), "usageMetadata.promptTokensDetails"),
    "p_m_cached_audio": (_oa("cached", "audio_tokens") + ", " + _gsum("C", "AUDIO") + ")",
                         "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.cacheTokensDetails' ELSE 'usage.prompt_tokens_details.cached_tokens_details.audio_tokens' END"),
    "p_m_cached_image": (_oa("cached", "image_tokens") + ", " + _gsum("C", "IMAGE") + ")",
                         "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.cacheTokensDetails' ELSE 'usage.prompt_tokens_details.cached_tokens_details.image_tokens' END"),
    "p_m_cached_video": (_gsum("C", "VIDEO"), "usageMetadata.cacheTokensDetails"),
    "p_m_audio_out": (_oa("out", "audio_tokens") + ", " + _gsum("O", "AUDIO") + ")", "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.candidatesTokensDetails' ELSE 'usage.completion_tokens_details.audio_tokens' END"),
    # the Images API (gpt-image-1) reports input_tokens_details.text_tokens / image_tokens and no
    # output_tokens_details: its output tokens are all image tokens
    "p_m_image_out": (_oa("out", "image_tokens") + ", CASE WHEN j.usage.input_tokens_details.text_tokens IS NOT NULL "
                      "AND j.usage.output_tokens_details IS NULL THEN j.usage.output_tokens END, " + _gsum("O", "IMAGE") + ")",
                      "sql:CASE WHEN p_g_prompt_raw IS NOT NULL THEN 'usageMetadata.candidatesTokensDetails' ELSE 'usage.completion_tokens_details.image_tokens' END"),
    "p_m_video_out": (_gsum("O", "VIDEO"), "usageMetadata.candidatesTokensDetails"),
}
# service_tier as reported -> the tier priced (one of contract.SERVICE_TIERS, a test checks); any other value is quarantined
_TIERS = {"default": "standard", "auto": "standard", "standard": "standard", "flex": "flex",
          "priority": "priority", "scale": "scale", "batch": "batch", "reserved": "standard"}
# Gemini / Vertex AI usageMetadata.trafficType -> the service tier priced; PROVISIONED_THROUGHPUT is
# paid by the reservation (billing = 'provisioned'); any other value is quarantined
_TRAFFIC = {"TRAFFIC_TYPE_UNSPECIFIED": "standard", "ON_DEMAND": "standard", "PROVISIONED_THROUGHPUT": "standard",
            "ON_DEMAND_PRIORITY": "priority", "ON_DEMAND_FLEX": "flex", "BATCH": "batch"}

# usage is an object with counts where json_transform found one of these fields (a number, string or
# array there leaves them all NULL); Gemini's usageMetadata at the top level stands for usage. Both
# heads use it: the line path asks json_type for the other lines, the path declines them.
def _usage_found(j: str) -> str:
    fields = ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "promptTokenCount",
              "inputTokens", "outputTokens")
    return (" OR ".join(f"{j}.usage.{f} IS NOT NULL" for f in fields)
            + f" OR ({j}.usageMetadata.promptTokenCount IS NOT NULL AND {j}.usage IS NULL)"
            + f" OR ({j}.usage_metadata.prompt_token_count IS NOT NULL AND {j}.usage IS NULL)")


_LINE_HEAD = """src AS (
    -- blank lines (LF or CRLF) are not records (a regex, not trim(): trim copies every line)
    SELECT line, raw FROM lines WHERE NOT regexp_full_match(raw, '[ \t\r]*')
),
parsed_once AS (
    -- one JSON parse per good line: a line json_transform read (valid JSON) that starts with '{'
    -- is an object; only the other lines are diagnosed with json_valid / json_type
    SELECT line, raw, j0, j0 IS NOT NULL AND starts_with(raw, '{') AS fast
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
           -- usage found (_usage_found); otherwise ask json_type
           CASE WHEN NOT is_object THEN NULL
                WHEN fast AND ({usage_found_j0}) THEN 'OBJECT'
                ELSE coalesce(json_type(raw, '$.usage'), json_type(raw, '$.usageMetadata'), json_type(raw, '$.usage_metadata')) END AS usage_type,
           -- a line json_transform failed on that is an object: read it again without try(), so
           -- that its error stops the file exactly as before
           CASE WHEN fast THEN j0 WHEN is_object THEN coalesce(j0, json_transform(raw, $structure)) END AS j
    FROM objects
),
"""

# The same query read by path (read_by_path): DuckDB's read_json gives the struct ``j`` of each
# line directly (no split of the file into Python-visible lines, no second JSON parse). A line the
# fast path cannot judge the same way (usage not found where the line path would ask json_type)
# gets a reason, so the file falls back to the line path.
_PATH_HEAD = """typed AS (
    SELECT 0::BIGINT AS line, NULL::VARCHAR AS raw, true AS is_object,
           CASE WHEN {usage_found_j} THEN 'OBJECT' ELSE 'not judged by the fast path' END AS usage_type,
           j
    FROM (SELECT {lenient} AS j
          FROM read_json($path, format = 'newline_delimited', records = false, columns = {{'j': $jtype}}))
),
"""

_LINE_BATCH = "j.batch AS batch_raw, CASE WHEN j.batch IS NOT NULL THEN json_type(raw, '$.batch') END AS batch_type,"

_SQL = """
WITH {head}fields AS (
    SELECT line, raw, is_object, usage_type,
           j.ts AS ts_raw,
           coalesce(nullif(trim(j.request_id), ''), nullif(trim(j.responseId), ''), nullif(trim(j.response_id), ''),
                    nullif(trim(j.id), ''), nullif(trim(j.ResponseMetadata.RequestId), '')) AS request_id,
           -- a Bedrock call logged with its request's modelId: the id it is billed under (the body's
           -- model, for Claude, is Anthropic's name)
           coalesce(nullif(trim(j.modelId), ''), nullif(trim(j.model), ''), nullif(trim(j.modelVersion), ''),
                    nullif(trim(j.model_version), '')) AS model,
           -- issue 44: units that are not tokens (OpenAI Images data[], Imagen predictions[], a Sora video)
           CASE WHEN j.data IS NOT NULL THEN len(list_filter(j.data, lambda x: x.b64_json IS NOT NULL OR x.url IS NOT NULL))
                WHEN j.predictions IS NOT NULL
                THEN len(list_filter(j.predictions, lambda x: x.bytesBase64Encoded IS NOT NULL OR x.gcsUri IS NOT NULL)) END AS images_n,
           CASE WHEN lower(j.object) = 'video' AND lower(j.status) = 'completed' THEN trim(j.seconds) END AS seconds_raw,
           lower(replace(nullif(trim(j.size), ''), ' ', '')) AS size_raw, lower(nullif(trim(j.quality), '')) AS quality_raw,
           {g_bad}
           -- pricing modifiers (migration 100): tier reported at the top level (OpenAI) or in usage
           -- (Anthropic); batch must be a JSON boolean; region from usage.inference_geo, region or
           -- data_residency; web searches from server_tool_use or OpenAI web_search_call items
           lower(coalesce(nullif(trim(j.service_tier), ''), nullif(trim(j.usage.service_tier), ''),
                          nullif(trim(j.serviceTier.type), ''),
                          -- Gemini API: usageMetadata.serviceTier ('standard', 'flex', 'priority'; enum names tolerated)
                          regexp_replace(nullif(trim(coalesce(j.usageMetadata.serviceTier, j.usage.serviceTier)), ''),
                                         '^(?i:service_tier_)', ''))) AS tier_raw,
           -- Gemini / Vertex AI: how the call was paid (usageMetadata.trafficType)
           upper(coalesce(nullif(trim(j.usageMetadata.trafficType), ''), nullif(trim(j.usage.trafficType), ''))) AS traffic_raw,
           lower(j.type) AS body_type,
           -- which spelling a line used (for the shape and for the field named in a message)
           j.usage.inputTokens IS NOT NULL AS j_input_camel, j.usage.outputTokens IS NOT NULL AS j_output_camel,
           (j.usage.inputTokens IS NOT NULL OR j.usage.outputTokens IS NOT NULL OR j.usage.totalTokens IS NOT NULL
            OR j.usage.cacheReadInputTokens IS NOT NULL OR j.usage.cacheWriteInputTokens IS NOT NULL
            OR j.usage.cacheReadInputTokenCount IS NOT NULL OR j.usage.cacheWriteInputTokenCount IS NOT NULL) AS bc_present,
           j.usage.prompt_tokens_details.cache_write_tokens IS NOT NULL AS j_chat_cw,
           j.usage.output_tokens_details.thinking_tokens AS thinking_detail_txt, j.usage.thinking_tokens AS thinking_alias_txt,
           j.usage.prompt_tokens_details.cached_tokens AS chat_cached_txt,
           j.usage.prompt_cache_hit_tokens AS ds_hit_txt, j.usage.prompt_cache_miss_tokens AS ds_miss_txt,
           {cd_bad}
           {batch}
           lower(coalesce(nullif(trim(j.usage.inference_geo), ''), nullif(trim(j.region), ''),
                          nullif(trim(j.data_residency), ''))) AS processing_region,
           CASE WHEN j.output IS NOT NULL
                THEN len(list_filter(j.output, lambda x: x.type = 'web_search_call')) END AS web_search_calls,
           CASE WHEN j.tools IS NOT NULL
                THEN list_filter(j.tools, lambda x: starts_with(x.type, 'web_search'))[1].search_context_size END AS search_size_raw,
           lower(nullif(trim(j.provider), '')) AS provider, nullif(trim(j.node_id), '') AS node_id,
           coalesce(nullif(trim(j.task_id), ''), nullif(trim(j.metadata.task_id), '')) AS task_id_raw,
           coalesce(nullif(trim(j.task_type), ''), nullif(trim(j.metadata.task_type), '')) AS task_type,
           coalesce(nullif(trim(j.team), ''), nullif(trim(j.metadata.team), ''),
                    nullif(trim(j.metadata.user_api_key_team_alias), '')) AS team,
           j.latency_ms AS latency_raw, j.ttft_ms AS ttft_raw,
           {principals},
           {int_raw}
    FROM typed
),
plain AS (
    -- most counts are plain digits (JSON 12 or "12"): up to 18 of them are read as BIGINT directly;
    -- only the other values are trimmed and tested as whole numbers (12.0, " 12 ", 1e3, -1, ...);
    -- ts_trim is trim(ts_raw) (see _trimmed)
    SELECT *,
           {ts_trim} AS ts_trim,
           {tags} AS tags,
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
           CASE WHEN p_g_prompt_raw IS NOT NULL OR p_g_candidates_raw IS NOT NULL OR p_g_thoughts_raw IS NOT NULL
                     THEN 'gemini'
                -- Amazon Bedrock Converse / ConverseStream (camelCase TokenUsage)
                WHEN bc_present THEN 'bedrock_converse'
                -- Anthropic Messages, also as Bedrock InvokeModel and Vertex AI return it for Claude
                WHEN p_cache_read_raw IS NOT NULL OR p_cache_write_raw IS NOT NULL OR p_thinking_raw IS NOT NULL
                     OR p_cw_5m_raw IS NOT NULL OR p_cw_1h_raw IS NOT NULL
                     OR body_type = 'message' OR provider = 'anthropic' THEN 'anthropic'
                WHEN p_prompt_raw IS NOT NULL OR p_completion_raw IS NOT NULL THEN 'openai_chat'
                -- issue 44: a media response without token usage (OpenAI Images of dall-e, Imagen, Sora)
                WHEN usage_type IS NULL AND (images_n > 0 OR seconds_raw IS NOT NULL) THEN 'media_units'
                ELSE 'openai_responses' END AS usage_shape,
           TRY_CAST(seconds_raw AS DECIMAL(18,3)) AS video_seconds
    FROM timed
),
buckets AS (
    SELECT *,
           -- DeepSeek: prompt_cache_hit_tokens is the cached part of prompt_tokens where no
           -- prompt_tokens_details.cached_tokens says it
           CASE usage_shape WHEN 'openai_chat' THEN p_prompt - coalesce(p_chat_cached, 0) - coalesce(p_openai_cw, 0)
                            WHEN 'openai_responses' THEN p_input - coalesce(p_resp_cached, 0) - coalesce(p_openai_cw, 0)
                            -- Gemini: promptTokenCount includes the cached tokens; the tool-use
                            -- prompt (e.g. search results fed back) is input on top of it
                            WHEN 'gemini' THEN p_g_prompt - coalesce(p_g_cached, 0) + coalesce(p_g_tool_prompt, 0)
                            -- Bedrock: inputTokens excludes cache reads and writes (as Anthropic's input_tokens)
                            WHEN 'bedrock_converse' THEN p_input
                            WHEN 'media_units' THEN 0
                            ELSE p_input END AS uncached_input_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN coalesce(p_chat_cached, 0)
                            WHEN 'openai_responses' THEN coalesce(p_resp_cached, 0)
                            WHEN 'gemini' THEN coalesce(p_g_cached, 0)
                            WHEN 'bedrock_converse' THEN coalesce(p_cache_read, 0)
                            ELSE coalesce(p_cache_read, 0) END AS cached_input_tokens,
           CASE usage_shape WHEN 'anthropic'
                THEN coalesce(p_cache_write, CASE WHEN p_cw_5m_raw IS NOT NULL OR p_cw_1h_raw IS NOT NULL
                                                  THEN coalesce(p_cw_5m, 0) + coalesce(p_cw_1h, 0) END, 0)
                WHEN 'bedrock_converse' THEN coalesce(p_cache_write, p_bc_cw_all, 0)
                WHEN 'openai_chat' THEN coalesce(p_openai_cw, 0)
                WHEN 'openai_responses' THEN coalesce(p_openai_cw, 0)
                ELSE 0 END AS cache_write_tokens,
           CASE usage_shape WHEN 'anthropic' THEN p_cw_1h WHEN 'bedrock_converse' THEN p_bc_cw_1h END AS cache_write_1h_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN coalesce(p_chat_reasoning, 0)
                            WHEN 'openai_responses' THEN coalesce(p_resp_reasoning, 0)
                            -- Gemini: candidatesTokenCount excludes the thoughts
                            WHEN 'gemini' THEN coalesce(p_g_thoughts, 0)
                            -- Converse reports no thinking count: outputTokens holds it, unsplit
                            WHEN 'bedrock_converse' THEN 0
                            -- Anthropic: usage.output_tokens_details.thinking_tokens (the documented field),
                            -- else the older usage.thinking_tokens; both given and different: quarantined
                            ELSE coalesce(p_thinking, 0) END AS thinking_tokens,
           CASE usage_shape WHEN 'openai_chat' THEN p_completion
                            WHEN 'gemini' THEN coalesce(p_g_candidates, 0) + coalesce(p_g_thoughts, 0)
                            WHEN 'bedrock_converse' THEN p_output
                            WHEN 'media_units' THEN 0
                            ELSE p_output END AS completion_total,
           -- issue 44: the non-text parts of the buckets. The prompt's counts include their cached
           -- part; the cached image / video tokens are left in the cached bucket (Gemini prices context
           -- caching of text, image and video at one rate, audio at its own: ai.google.dev/gemini-api/docs/pricing)
           p_m_audio_in - coalesce(p_m_cached_audio, 0) AS m_audio_in,
           p_m_image_in - coalesce(p_m_cached_image, 0) AS m_image_in,
           p_m_video_in - coalesce(p_m_cached_video, 0) AS m_video_in,
           p_m_cached_audio AS m_cached_audio,
           coalesce(p_m_audio_out, 0) + coalesce(p_m_image_out, 0) + coalesce(p_m_video_out, 0) AS m_out
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
            WHEN usage_type IS NULL AND usage_shape <> 'media_units' THEN struct_pack(f := 'usage', r := 'missing')
            WHEN usage_type <> 'OBJECT' AND usage_shape <> 'media_units' THEN struct_pack(f := 'usage', r := 'not an object')
            {int_checks}
            WHEN p_prompt_raw IS NULL AND p_completion_raw IS NULL AND p_input_raw IS NULL AND p_output_raw IS NULL
                 AND p_g_prompt_raw IS NULL AND p_g_candidates_raw IS NULL AND p_g_thoughts_raw IS NULL
                 AND NOT bc_present AND usage_shape <> 'media_units'
                 THEN struct_pack(f := 'usage', r := 'matches no known usage shape (no prompt_tokens / completion_tokens, '
                      || 'input_tokens / output_tokens, usageMetadata.promptTokenCount, inputTokens / outputTokens)')
            WHEN usage_shape = 'openai_chat' AND p_prompt IS NULL THEN struct_pack(f := 'usage.prompt_tokens', r := 'missing')
            WHEN usage_shape = 'openai_chat' AND p_completion IS NULL THEN struct_pack(f := 'usage.completion_tokens', r := 'missing')
            WHEN usage_shape IN ('openai_responses', 'anthropic') AND p_input IS NULL THEN struct_pack(f := 'usage.input_tokens', r := 'missing')
            WHEN usage_shape IN ('openai_responses', 'anthropic') AND p_output IS NULL THEN struct_pack(f := 'usage.output_tokens', r := 'missing')
            WHEN usage_shape = 'gemini' AND p_g_prompt IS NULL THEN struct_pack(f := 'usageMetadata.promptTokenCount', r := 'missing')
            WHEN usage_shape = 'bedrock_converse' AND p_input IS NULL THEN struct_pack(f := 'usage.inputTokens', r := 'missing')
            WHEN usage_shape = 'bedrock_converse' AND p_output IS NULL THEN struct_pack(f := 'usage.outputTokens', r := 'missing')
            WHEN usage_shape = 'bedrock_converse' AND bc_cd_bad > 0
                 THEN struct_pack(f := 'usage.cacheDetails', r := 'an entry without ttl 5m or 1h, or whose inputTokens is not a whole number >= 0')
            WHEN usage_shape = 'bedrock_converse' AND p_bc_cw_all_raw IS NOT NULL AND p_cache_write IS NOT NULL
                 AND p_bc_cw_all <> p_cache_write
                 THEN struct_pack(f := 'usage.cacheDetails', r := 'the cache writes by TTL add up to ' || p_bc_cw_all
                      || ', not cacheWriteInputTokens = ' || p_cache_write)
            WHEN usage_shape = 'bedrock_converse' AND p_bc_total IS NOT NULL
                 AND p_bc_total <> p_input + p_output + coalesce(p_cache_read, 0) + coalesce(p_cache_write, 0)
                 THEN struct_pack(f := 'usage.totalTokens', r := 'totalTokens = ' || p_bc_total || ' is not inputTokens + outputTokens + '
                      || 'cacheReadInputTokens + cacheWriteInputTokens = ' || (p_input + p_output + coalesce(p_cache_read, 0) + coalesce(p_cache_write, 0)))
            WHEN thinking_detail_txt IS NOT NULL AND thinking_alias_txt IS NOT NULL
                 AND TRY_CAST(trim(thinking_detail_txt) AS DECIMAL(38,0)) IS DISTINCT FROM TRY_CAST(trim(thinking_alias_txt) AS DECIMAL(38,0))
                 THEN struct_pack(f := 'usage.output_tokens_details.thinking_tokens', r := 'disagrees with usage.thinking_tokens (its older alias): '
                      || thinking_detail_txt || ' vs ' || thinking_alias_txt)
            -- DeepSeek's hits beside OpenAI's cached_tokens must agree; hits + misses must be the prompt
            WHEN usage_shape = 'openai_chat' AND ds_hit_txt IS NOT NULL AND chat_cached_txt IS NOT NULL
                 AND TRY_CAST(trim(ds_hit_txt) AS DECIMAL(38,0)) IS DISTINCT FROM TRY_CAST(trim(chat_cached_txt) AS DECIMAL(38,0))
                 THEN struct_pack(f := 'usage.prompt_cache_hit_tokens', r := 'disagrees with usage.prompt_tokens_details.cached_tokens: '
                      || ds_hit_txt || ' vs ' || chat_cached_txt)
            WHEN usage_shape = 'openai_chat' AND ds_miss_txt IS NOT NULL
                 AND TRY_CAST(trim(ds_miss_txt) AS DECIMAL(38,0)) IS DISTINCT FROM p_prompt - coalesce(p_chat_cached, 0)
                 THEN struct_pack(f := 'usage.prompt_cache_miss_tokens', r := 'prompt_cache_miss_tokens = ' || ds_miss_txt
                      || ' is not prompt_tokens - prompt_cache_hit_tokens = ' || (p_prompt - coalesce(p_chat_cached, 0)))
            WHEN usage_shape = 'gemini' AND p_g_prompt < coalesce(p_g_cached, 0) THEN struct_pack(f := 'usageMetadata.cachedContentTokenCount', r := 'cached tokens exceed promptTokenCount, which includes them')
            WHEN uncached_input_tokens < 0 THEN struct_pack(f := 'usage.cached_tokens', r := 'cached tokens exceed the prompt tokens they are part of')
            WHEN thinking_tokens > completion_total THEN struct_pack(f := CASE usage_shape WHEN 'anthropic' THEN
                     CASE WHEN thinking_detail_txt IS NOT NULL THEN 'usage.output_tokens_details.thinking_tokens' ELSE 'usage.thinking_tokens' END
                     WHEN 'gemini' THEN 'usageMetadata.thoughtsTokenCount' ELSE 'usage.reasoning_tokens' END, r := 'reasoning/thinking tokens exceed the output tokens they are part of')
            WHEN m_audio_in < 0 OR m_image_in < 0 OR m_video_in < 0
                 THEN struct_pack(f := 'usage.cached_tokens_details', r := 'cached tokens of a modality exceed the prompt tokens of that modality they are part of')
            WHEN coalesce(m_audio_in, 0) + coalesce(m_image_in, 0) + coalesce(m_video_in, 0) > uncached_input_tokens
                 THEN struct_pack(f := CASE usage_shape WHEN 'gemini' THEN 'usageMetadata.promptTokensDetails' ELSE 'usage.prompt_tokens_details' END,
                                  r := 'audio + image + video input tokens (' || (coalesce(m_audio_in, 0) + coalesce(m_image_in, 0) + coalesce(m_video_in, 0))
                                       || ') exceed the uncached prompt tokens they are part of (' || uncached_input_tokens || ')')
            WHEN coalesce(m_cached_audio, 0) > cached_input_tokens
                 THEN struct_pack(f := CASE usage_shape WHEN 'gemini' THEN 'usageMetadata.cacheTokensDetails' ELSE 'usage.prompt_tokens_details.cached_tokens_details' END,
                                  r := 'cached audio tokens exceed the cached tokens they are part of')
            WHEN m_out > completion_total - thinking_tokens
                 THEN struct_pack(f := CASE usage_shape WHEN 'gemini' THEN 'usageMetadata.candidatesTokensDetails' ELSE 'usage.completion_tokens_details' END,
                                  r := 'audio + image + video output tokens (' || m_out || ') exceed the output tokens they are part of ('
                                       || (completion_total - thinking_tokens) || ')')
            WHEN seconds_raw IS NOT NULL AND (video_seconds IS NULL OR video_seconds < 0)
                 THEN struct_pack(f := 'seconds', r := 'not a non-negative number of seconds: ' || seconds_raw)
            WHEN g_details_bad THEN struct_pack(f := 'usageMetadata.promptTokensDetails', r := 'an entry without a modality')
            WHEN latency_raw IS NOT NULL AND (latency_ms IS NULL OR latency_ms < 0 OR isnan(latency_ms) OR isinf(latency_ms)) THEN struct_pack(f := 'latency_ms', r := 'not a non-negative number: ' || latency_raw)
            WHEN ttft_raw IS NOT NULL AND (ttft_ms IS NULL OR ttft_ms < 0 OR isnan(ttft_ms) OR isinf(ttft_ms)) THEN struct_pack(f := 'ttft_ms', r := 'not a non-negative number: ' || ttft_raw)
            WHEN tier_raw IS NOT NULL AND tier_raw NOT IN ({tiers}) THEN struct_pack(f := 'service_tier', r := 'unknown service tier "' || tier_raw || '" (known: {tier_list})')
            WHEN traffic_raw IS NOT NULL AND traffic_raw NOT IN ({traffic_types})
                 THEN struct_pack(f := 'usageMetadata.trafficType', r := 'unknown traffic type "' || traffic_raw || '" (known: {traffic_list})')
            WHEN batch_raw IS NOT NULL AND batch_type IS DISTINCT FROM 'BOOLEAN' THEN struct_pack(f := 'batch', r := 'not a JSON boolean (true or false): ' || batch_raw)
            WHEN (p_cw_5m_raw IS NOT NULL OR p_cw_1h_raw IS NOT NULL) AND p_cache_write IS NOT NULL
                 AND coalesce(p_cw_5m, 0) + coalesce(p_cw_1h, 0) <> p_cache_write
                 THEN struct_pack(f := 'usage.cache_creation', r := 'ephemeral_5m_input_tokens + ephemeral_1h_input_tokens = '
                      || (coalesce(p_cw_5m, 0) + coalesce(p_cw_1h, 0)) || ', not cache_creation_input_tokens = ' || p_cache_write)
            WHEN search_size_raw IS NOT NULL AND lower(trim(search_size_raw)) NOT IN ('low', 'medium', 'high') THEN struct_pack(f := 'tools.search_context_size', r := 'not low, medium or high: ' || search_size_raw)
            {secret_checks}
        END AS problem
    FROM buckets
)
-- kept for rejects only, with anything that looks like a secret key redacted (never stored, not even in ops.quarantine)
SELECT line, CASE WHEN problem IS NOT NULL THEN {redacted_raw} END AS raw,
       problem.f AS reject_field, problem.r AS reject_reason,
       ts::TIMESTAMP AS ts, request_id, model, provider, node_id,
       coalesce(task_id_raw, request_id) AS task_id, task_type, team, latency_ms, ttft_ms, usage_shape,
       uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens,
       completion_total - thinking_tokens AS output_tokens,
       -- NULL for "not reported or standard / none", so that a call logged before these columns
       -- existed and the same call re-exported now are the same row (ingest dedupes on every value)
       nullif(coalesce(CASE tier_raw {tier_case} END, CASE traffic_raw {traffic_tier_case} END), 'standard') AS service_tier,
       CASE WHEN batch_raw = 'true' THEN true END AS is_batch,
       nullif(cache_write_1h_tokens, 0) AS cache_write_1h_tokens, processing_region,
       nullif(coalesce(p_web_search, web_search_calls), 0) AS web_search_requests,
       lower(trim(search_size_raw)) AS web_search_context_size,
       -- paid by a reservation: Gemini / Vertex AI provisioned throughput, Bedrock's reserved tier
       CASE WHEN traffic_raw = 'PROVISIONED_THROUGHPUT' OR tier_raw = 'reserved' THEN 'provisioned' END AS billing,
       {principal_cols}, CAST(NULL AS VARCHAR) AS agent_span_id,
       -- issue 44 (NULL = 0 / not reported, like the modifiers above)
       nullif(m_audio_in, 0) AS audio_input_tokens, nullif(m_image_in, 0) AS image_input_tokens,
       nullif(m_video_in, 0) AS video_input_tokens, nullif(m_cached_audio, 0) AS cached_audio_input_tokens,
       nullif(p_m_audio_out, 0) AS audio_output_tokens, nullif(p_m_image_out, 0) AS image_output_tokens,
       nullif(p_m_video_out, 0) AS video_output_tokens, nullif(images_n, 0) AS output_images,
       nullif(video_seconds, 0) AS output_video_seconds,
       CASE WHEN images_n > 0 THEN size_raw END AS image_size, CASE WHEN images_n > 0 THEN quality_raw END AS image_quality,
       CASE WHEN video_seconds > 0 THEN least(TRY_CAST(regexp_extract(size_raw, '^([0-9]+)x([0-9]+)$', 1) AS INTEGER),
                                              TRY_CAST(regexp_extract(size_raw, '^([0-9]+)x([0-9]+)$', 2) AS INTEGER)) || 'p' END AS video_resolution
FROM judged
"""

_OUT_COLUMNS = REQUESTS.arrow_schema().names  # line + every stg.requests column, in table order


def _trimmed(expr: str) -> str:
    """``trim(expr)`` without trim()'s copy of every string: an ASCII string (as many bytes as
    characters) that neither starts nor ends with a space is already trimmed (trim() removes
    Unicode space separators, and the only ASCII one is the space)."""
    return (f"CASE WHEN strlen({expr}) = length({expr}) AND NOT starts_with({expr}, ' ') AND NOT ends_with({expr}, ' ') "
            f"THEN {expr} ELSE trim({expr}) END")


def _nonblank(expr: str) -> str:
    """``nullif(trim(expr), '')``, see _trimmed."""
    return f"nullif({_trimmed(expr)}, '')"


def _sql(head: str = "", batch: str = "") -> str:
    """The request query over the (line, raw) table ``lines`` (the line path), or with the head and
    the batch columns of the path (``read_by_path``)."""
    head = head or _LINE_HEAD.replace("{usage_found_j0}", _usage_found("j0"))
    batch = batch or _LINE_BATCH
    ints = _INTS
    int_raw = ",\n           ".join(f"{expr} AS {name}_raw" for name, (expr, _) in ints.items())
    # An integer field must be a whole number >= 0 (JSON 12 or "12"; 12.0 is accepted as 12).
    # try_cast: a number too long for BIGINT is a reject below, never a crash of the whole file.
    int_plain = ",\n           ".join(
        f"regexp_full_match({name}_raw, '[0-9]{{1,18}}') AS {name}_plain, "
        f"CASE WHEN NOT {name}_plain THEN trim({name}_raw) END AS {name}_other"
        for name in ints
    )
    # A plain value is a whole number whose BIGINT cast cannot fail; any other is a whole number
    # if it matches below, and is read through DECIMAL(38,0) as before.
    int_whole = ",\n           ".join(
        f"{name}_plain OR regexp_full_match({name}_other, '[0-9]+(\\.0+)?') AS {name}_whole" for name in ints
    )
    int_cast = ",\n           ".join(
        f"CASE WHEN {name}_plain THEN CAST({name}_raw AS BIGINT) WHEN {name}_whole "
        f"THEN TRY_CAST(TRY_CAST({name}_other AS DECIMAL(38,0)) AS BIGINT) END AS {name}"
        for name in ints
    )
    def field(path: str) -> str:  # a literal path, or "sql:<expression>" for one that depends on the line
        return path[4:] if path.startswith("sql:") else f"'{path}'"

    int_checks = "\n            ".join(
        f"WHEN {name}_whole AND ({name} IS NULL OR {name} > {MAX_TOKENS}) "
        f"THEN struct_pack(f := {field(path)}, r := 'above {MAX_TOKENS:,} tokens, more than any context window (an outlier): ' || {name}_raw)\n            "
        f"WHEN {name}_raw IS NOT NULL AND {name} IS NULL THEN struct_pack(f := {field(path)}, r := 'not a non-negative whole number: ' || {name}_raw)"
        for name, (_, path) in ints.items()
    )
    ts_trim = _trimmed("ts_raw")
    tiers = ", ".join(f"'{t}'" for t in _TIERS)
    tier_case = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in _TIERS.items())
    traffic_types = ", ".join(f"'{t}'" for t in _TRAFFIC)
    traffic_tier_case = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in _TRAFFIC.items())
    cd_bad = _CD_BAD
    secret_checks = secret_checks_sql({
        n: "metadata.tags" if n == "tags" else " | ".join((["user"] if n == "user_id" else [])
                                                          + [f"metadata.{k}" for k in _PRINCIPAL_KEYS[n]])
        for n in PRINCIPALS})
    sql = _SQL.format(tags=_TAGS, g_bad=_G_BAD, redacted_raw=redact_sql('raw'), principals=_principal_exprs(), secret_checks=secret_checks, principal_cols=", ".join(PRINCIPALS), head=head, batch=batch, cd_bad=cd_bad, traffic_types=traffic_types, traffic_list=", ".join(_TRAFFIC), traffic_tier_case=traffic_tier_case, tiers=tiers, tier_list=", ".join(_TIERS), tier_case=tier_case, ts_trim=ts_trim, int_raw=int_raw, int_plain=int_plain, int_whole=int_whole, int_cast=int_cast, int_checks=int_checks)
    return re.sub(r"nullif\(trim\((j\.[a-z_.]+)\), ''\)", lambda m: _nonblank(m.group(1)), sql)


# a Gemini *TokensDetails entry without a modality (its counts are checked as whole numbers by _gsum)
_G_BAD = ("coalesce(" + " OR ".join(f"len(list_filter({_glist(w)}, lambda x: nullif(trim(x.modality), '') IS NULL)) > 0"
                                    for w in _G_LISTS) + ", false) AS g_details_bad,")

_CD_BAD = """CASE WHEN j.usage.cacheDetails IS NOT NULL
                THEN len(list_filter(j.usage.cacheDetails, lambda x: x.ttl IS NULL OR lower(trim(x.ttl)) NOT IN ('5m', '1h')
                                     OR NOT coalesce(regexp_full_match(trim(x.inputTokens), '[0-9]{1,18}'), false))) END AS bc_cd_bad,"""


def _sql_type(spec: object) -> str:
    """A json_transform structure (as _STRUCTURE) as a DuckDB type: read_json's ``columns``."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, list):
        return f"{_sql_type(spec[0])}[]"
    assert isinstance(spec, dict)
    return "STRUCT(" + ", ".join(f'"{k}" {_sql_type(v)}' for k, v in spec.items()) + ")"


# batch as JSON: its JSON type (a boolean or not) is read from the value, as the line path reads it
# from the line's text. read_json is strict where json_transform is lenient (a value of another
# JSON type than the structure's is an error, not NULL): the fields whose type differs between
# providers (output: OpenAI Responses' array, Bedrock Converse's object; and the other small
# objects) are read as JSON and transformed as the line path transforms them. A type mismatch
# anywhere else stops the read, and the file goes the line path.
_PATH_LENIENT = ("output", "tools", "serviceTier", "ResponseMetadata", "data", "predictions")
_PATH_TYPE = _sql_type({**_STRUCTURE, "batch": "JSON", **{k: "JSON" for k in _PATH_LENIENT}})
# the same, public: the columns thinktax reads of a request line (tools/bench.py's ingest floor reads with it)
READ_TYPE = _PATH_TYPE


# One query for every line: gating the issue-24 fields behind a search of the file's bytes for their
# keys (tried first) cost more in the searches (~30 ms per key per 60 MB file) than it saved in the
# query (docs/performance.md).
_QUERY = _sql()
# batch is read as JSON by path, so that its JSON type is known without the line's text
_PATH_QUERY = _sql(
    _PATH_HEAD.format(usage_found_j=_usage_found("j"), lenient="struct_update(j, " + ", ".join(
        f"{k} := json_transform(j.{k}, '{json.dumps(_STRUCTURE[k])}')" for k in _PATH_LENIENT) + ")"),
    "CAST(j.batch AS VARCHAR) AS batch_raw, json_type(j.batch) AS batch_type,")


def sniff(data: bytes, name: str) -> bool:
    head = head_text(data, 2048)
    return head.startswith("{") and ('"usage"' in head or name.endswith((".jsonl", ".jsonl.gz", ".ndjson")))




def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    good, rejects = run_lines(_lines(data), ctx)
    return Parsed(TABLE, good, rejects, "requests_jsonl")

def _run(query: str, params: dict, ctx: ParseContext, lines: pa.Table | None = None) -> pa.Table:
    """One of the two request queries in a fresh in-memory DuckDB (``lines``: the line path's table)."""
    con = duckdb.connect()
    try:
        # rows come out in line order without an ORDER BY: the query only projects one scan, and
        # DuckDB keeps insertion order for that (the default, set here to say so)
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true")
        if lines is not None:
            con.register("lines", lines)
        return con.sql(query, params={**params, "latest_ts": _latest_ts(ctx)}).to_arrow_table()
    finally:
        con.close()


def path_lines(data: bytes) -> int | None:
    """The lines of a file the fast path by path may take (its decoded bytes ``data``), or None: an
    empty file, or one that starts with a byte-order mark (the line numbers would differ)."""
    if not data or data.startswith(b"\xef\xbb\xbf"):
        return None
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def path_select(path: Path, ctx: ParseContext) -> tuple[str, dict]:
    """The fast path's query for ``path`` as (SELECT, parameters), for a loader that runs it in its
    own connection (warehouse/ingest.py, into its temp table: no Arrow copy of the rows): every
    column of ``parse``'s rows, ``line`` 0 (the n-th row of an insertion-ordered scan is the n-th
    line: the loader numbers them), and ``reject_reason``. The loader takes the rows only as
    ``read_by_path`` does: as many rows as ``path_lines``, no reject, the file unchanged."""
    cols = ", ".join(f'"{c}"' for c in _OUT_COLUMNS if c != "line")
    return (f"SELECT 0::BIGINT AS line, {cols}, reject_reason FROM ({_PATH_QUERY})",
            {"path": str(path), "jtype": _PATH_TYPE, "latest_ts": _latest_ts(ctx)})


def _latest_ts(ctx: ParseContext) -> dt.datetime:
    """The latest ``ts`` a call may have: a day after the ingest (naive UTC, as the query's)."""
    return ctx.ingested_at.replace(tzinfo=None) + dt.timedelta(days=1)


def read_by_path(path: Path, data: bytes, ctx: ParseContext, read_stat: os.stat_result | None = None) -> Parsed | None:
    """``parse(data, ...)`` for a large file, read by DuckDB's ``read_json`` from ``path`` (whose
    decoded bytes are ``data``): one typed read of the file, no split into lines and no second JSON
    parse. It gives exactly what ``parse`` gives, or None when it cannot, and then the caller runs
    the line path (``parse``): a file the reader refuses (a line that is not a JSON object, or whose
    fields do not fit their types), a file with any line the query rejects (the line path names the
    line, field and reason, and keeps the line's text), with blank lines or a byte-order mark (the
    line numbers would differ), or one that changed on disk since ``data`` was read (the rows would
    not be those of its sha256: ``read_stat`` is the file's stat when ``data`` was read)."""
    lines = path_lines(data)
    if lines is None:
        return None
    before = read_stat or path.stat()
    try:
        out = _run(_PATH_QUERY, {"path": str(path), "jtype": _PATH_TYPE}, ctx)
    except duckdb.Error:
        return None
    after = path.stat()
    if (out.num_rows != lines or out["reject_reason"].null_count != out.num_rows
            or (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)):
        return None
    # no blank line: the n-th row is the n-th line (one scan, insertion order preserved)
    good = out.select(_OUT_COLUMNS)
    good = good.set_column(0, "line", pa.array(np.arange(1, lines + 1, dtype=np.int64)))
    return Parsed(TABLE, good, [], "requests_jsonl")


def run_lines(table: pa.Table, ctx: ParseContext, allow_empty: bool = False) -> tuple[pa.Table, list[Reject]]:
    """The request query over a (line, raw) table: (good rows, rejects)."""
    out = _run(_QUERY, {"structure": json.dumps(_STRUCTURE)}, ctx, lines=table)
    if out.num_rows == 0 and not allow_empty:
        raise SourceFormatError("empty file: no JSON lines")
    reason = out["reject_reason"]
    if reason.null_count == out.num_rows:  # no rejects (the usual file): no copy of the good rows
        good, bad = out.select(_OUT_COLUMNS), []
    else:
        good = out.filter(pc.is_null(reason)).select(_OUT_COLUMNS)
        bad = out.select(["line", "reject_field", "reject_reason", "raw"]).filter(pc.is_valid(reason)).to_pylist()
    rejects = [Reject(r["line"], r["reject_field"], r["reject_reason"], r["raw"][:2000]) for r in bad]
    return good, rejects


# Batch result files (sources/requests_batch.py) are JSONL with "usage" too, told apart by content:
# sources/registry.py lists their specs before this one.
KNOWN_FIELDS = known_fields("requests_jsonl", _STRUCTURE, open_objects=("metadata", "ResponseMetadata"), ignored=_IGNORED)

SPECS = [
    SourceSpec("telemetry/requests", "requests_jsonl", sniff, parse, TABLE, known_fields=KNOWN_FIELDS),
]
