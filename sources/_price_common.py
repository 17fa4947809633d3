"""Helpers shared by the price-sheet parsers (:mod:`sources.prices_llm`, :mod:`sources.prices_gpu`).

Price sheets are small (a few thousand records), so they are read in Python with ``json`` and the
one CSV reader, :class:`sources.csvutil.CsvSheet`. Money is parsed from text with
:class:`decimal.Decimal` and never goes through a float.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from sources.base import ParseContext, Parsed, Reject, date_in_name, rate_decimal

# A plain decimal number: no thousands separators, no decimal comma, no NaN/Inf, no currency sign.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_decimal(text: str) -> Decimal:
    """Exact decimal from text; ``ValueError`` with a reason for anything that is not a plain number."""
    if not _NUMBER.fullmatch(text):
        if "," in text and _NUMBER.fullmatch(text.replace(",", ".")):
            raise ValueError(f"not a number: {text!r} (decimal comma or thousands separator)")
        raise ValueError(f"not a number: {text!r}")
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
        raise ValueError(f"not a number: {text!r}") from None


def parse_day(text: str) -> dt.date:
    """A calendar day written ``YYYY-MM-DD``; ``ValueError`` otherwise."""
    if not _ISO_DAY.fullmatch(text):
        raise ValueError(f"bad date {text!r}: expected YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"bad date {text!r}: no such day") from None


def default_effective_from(name: str, ctx: ParseContext) -> dt.date:
    """The contract's rule: the first ISO date in the file name, else the day of ingestion (UTC)."""
    return date_in_name(name) or ctx.ingested_at.date()


def usd_rate(currency: str, fx_usd_per_unit: Mapping[str, object]) -> Decimal | None:
    """USD per unit of ``currency`` as an exact Decimal (1 for USD), None when no rate is known.

    A float rate is taken by its shortest repr (``1.08`` -> ``Decimal('1.08')``), which is the
    number the user wrote, not the binary float's expansion.
    """
    if currency == "USD":
        return Decimal(1)
    for k, v in fx_usd_per_unit.items():
        if str(k).strip().upper() == currency:
            rate = rate_decimal(v)
            if not rate.is_finite() or rate <= 0:
                return None
            return rate
    return None


def quantize(value: Decimal, places: int) -> tuple[Decimal, bool]:
    """``value`` rounded half-even to ``places`` decimals, and whether that changed it."""
    q = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    return q, q != value


class RowsBase:
    """Good rows (one list per column of ``schema``), rejects and counters for one price file.

    Subclasses set ``schema`` and ``table`` and add their own validating ``add``.
    """

    schema: pa.Schema
    table: str

    def __init__(self, fmt: str, effective_from: dt.date):
        self.fmt = fmt
        self.effective_from = effective_from
        self.cols: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        self.rejects: list[Reject] = []
        self.skipped: Counter[str] = Counter()
        self.rounded = 0

    def parsed(self, **meta: Any) -> Parsed:
        table = pa.table(self.cols, schema=self.schema)
        meta = {
            "effective_from": self.effective_from,
            "skipped": sum(self.skipped.values()),
            "skipped_reasons": dict(self.skipped),
            "rounded": self.rounded,
            **meta,
        }
        return Parsed(self.table, table, self.rejects, self.fmt, meta)
