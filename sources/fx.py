"""Currency rate files (``fx/*.csv``): ``currency,usd_per_unit[,effective_from]``.

``effective_from`` (ISO date) may be given per row; otherwise the first ISO date in the file
name, otherwise the ingest day. Rates must be positive plain decimals; currency a 3-letter code.
The ingest engine reads fx/ files before every other folder, so a price sheet or bill in EUR
that lands together with its rate file is converted to USD (at the newest rate known).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pyarrow as pa

from sources import contract
from sources.base import Parsed, ParseContext, Reject, date_in_name
from sources.csvutil import FieldError, decimal_field, read_rows
from sources.base import SourceSpec

TABLE = "stg.fx_rates"
_SCHEMA = contract.table(TABLE).arrow_schema()


def sniff(data: bytes, name: str) -> bool:
    head = data[:512].decode("utf-8", "replace").lstrip("\ufeff").splitlines()
    cols = [c.strip().lower() for c in head[0].split(",")] if head else []
    return "currency" in cols and "usd_per_unit" in cols


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    _, rows = read_rows(data, required=["currency", "usd_per_unit"], name=name)
    default_day = date_in_name(name) or ctx.ingested_at.date()
    good, rejects = [], []
    for row in rows:
        try:
            cur = row.get("currency").upper()
            if not re.fullmatch(r"[A-Z]{3}", cur):
                raise FieldError("currency", f"not a 3-letter currency code: {row.get('currency')!r}")
            rate = decimal_field(row, "usd_per_unit", required=True, minimum=Decimal("0.000000001"))
            day = default_day
            if row.get("effective_from"):
                try:
                    day = dt.date.fromisoformat(row.get("effective_from"))
                except ValueError:
                    raise FieldError("effective_from", f"not an ISO date: {row.get('effective_from')!r}") from None
        except FieldError as exc:
            rejects.append(Reject(row.line, exc.field, exc.reason, row.raw))
            continue
        good.append({"line": row.line, "currency": cur, "usd_per_unit": rate, "effective_from": day})
    return Parsed(TABLE, pa.Table.from_pylist(good, schema=_SCHEMA), rejects, "fx_rates_csv")


SPECS = [SourceSpec("fx", "fx_rates_csv", sniff, parse, TABLE)]
