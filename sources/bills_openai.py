"""OpenAI organization Usage API and Costs API pages (``landing/bills/openai/``).

* ``/v1/organization/usage/completions`` -> ``stg.openai_usage``: results with
  ``"object": "organization.usage.completions.result"`` (``input_tokens`` includes
  ``input_cached_tokens``; ``output_tokens`` includes reasoning).
* ``/v1/organization/costs`` -> ``stg.openai_costs``: results with
  ``"object": "organization.costs.result"`` and ``amount: {"value": number | string,
  "currency": "usd"}``; the value is read from the JSON text as a Decimal.

Which of the two a file is comes from its results' ``object``; a page with no results at all
(a quiet day) is taken by the endpoint in its file name (``costs`` -> costs), else usage.
Buckets are ``start_time``/``end_time`` Unix seconds (UTC). A file may hold one page, a JSON
list of pages or JSON Lines of pages; ``has_more``/``next_page`` of the last page go to meta.
"""

from __future__ import annotations

import pyarrow as pa

from sources import bills_pages as bp
from sources import contract
from sources.base import ParseContext, Parsed, Reject, head_text
from sources.base import SourceSpec

USAGE_OBJECT = "organization.usage.completions.result"
COSTS_OBJECT = "organization.costs.result"

USAGE_TABLE = "stg.openai_usage"
COSTS_TABLE = "stg.openai_costs"
USAGE_SCHEMA = contract.table(USAGE_TABLE).arrow_schema()
COSTS_SCHEMA = contract.table(COSTS_TABLE).arrow_schema()


def _looks_like_page(data: bytes) -> bool:
    head = head_text(data, 512)
    return head[:1] in ("{", "[") and b'"data"' in data and (b'"bucket"' in data or b'"page"' in data)


def _file_kind(data: bytes, name: str) -> str | None:
    if not _looks_like_page(data):
        return None
    if COSTS_OBJECT.encode() in data:
        return "costs"
    if USAGE_OBJECT.encode() in data:
        return "usage"
    if b"organization." in data and b".result" in data:
        return None  # another usage endpoint (embeddings, images, ...): not supported
    return "costs" if "costs" in name.rsplit("/", 1)[-1] else "usage"


def sniff_usage(data: bytes, name: str) -> bool:
    return _file_kind(data, name) == "usage"


def sniff_costs(data: bytes, name: str) -> bool:
    return _file_kind(data, name) == "costs"


def _bucket_times(res: bp.Result) -> tuple:
    return (
        bp.epoch_seconds(res.bucket.get("start_time"), "start_time"),
        bp.epoch_seconds(res.bucket.get("end_time"), "end_time"),
    )


def _batch(result: dict) -> bool | None:
    value = result.get("batch")
    if value is None or isinstance(value, bool):
        return value
    raise bp.FieldError("batch", f"batch is not true/false: {value!r}")


def _parse(data: bytes, name: str, ctx: ParseContext, want: str) -> Parsed:
    pages = bp.load_pages(data)
    schema, table = (USAGE_SCHEMA, USAGE_TABLE) if want == "usage" else (COSTS_SCHEMA, COSTS_TABLE)
    want_object = USAGE_OBJECT if want == "usage" else COSTS_OBJECT
    cols: dict[str, list] = {f.name: [] for f in schema}
    rejects: list[Reject] = []
    for res in bp.iter_results(pages):
        r = res.result
        try:
            if not isinstance(r, dict):
                raise bp.FieldError("results", "result is not an object")
            obj = r.get("object")
            if obj != want_object:
                raise bp.FieldError("object", f"result object {obj!r} in a {want} file (expected {want_object!r})")
            start, end = _bucket_times(res)
            if end <= start:
                raise bp.FieldError("end_time", f"bucket end_time {end} is not after start_time {start}")
            if want == "usage":
                row = {
                    "line": res.record,
                    "bucket_start": start,
                    "bucket_end": end,
                    "project_id": bp.text(r, "project_id"),
                    "user_id": bp.text(r, "user_id"),
                    "api_key_id": bp.text(r, "api_key_id"),
                    "model": bp.text(r, "model"),
                    "batch": _batch(r),
                    "service_tier": bp.text(r, "service_tier"),
                    "api_source": bp.text(r, "api_source"),
                    "input_tokens": bp.count(r, "input_tokens", required=True),
                    "input_cached_tokens": bp.count(r, "input_cached_tokens", required=False) or 0,
                    "input_audio_tokens": bp.count(r, "input_audio_tokens", required=False),
                    "output_tokens": bp.count(r, "output_tokens", required=True),
                    "output_audio_tokens": bp.count(r, "output_audio_tokens", required=False),
                    "num_model_requests": bp.count(r, "num_model_requests", required=True),
                }
                if row["input_cached_tokens"] > row["input_tokens"]:
                    raise bp.FieldError(
                        "input_cached_tokens",
                        f"input_cached_tokens {row['input_cached_tokens']} exceed input_tokens {row['input_tokens']}",
                    )
            else:
                amount_obj = r.get("amount")
                if not isinstance(amount_obj, dict):
                    raise bp.FieldError("amount", "amount missing" if amount_obj is None else "amount is not an object")
                amount = bp.quantize(bp.decimal(amount_obj.get("value"), "amount.value"), "amount.value")
                cur = amount_obj.get("currency")
                if not isinstance(cur, str) or not cur.strip():
                    raise bp.FieldError("amount.currency", "amount.currency missing")
                currency = cur.strip().upper()
                rate = bp.fx_rate(currency, ctx.fx_usd_per_unit, "amount.currency")
                row = {
                    "line": res.record,
                    "bucket_start": start,
                    "bucket_end": end,
                    "project_id": bp.text(r, "project_id"),
                    "line_item": bp.text(r, "line_item"),
                    "amount": amount,
                    "currency": currency,
                    "fx_usd_per_unit": rate,
                    "amount_usd": bp.to_usd(amount, rate),
                }
        except bp.FieldError as err:
            rejects.append(Reject(res.record, err.field, f"{res.where}: {err}", bp.raw_json(r)))
            continue
        for k, v in row.items():
            cols[k].append(v)
    rows = pa.table(cols, schema=schema)
    return Parsed(table=table, rows=rows, rejects=rejects, format=f"openai_{want}_json", meta=bp.page_meta(pages))


def parse_usage(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    return _parse(data, name, ctx, "usage")


def parse_costs(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    return _parse(data, name, ctx, "costs")


SPECS = [
    SourceSpec("bills/openai", "openai_usage_json", sniff_usage, parse_usage, USAGE_TABLE),
    SourceSpec("bills/openai", "openai_costs_json", sniff_costs, parse_costs, COSTS_TABLE),
]
