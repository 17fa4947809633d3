"""Shared reading of saved API report pages (OpenAI Usage/Costs, Anthropic usage/cost reports).

Both providers return pages shaped ``{"data": [bucket, ...], "has_more": bool, "next_page": str}``
where each bucket holds ``results``. A landed file may hold one page (what ``thinktax
fetch-bills`` saves), a JSON list of pages, or JSON Lines with one page per line. Numbers are
read with ``parse_float=Decimal`` so money never passes through a float.

Pages are small (a few dozen buckets of a few hundred results), so they are walked in Python.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any

from sources.base import SourceFormatError, rate_decimal

# API amounts are kept to 1e-12 (DECIMAL(38,12) in stg.*_costs).
USD_QUANTUM = Decimal("1e-12")
FX_QUANTUM = Decimal("1e-9")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DIGITS = re.compile(r"\d+")


class FieldError(ValueError):
    """A value in one result that cannot be used; becomes a Reject naming ``field``."""

    def __init__(self, field: str, reason: str):
        self.field = field
        super().__init__(reason)


@dataclass(frozen=True)
class Result:
    record: int  # 1-based result number in the file: the `line` of the staging row
    page: int  # 1-based page number in the file
    where: str  # e.g. "page 1, data[0].results[2]"
    bucket: dict[str, Any]
    result: Any


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)


def load_pages(data: bytes) -> list[dict[str, Any]]:
    """The pages in a file: one page object, a JSON list of pages, or JSON Lines of pages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceFormatError("not UTF-8 text", line=data.count(b"\n", 0, exc.start) + 1) from None
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise SourceFormatError("empty file")
    try:
        doc = _loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise SourceFormatError(f"invalid JSON ({exc.msg})", line=exc.lineno) from None
        doc = []
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                doc.append(_loads(raw))
            except (json.JSONDecodeError, ValueError) as err:
                raise SourceFormatError(f"invalid JSON Lines page ({err})", line=lineno) from None
    except ValueError as exc:  # NaN / Infinity
        raise SourceFormatError(f"invalid JSON ({exc})") from None
    pages = doc if isinstance(doc, list) else [doc]
    for n, page in enumerate(pages, start=1):
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise SourceFormatError(f"page {n} is not a report page (no 'data' list)", field="data")
    return pages


def iter_results(pages: list[dict[str, Any]]) -> Iterator[Result]:
    """Every result of every bucket, numbered 1.. in file order."""
    record = 0
    for p, page in enumerate(pages, start=1):
        for b, bucket in enumerate(page["data"]):
            if not isinstance(bucket, dict):
                raise SourceFormatError(f"page {p}: data[{b}] is not a bucket object", field="data")
            results = bucket.get("results", [])
            if not isinstance(results, list):
                raise SourceFormatError(f"page {p}: data[{b}].results is not a list", field="results")
            for r, result in enumerate(results):
                record += 1
                yield Result(record, p, f"page {p}, data[{b}].results[{r}]", bucket, result)


def page_meta(pages: list[dict[str, Any]]) -> dict[str, Any]:
    last = pages[-1] if pages else {}
    return {
        "pages": len(pages),
        "buckets": sum(len(p["data"]) for p in pages),
        "has_more": bool(last.get("has_more")),
        "next_page": last.get("next_page"),
    }


def raw_json(value: Any, limit: int = 2000) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


# --- field readers -----------------------------------------------------------------------


def count(obj: dict[str, Any], field: str, *, required: bool, label: str | None = None) -> int | None:
    """A non-negative integer count (tokens, requests). Missing/None: None if optional."""
    label = label or field
    value = obj.get(field)
    if value is None:
        if required:
            raise FieldError(label, f"{label} missing")
        return None
    if isinstance(value, bool):
        raise FieldError(label, f"{label} is not an integer: {value!r}")
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, Decimal) and value == value.to_integral_value():
        value = int(value)
    if not isinstance(value, int):
        raise FieldError(label, f"{label} is not an integer: {value!r}")
    if value < 0:
        raise FieldError(label, f"{label} is negative: {value}")
    return value


def decimal(value: Any, label: str) -> Decimal:
    """A decimal from a JSON number (already Decimal/int) or a decimal string."""
    if isinstance(value, bool) or value is None:
        raise FieldError(label, f"{label} missing" if value is None else f"{label} is not a number: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise FieldError(label, f"{label} is not a finite number: {value}")
        return value
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return Decimal(value.strip())
    raise FieldError(label, f"{label} is not a number: {value!r}")


def text(obj: dict[str, Any], field: str) -> str | None:
    """An optional group-by string; empty strings are NULL."""
    value = obj.get(field)
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        raise FieldError(field, f"{field} is not a string: {raw_json(value, 200)}")
    return str(value)


def epoch_seconds(value: Any, label: str) -> dt.datetime:
    """Unix seconds -> naive UTC timestamp."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        raise FieldError(label, f"{label} is not Unix seconds: {value!r}")
    try:
        seconds = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
        whole = int(seconds)
        micros = int((seconds - whole) * 1_000_000)
        return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=whole, microseconds=micros)
    except (InvalidOperation, OverflowError, ValueError):
        raise FieldError(label, f"{label} is not Unix seconds: {value!r}") from None


def rfc3339(value: Any, label: str) -> dt.datetime:
    """An RFC 3339 timestamp ('2025-08-01T00:00:00Z', offsets converted) -> naive UTC."""
    if not isinstance(value, str):
        raise FieldError(label, f"{label} missing" if value is None else f"{label} is not a timestamp: {value!r}")
    try:
        ts = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise FieldError(label, f"{label} is not an RFC 3339 timestamp: {value!r}") from None
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return ts


def fx_rate(currency: str, fx_usd_per_unit: dict[str, float], label: str) -> Decimal:
    """USD per unit of ``currency`` (1 for USD); FieldError when no rate is known."""
    if currency == "USD":
        return Decimal(1)
    rate = fx_usd_per_unit.get(currency, fx_usd_per_unit.get(currency.lower()))
    if rate is None:
        raise FieldError(label, f"currency {currency} has no FX rate (only USD is accepted without one)")
    return rate_decimal(rate).quantize(FX_QUANTUM, rounding=ROUND_HALF_EVEN)


def to_usd(amount: Decimal, rate: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return (amount * rate).quantize(USD_QUANTUM, rounding=ROUND_HALF_EVEN)


def quantize(amount: Decimal, label: str) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        q = amount.quantize(USD_QUANTUM, rounding=ROUND_HALF_EVEN)
    if q.adjusted() > 25:  # DECIMAL(38,12) holds 26 integer digits
        raise FieldError(label, f"{label} out of range: {amount}")
    return q
