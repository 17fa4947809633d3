"""Anthropic Admin API report pages (``landing/bills/anthropic/``).

* ``/v1/organizations/usage_report/messages`` -> ``stg.anthropic_usage``: results with
  ``uncached_input_tokens``, ``cache_read_input_tokens``, ``cache_creation:
  {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}``, ``output_tokens``,
  ``server_tool_use: {web_search_requests}`` and the group-by fields (``model``,
  ``workspace_id``, ``api_key_id``, ``service_tier``, ``context_window``, ...).
* ``/v1/organizations/cost_report`` -> ``stg.anthropic_costs``: results with ``amount`` (a
  decimal string in the currency's lowest unit, i.e. **cents**: "123.45" USD = $1.2345),
  ``currency``, ``cost_type``, ``token_type``, ``model``, ``workspace_id``, ``description``.

Buckets carry ``starting_at``/``ending_at`` (RFC 3339). Results have no ``object`` tag, so the
kind is read from their fields; an empty page is taken by the file name (``cost`` -> costs).
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext

import pyarrow as pa

from sources import bills_pages as bp
from sources import contract
from sources.base import ParseContext, Parsed, Reject, head_text
from sources.base import SourceSpec

USAGE_TABLE = "stg.anthropic_usage"
COSTS_TABLE = "stg.anthropic_costs"
USAGE_SCHEMA = contract.table(USAGE_TABLE).arrow_schema()
COSTS_SCHEMA = contract.table(COSTS_TABLE).arrow_schema()
# the group-by fields of a result: the key after the bucket (sources/contract.py)
USAGE_GROUPS = contract.table(USAGE_TABLE).key[2:]
COSTS_GROUPS = contract.table(COSTS_TABLE).key[2:]

_HUNDRED = Decimal(100)
# As keys (a cost result names "uncached_input_tokens" as the *value* of its token_type).
_USAGE_FIELD = re.compile(rb'"uncached_input_tokens"\s*:')
_AMOUNT_FIELD = re.compile(rb'"amount"\s*:')


def _file_kind(data: bytes, name: str) -> str | None:
    head = head_text(data, 512)
    if head[:1] not in ("{", "[") or b'"data"' not in data:
        return None
    if not (b'"starting_at"' in data or b'"has_more"' in data):
        return None
    if _USAGE_FIELD.search(data):
        return "usage"
    if _AMOUNT_FIELD.search(data):
        return "costs"
    return "costs" if "cost" in name.rsplit("/", 1)[-1] else "usage"


def sniff_usage(data: bytes, name: str) -> bool:
    return _file_kind(data, name) == "usage"


def sniff_costs(data: bytes, name: str) -> bool:
    return _file_kind(data, name) == "costs"


def _result_kind(result: dict) -> str | None:
    if "uncached_input_tokens" in result:
        return "usage"
    if "amount" in result:
        return "costs"
    return None


def _sub(result: dict, field: str) -> dict:
    value = result.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bp.FieldError(field, f"{field} is not an object: {bp.raw_json(value, 200)}")
    return value


def _usage_row(r: dict) -> dict:
    cache = _sub(r, "cache_creation")
    tools = _sub(r, "server_tool_use")
    row = {g: bp.text(r, g) for g in USAGE_GROUPS}
    row.update(
        uncached_input_tokens=bp.count(r, "uncached_input_tokens", required=True),
        cache_read_input_tokens=bp.count(r, "cache_read_input_tokens", required=False) or 0,
        # Nested as documented; a flattened export (cache_creation_5m_input_tokens) is accepted too.
        cache_creation_5m_tokens=(
            bp.count(cache, "ephemeral_5m_input_tokens", required=False, label="cache_creation.ephemeral_5m_input_tokens")
            or bp.count(r, "cache_creation_5m_input_tokens", required=False)
            or 0
        ),
        cache_creation_1h_tokens=(
            bp.count(cache, "ephemeral_1h_input_tokens", required=False, label="cache_creation.ephemeral_1h_input_tokens")
            or bp.count(r, "cache_creation_1h_input_tokens", required=False)
            or 0
        ),
        output_tokens=bp.count(r, "output_tokens", required=True),
        web_search_requests=bp.count(
            tools, "web_search_requests", required=False, label="server_tool_use.web_search_requests"
        )
        or 0,
    )
    return row


def _costs_row(r: dict, ctx: ParseContext) -> dict:
    cents = bp.decimal(r.get("amount"), "amount")
    with localcontext() as c:
        c.prec = 60
        amount = bp.quantize(cents / _HUNDRED, "amount")  # cents -> major units, exact to 1e-12
    cur = r.get("currency")
    if not isinstance(cur, str) or not cur.strip():
        raise bp.FieldError("currency", "currency missing")
    currency = cur.strip().upper()
    rate = bp.fx_rate(currency, ctx.fx_usd_per_unit, "currency")
    row = {g: bp.text(r, g) for g in COSTS_GROUPS}
    row.update(amount=amount, currency=currency, fx_usd_per_unit=rate, amount_usd=bp.to_usd(amount, rate))
    return row


def _parse(data: bytes, name: str, ctx: ParseContext, want: str) -> Parsed:
    pages = bp.load_pages(data)
    schema, table = (USAGE_SCHEMA, USAGE_TABLE) if want == "usage" else (COSTS_SCHEMA, COSTS_TABLE)
    cols: dict[str, list] = {f.name: [] for f in schema}
    rejects: list[Reject] = []
    for res in bp.iter_results(pages):
        r = res.result
        try:
            if not isinstance(r, dict):
                raise bp.FieldError("results", "result is not an object")
            kind = _result_kind(r)
            if kind != want:
                what = "neither a usage nor a cost result" if kind is None else f"a {kind} result"
                raise bp.FieldError("results", f"{what} in a {want} file")
            start = bp.rfc3339(res.bucket.get("starting_at"), "starting_at")
            end = bp.rfc3339(res.bucket.get("ending_at"), "ending_at")
            if end <= start:
                raise bp.FieldError("ending_at", f"bucket ending_at {end} is not after starting_at {start}")
            row = _usage_row(r) if want == "usage" else _costs_row(r, ctx)
        except bp.FieldError as err:
            rejects.append(Reject(res.record, err.field, f"{res.where}: {err}", bp.raw_json(r)))
            continue
        row.update(line=res.record, bucket_start=start, bucket_end=end)
        for k in cols:
            cols[k].append(row[k])
    rows = pa.table(cols, schema=schema)
    fmt = "anthropic_usage_report_json" if want == "usage" else "anthropic_cost_report_json"
    return Parsed(table=table, rows=rows, rejects=rejects, format=fmt, meta=bp.page_meta(pages))


def parse_usage(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    return _parse(data, name, ctx, "usage")


def parse_costs(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    return _parse(data, name, ctx, "costs")


SPECS = [
    SourceSpec("bills/anthropic", "anthropic_usage_report_json", sniff_usage, parse_usage, USAGE_TABLE),
    SourceSpec("bills/anthropic", "anthropic_cost_report_json", sniff_costs, parse_costs, COSTS_TABLE),
]
