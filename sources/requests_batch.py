"""Batch API result files in ``telemetry/requests/``: every succeeded request is one call, priced
at the batch rates (``is_batch`` = true; docs/economics.md "Exact API cost").

``openai_batch_output`` -- the output file of an OpenAI Batch (``GET /v1/files/{output_file_id}/content``)
    One JSON line per request: ``{"id": "batch_req_...", "custom_id": ..., "response":
    {"status_code": 200, "request_id": ..., "body": {...}}, "error": null}``. The body is a Chat
    Completions or Responses object: ``request_id`` = body ``id`` (else the line's ``id``), ``ts`` =
    body ``created`` / ``created_at`` (epoch seconds), ``model``, ``usage`` and ``service_tier`` as in
    any request line. A line whose status_code is not 2xx, or that has an ``error`` or no body, was
    not billed: it is quarantined with the reason (and counted), never costed.

``anthropic_batch_results`` -- Anthropic Message Batches results (``GET .../results``)
    ``{"custom_id": ..., "result": {"type": "succeeded", "message": {...}}}``; ``request_id`` =
    message ``id`` (else custom_id), usage as in a Messages response (``usage.service_tier`` is
    'batch'). The results carry no time: ``ts`` is the first ISO date in the file name (00:00 UTC),
    else the time of ingestion. ``errored`` / ``canceled`` / ``expired`` results are not billed:
    quarantined with the reason.

Both are rewritten line by line in DuckDB into request lines and read by the request parser
(sources/requests.py), so every check of a request line applies; rows in = loaded + quarantined.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from sources.base import ParseContext, Parsed, Reject, date_in_name, head_text
from sources.base import SourceSpec
from sources.fieldguard import known_fields

_OPENAI = """
SELECT line, raw,
       CASE WHEN NOT json_valid(raw) OR json_type(raw) <> 'OBJECT' THEN 'not a JSON object (invalid JSON line)'
            WHEN json_extract(raw, '$.error') IS NOT NULL AND json_type(raw, '$.error') <> 'NULL'
                 THEN 'batch request failed: ' || coalesce(json_extract_string(raw, '$.error.message'),
                                                           json_extract(raw, '$.error')::VARCHAR) || ' (not billed, not costed)'
            WHEN try_cast(json_extract_string(raw, '$.response.status_code') AS INTEGER) IS NULL
                 THEN 'no response.status_code (not costed)'
            WHEN NOT try_cast(json_extract_string(raw, '$.response.status_code') AS INTEGER) BETWEEN 200 AND 299
                 THEN 'batch request failed with status ' || json_extract_string(raw, '$.response.status_code')
                      || coalesce(': ' || json_extract_string(raw, '$.response.body.error.message'), '') || ' (not billed, not costed)'
            WHEN json_type(raw, '$.response.body') IS DISTINCT FROM 'OBJECT' THEN 'response.body is not an object (not costed)'
       END AS failed,
       CASE WHEN json_valid(raw) THEN json_merge_patch(
           json_extract(raw, '$.response.body'),
           json_object('request_id', coalesce(json_extract_string(raw, '$.response.body.id'), json_extract_string(raw, '$.id')),
                       'ts', coalesce(json_extract(raw, '$.response.body.created'), json_extract(raw, '$.response.body.created_at')),
                       'provider', 'openai', 'batch', true)) END AS request
FROM lines
WHERE NOT regexp_full_match(raw, '[ \t\r]*')
"""

_ANTHROPIC = """
SELECT line, raw,
       CASE WHEN NOT json_valid(raw) OR json_type(raw) <> 'OBJECT' THEN 'not a JSON object (invalid JSON line)'
            WHEN json_extract_string(raw, '$.result.type') IS NULL THEN 'no result.type (not costed)'
            WHEN json_extract_string(raw, '$.result.type') <> 'succeeded'
                 THEN 'batch request ' || json_extract_string(raw, '$.result.type')
                      || coalesce(': ' || json_extract_string(raw, '$.result.error.error.message'), '')
                      || coalesce(': ' || json_extract_string(raw, '$.result.error.message'), '') || ' (not billed, not costed)'
            WHEN json_type(raw, '$.result.message') IS DISTINCT FROM 'OBJECT' THEN 'result.message is not an object (not costed)'
       END AS failed,
       CASE WHEN json_valid(raw) THEN json_merge_patch(
           json_extract(raw, '$.result.message'),
           json_object('request_id', coalesce(json_extract_string(raw, '$.result.message.id'), json_extract_string(raw, '$.custom_id')),
                       'ts', $ts, 'provider', 'anthropic', 'batch', true)) END AS request
FROM lines
WHERE NOT regexp_full_match(raw, '[ \t\r]*')
"""


def _parse(sql: str, fmt: str, data: bytes, name: str, ctx: ParseContext, params: dict | None = None) -> Parsed:
    from sources import requests  # noqa: PLC0415  (import on use, as the registry does)

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true")
        con.register("lines", requests._lines(data))  # noqa: SLF001
        out = con.sql(sql, params=params or {}).to_arrow_table()
    finally:
        con.close()
    bad = out.filter(pc.is_valid(out["failed"])).select(["line", "failed", "raw"]).to_pylist()
    rejects = [Reject(r["line"], "response" if fmt.startswith("openai") else "result", r["failed"], r["raw"][:2000]) for r in bad]
    ok = out.filter(pc.is_null(out["failed"]))
    table = pa.table({"line": ok["line"], "raw": ok["request"].cast(pa.large_string())})
    good, more = requests.run_lines(table, ctx, allow_empty=True)
    return Parsed(requests.TABLE, good, sorted(rejects + more, key=lambda r: r.line or 0), fmt)


def sniff_openai(data: bytes, name: str) -> bool:
    head = head_text(data, 4096)
    return head.startswith("{") and '"custom_id"' in head and '"response"' in head and '"status_code"' in head


def parse_openai(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    return _parse(_OPENAI, "openai_batch_output", data, name, ctx)


def sniff_anthropic(data: bytes, name: str) -> bool:
    head = head_text(data, 4096)
    return head.startswith("{") and '"custom_id"' in head and '"result"' in head


def parse_anthropic(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    day = date_in_name(name)
    ts = (dt.datetime.combine(day, dt.time()) if day else ctx.ingested_at.replace(tzinfo=None)).isoformat()
    return _parse(_ANTHROPIC, "anthropic_batch_results", data, name, ctx, {"ts": ts})


def _known(source: str, wrap: list[str], envelope: dict) -> object:
    """The unknown-field guard's known paths (sources/fieldguard.py) of a batch file: its envelope
    (``envelope``, what _OPENAI / _ANTHROPIC read) with the request parser's own structure, open
    objects and ignored fields under ``wrap`` (the path of the body in a line)."""
    from sources import requests  # noqa: PLC0415

    prefix = ".".join(wrap) + "."
    structure: dict = requests._STRUCTURE  # noqa: SLF001
    for key in reversed(wrap):
        structure = {key: structure}
    top = {**envelope, wrap[0]: {**envelope.get(wrap[0], {}), **structure[wrap[0]]}}
    return known_fields(source, top, open_objects=(prefix + "metadata", prefix + "ResponseMetadata", "error", wrap[0] + ".error"),
                        ignored={prefix + k: v for k, v in requests._IGNORED.items()})  # noqa: SLF001


# what _OPENAI and _ANTHROPIC read of a line besides the body (the guard knows these paths)
_OPENAI_KNOWN = _known("openai_batch_output", ["response", "body"],
                       {"id": "VARCHAR", "custom_id": "VARCHAR", "error": {"message": "VARCHAR"},
                        "response": {"status_code": "VARCHAR", "request_id": "VARCHAR"}})
_ANTHROPIC_KNOWN = _known("anthropic_batch_results", ["result", "message"],
                          {"custom_id": "VARCHAR", "result": {"type": "VARCHAR", "error": {"message": "VARCHAR"}}})

SPECS = [
    SourceSpec("telemetry/requests", "openai_batch_output", sniff_openai, parse_openai, "stg.requests",
               known_fields=_OPENAI_KNOWN),
    SourceSpec("telemetry/requests", "anthropic_batch_results", sniff_anthropic, parse_anthropic, "stg.requests",
               known_fields=_ANTHROPIC_KNOWN),
]
