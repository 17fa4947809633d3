"""The one reader of small CSV files, by header name: BOM, CRLF, quoted commas and newlines, any
column order, blank lines; errors name the file's line and field.

For catalogs, FX files and price sheets (thousands of rows at most): :class:`CsvSheet` yields
records with their physical line and text; :func:`read_rows` gives them as :class:`Row` s by
header name, for the field converters below (catalog and FX parsers). Large exports (FOCUS,
telemetry) use the pyarrow/polars/DuckDB readers.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sources.base import SourceFormatError


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
    ``strict`` (the price sheets) makes a stray quote (``1"5``) a "bad CSV" error naming its line;
    without it (catalogs, FX) the quote is kept as text, as the csv module reads it.
    """

    def __init__(self, data: bytes, required: tuple[str, ...] | list[str], *, strict: bool = True):
        text = decode_text(data)
        self._lines = io.StringIO(text, newline="").readlines()
        self._reader = csv.reader(self._lines, strict=strict)
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


@dataclass
class Row:
    line: int  # 1-based physical line of the record's start (the header is line 1)
    values: dict[str, str]  # normalised header -> stripped text ('' = not given)
    raw: str  # the record's text as in the file (first 2000 characters)

    def get(self, name: str) -> str:
        return self.values.get(name, "")


def read_rows(data: bytes, *, required: list[str], name: str = "") -> tuple[list[str], Iterator[Row]]:
    """Header (normalised) and the records as :class:`Row` s; SourceFormatError if a required column
    is missing (a :class:`CsvSheet`, not strict about quotes)."""
    sheet = CsvSheet(data, required, strict=False)
    columns = list(sheet.columns)

    def rows() -> Iterator[Row]:
        for line, fields, raw in sheet.records():
            yield Row(line, {c: sheet.get(fields, c) for c in columns}, raw[:2000])

    return columns, rows()


class FieldError(ValueError):
    def __init__(self, field: str, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


def decimal_field(row: Row, field: str, *, required: bool = False, minimum: Decimal | None = Decimal(0),
                  maximum: Decimal | None = None) -> Decimal | None:
    """A plain decimal number ('2.5', '1e-6'); rejects '1,23', 'abc', NaN, Inf, out-of-range."""
    text = row.get(field)
    if text == "":
        if required:
            raise FieldError(field, "missing")
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise FieldError(field, f"not a number: {text!r}") from None
    if not value.is_finite():
        raise FieldError(field, f"not a finite number: {text!r}")
    if minimum is not None and value < minimum:
        raise FieldError(field, f"below {minimum}: {text}")
    if maximum is not None and value > maximum:
        raise FieldError(field, f"above {maximum}: {text}")
    return value


def float_field(row: Row, field: str, *, required: bool = False, minimum: float | None = 0.0) -> float | None:
    value = decimal_field(row, field, required=required, minimum=None if minimum is None else Decimal(str(minimum)))
    return None if value is None else float(value)


def int_field(row: Row, field: str, *, required: bool = False, minimum: int | None = 0) -> int | None:
    value = decimal_field(row, field, required=required, minimum=None if minimum is None else Decimal(minimum))
    if value is None:
        return None
    if value != value.to_integral_value():
        raise FieldError(field, f"not a whole number: {row.get(field)!r}")
    return int(value)


def bool_field(row: Row, field: str) -> bool | None:
    text = row.get(field).lower()
    if text == "":
        return None
    if text in {"true", "t", "yes", "y", "1"}:
        return True
    if text in {"false", "f", "no", "n", "0"}:
        return False
    raise FieldError(field, f"not a boolean: {row.get(field)!r}")


def is_finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))
