"""FOCUS 1.x cost and usage exports as CSV or Parquet (``landing/bills/focus/``) -> ``stg.focus_costs``.

Parquet (as AWS Data Exports and Azure Cost Management write FOCUS): every column is read as the
text a CSV would hold (times as ISO 8601 UTC, nested Tags as JSON) and goes through the same typing
and row checks; a row's line is its row number.

Tolerant of what real exports do: a UTF-8 BOM, CRLF, blank lines between records, quoted
fields with newlines, the literal ``null`` for an empty value, money written ``"$10,000.00 "``,
dates as ``M/D/YY``, ``M/D/YYYY`` or ISO 8601 with or without ``Z`` / an offset. Columns are
found by header name (case-insensitive; ``ChargeType`` (pre-1.0) and ``ServiceProviderName``
(1.3) are accepted for ``ChargeCategory`` and ``ProviderName``); unknown columns (``x_*``
extensions, ``PricingCurrency*``, ...) are listed in ``meta["unmapped_columns"]``.

The CSV is split by pyarrow with every column read as text; types are cast column by column
(polars), never row by row. A record is rejected, with its physical line, when a required
value is missing (``BilledCost``, ``ChargePeriodStart``, ``ChargePeriodEnd``), when any mapped
value fails to parse, when a period ends before it starts, when the billing currency has no
FX rate, or when it has the wrong number of fields. Money is converted to USD with the
context's FX rate (a file without a ``BillingCurrency`` column is taken as USD, noted in meta).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from sources import contract
from sources.base import ParseContext, Parsed, Reject, SourceFormatError, head_text, rate_decimal
from sources.base import SourceSpec

SCALE = 10  # DECIMAL(38,10)
DEC = pl.Decimal(38, SCALE)

# FOCUS column -> (staging column, kind). kind: text | money | quantity | time
COLUMNS: dict[str, tuple[str, str]] = {
    "BillingAccountId": ("billing_account_id", "text"),
    "BillingAccountName": ("billing_account_name", "text"),
    "SubAccountId": ("sub_account_id", "text"),
    "SubAccountName": ("sub_account_name", "text"),
    "BillingCurrency": ("billing_currency", "text"),
    "BillingPeriodStart": ("billing_period_start", "time"),
    "BillingPeriodEnd": ("billing_period_end", "time"),
    "ChargePeriodStart": ("charge_period_start", "time"),
    "ChargePeriodEnd": ("charge_period_end", "time"),
    "ChargeCategory": ("charge_category", "text"),
    "ChargeClass": ("charge_class", "text"),
    "ChargeFrequency": ("charge_frequency", "text"),
    "ChargeDescription": ("charge_description", "text"),
    "PricingCategory": ("pricing_category", "text"),
    "BilledCost": ("billed_cost_usd", "money"),
    "EffectiveCost": ("effective_cost_usd", "money"),
    "ListCost": ("list_cost_usd", "money"),
    "ContractedCost": ("contracted_cost_usd", "money"),
    "ListUnitPrice": ("list_unit_price_usd", "money"),
    "ContractedUnitPrice": ("contracted_unit_price_usd", "money"),
    "PricingQuantity": ("pricing_quantity", "quantity"),
    "PricingUnit": ("pricing_unit", "text"),
    "ConsumedQuantity": ("consumed_quantity", "quantity"),
    "ConsumedUnit": ("consumed_unit", "text"),
    "ProviderName": ("provider_name", "text"),
    "PublisherName": ("publisher_name", "text"),
    "InvoiceIssuerName": ("invoice_issuer_name", "text"),
    "InvoiceId": ("invoice_id", "text"),
    "ServiceName": ("service_name", "text"),
    "ServiceCategory": ("service_category", "text"),
    "ServiceSubcategory": ("service_subcategory", "text"),
    "SkuId": ("sku_id", "text"),
    "SkuPriceId": ("sku_price_id", "text"),
    "SkuMeter": ("sku_meter", "text"),
    "ResourceId": ("resource_id", "text"),
    "ResourceName": ("resource_name", "text"),
    "ResourceType": ("resource_type", "text"),
    "RegionId": ("region_id", "text"),
    "RegionName": ("region_name", "text"),
    "AvailabilityZone": ("availability_zone", "text"),
    "CommitmentDiscountId": ("commitment_discount_id", "text"),
    "CommitmentDiscountName": ("commitment_discount_name", "text"),
    "CommitmentDiscountCategory": ("commitment_discount_category", "text"),
    "CommitmentDiscountType": ("commitment_discount_type", "text"),
    "CommitmentDiscountStatus": ("commitment_discount_status", "text"),
    "CommitmentDiscountQuantity": ("commitment_discount_quantity", "quantity"),
    "CommitmentDiscountUnit": ("commitment_discount_unit", "text"),
    "CapacityReservationId": ("capacity_reservation_id", "text"),
    "CapacityReservationStatus": ("capacity_reservation_status", "text"),
    "Tags": ("tags_json", "text"),
}
# Older / newer spellings, used only when the current name is absent.
ALIASES = {
    "ChargeType": "ChargeCategory",  # FOCUS 0.5
    "ServiceProviderName": "ProviderName",  # FOCUS 1.3
    "Provider": "ProviderName",  # FOCUS 1.0-preview
}
REQUIRED = ("BilledCost", "ChargePeriodStart", "ChargePeriodEnd")

TABLE = "stg.focus_costs"
SCHEMA = contract.table(TABLE).arrow_schema()  # money and quantities DECIMAL(38,SCALE), times timestamp[us]
KEY = contract.table(TABLE).key
KEY_COLUMNS = KEY[:-1]  # key_occurrence numbers the lines of one file that share these

# --- sniffing ------------------------------------------------------------------------------


def sniff(data: bytes, name: str) -> bool:
    head = head_text(data, 8192)
    first = head.split("\n", 1)[0].lower()
    return "billedcost" in first and ("chargeperiodstart" in first or "billingperiodstart" in first)


# --- physical lines --------------------------------------------------------------------------


def _records(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-blank CSV records: (first physical line, start offset, end offset) arrays.

    A newline ends a record when an even number of quotes precede it (quoted newlines stay
    inside their field; "" escapes keep the parity). Vectorised with numpy.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if len(buf) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    nl = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34)
    ends = nl[np.searchsorted(quotes, nl) % 2 == 0]
    end_lines = np.searchsorted(nl, ends) + 1  # physical line each terminator closes
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(data)]))
    first_lines = np.concatenate(([1], end_lines + 1))
    length = stops - starts
    cr_only = (length == 1) & (buf[np.minimum(starts, len(buf) - 1)] == 13)  # a CRLF blank line
    keep = (length > 0) & ~cr_only
    return first_lines[keep], starts[keep], stops[keep]


def _record_text(data: bytes, start: int, stop: int) -> str:
    return data[start:stop].decode("utf-8", errors="replace").rstrip("\r")


# --- value parsing (per distinct value for times; vectorised for numbers) --------------------

_MDY = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_NULL_SPELLINGS = ["", "null", "NULL", "Null"]
# Money as people write it: optional parentheses or minus, '$', and commas that group thousands.
_MONEY = r"^\s*\(?\s*-?\s*\$?\s*(\d{1,3}(,\d{3})+|\d*)(\.\d*)?([eE][+-]?\d+)?\s*\)?\s*$"


def parse_time(value: str) -> dt.datetime | None:
    """One FOCUS date/time -> naive UTC, or None if unreadable."""
    s = value.strip()
    m = _MDY.fullmatch(s)
    try:
        if m:
            mo, d, y, hh, mi, ss = m.groups()
            year = int(y) if len(y) == 4 else (2000 + int(y) if int(y) < 69 else 1900 + int(y))
            return dt.datetime(year, int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0))
        ts = dt.datetime.fromisoformat(s)
    except ValueError:
        return None
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return ts


# --- parse -----------------------------------------------------------------------------------


def _header_map(header: list[str]) -> tuple[dict[str, str], list[str]]:
    """FOCUS name -> header as written, and the header columns left unmapped."""
    by_lower = {h.strip().lower(): h for h in header}
    found: dict[str, str] = {}
    for focus in COLUMNS:
        if focus.lower() in by_lower:
            found[focus] = by_lower[focus.lower()]
    for alias, focus in ALIASES.items():
        if focus not in found and alias.lower() in by_lower:
            found[focus] = by_lower[alias.lower()]
    used = set(found.values())
    return found, [h for h in header if h not in used]


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceFormatError("not UTF-8 text", line=data.count(b"\n", 0, exc.start) + 1) from None
    lines, starts, stops = _records(data)
    if len(lines) == 0:
        raise SourceFormatError("empty file")
    header_text = _record_text(data, int(starts[0]), int(stops[0])).lstrip("\ufeff")
    header = next(csv.reader([header_text]))
    header = [h if h.strip() else f"_blank_{i}" for i, h in enumerate(header, start=1)]
    if len(set(header)) != len(header):
        dupes = sorted({h for h in header if header.count(h) > 1})
        raise SourceFormatError(f"duplicate column names {dupes}", line=int(lines[0]))
    found, unmapped = _header_map(header)
    missing = [c for c in REQUIRED if c not in found]
    if missing:
        raise SourceFormatError(f"not a FOCUS export: no column {', '.join(missing)}", line=int(lines[0]))

    invalid: list[str] = []

    def on_invalid(row: pacsv.InvalidRow) -> str:
        invalid.append(row.text)
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=header, skip_rows=0, use_threads=False),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(
                column_types={h: pa.string() for h in header},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        raise SourceFormatError(f"unreadable CSV: {exc}") from None
    table = table.slice(1)  # the header record (read as data because names were given)

    # Map table rows to physical lines: records in order, minus those pyarrow skipped.
    rec_lines, rec_starts, rec_stops = lines[1:], starts[1:], stops[1:]
    rejects: list[Reject] = []
    if invalid:
        keep = np.ones(len(rec_lines), dtype=bool)
        pending = iter(invalid)
        want = next(pending, None)
        for i in range(len(rec_lines)):
            if want is None:
                break
            text = _record_text(data, int(rec_starts[i]), int(rec_stops[i]))
            if text == want.rstrip("\r"):
                keep[i] = False
                n = len(next(csv.reader([text]), []))
                rejects.append(Reject(int(rec_lines[i]), None, f"{n} fields, header has {len(header)}", text[:2000]))
                want = next(pending, None)
        if want is not None or (~keep).sum() != len(invalid):
            raise SourceFormatError("could not place malformed CSV rows on their lines")
        rec_lines, rec_starts, rec_stops = rec_lines[keep], rec_starts[keep], rec_stops[keep]
    if len(rec_lines) != table.num_rows:
        raise SourceFormatError(f"CSV reader saw {table.num_rows} records, line scan {len(rec_lines)}")

    def raw_of(row: int) -> str:
        return _record_text(data, int(rec_starts[row]), int(rec_stops[row]))

    return _typed(table, found, unmapped, rec_lines, raw_of, rejects, ctx, fmt="focus_csv",
                  header_line=int(lines[0]), records=table.num_rows + len(invalid))


def _typed(table: pa.Table, found: dict[str, str], unmapped: list[str], rec_lines: np.ndarray,
           raw_of, rejects: list[Reject], ctx: ParseContext, *, fmt: str,
           header_line: int | None, records: int) -> Parsed:
    """The rows of a FOCUS table read as text (every column a string), each with its line (CSV:
    physical line; Parquet: row number), typed, checked and converted to USD."""
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    n = df.height

    # 1. Text as given, stripped; the empty string and the literal null mean "not given".
    mapped = {focus: found[focus] for focus in COLUMNS if focus in found}
    text = df.select(
        pl.when(pl.col(h).str.strip_chars().is_in(_NULL_SPELLINGS)).then(None)
        .otherwise(pl.col(h).str.strip_chars()).alias(focus)
        for focus, h in mapped.items()
    )

    # 2. Typed columns and, per field, a mask of values that are given but do not parse.
    typed: dict[str, pl.Series] = {}
    bad: dict[str, pl.Series] = {}
    for focus, (col, kind) in COLUMNS.items():
        if focus not in mapped:
            typed[col] = pl.Series(col, [], dtype=_polars_type(kind)).extend_constant(None, n)
            continue
        given = text.get_column(focus)
        if kind == "text":
            typed[col] = given.alias(col)
            continue
        value = _decimal_series(given) if kind in ("money", "quantity") else _time_series(given)
        typed[col] = value.alias(col)
        bad[focus] = given.is_not_null() & value.is_null()
    out = pl.DataFrame(list(typed.values())).with_columns(
        pl.Series("line", rec_lines.astype(np.int64)),
        pl.Series("_row", np.arange(n, dtype=np.int64)),
    )
    assumed_usd = "BillingCurrency" not in mapped
    currency = pl.col("billing_currency").str.to_uppercase()
    out = out.with_columns(currency.fill_null("USD") if assumed_usd else currency)

    # 3. FX: one rate per currency in the file; USD is 1.
    currencies = sorted(c for c in out.get_column("billing_currency").unique().to_list() if c is not None)
    rates: dict[str, Decimal] = {}
    for cur in currencies:
        rate = 1.0 if cur == "USD" else ctx.fx_usd_per_unit.get(cur, ctx.fx_usd_per_unit.get(cur.lower()))
        if rate is not None:
            rates[cur] = rate_decimal(rate).quantize(Decimal("1e-9"))
    out = out.with_columns(
        pl.col("billing_currency").replace_strict(
            list(rates), list(rates.values()), default=None, return_dtype=pl.Decimal(18, 9)
        ).alias("fx_usd_per_unit")
        if rates else pl.lit(None, dtype=pl.Decimal(18, 9)).alias("fx_usd_per_unit")
    )

    # 4. Row rules (vectorised masks, in reporting order).
    checks: list[tuple[str, pl.Series, str]] = []  # (field, mask, reason template)
    for focus in REQUIRED:
        checks.append((mapped[focus], text.get_column(focus).is_null(), "{field}: required value missing"))
    for focus, mask in bad.items():
        what = "a date/time" if COLUMNS[focus][1] == "time" else "a number"
        checks.append((mapped[focus], mask, f"{{field}}: not {what}: '{{value}}'"))
    cps, cpe = out.get_column("charge_period_start"), out.get_column("charge_period_end")
    checks.append((mapped["ChargePeriodEnd"], (cpe < cps).fill_null(False), "ChargePeriodEnd is before ChargePeriodStart"))
    bps, bpe = out.get_column("billing_period_start"), out.get_column("billing_period_end")
    checks.append((mapped.get("BillingPeriodEnd", "BillingPeriodEnd"), (bpe < bps).fill_null(False),
                   "BillingPeriodEnd is before BillingPeriodStart"))
    cur = out.get_column("billing_currency")
    checks.append((mapped.get("BillingCurrency", "BillingCurrency"), cur.is_null(), "{field}: required value missing"))
    checks.append((mapped.get("BillingCurrency", "BillingCurrency"),
                   cur.is_not_null() & out.get_column("fx_usd_per_unit").is_null(),
                   "BillingCurrency {currency}: no FX rate (only USD is accepted without one)"))
    any_bad = pl.Series(np.zeros(n, dtype=bool))
    for _, mask, _ in checks:
        any_bad = any_bad | mask

    # 5. Rejects: reasons are built for the (few) bad rows only.
    for row in np.flatnonzero(any_bad.to_numpy()):
        reasons, first = [], None
        for field, mask, template in checks:
            if mask[int(row)]:
                focus = next((f for f, h in mapped.items() if h == field), field)
                value = text.get_column(focus)[int(row)] if focus in text.columns else None
                reasons.append(template.format(field=field, value=value, currency=cur[int(row)]))
                first = first or field
        rejects.append(Reject(int(rec_lines[row]), first, "; ".join(reasons), raw_of(int(row))[:2000]))
    good = out.filter(~any_bad)

    # 6. Money to USD (USD rows keep their exact value), and the occurrence of each key.
    money = [col for col, kind in COLUMNS.values() if kind == "money"]
    if set(rates) - {"USD"}:
        good = good.with_columns(
            pl.when(pl.col("fx_usd_per_unit") == 1).then(pl.col(c))
            .otherwise((pl.col(c) * pl.col("fx_usd_per_unit")).round(SCALE)).cast(DEC).alias(c)
            for c in money
        )
    good = good.with_columns(
        pl.int_range(1, pl.len() + 1).over(list(KEY_COLUMNS)).cast(pl.Int32).alias("key_occurrence")
    )
    rows = good.select([f.name for f in SCHEMA]).to_arrow().cast(SCHEMA)
    rejects.sort(key=lambda r: r.line or 0)
    meta = {
        "header_line": header_line,
        "records": records,
        "unmapped_columns": unmapped,
        "currencies": currencies,
    }
    if assumed_usd:
        meta["assumed_billing_currency"] = "USD"
        meta["warnings"] = ["no BillingCurrency column: amounts taken as USD"]
    return Parsed(table=TABLE, rows=rows, rejects=rejects, format=fmt, meta=meta)


def _decimal_series(given: pl.Series) -> pl.Series:
    """Text -> DECIMAL(38,10): plain numbers cast directly; '$1,234.50', '(5.00)' cleaned first."""
    value = given.cast(DEC, strict=False)
    retry = value.is_null() & given.is_not_null()
    if retry.any():
        idx = np.flatnonzero(retry.to_numpy())
        sub = given.gather(idx)
        ok = sub.str.contains(_MONEY) & sub.str.contains(r"\d")
        cleaned = (
            sub.str.replace_all(r"[\s$,]", "").str.replace(r"^\((.*)\)$", "-$1").str.replace(r"^--", "")
        )
        fixed = pl.select(pl.when(ok).then(cleaned).otherwise(None).cast(DEC, strict=False)).to_series()
        value = value.scatter(idx, fixed)
    return value


def _time_series(given: pl.Series) -> pl.Series:
    """Text -> naive UTC datetime, parsing each distinct value once (bills repeat a few dates)."""
    uniq = [v for v in given.unique().to_list() if v is not None]
    mapping = {v: parse_time(v) for v in uniq}
    return given.replace_strict(list(mapping), list(mapping.values()), default=None, return_dtype=pl.Datetime("us"))


def _polars_type(kind: str) -> pl.DataType:
    return {"text": pl.String(), "money": DEC, "quantity": DEC, "time": pl.Datetime("us")}[kind]


# --- Parquet (the clouds' FOCUS exports: AWS Data Exports and Azure Cost Management write Parquet) ---


def sniff_parquet(data: bytes, name: str) -> bool:
    """A Parquet file (its magic bytes; the ingest passes the first 64 KiB of a file read by path).
    Given a whole file, its schema must also name BilledCost and a period start; a Parquet file in
    bills/focus/ that is no FOCUS export fails its parse with the missing columns named."""
    if data[:4] != b"PAR1":
        return False
    if data[-4:] != b"PAR1":
        return True
    try:
        names = {n.lower() for n in pq.read_schema(pa.BufferReader(data)).names}
    except (pa.ArrowInvalid, OSError):
        return True
    return "billedcost" in names and ("chargeperiodstart" in names or "billingperiodstart" in names)


def _as_text(name: str, typ: pa.DataType) -> str:
    """DuckDB SQL that reads one Parquet column as the text a FOCUS CSV would hold: times as ISO 8601
    in UTC (a zone-less timestamp is taken as UTC), nested values (Tags as a map or struct) as JSON."""
    col = '"' + name.replace('"', '""') + '"'
    if pa.types.is_timestamp(typ):
        utc = f"timezone('UTC', {col})" if typ.tz else col
        return f"strftime({utc}, '%Y-%m-%dT%H:%M:%S.%fZ')"
    if pa.types.is_date(typ):
        return f"strftime({col}, '%Y-%m-%d')"
    if pa.types.is_nested(typ):
        return f"CAST(to_json({col}) AS VARCHAR)"
    if pa.types.is_floating(typ):  # no '1e-07': the DECIMAL(38,10) staging holds 10 places anyway
        return (f"CASE WHEN TRY_CAST({col} AS DECIMAL(38,10)) IS NOT NULL THEN CAST(CAST({col} AS DECIMAL(38,10)) AS VARCHAR) "
                f"ELSE CAST({col} AS VARCHAR) END")
    return f"CAST({col} AS VARCHAR)"


def parse_parquet(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    """A FOCUS export as Parquet: every column read as text by DuckDB (typed columns print exactly:
    DECIMAL as written, DOUBLE through DECIMAL(38,10)), then the same typing and checks as the CSV.
    A row's line is its 1-based row number in the file."""
    return _parse_parquet_source(pa.BufferReader(data), ctx)


def parse_parquet_path(path: Path, name: str, ctx: ParseContext) -> Parsed:
    """``parse_parquet`` of a file read by path (the ingest never decodes Parquet as text)."""
    return _parse_parquet_source(str(path), ctx)


def _parse_parquet_source(source, ctx: ParseContext) -> Parsed:
    import duckdb  # noqa: PLC0415

    try:
        table = pq.read_table(source)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceFormatError(f"unreadable Parquet: {exc}") from None
    header = table.column_names
    if len(set(header)) != len(header):
        raise SourceFormatError(f"duplicate column names {sorted({h for h in header if header.count(h) > 1})}")
    found, unmapped = _header_map(header)
    missing = [c for c in REQUIRED if c not in found]
    if missing:
        raise SourceFormatError(f"not a FOCUS export: no column {', '.join(missing)}")
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("focus", table)
        select = ", ".join(f"{_as_text(f.name, f.type)} AS \"{f.name.replace(chr(34), chr(34) * 2)}\""
                           for f in table.schema)
        text = con.sql(f"SELECT {select} FROM focus").to_arrow_table()
    finally:
        con.close()
    text = text.cast(pa.schema([pa.field(h, pa.string()) for h in header]))
    lines = np.arange(1, text.num_rows + 1, dtype=np.int64)

    def raw_of(row: int) -> str:  # the row as JSON text, for its reject only
        return json.dumps({h: v for h, v in text.slice(row, 1).to_pylist()[0].items()}, default=str)

    return _typed(text, found, unmapped, lines, raw_of, [], ctx, fmt="focus_parquet", header_line=None,
                  records=text.num_rows)


SPECS = [SourceSpec("bills/focus", "focus_csv", sniff, parse, TABLE),
         SourceSpec("bills/focus", "focus_parquet", sniff_parquet, parse_parquet, TABLE, parse_path=parse_parquet_path)]
