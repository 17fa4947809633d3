"""Reading small CSV files by header name: BOM, CRLF, quoted commas, any column order.

For catalogs and sheets (thousands of rows at most). Large exports use polars/DuckDB readers.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sources.base import SourceFormatError


def norm(header: str) -> str:
    return header.strip().lstrip("\ufeff").strip().lower().replace(" ", "_")


@dataclass
class Row:
    line: int  # 1-based physical line of the record's start (the header is line 1)
    values: dict[str, str]  # normalised header -> stripped text ('' = not given)
    raw: str

    def get(self, name: str) -> str:
        return self.values.get(name, "")


def read_rows(data: bytes, *, required: list[str], name: str = "") -> tuple[list[str], Iterator[Row]]:
    """Header (normalised) and the records; SourceFormatError if a required column is missing."""
    text = data.decode("utf-8").lstrip("\ufeff")
    if not text.strip():
        raise SourceFormatError("empty file: no header")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [norm(h) for h in next(reader)]
    except csv.Error as exc:
        raise SourceFormatError(f"bad CSV header: {exc}", line=1) from None
    missing = [c for c in required if c not in header]
    if missing:
        raise SourceFormatError(f"missing required column(s) {missing}; header is {header}", line=1, field=missing[0])

    def rows() -> Iterator[Row]:
        line = 2
        while True:
            start = line
            try:
                rec = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise SourceFormatError(f"bad CSV: {exc}", line=reader.line_num) from None
            line = reader.line_num + 1
            if not rec or all(not c.strip() for c in rec):
                continue
            values = {h: (rec[i].strip() if i < len(rec) else "") for i, h in enumerate(header)}
            yield Row(start, values, ",".join(rec)[:2000])

    return header, rows()


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
