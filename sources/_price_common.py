"""Helpers shared by the price-sheet parsers (:mod:`sources.prices_llm`, :mod:`sources.prices_gpu`).

Price sheets are small (a few thousand records), so they are read with ``json``/``csv`` in
Python. Money is parsed from text with :class:`decimal.Decimal` and never goes through a float.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from sources.base import ParseContext, Parsed, Reject, SourceFormatError, date_in_name

# A plain decimal number: no thousands separators, no decimal comma, no NaN/Inf, no currency sign.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def decode_text(data: bytes) -> str:
    """The file as text: UTF-8 with an optional BOM; anything else is unreadable."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceFormatError(f"not UTF-8 (byte 0x{data[exc.start]:02x})", line=line) from None


def norm_header(name: str) -> str:
    """``' Input USD per MTok '`` -> ``'input_usd_per_mtok'``: case and whitespace do not matter."""
    return re.sub(r"\s+", "_", name.replace("\ufeff", "").strip().lower())


def first_line(data: bytes) -> str:
    """The first non-empty line (BOM stripped), for sniffing a CSV header."""
    head = data[:8192].decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in head.splitlines():
        if line.strip():
            return line
    return ""


def header_names(data: bytes) -> set[str]:
    """Normalised column names of a CSV's first line (empty set when it is not CSV-like)."""
    try:
        row = next(csv.reader([first_line(data)]))
    except (csv.Error, StopIteration):
        return set()
    return {norm_header(c) for c in row}


class CsvSheet:
    """A CSV file read record by record with physical line numbers (the header is line 1).

    ``columns`` maps normalised header names to field positions. Records are yielded as
    ``(line, fields, raw)`` where ``line`` is the physical line the record starts on and ``raw``
    its text; blank lines and rows whose fields are all empty are skipped and counted in
    ``blank_rows``. Quoted fields may contain commas and newlines; CRLF and a BOM are fine.
    """

    def __init__(self, data: bytes, required: tuple[str, ...]):
        text = decode_text(data)
        self._lines = io.StringIO(text, newline="").readlines()
        self._reader = csv.reader(self._lines, strict=True)
        self.blank_rows = 0
        try:
            header = next(self._reader, None)
        except csv.Error as exc:
            raise SourceFormatError(f"bad CSV header: {exc}", line=1) from None
        while header is not None and not any(h.strip() for h in header):
            header = next(self._reader, None)  # leading blank lines
        if header is None:
            raise SourceFormatError("empty file: no CSV header", line=1)
        self.header_line = self._reader.line_num
        self.columns: dict[str, int] = {}
        for i, h in enumerate(header):
            key = norm_header(h)
            if not key:
                continue
            if key in self.columns:
                raise SourceFormatError(f"column {key!r} appears twice in the header", line=self.header_line, field=key)
            self.columns[key] = i
        self.width = len(header)
        missing = [c for c in required if c not in self.columns]
        if missing:
            raise SourceFormatError(
                f"missing required column(s) {', '.join(missing)}; header is {', '.join(header)}",
                line=self.header_line,
                field=missing[0],
            )

    def records(self) -> Iterator[tuple[int, list[str], str]]:
        prev = self._reader.line_num
        while True:
            try:
                fields = next(self._reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise SourceFormatError(f"bad CSV: {exc}", line=prev + 1) from None
            start, prev = prev + 1, self._reader.line_num
            if not any(f.strip() for f in fields):
                self.blank_rows += 1
                continue
            raw = "".join(self._lines[start - 1 : prev]).rstrip("\r\n")
            yield start, fields, raw

    def get(self, fields: list[str], column: str) -> str:
        """The stripped value of ``column`` in a record ('' when the column or field is absent)."""
        i = self.columns.get(column)
        if i is None or i >= len(fields):
            return ""
        return fields[i].strip()


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
            rate = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else str(v))
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
