"""The contract every parser in ``sources/`` follows.

A parser is a plain function ``parse(data: bytes, name: str, ctx: ParseContext) -> Parsed``.
``data`` is the file's bytes, already gunzipped; ``name`` is the file's path relative to the
landing folder (used in messages only). A parser never touches the warehouse or Dagster. The
cloud invoice parsers (``sources/bills_cloud.py``) are also ``parse_path(path, name, ctx)``: they
read a file of millions of lines by its path with DuckDB's own readers in a private in-memory
connection, and count the lines they skip on purpose in ``Parsed.skipped``.

* Records it can read but must reject (bad number, missing required field, impossible value)
  become :class:`Reject` rows: they land in ``ops.quarantine`` with file, line, field, reason.
* A file it cannot read at all (truncated JSON, wrong format) raises :class:`SourceFormatError`
  naming the line and field where it can; the warehouse then quarantines the whole file.
* ``rows_in`` counts the records read: ``rows + rejects + duplicates`` (the parser's own repeats)
  ``+ skipped`` (records deliberately not kept: a cloud invoice's non-AI lines).
  Duplicates are decided later, against what the warehouse already holds.

The good rows are a ``pyarrow.Table`` whose columns match the staging table named in
``Parsed.table`` by name (extra columns are an error, missing nullable ones become NULL), plus
an ``int64`` column ``line`` (1-based line in the file, or record number for JSON documents).
Each staging table is declared once in :mod:`sources.contract`: its Arrow schema
(``contract.table(name).arrow_schema()``), natural key and day column come from there.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sources import contract


class SourceFormatError(ValueError):
    """The whole file cannot be parsed. ``line``/``field`` point at the first problem."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.line = line
        self.field = field
        where = "".join(
            [f" at line {line}" if line is not None else "", f" (field {field!r})" if field else ""]
        )
        super().__init__(f"{message}{where}")


@dataclass(frozen=True)
class Reject:
    line: int | None
    field: str | None
    reason: str
    raw: str | None = None


@dataclass(frozen=True)
class ParseContext:
    """What a parser may know beyond the bytes."""

    ingested_at: dt.datetime  # UTC; default effective date of a price sheet without a date
    fx_usd_per_unit: dict[str, float] = field(default_factory=dict)  # currency -> USD rate
    # thinktax.toml [otel] team_attribute: the resource attribute that names an OTel span's team
    otel_team_attribute: str = "service.namespace"
    # thinktax.toml [cloud] team_tag: the tag / label of a cloud invoice line that names its team
    cloud_team_tag: str = "team"


@dataclass(frozen=True)
class InTable:
    """Good rows the loader itself put in a temp table of its own connection (``name``), by running
    a parser's query (``sources/requests.py`` ``path_select``): no Arrow copy of a large file's rows.
    Only the loader makes these; a parser returns a ``pyarrow.Table``."""
    name: str
    num_rows: int
    column_names: list[str]


@dataclass
class Parsed:
    table: str  # staging table, e.g. "stg.llm_prices"
    rows: pa.Table | InTable
    rejects: list[Reject]
    format: str  # detected format, e.g. "litellm_json"
    meta: dict[str, Any] = field(default_factory=dict)
    # records the parser itself recognised as repeats of records it returns (e.g. one series exposed
    # under two names); they count as duplicates in ops.ingested_files
    duplicates: int = 0
    # side tables: {staging table: rows}, each row tied to a good row of ``rows`` by its ``line``.
    # A side row is inserted, in the same transaction, exactly when its main row is loaded (not
    # when that row is a duplicate, a conflict or rejected), so it never counts in rows_in.
    side: dict[str, pa.Table] = field(default_factory=dict)
    # records read and deliberately not kept (a cloud export's non-AI lines): counted in
    # ops.ingested_files.rows_skipped, never quarantined
    skipped: int = 0

    @property
    def rows_in(self) -> int:
        return self.rows.num_rows + len(self.rejects) + self.duplicates + self.skipped


Parser = Callable[[bytes, str, ParseContext], Parsed]
# A parser of huge files (cloud invoices): reads the file by its path, streaming, with DuckDB's own
# CSV / Parquet / JSON readers in a private in-memory connection (never the warehouse's).
PathParser = Callable[[Path, str, ParseContext], Parsed]
Sniffer = Callable[[bytes, str], bool]


@dataclass(frozen=True)
class SourceSpec:
    """One parser of one landing sub-folder (gathered by sources/registry.py)."""

    folder: str  # landing sub-folder, e.g. "prices/llm"
    format: str  # e.g. "litellm_json"
    sniff: Sniffer  # (data, name) -> bool, from content (and name only as a tie-break)
    parse: Parser
    table: str  # the staging table its rows go to, e.g. "stg.requests" (declared in sources/contract.py)
    # set: the file is never read into memory; ``sniff`` sees its first (gunzipped) 64 KiB and
    # ``parse_path`` reads it by path (``parse`` is then only for callers that hold bytes)
    parse_path: PathParser | None = None
    # the JSON paths the parser reads (sources/fieldguard.py ``known_fields``, declared next to the
    # parser): the ingest lists every other key of each new file in ops.unknown_fields (issue 44)
    known_fields: Any = None

    @property
    def key(self) -> tuple[str, ...] | None:
        """Natural key for de-duplication against rows already loaded into the same staging table,
        from the table's declaration (:mod:`sources.contract`). A row whose key and values match a
        loaded row is a duplicate; same key, other values is quarantined as 'conflicting_duplicate'.
        None: no key (catalog snapshots; newest file wins)."""
        return contract.table(self.table).key

def rate_decimal(rate: object) -> Decimal:
    """An FX rate from ``ParseContext.fx_usd_per_unit`` as a Decimal. The rates of fx/ files come
    from stg.fx_rates as Decimals (kept as they are); a float given by a caller is taken by its
    shortest repr (``1.08`` -> ``Decimal('1.08')``, the number as written, not the binary
    expansion); anything else by its text."""
    if isinstance(rate, Decimal):
        return rate
    return Decimal(repr(rate) if isinstance(rate, float) else str(rate))


_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def date_in_name(name: str) -> dt.date | None:
    """The first valid ISO date (YYYY-MM-DD) in a file name, e.g. ``sheet.2025-05-19.json``."""
    for m in _ISO_DATE.finditer(name.rsplit("/", 1)[-1]):
        try:
            return dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            continue
    return None


def head_text(data: bytes, n: int = 4096) -> str:
    """The first ``n`` bytes as text (BOM stripped), for format sniffing."""
    return data[:n].decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()


def split_lines(data: bytes) -> pa.Table:
    """(line, raw): the text split at every "\n" exactly as ``str.split("\n")`` splits it (after
    leading BOMs; without the empty part after a final "\n"), split by Arrow's split_pattern over
    the file as one string: no Python string per line, and no per-byte temporary array (a 60 MB
    boolean mask and a copy cost more than the split, in page faults on every new file)."""
    while data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.endswith(b"\n"):
        data += b"\n"  # ends the last line (a copy of the file, so only when it is needed)
    # the file without its final "\n" as one string, read in place: str.split's empty last part is
    # a blank line, which is not a record, so it is left out
    whole = pa.LargeStringArray.from_buffers(
        1, pa.py_buffer(np.array([0, len(data) - 1], dtype=np.int64)), pa.py_buffer(data))
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        data.decode("utf-8")  # raises the UnicodeDecodeError that names the bad byte
        raise
    raw = pc.split_pattern(whole, "\n").flatten()
    return pa.table({"line": pa.array(np.arange(1, len(raw) + 1, dtype=np.int64)), "raw": raw})
