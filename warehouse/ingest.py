"""Load landing files into staging tables, exactly once, with nothing lost.

For every file under the landing folder (sorted by path):

0. a file whose path, size and modification time (``st_mtime_ns``) match a file ingested before
   (``ops.ingested_files``: file, bytes, file_mtime_ns) is skipped without being read, so that a
   nightly run's cost does not grow with the history already landed. A file that changed (size
   or mtime differs) goes on to step 1;
1. sha256 of its bytes; a file whose content was ingested before (under any name) is skipped.
   A Prometheus scrape is the triple (node, time, bytes) (:func:`file_identity`): its node and
   time in the file name are hashed with its bytes, so an idle node's identical scrapes at other
   times, or another node's identical scrape, are kept; the same file landed again is skipped.
2. gunzip (``.gz`` or gzip magic), UTF-8 check, format detection (``sources.registry``), parse.
   A file that fails any of these is recorded as ``unreadable``: one ``ops.quarantine`` row
   naming file, line and field, a warning, and the run goes on.
3. Rows the parser rejected go to ``ops.quarantine``; rows missing a NOT NULL staging column too.
4. Rows whose natural key and values match a row already loaded (or an earlier row of the
   same file) are counted as duplicates; same key with other values is quarantined as
   ``conflicting_duplicate``. The rest are inserted. For the calls (``stg.requests``), a run's
   files first ask a temp table of ``hash(request_id)`` of the stored calls
   (8 bytes a call, kept up to date as files load: ``Ingestor._key_hashes``); only a file with a
   hash found there scans the stored ids themselves.
5. ``ops.ingested_files`` gets one row with rows_in = loaded + duplicate + quarantined + skipped
   (skipped: records a parser reads and deliberately does not keep, the non-AI lines of a cloud
   invoice; 0 for every other format). A cloud invoice is read by path, streaming, never whole
   (``SourceSpec.parse_path``); a re-issued export of a month (same ``export_key``) moves the
   rows of the file it replaces to ``ops.replaced_cloud_bill_lines`` in the same transaction.

Each file is one transaction: a run killed mid-file leaves no half-registered file. The
pipeline's ingest, into a build file that is thrown away unless the whole run succeeds, commits
a group of files at a time (``commit_every``): every COMMIT is a WAL fsync, ~8 ms, which was a
third of the demo's ingest; a group is as atomic as a file, so still no half-registered file.

A large request file (``BY_PATH_BYTES``) is read by path with DuckDB's ``read_json``: the parser's
query (``sources/requests.py`` ``path_select``) runs in this connection straight into the temp
table the checks and the de-duplication work on (``Ingestor._ingest_in_place``, while a thread hashes and checks the file), and when
``stg.requests`` is stored as Parquet files its new rows are written as a file of their own
(``PART_ROWS``, ``warehouse.parts.append``): the rows are materialised once in DuckDB and written
to disk once, with no Arrow copy and no pending table in between.

Many small files of one format (the demo's 221 request files of ~1,000 calls) are parsed several
per query (``sources/requests_many.py``) and their rows de-duplicated and checked in one go
(:meth:`Ingestor._prepare`): one set of statements for up to :data:`BATCH_FILES` files instead of
a dozen per file. Each file is still loaded on its own, in order, when the loop reaches it -- a
few INSERTs from the prepared rows -- with the same file_id, rows, quarantine rows and
accounting as when it is ingested alone (``tests/warehouse/test_ingest_batch.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import hashlib
import logging
import os
import zlib
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from sources.base import InTable, Parsed, ParseContext, SourceFormatError
from sources.registry import SourceSpec, all_specs
from warehouse import parts
from warehouse.plain import plain_int

log = logging.getLogger("thinktax.ingest")

# ops.ingested_files columns in the order the INSERTs give them (named: a migration that adds a
# column cannot shift the values).
_FILE_COLUMNS = (
    "file_id, file, sha256, folder, format, target_table, status, rows_in, rows_loaded, rows_duplicate, "
    "rows_quarantined, effective_from, bytes, ingested_at, file_mtime_ns"
)

# Parsing several small files of one format in one query (sources/requests_many.py): at most this
# many files or bytes at once, looking at most this many queued files ahead.
BATCH_FILES = 64
BATCH_BYTES = 64 << 20
BATCH_LOOKAHEAD = 1000
# A request file at least this large (decoded) is read by path with DuckDB's read_json
# (sources/requests.py read_by_path), not split into lines and batched: one typed read of the file.
# Below it, the query's fixed cost (~0.15-0.2 CPU s to bind and plan) is better shared in a batch.
BY_PATH_BYTES = 32 << 20
# A file with at least this many rows loads its new rows of a staging table stored as Parquet files
# (stg.requests) as one more file of its own (warehouse/parts.py ``append``), not through the
# pending table: written once instead of twice. Fewer rows gather in the pending table, written out
# as one file at the end (``parts.flush``), so that small files do not make thousands of tiny ones.
PART_ROWS = 50_000

REJECTS_SCHEMA = pa.schema(
    [("line", pa.int64()), ("field", pa.string()), ("reason", pa.string()), ("raw", pa.string())]
)


@dataclass
class FileResult:
    file: str
    status: str  # 'loaded', 'unreadable', 'already_ingested'
    format: str | None = None
    table: str | None = None
    rows_in: int = 0
    rows_loaded: int = 0
    rows_duplicate: int = 0
    rows_quarantined: int = 0
    message: str | None = None
    rows_skipped: int = 0  # records read and deliberately not kept (a cloud invoice's non-AI lines)
    # the unknown-field guard's rows for the file (ops.unknown_fields: path, records, token_like, ...)
    unknown_fields: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Python ints whichever engine counted (the run's metadata takes no numpy integer: warehouse/plain.py)
        for name in COUNTS:
            setattr(self, name, plain_int(getattr(self, name), f"{self.file}: {name}"))


COUNTS = ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined", "rows_skipped")


@dataclass
class IngestSummary:
    files: list[FileResult] = field(default_factory=list)

    @property
    def new_files(self) -> list[FileResult]:
        return [f for f in self.files if f.status != "already_ingested"]

    def total(self, attr: str) -> int:
        return sum(getattr(f, attr) for f in self.files)

    @property
    def tables(self) -> set[str]:
        return {f.table for f in self.new_files if f.table}


def _unknown_rows(parsed: Parsed) -> list[dict]:
    found = parsed.meta.get("unknown_fields")
    return list(found.rows) if found is not None else []


def landing_files(landing: Path) -> list[Path]:
    """Every regular, non-hidden file under the landing folder, sorted by relative path."""
    if not landing.exists():
        return []
    return sorted(
        p
        for p in landing.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(landing).parts)
    )


def folder_of(rel: str, folders: Iterable[str]) -> str | None:
    """The landing sub-folder a relative path belongs to (longest match)."""
    best = None
    for f in folders:
        if rel.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


SCRAPE_FOLDER = "telemetry/metrics"


def file_identity(rel: str, raw: bytes) -> str:
    """What ``ops.ingested_files.sha256`` holds and a file is de-duplicated by: the sha256 of its
    bytes; for a Prometheus scrape whose name gives its node and time
    (``telemetry/metrics/<node>__<ISO-8601 UTC>[.<tag>].prom``, sources/prometheus.py), the sha256
    of that node, time and the bytes (issue 47). An idle node's scrapes are byte-identical, and
    its time and node live only in the file name: hashed by bytes alone, the second and later
    scrapes were skipped as re-landings and their times lost, and a node whose bytes matched
    another node's got no metrics at all."""
    head = identity_head(rel)
    return hashlib.sha256(raw if head is None else head + raw).hexdigest()


def identity_head(rel: str) -> bytes | None:
    """The bytes hashed before a file's own in :func:`file_identity` (None: only its bytes). The
    Spark engine's ingest hashes the same (warehouse/spark/ingest.py)."""
    if not rel.startswith(SCRAPE_FOLDER + "/"):
        return None
    from sources.prometheus import parse_scrape_name  # noqa: PLC0415 - only for scrapes

    node, ts = parse_scrape_name(rel)
    if not (node and ts):
        return None
    return f"prometheus scrape\0node={node}\0time={ts.isoformat()}\0".encode()


def _decode(data: bytes, rel: str) -> bytes:
    """Gunzip if compressed and check the text is UTF-8; raise SourceFormatError otherwise."""
    if rel.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise SourceFormatError(f"corrupt gzip: {exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceFormatError(f"not UTF-8 (byte 0x{data[exc.start]:02x})", line=line) from None
    return data


def _by_path() -> dict:
    from sources.requests_many import BY_PATH  # noqa: PLC0415 - with the parsers, when one is needed

    return BY_PATH


def _in_place() -> dict:
    from sources.requests_many import IN_PLACE  # noqa: PLC0415 - with the parsers, when one is needed

    return IN_PLACE


def _reads_by_path(spec: SourceSpec) -> bool:
    """A large file of this format is read by path (``Ingestor._parse``), never in a batch."""
    return spec.parse in _by_path() or spec.parse in _in_place()


def _head(path: Path, n: int = 1 << 16) -> bytes:
    """The first ``n`` bytes of a file, gunzipped if it is gzip (for sniffing a file read by path)."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    try:
        if path.name.endswith(".gz") or magic == b"\x1f\x8b":
            with gzip.open(path, "rb") as gz:
                return gz.read(n)
        with path.open("rb") as fh:
            return fh.read(n)
    except (OSError, EOFError, zlib.error) as exc:
        raise SourceFormatError(f"corrupt gzip: {exc}") from None


def _detect(specs: list[SourceSpec], data: bytes, rel: str) -> SourceSpec:
    for spec in specs:
        try:
            if spec.sniff(data, rel):
                return spec
        except Exception:  # noqa: BLE001 - a sniffer that chokes simply does not match
            continue
    names = ", ".join(s.format for s in specs) or "none"
    raise SourceFormatError(f"unknown format (tried: {names})")


class _Folders:
    """The landing sub-folders the parsers read (a read-only set), worked out on first use: the
    parsers are imported only when a new file is looked at."""

    def __init__(self, ingestor: Ingestor):
        self._ingestor = ingestor
        self._set: frozenset[str] | None = None

    def _get(self) -> frozenset[str]:
        if self._set is None:
            self._set = frozenset(s.folder for s in self._ingestor.specs)
        return self._set

    def __iter__(self):
        return iter(self._get())

    def __contains__(self, item: object) -> bool:
        return item in self._get()

    def __len__(self) -> int:
        return len(self._get())


@dataclass
class _Prepared:
    """Files parsed in one batch whose rows were checked and de-duplicated together
    (:meth:`Ingestor._prepare`), kept in the temp tables ``_batch_rows`` / ``_batch_quarantine``
    (member ``k`` = ``_file = k``) until the loop loads them, one file at a time.

    The verdicts assume the members are loaded in order, each right after the one before into
    ``table`` (``loads``: how many files this Ingestor has committed into ``table``). A member the
    loop reaches in any other situation (a member skipped, another file of the table in between)
    is loaded on its own, and so are the members after it."""

    table: str
    members: list[tuple[str, Parsed]]  # (rel, parse result) in load order
    counts: list[tuple[int, int, int]]  # per member: rows new, duplicate, quarantined
    loads: int  # what Ingestor._loads[table] must be when the next member is loaded
    new_rows: pa.Table  # the rows to load, member by member, each in line order
    next: int = 0  # the member to load next
    offsets: list[int] = field(default_factory=list)  # member k's rows start at new_rows[offsets[k]]

    def __post_init__(self) -> None:
        self.offsets = [0]
        for new, _dup, _q in self.counts:
            self.offsets.append(self.offsets[-1] + new)

    def position(self, rel: str, parsed: Parsed, loads: int) -> int | None:
        """``rel``'s member index if it may be loaded from the prepared rows now, else None."""
        k = self.next
        if k >= len(self.members) or loads != self.loads:
            return None
        m_rel, m_parsed = self.members[k]
        return k if m_rel == rel and m_parsed is parsed else None


# A group of files committed together (``commit_every``) is closed at this many rows in any case:
# grouping is for many small files (the demo's ~1,000-call files); a big file commits on its own.
COMMIT_ROWS = 100_000
# ``commit_every`` for a build file (the pipeline's ingest; make bench's ingest row measures the same)
BUILD_COMMIT_EVERY = 64


class Ingestor:
    """Ingests landing files into one (build) warehouse connection.

    ``commit_every``: files per transaction (default 1, each file its own). More is for a
    connection whose work is thrown away unless all of it succeeds (the pipeline's build file):
    a group is closed after that many files or :data:`COMMIT_ROWS` rows, before a batch is
    prepared, and at the end of :meth:`ingest`; an error rolls the open group back and is raised."""

    def __init__(self, con: duckdb.DuckDBPyConnection, landing: Path, *, now: dt.datetime | None = None,
                 specs: list[SourceSpec] | None = None, commit_every: int = 1):
        if commit_every < 1:
            raise ValueError(f"commit_every must be >= 1, got {commit_every}")
        self.con = con
        self.commit_every = commit_every
        self._tx: list[int] | None = None  # the open group's [files, rows], None: no transaction open
        self._last_file_id: int | None = None  # the file_id given last (None: ask ops.ingested_files)
        self.landing = landing
        self.now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        self._specs = specs  # None: every parser, imported when the first new file needs one
        self.ctx = ParseContext(ingested_at=self.now, fx_usd_per_unit=self._fx_rates(),
                                otel_team_attribute=self._setting("otel_team_attribute", "service.namespace"),
                                cloud_team_tag=self._setting("cloud_team_tag", "team"))
        self._columns: dict[str, list[tuple[str, bool]]] = {}
        self._targets: dict[str, str] = {}
        self._seen: set[tuple[str, int, int]] | None = None  # (file, bytes, mtime_ns) ingested before
        self._queue: list[Path] = []  # the files after the one being ingested (ingest())
        # rel -> (sha256, context, parse result) of files parsed ahead with an earlier one (_parse)
        self._ahead: dict[str, tuple[str, ParseContext, Parsed | Exception]] = {}
        # sha256 -> (file_id, file, file_mtime_ns) of every file ingested (_known): one query per run
        self._shas: dict[str, tuple[int, str, int | None]] | None = None
        self._loads: dict[str, int] = {}  # staging table -> files committed into it by this Ingestor
        self._prepared: _Prepared | None = None  # files parsed ahead whose rows are classified (_prepare)
        self._written: list[Path] = []  # Parquet files of stg.requests written in the open transaction (parts.append)
        self._hashes: dict[str, tuple[str, str]] = {}  # table -> (temp table of hash(key) of its stored rows, key list)
        # (rel, file identity) -> the unknown-field guard's finding, of a batch (_guard_many)
        self._guarded: dict[tuple[str, str], object] = {}
        # Statements of the open transaction not run yet (_flush): the members of a prepared batch
        # loaded since the last flush as (member, file_id, rel), and the ops.ingested_files rows
        # (with what follows each: rows_skipped / export_key, unknown fields) of every file loaded
        self._pending_members: list[tuple[int, int, str]] = []
        self._pending_of: _Prepared | None = None
        self._pending_files: list[tuple[list, int, str, Parsed]] = []

    @property
    def specs(self) -> list[SourceSpec]:
        """The parsers. A run with no new file never imports them (polars, pandas, ...)."""
        if self._specs is None:
            self._specs = all_specs()
        return self._specs

    def _fx_rates(self) -> dict[str, object]:
        """USD per unit of each currency: the newest rate in stg.fx_rates (fx/ files)."""
        rows = self.con.execute(
            "SELECT currency, arg_max(usd_per_unit, effective_from) FROM stg.fx_rates GROUP BY currency"
        ).fetchall()
        return dict(rows)

    def _setting(self, name: str, default: str) -> str:
        """A thinktax.toml setting from ops.settings (written before the ingest), else the default."""
        try:
            rows = self.con.execute(f"SELECT {name} FROM ops.settings").fetchall()
        except duckdb.Error:  # a bare connection (tests) or settings written before the setting existed
            return default
        return rows[0][0] if rows and rows[0][0] else default

    # -- bookkeeping -------------------------------------------------------------------------
    def _load_seen(self) -> set[tuple[str, int, int]]:
        """(file, bytes, mtime_ns) of every file ingested before: one query per run, not per file."""
        rows = self.con.execute(
            "SELECT file, bytes, file_mtime_ns FROM ops.ingested_files WHERE file_mtime_ns IS NOT NULL"
        ).fetchall()
        return set(rows)

    def _unchanged(self, rel: str, st: os.stat_result) -> bool:
        """The file at ``rel`` has the size and mtime it had when it was ingested."""
        if self._seen is None:
            self._seen = self._load_seen()
        return (rel, st.st_size, st.st_mtime_ns) in self._seen

    def _known(self, sha: str) -> list[tuple[int, str, int | None]]:
        """(file_id, file, file_mtime_ns) of the file ingested with this content, if any. Read once
        (the first file ingested with it), then kept up to date by every commit of this Ingestor."""
        if self._shas is None:
            rows = self.con.execute(
                "SELECT sha256, file_id, file, file_mtime_ns FROM ops.ingested_files ORDER BY file_id DESC"
            ).fetchall()
            self._shas = {sha_: (fid, f, m) for sha_, fid, f, m in rows}  # the first file_id wins
        hit = self._shas.get(sha)
        return [hit] if hit else []

    def _committed(self, sha: str, file_id: int, rel: str, mtime_ns: int | None, table: str | None) -> None:
        """Bookkeeping after a file's statements succeeded (its transaction committed, or its group's is open)."""
        self._last_file_id = file_id
        if self._shas is not None:
            self._shas.setdefault(sha, (file_id, rel, mtime_ns))
        if table:
            self._loads[table] = self._loads.get(table, 0) + 1

    def _next_file_id(self) -> int:
        if self._last_file_id is None:
            self._last_file_id = self.con.execute("SELECT coalesce(max(file_id), 0) FROM ops.ingested_files").fetchall()[0][0]
        return self._last_file_id + 1

    # -- transactions: one per file, or per group of files (commit_every) --------------------------
    def _begin(self) -> None:
        if self._tx is None:
            self.con.execute("BEGIN")
            self._tx = [0, 0]

    def _end(self, rows: int) -> None:
        """A file's statements are done: commit, or leave the group open for the next file."""
        assert self._tx is not None
        self._tx[0] += 1
        self._tx[1] += rows
        if self._tx[0] >= self.commit_every or self._tx[1] >= COMMIT_ROWS:
            self._commit()

    def _commit(self) -> None:
        if self._tx is not None:
            self._flush()
            self._tx = None
            self.con.execute("COMMIT")
        self._written.clear()

    def _abort(self) -> None:
        """Roll back the open transaction (a file's, or a whole group's) and remove the Parquet
        files it wrote (parts.append): their listing is rolled back, nothing would read them."""
        self._last_file_id = None
        self._pending_members.clear()
        self._pending_of = None
        self._pending_files.clear()
        if self._tx is not None:
            self._tx = None
            self.con.execute("ROLLBACK")
        for f in self._written:
            f.unlink(missing_ok=True)
        self._written.clear()
        try:  # they may hold keys of rows rolled back, or have been rolled back themselves
            self._drop_hashes()
        except duckdb.Error:  # never hide the error being handled
            self._hashes.clear()

    def _target(self, table: str) -> str:
        """The table new rows of ``table`` are INSERTed into: ``stg.requests__pending`` when
        stg.requests is stored as Parquet files (warehouse/parts.py), else ``table``."""
        if table not in self._targets:
            self._targets[table] = parts.writable(self.con, table)
        return self._targets[table]

    def _table_columns(self, table: str) -> list[tuple[str, bool]]:
        """(column, nullable) of a staging table, in order."""
        if table not in self._columns:
            schema, name = self._target(table).split(".")
            rows = self.con.execute(
                "SELECT column_name, is_nullable = 'YES' FROM information_schema.columns "
                "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            if not rows:
                raise RuntimeError(f"staging table {table} does not exist (missing migration?)")
            self._columns[table] = rows
        return self._columns[table]

    # -- one file ----------------------------------------------------------------------------
    def ingest(self, paths: list[Path] | None = None, progress: Callable[[str], None] | None = None,
               on_new: Callable[[], None] | None = None) -> IngestSummary:
        """Ingest every landing file (or ``paths``) not ingested yet; ``on_new`` is called once,
        after the first file that was not (the ingest step starts Great Expectations' import then)."""
        summary = IngestSummary()
        folders = _Folders(self)
        todo = paths if paths is not None else landing_files(self.landing)
        # currency rates first, so sheets and bills landed with their rate file can be converted
        todo = sorted(todo, key=lambda p: not p.relative_to(self.landing).as_posix().startswith("fx/"))
        self._seen = self._load_seen()
        self._shas = None
        self._drop_hashes()  # rows may have come or gone since the last run
        self._ahead.clear()
        self._prepared = None
        self._last_file_id = None
        try:
            for i, path in enumerate(todo):
                rel = path.relative_to(self.landing).as_posix()
                if progress:
                    progress(rel)
                self._queue = todo[i + 1:]
                result = self.ingest_file(path, rel, folders)
                summary.files.append(result)
                if on_new is not None and result.status != "already_ingested":
                    on_new()
                    on_new = None
                if result.table == "stg.fx_rates":
                    self.ctx = dataclasses.replace(self.ctx, fx_usd_per_unit=self._fx_rates())
            self._commit()
        except BaseException:
            self._abort()
            raise
        return summary

    def ingest_file(self, path: Path, rel: str, folders: Collection[str]) -> FileResult:
        before = path.stat()
        if self._unchanged(rel, before):
            return FileResult(rel, "already_ingested")
        folder = folder_of(rel, folders)
        path_specs = [s for s in self.specs if s.folder == folder and s.parse_path is not None] if folder else []
        # a folder of path parsers only (cloud invoices) reads every file by path; a mixed folder
        # (bills/focus: CSV in memory, Parquet by path) only the files a path parser recognises
        if path_specs and (all(s.parse_path is not None for s in self.specs if s.folder == folder)
                           or any(s.sniff(_head(path), rel) for s in path_specs)):
            return self._ingest_by_path(path, rel, folder, path_specs, before)
        spec = self._in_place_spec(path, rel, folder, before)
        if spec is not None:
            return self._ingest_in_place(path, rel, folder, folders, spec, before)
        raw = path.read_bytes()
        sha = file_identity(rel, raw)
        # The mtime is recorded only if the file did not change while it was read (same size and
        # mtime before and after, size = bytes read); otherwise NULL: the next run reads it again.
        after = path.stat()
        stable = before.st_size == after.st_size == len(raw) and before.st_mtime_ns == after.st_mtime_ns
        mtime_ns = before.st_mtime_ns if stable else None
        if self._already(rel, sha, mtime_ns):
            return FileResult(rel, "already_ingested")
        folder = folder_of(rel, folders)
        try:
            if folder is None:
                raise SourceFormatError(
                    f"not in a known landing folder (expected one of: {', '.join(sorted(folders))})"
                )
            data = _decode(raw, rel)
            spec = _detect([s for s in self.specs if s.folder == folder], data, rel)
            parsed = self._parse(spec, data, rel, sha, folders, path=path, read_stat=before if stable else None)
        except SourceFormatError as exc:
            log.warning("%s: %s", rel, exc)
            return self._record_unreadable(rel, sha, folder, len(raw), mtime_ns, exc)
        self._guard(spec, data, rel, sha, parsed)
        return self._load(rel, sha, folder, len(raw), mtime_ns, spec, parsed)

    def _already(self, rel: str, sha: str, mtime_ns: int | None) -> bool:
        """The file's content was ingested before (under any name)."""
        known = self._known(sha)
        if not known:
            return False
        file_id, file, known_mtime = known[0]
        if file == rel and mtime_ns is not None and known_mtime != mtime_ns:
            # Same path, same bytes, new mtime (touched, or ingested before file_mtime_ns
            # existed): remember it, so that the next run skips the file without reading it.
            self._flush()
            self.con.execute("UPDATE ops.ingested_files SET file_mtime_ns = ? WHERE file_id = ?", [mtime_ns, file_id])
            if self._shas is not None:
                self._shas[sha] = (file_id, file, mtime_ns)
        return True

    def _in_place_spec(self, path: Path, rel: str, folder: str | None, before: os.stat_result) -> SourceSpec | None:
        """The format of a large, plain (not gzip) file whose reader by path has an in-place query,
        told from its first 64 KiB (checked again on the whole file before its rows are taken)."""
        if folder is None or before.st_size < BY_PATH_BYTES or rel.endswith(".gz") or rel in self._ahead:
            return None
        with path.open("rb") as fh:
            if fh.read(2) == b"\x1f\x8b":  # gzip under another name: _parse reads it in place once decoded
                return None
        try:
            spec = _detect([s for s in self.specs if s.folder == folder], _head(path), rel)
        except SourceFormatError:
            return None
        return spec if spec.parse in _in_place() else None

    def _ingest_in_place(self, path: Path, rel: str, folder: str, folders: Collection[str], spec: SourceSpec,
                         before: os.stat_result) -> FileResult:
        """``ingest_file`` for a large file of a format with an in-place query: the query runs while
        a thread reads, hashes and checks the file (sha256 and DuckDB both release the GIL; ~10 % of
        the ingest at 1.2M calls). Then exactly the steps and outcomes of the other route: a file
        ingested before is skipped, one that is not UTF-8 is unreadable, and the rows are taken only
        if ``_read_in_place`` would take them, else the file goes the route it would have gone."""
        def read() -> tuple[bytes, str, bytes | SourceFormatError, int | None]:
            raw = path.read_bytes()
            sha = file_identity(rel, raw)
            try:
                data: bytes | SourceFormatError = _decode(raw, rel)
            except SourceFormatError as exc:
                return raw, sha, exc, None
            return raw, sha, data, _in_place()[spec.parse][1](data)

        with ThreadPoolExecutor(max_workers=1) as pool:
            reading = pool.submit(read)
            try:
                ran = self._query_in_place(spec, path)
            finally:
                raw, sha, data, lines = reading.result()
        after = path.stat()
        stable = before.st_size == after.st_size == len(raw) and before.st_mtime_ns == after.st_mtime_ns
        mtime_ns = before.st_mtime_ns if stable else None
        if self._already(rel, sha, mtime_ns):
            self._drop_incoming(ran)
            return FileResult(rel, "already_ingested")
        try:
            if isinstance(data, SourceFormatError):
                raise data
            found = _detect([s for s in self.specs if s.folder == folder], data, rel)
            if found is spec and stable and len(data) >= BY_PATH_BYTES:
                parsed = self._take_in_place(spec, ran, lines)
                if parsed is None:
                    log.info("%s: read line by line (the fast path by path did not take it)", rel)
                    parsed = spec.parse(data, rel, self.ctx)
            else:
                self._drop_incoming(ran)
                parsed = self._parse(found, data, rel, sha, folders, path=path, read_stat=before if stable else None)
        except SourceFormatError as exc:
            self._drop_incoming(ran)
            log.warning("%s: %s", rel, exc)
            return self._record_unreadable(rel, sha, folder, len(raw), mtime_ns, exc)
        self._guard(found, data, rel, sha, parsed)
        return self._load(rel, sha, folder, len(raw), mtime_ns, found, parsed)

    def _guard_many(self, spec: SourceSpec, items: list[tuple[bytes, str, str]]) -> None:
        """The guard over a batch of small files parsed together (``_parse``): their samples in one
        query, kept for ``_guard`` by (rel, file identity: ``file_identity``)."""
        if spec.known_fields is None:
            return
        from sources.fieldguard import scan_many  # noqa: PLC0415 - with the parsers, when one is needed

        try:
            found = scan_many([d for d, _r, _h in items], spec.known_fields)
        except (duckdb.Error, pa.ArrowException, UnicodeDecodeError) as exc:  # each file is then scanned on its own
            log.debug("unknown-field guard over a batch of %d files: %s", len(items), exc)
            return
        self._guarded = {(r, h): f for (_d, r, h), f in zip(items, found, strict=True)}

    def _guard(self, spec: SourceSpec, data: bytes, rel: str, sha: str, parsed: Parsed) -> None:
        """The unknown-field guard (sources/fieldguard.py) over a new file of a JSON source that
        declares the paths its parser reads: its findings ride in ``parsed.meta`` to the load, which
        writes them to ops.unknown_fields in the file's transaction (so a re-ingest, skipped, never
        writes them twice)."""
        found = parsed.meta.get("unknown_fields")  # a parser that guards itself (OTel: sources/otel.py)
        if found is None and spec.known_fields is not None:
            from sources.fieldguard import scan  # noqa: PLC0415 - with the parsers, when one is needed

            if (rel, sha) in self._guarded:  # scanned with its batch (_guard_many)
                found = self._guarded.pop((rel, sha))
            else:
                try:
                    found = scan(data, spec.known_fields)
                except (duckdb.Error, pa.ArrowException, UnicodeDecodeError) as exc:  # a warning, never a reason to refuse a file
                    log.warning("%s: the unknown-field guard could not read the file: %s", rel, exc)
                    return
        if found is not None:
            parsed.meta["unknown_fields"] = found
            log.warning("%s: unknown fields (not read by the %s parser): %s", rel, spec.format, found.summary())

    def _ingest_by_path(self, path: Path, rel: str, folder: str, specs: list[SourceSpec],
                        before: os.stat_result) -> FileResult:
        """A folder whose parsers read by path (cloud invoices, millions of lines): the file is hashed
        in 1 MiB chunks, sniffed on its first 64 KiB (gunzipped), and parsed by path; it is never
        held in memory whole. Same bookkeeping as any other file."""
        # The hash runs in a thread while DuckDB reads the file (hashlib and DuckDB both release the
        # GIL): on a 1 GB CUR the sha256 alone is seconds. A file whose content was ingested before
        # under another name is parsed for nothing, then recorded as already ingested.
        def hash_file() -> tuple[str, int]:
            digest, n = hashlib.sha256(), 0
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    n += len(chunk)
            return digest.hexdigest(), n

        with ThreadPoolExecutor(max_workers=1) as pool:
            hashing = pool.submit(hash_file)
            try:
                head = _head(path)
                spec = _detect(specs, head, rel)
                assert spec.parse_path is not None
                parsed: Parsed | SourceFormatError = spec.parse_path(path, rel, self.ctx)
            except SourceFormatError as exc:
                parsed = exc
            sha, nbytes = hashing.result()
        after = path.stat()
        stable = before.st_size == after.st_size == nbytes and before.st_mtime_ns == after.st_mtime_ns
        mtime_ns = before.st_mtime_ns if stable else None
        if self._known(sha):
            return FileResult(rel, "already_ingested")
        if isinstance(parsed, SourceFormatError):
            log.warning("%s: %s", rel, parsed)
            return self._record_unreadable(rel, sha, folder, nbytes, mtime_ns, parsed)
        return self._load(rel, sha, folder, nbytes, mtime_ns, spec, parsed)

    def _replace_reissued(self, table: str, export_key: str, file_id: int) -> None:
        """A re-issued export for a month (same ``export_key`` as files loaded before): the older
        files' rows move to ops.replaced_cloud_bill_lines, their ops.ingested_files row names the
        file that replaced them. Inside the new file's transaction: both happen or neither."""
        older = [r[0] for r in self.con.execute(
            "SELECT file_id FROM ops.ingested_files WHERE export_key = ? AND target_table = ? "
            "AND status = 'loaded' AND replaced_by_file_id IS NULL", [export_key, table]).fetchall()]
        for old in older:
            self.con.execute(f"INSERT INTO ops.replaced_cloud_bill_lines BY NAME SELECT *, ? AS replaced_by_file_id, "
                             f"? AS replaced_at FROM {table} WHERE file_id = ?",
                             [file_id, self.now, old])
            self.con.execute(f"DELETE FROM {table} WHERE file_id = ?", [old])
            self.con.execute("UPDATE ops.ingested_files SET replaced_by_file_id = ? WHERE file_id = ?", [file_id, old])
            log.info("file %d replaces file %d (re-issued export %s)", file_id, old, export_key)

    def _parse(self, spec: SourceSpec, data: bytes, rel: str, sha: str, folders: Collection[str], *,
               path: Path | None = None, read_stat: os.stat_result | None = None) -> Parsed:
        """``spec.parse(data, rel, ctx)``. A file of at least BY_PATH_BYTES whose format has a reader
        by path (request logs) is read by path, when that reader takes it (``read_stat``: the file's
        stat when ``data`` was read; None if it changed meanwhile, and then it is not read again).
        For a format with a batch parser (sources/requests_many.py), this file and the next new
        files of the same format are parsed in one go; their results are kept for when the loop
        reaches them, and used only if the file's bytes (sha256) and the parse context are the
        same then."""
        ahead = self._ahead.pop(rel, None)
        if ahead is None or ahead[0] != sha or ahead[1] is not self.ctx:
            from sources.requests_many import BATCH_PARSERS  # noqa: PLC0415 - with the parsers, when one is needed

            by_path = _by_path().get(spec.parse)
            in_place = _in_place().get(spec.parse)
            if ((by_path is not None or in_place is not None) and path is not None and read_stat is not None
                    and len(data) >= BY_PATH_BYTES):
                if in_place is not None:
                    parsed = self._read_in_place(spec, in_place, path, data, read_stat)
                else:
                    parsed = by_path(path, data, self.ctx, read_stat)
                if parsed is not None:
                    return parsed
                log.info("%s: read line by line (the fast path by path did not take it)", rel)
                return spec.parse(data, rel, self.ctx)
            batch = BATCH_PARSERS.get(spec.parse)
            if batch is None:
                return spec.parse(data, rel, self.ctx)
            items = [(data, rel, sha), *self._next_of_format(spec, folders)]
            results = batch([(d, r) for d, r, _ in items], self.ctx)
            self._guard_many(spec, items)
            for (_d, r, h), result in zip(items, results, strict=True):
                self._ahead[r] = (h, self.ctx, result)
            self._flush()  # before _prepare replaces the temp tables the held-back statements read
            try:
                self._prepare(spec, [(r, h, res) for (_d, r, h), res in zip(items, results, strict=True)])
            except (duckdb.Error, pa.ArrowException) as exc:  # the files load one by one, each with its own error if any
                self._prepared = None
                log.debug("batch of %d files not prepared together: %s", len(items), exc)
            ahead = self._ahead.pop(rel)
        result = ahead[2]
        if isinstance(result, Exception):
            raise result
        return result

    def _read_in_place(self, spec: SourceSpec, in_place: tuple[Callable, Callable], path: Path, data: bytes,
                       read_stat: os.stat_result) -> Parsed | None:
        """A large file read by path as ``read_by_path`` reads it, its query run in this connection
        straight into the temp table ``_incoming`` (no Arrow copy of the rows: ~25 % of the
        ingest at 1.2M calls, docs/performance.md). None, and no table, where ``read_by_path``
        gives None: the caller then runs the line path. (A plain file goes ``_ingest_in_place``,
        which runs the query while the file is hashed; this is the route of a gzip one.)"""
        lines = in_place[1](data)
        if lines is None:
            return None
        ran = self._query_in_place(spec, path)
        after = path.stat()
        if (read_stat.st_size, read_stat.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
            self._drop_incoming(ran)
            return None
        return self._take_in_place(spec, ran, lines)

    def _query_in_place(self, spec: SourceSpec, path: Path) -> tuple[int, int] | None:
        """Run ``spec``'s in-place query over ``path`` into the temp table ``_incoming``: (rows,
        rejected rows), or None (and no table) when DuckDB's reader refuses the file or the
        connection's scans do not keep insertion order."""
        con = self.con
        # the n-th row is the n-th line only in an insertion-ordered scan (DuckDB's default)
        if con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0] is not True:
            return None
        sql, params = _in_place()[spec.parse][0](path, self.ctx)
        self._commit()  # a reader's error below would abort an open group's transaction: close it first
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE _incoming AS SELECT *, 0::BIGINT AS _ord FROM ({sql})", params)
            return con.execute("SELECT count(*), count(reject_reason) FROM _incoming").fetchall()[0]
        except duckdb.Error as exc:
            log.debug("%s: the fast path by path declined: %s", path, exc)
            con.execute("DROP TABLE IF EXISTS _incoming")
            return None

    def _take_in_place(self, spec: SourceSpec, ran: tuple[int, int] | None, lines: int | None) -> Parsed | None:
        """The rows ``_query_in_place`` left in ``_incoming`` as the file's, numbered by line, if
        they are exactly its lines (as many as ``lines``, none rejected); else None, table dropped."""
        if ran is None or lines is None or ran != (lines, 0):
            self._drop_incoming(ran)
            return None
        con = self.con
        con.execute("UPDATE _incoming SET line = rowid + 1, _ord = rowid + 1")
        names = [r[0] for r in con.execute("DESCRIBE _incoming").fetchall() if r[0] not in ("_ord", "reject_reason")]
        return Parsed(spec.table, InTable("_incoming", lines, names), [], spec.format)

    def _drop_incoming(self, ran: tuple[int, int] | None) -> None:
        if ran is not None:
            self.con.execute("DROP TABLE IF EXISTS _incoming")

    def _next_of_format(self, spec: SourceSpec, folders: Collection[str]) -> list[tuple[bytes, str, str]]:
        """(data, rel, sha256) of the next new files in the queue that ``spec`` reads, up to
        BATCH_FILES files / BATCH_BYTES bytes; files it cannot read are left for the loop."""
        out: list[tuple[bytes, str, str]] = []
        nbytes = 0
        for path in self._queue[:BATCH_LOOKAHEAD]:
            if len(out) + 1 >= BATCH_FILES or nbytes >= BATCH_BYTES:
                break
            rel = path.relative_to(self.landing).as_posix()
            try:
                st = path.stat()
                if self._unchanged(rel, st) or folder_of(rel, folders) != spec.folder:
                    continue
                if st.st_size >= BY_PATH_BYTES and _reads_by_path(spec):  # read by path when the loop reaches it
                    continue
                raw = path.read_bytes()
                sha = file_identity(rel, raw)
                if self._known(sha):
                    continue
                data = _decode(raw, rel)
                if _detect([s for s in self.specs if s.folder == spec.folder], data, rel) is not spec:
                    continue
                if len(data) >= BY_PATH_BYTES and _reads_by_path(spec):  # a gzip file that is large once decoded
                    continue
            except (OSError, SourceFormatError):
                continue
            out.append((data, rel, sha))
            nbytes += len(data)
        return out

    def _record_unreadable(self, rel: str, sha: str, folder: str | None, nbytes: int, mtime_ns: int | None,
                           exc: SourceFormatError) -> FileResult:
        self._flush()
        self._begin()
        try:
            file_id = self._next_file_id()
            self.con.execute(
                "INSERT INTO ops.quarantine VALUES (?, ?, ?, ?, ?, NULL, ?)",
                [file_id, rel, exc.line, exc.field, f"unreadable file: {exc}", self.now],
            )
            self.con.execute(
                f"INSERT INTO ops.ingested_files ({_FILE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, NULL, NULL, 'unreadable', 1, 0, 0, 1, NULL, ?, ?, ?)",
                [file_id, rel, sha, folder or "", nbytes, self.now, mtime_ns],
            )
            self._end(1)
        except Exception:
            self._abort()
            raise
        self._committed(sha, file_id, rel, mtime_ns, None)
        return FileResult(rel, "unreadable", rows_in=1, rows_quarantined=1, message=str(exc))

    def _load(self, rel: str, sha: str, folder: str, nbytes: int, mtime_ns: int | None, spec: SourceSpec,
              parsed: Parsed) -> FileResult:
        table = parsed.table
        if table != spec.table:  # the key the rows are de-duplicated on is the spec table's
            raise RuntimeError(f"parser {spec.format} produced rows for {table}, its spec names {spec.table}")
        cols = self._table_columns(table)
        col_names = [c for c, _ in cols if c != "file_id"]
        incoming = parsed.rows
        extra = set(incoming.column_names) - set(col_names)
        if extra:
            raise RuntimeError(f"parser {spec.format} produced columns not in {table}: {sorted(extra)}")
        prepared = self._prepared
        if prepared is not None:
            k = prepared.position(rel, parsed, self._loads.get(table, 0))
            if k is not None:
                return self._load_prepared(prepared, k, rel, sha, folder, nbytes, mtime_ns, parsed)
        rejects = pa.Table.from_pylist(
            [{"line": r.line, "field": r.field, "reason": r.reason, "raw": r.raw} for r in parsed.rejects],
            schema=REJECTS_SCHEMA,
        )
        con = self.con
        in_table = isinstance(incoming, InTable)  # already in _incoming (_read_in_place)
        self._flush()  # the files loaded before it first: its checks read what they write
        self._begin()
        try:
            file_id = self._next_file_id()
            if parsed.meta.get("export_key"):
                self._replace_reissued(table, parsed.meta["export_key"], file_id)
            con.register("_rejects_arrow", rejects)
            select_cols = ", ".join(
                f'"{c}"' if c in incoming.column_names else f'NULL AS "{c}"' for c in col_names
            )
            if not in_table:
                con.register("_incoming_arrow", incoming)
                con.execute(
                    f"CREATE OR REPLACE TEMP TABLE _incoming AS SELECT {select_cols}, row_number() OVER () AS _ord FROM _incoming_arrow"
                )
            elif set(col_names) - set(incoming.column_names):  # a staging column the query has not: NULL
                con.execute(f"CREATE OR REPLACE TEMP TABLE _incoming AS SELECT {select_cols}, _ord FROM _incoming")
            con.execute(
                "INSERT INTO ops.quarantine SELECT ?, ?, line, field, reason, raw, ? FROM _rejects_arrow",
                [file_id, rel, self.now],
            )
            # Safety net: a NULL in a NOT NULL staging column is a reject, not a crash.
            required = [c for c, nullable in cols if not nullable and c not in ("file_id", "line")]
            if required:
                first_null = " ".join(f"WHEN \"{c}\" IS NULL THEN '{c}'" for c in required)
                con.execute(
                    f"""INSERT INTO ops.quarantine
                        SELECT ?, ?, line, CASE {first_null} END, 'missing required value', NULL, ?
                        FROM _incoming WHERE CASE {first_null} END IS NOT NULL""",
                    [file_id, rel, self.now],
                )
                not_null = " AND ".join(f'"{c}" IS NOT NULL' for c in required)
                con.execute(f"DELETE FROM _incoming WHERE NOT ({not_null})")
            dup, conflict = self._classify(table, spec.key, col_names)
            dup += parsed.duplicates
            if conflict:
                key_list = ", ".join(spec.key or ())
                con.execute(
                    """INSERT INTO ops.quarantine
                        SELECT ?, ?, line, ?, 'conflicting_duplicate: same key as a loaded row, other values', NULL, ?
                        FROM _incoming WHERE _verdict = 'conflict'""",
                    [file_id, rel, key_list, self.now],
                )
            names = ", ".join(f'"{c}"' for c in col_names)
            new_rows = f"SELECT ? AS file_id, {names} FROM _incoming WHERE _verdict = 'new'"
            if self._target(table) != table and incoming.num_rows >= PART_ROWS:
                # a large file's rows go to their own Parquet file, not through the pending table
                loaded, written = parts.append(con, table, new_rows, [file_id])
                if written is not None:
                    self._written.append(written)
            else:
                loaded = con.execute(f"INSERT INTO {self._target(table)} (file_id, {names}) {new_rows}",
                                     [file_id]).fetchall()[0][0]
            self._hashes_add(table, "_incoming", "WHERE _verdict = 'new'")
            for side_table, side_rows in parsed.side.items():
                self._load_side(side_table, side_rows, file_id)
            quarantined = con.execute("SELECT count(*) FROM ops.quarantine WHERE file_id = ?", [file_id]).fetchall()[0][0]
            rows_in = self._record_loaded(file_id, rel, sha, folder, nbytes, mtime_ns, table, parsed,
                                          loaded, dup, quarantined)
            self._flush()
            self._end(rows_in)
        except Exception:
            self._abort()
            raise
        finally:
            if not in_table:
                con.unregister("_incoming_arrow")
            con.unregister("_rejects_arrow")
        self._committed(sha, file_id, rel, mtime_ns, table)
        for w in parsed.meta.get("warnings", []):
            log.warning("%s: %s", rel, w)
        return FileResult(rel, "loaded", parsed.format, table, rows_in, loaded, dup, quarantined,
                          rows_skipped=parsed.skipped, unknown_fields=_unknown_rows(parsed))

    def _prepare(self, spec: SourceSpec, items: list[tuple[str, str, Parsed | Exception]]) -> None:
        """Check and de-duplicate the rows of a batch of parsed files (rel, sha256, result) at once,
        as :meth:`_load` would file by file, each file loaded right after the one before:

        * a row missing a NOT NULL value is quarantined ('missing required value');
        * a row whose key is stored already is a duplicate when its values equal a stored row's,
          else a conflict (as ``_classify``);
        * among the batch's rows whose key is not stored yet, ordered by file then line, the first
          is new and every later one a duplicate of it if its values are equal, else a conflict.
          File by file that is the same verdict: the first one is loaded with its file, so a later
          file finds it stored (and only it: the others were not loaded).

        A file that failed to parse or has the same bytes as an earlier file of the batch loads no
        rows (the loop records it unreadable / already ingested) and is left out; one with side
        tables ends the batch there (it and the files after it load one by one)."""
        self._prepared = None
        table = spec.table
        members: list[tuple[str, Parsed]] = []
        shas: set[str] = set()
        for rel, sha, res in items:
            if isinstance(res, Exception) or sha in shas:
                continue  # recorded unreadable / already ingested by the loop: it loads no rows
            if res.side or res.table != table:
                break
            shas.add(sha)
            members.append((rel, res))
        if len(members) < 2:
            return
        # a DuckDB error below is caught (the files then load one by one); inside an open group of
        # files it would abort the group's transaction: close the group first
        self._commit()
        cols = self._table_columns(table)
        col_names = [c for c, _ in cols if c != "file_id"]
        tables = []
        for k, (_rel, parsed) in enumerate(members):
            rows = parsed.rows
            have = {c: i for i, c in enumerate(rows.column_names)}  # once: column_names is a new list per call
            if set(have) - set(col_names):
                return  # _load raises for it, naming the parser
            n = rows.num_rows
            arrays = [rows.column(have[c]) if c in have else pa.nulls(n) for c in col_names]
            fields = [rows.schema.field(have[c]) if c in have else pa.field(c, pa.null()) for c in col_names]
            tables.append(pa.Table.from_arrays(
                [*arrays, pa.array(np.full(n, k, np.int32)), pa.array(np.arange(1, n + 1, dtype=np.int64))],
                schema=pa.schema([*fields, pa.field("_file", pa.int32()), pa.field("_ord", pa.int64())])))
        try:
            incoming = pa.concat_tables(tables, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return
        rejects = pa.Table.from_pylist(
            [{"_file": k, "_seq": i, "line": r.line, "field": r.field, "reason": r.reason, "raw": r.raw}
             for k, (_rel, parsed) in enumerate(members) for i, r in enumerate(parsed.rejects)],
            schema=pa.schema([("_file", pa.int32()), ("_seq", pa.int64()), *REJECTS_SCHEMA]))
        con = self.con
        names = ", ".join(f'"{c}"' for c in col_names)
        con.register("_batch_arrow", incoming)
        con.register("_batch_rejects_arrow", rejects)
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE _batch_rows AS SELECT {names}, _file, _ord FROM _batch_arrow")
            # quarantine rows of every member: the parser's rejects (part 0), missing values (1), conflicts (2)
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _batch_quarantine AS "
                "SELECT _file, 0 AS _part, _seq, line, field, reason, raw FROM _batch_rejects_arrow")
            required = [c for c, nullable in cols if not nullable and c not in ("file_id", "line")]
            if required:
                first_null = " ".join(f"WHEN \"{c}\" IS NULL THEN '{c}'" for c in required)
                con.execute(
                    f"""INSERT INTO _batch_quarantine
                        SELECT _file, 1, _ord, line, CASE {first_null} END, 'missing required value', NULL
                        FROM _batch_rows WHERE CASE {first_null} END IS NOT NULL""")
                not_null = " AND ".join(f'"{c}" IS NOT NULL' for c in required)
                con.execute(f"DELETE FROM _batch_rows WHERE NOT ({not_null})")
            self._classify_batch(table, spec.key, col_names)
            counts = con.execute(
                """WITH v AS (SELECT _file, count(*) FILTER (_verdict = 'new') AS n,
                                     count(*) FILTER (_verdict = 'duplicate') AS d FROM _batch_rows GROUP BY _file),
                        q AS (SELECT _file, count(*) AS q FROM _batch_quarantine GROUP BY _file)
                   SELECT f._file, coalesce(v.n, 0), coalesce(v.d, 0), coalesce(q.q, 0)
                   FROM range(?) f(_file) LEFT JOIN v USING (_file) LEFT JOIN q USING (_file) ORDER BY f._file""",
                [len(members)]).fetchall()
            # each member then inserts its slice of these: a scan of the whole batch per file was
            # ~5 ms a file on the demo
            new_rows = con.sql(f"SELECT {names} FROM _batch_rows WHERE _verdict = 'new' ORDER BY _file, _ord").to_arrow_table()
        finally:
            con.unregister("_batch_arrow")
            con.unregister("_batch_rejects_arrow")
        self._prepared = _Prepared(table, members, [(n, d, q) for _k, n, d, q in counts], self._loads.get(table, 0),
                                   new_rows)

    def _classify_batch(self, table: str, key: tuple[str, ...] | None, col_names: list[str]) -> None:
        """Add _verdict to _batch_rows and the conflicts to _batch_quarantine (see _prepare)."""
        if not verdicts(self.con, table, key, col_names, "_batch_rows", ("_file", "_ord"), self._key_hashes(table, key)):
            return
        key_list = ", ".join(key)
        self.con.execute(
            """INSERT INTO _batch_quarantine
               SELECT _file, 2, _ord, line, ?, 'conflicting_duplicate: same key as a loaded row, other values', NULL
               FROM _batch_rows WHERE _verdict = 'conflict'""",
            [key_list])

    def _load_prepared(self, prepared: _Prepared, k: int, rel: str, sha: str, folder: str, nbytes: int,
                       mtime_ns: int | None, parsed: Parsed) -> FileResult:
        """Load member ``k`` of a prepared batch, in its own transaction or its group's. Its
        statements (its rows, their key hashes, its quarantine and ops.ingested_files rows) are run
        by the next :meth:`_flush`, in the same transaction, together with those of the members
        loaded after it: one INSERT per table for the members loaded in a row instead of one per
        file, whose fixed cost grows with the staging columns (~8 ms of CPU a file on the demo)."""
        table = prepared.table
        new, dup, quarantined = prepared.counts[k]
        dup += parsed.duplicates
        if self._pending_of is not prepared:
            self._flush()
        self._begin()
        try:
            file_id = self._next_file_id()
            if prepared.offsets[k] + new > prepared.new_rows.num_rows:
                raise RuntimeError(f"{rel}: accounting broken: {new} rows prepared as new, "
                                   f"{prepared.new_rows.num_rows - prepared.offsets[k]} left")
            self._pending_of = prepared
            self._pending_members.append((k, file_id, rel))
            rows_in = self._record_loaded(file_id, rel, sha, folder, nbytes, mtime_ns, table, parsed,
                                          new, dup, quarantined)
            self._end(rows_in)
        except Exception:
            self._abort()
            self._prepared = None
            raise
        prepared.next += 1
        self._committed(sha, file_id, rel, mtime_ns, table)
        prepared.loads = self._loads[table]
        if prepared.next == len(prepared.members):
            self._prepared = None
        for w in parsed.meta.get("warnings", []):
            log.warning("%s: %s", rel, w)
        return FileResult(rel, "loaded", parsed.format, table, rows_in, new, dup, quarantined,
                          unknown_fields=_unknown_rows(parsed))

    def _flush(self) -> None:
        """Run the statements held back in the open transaction (``_load_prepared``,
        ``_record_loaded``), in the order the files were loaded: the prepared members' quarantine
        rows, rows and key hashes, then every file's ops.ingested_files row (and what follows it).
        Called before the transaction commits and before any other statement that writes or reads
        what they write. The rows are those each member would have inserted on its own, in the same
        order, with the same file_id; the counts are checked against the prepared ones."""
        con = self.con
        members, prepared = self._pending_members, self._pending_of
        if members:
            assert prepared is not None
            self._pending_members, self._pending_of = [], None
            table = prepared.table
            ks = [k for k, _f, _r in members]
            if ks != list(range(ks[0], ks[0] + len(ks))):
                raise RuntimeError(f"prepared members flushed out of order: {ks}")
            counts = [prepared.counts[k] for k in ks]
            file_ids = [f for _k, f, _r in members]
            quarantined = sum(q for _n, _d, q in counts)
            if quarantined:
                con.register("_members_files", pa.table({
                    "_file": pa.array(ks, pa.int32()), "file_id": pa.array(file_ids, pa.int64()),
                    "file": pa.array([r for _k, _f, r in members], pa.string())}))
                try:
                    (n,) = con.execute(
                        """INSERT INTO ops.quarantine SELECT m.file_id, m.file, q.line, q.field, q.reason, q.raw, ?
                           FROM _batch_quarantine q JOIN _members_files m ON q._file = m._file
                           ORDER BY q._file, q._part, q._seq""", [self.now]).fetchall()[0]
                finally:
                    con.unregister("_members_files")
                if n != quarantined:
                    raise RuntimeError(f"accounting broken: {n} rows quarantined, {quarantined} prepared "
                                       f"({members[0][2]} .. {members[-1][2]})")
            first, stop = prepared.offsets[ks[0]], prepared.offsets[ks[-1] + 1]
            if stop > first:
                col_names = [c for c, _ in self._table_columns(table) if c != "file_id"]
                names = ", ".join(f'"{c}"' for c in col_names)
                rows = prepared.new_rows.slice(first, stop - first)
                rows = rows.append_column("file_id", pa.array(
                    np.repeat(np.array(file_ids, dtype=np.int64), [n for n, _d, _q in counts])))
                con.register("_member_arrow", rows)
                try:
                    (loaded,) = con.execute(f"INSERT INTO {self._target(table)} (file_id, {names}) "
                                            f"SELECT file_id, {names} FROM _member_arrow").fetchall()[0]
                    self._hashes_add(table, "_member_arrow")
                finally:
                    con.unregister("_member_arrow")
                if loaded != stop - first:
                    raise RuntimeError(f"accounting broken: {loaded} rows loaded, {stop - first} prepared as new "
                                       f"({members[0][2]} .. {members[-1][2]})")
        files = self._pending_files
        if files:
            self._pending_files = []
            values = ", ".join(["(?, ?, ?, ?, ?, ?, 'loaded', ?, ?, ?, ?, ?, ?, ?, ?)"] * len(files))
            con.execute(f"INSERT INTO ops.ingested_files ({_FILE_COLUMNS}) VALUES {values}",
                        [v for row, _f, _r, _p in files for v in row])
            for _row, file_id, rel, parsed in files:
                if parsed.skipped or parsed.meta.get("export_key"):
                    con.execute("UPDATE ops.ingested_files SET rows_skipped = ?, export_key = ? WHERE file_id = ?",
                                [parsed.skipped, parsed.meta.get("export_key"), file_id])
                self._record_unknown(file_id, rel, parsed)

    def _record_loaded(self, file_id: int, rel: str, sha: str, folder: str, nbytes: int, mtime_ns: int | None,
                       table: str, parsed: Parsed, loaded: int, dup: int, quarantined: int) -> int:
        """Inside a file's load transaction: check rows_in = loaded + duplicate + quarantined (a file
        that breaks it fails the load, naming the file) and queue its ops.ingested_files row for
        :meth:`_flush`; returns rows_in."""
        rows_in = parsed.rows_in
        if loaded + dup + quarantined + parsed.skipped != rows_in:
            raise RuntimeError(
                f"{rel}: accounting broken: rows_in {rows_in} != loaded {loaded} + duplicate {dup} + quarantined {quarantined}"
                f" + skipped {parsed.skipped}"
            )
        self._pending_files.append(([file_id, rel, sha, folder, parsed.format, table, rows_in, loaded, dup, quarantined,
                                     parsed.meta.get("effective_from"), nbytes, self.now, mtime_ns], file_id, rel, parsed))
        return rows_in

    def _record_unknown(self, file_id: int, rel: str, parsed: Parsed) -> None:
        """The guard's findings for the file (``_guard``): ops.unknown_fields, and the lines whose
        token-looking unknown value is not zero in ops.unknown_field_lines."""
        found = parsed.meta.get("unknown_fields")
        if found is None or not found.rows:
            return
        con = self.con
        con.register("_unknown_arrow", pa.Table.from_pylist(found.rows))
        con.register("_unknown_lines_arrow", found.lines)
        try:
            con.execute("INSERT INTO ops.unknown_fields (file_id, source, file, path, first_line, records, token_like, "
                        "nonzero_records, example, found_at) SELECT ?, ?, ?, path, first_line, records, token_like, "
                        "nonzero_records, example, ? FROM _unknown_arrow", [file_id, parsed.format, rel, self.now])
            rid = "request_id" if "request_id" in found.lines.column_names else "NULL"
            con.execute(f"INSERT INTO ops.unknown_field_lines (file_id, line, path, request_id) "
                        f"SELECT ?, line, path, {rid} FROM _unknown_lines_arrow", [file_id])
        finally:
            con.unregister("_unknown_arrow")
            con.unregister("_unknown_lines_arrow")

    def _load_side(self, table: str, rows: pa.Table, file_id: int) -> None:
        """Insert the side rows whose main row (same ``line``) was just loaded as new."""
        cols = [c for c, _ in self._table_columns(table) if c != "file_id"]
        extra = set(rows.column_names) - set(cols)
        if extra or "line" not in rows.column_names:
            raise RuntimeError(f"side rows for {table}: columns not in the table {sorted(extra)} or no 'line'")
        names = ", ".join(f'"{c}"' for c in cols if c in rows.column_names)
        self.con.register("_side_arrow", rows)
        try:
            self.con.execute(
                f"INSERT INTO {self._target(table)} (file_id, {names}) SELECT ?, {names} FROM _side_arrow "
                "WHERE line IN (SELECT line FROM _incoming WHERE _verdict = 'new')",
                [file_id],
            )
        finally:
            self.con.unregister("_side_arrow")

    def _key_hashes(self, table: str, key: tuple[str, ...] | None) -> str | None:
        """The temp table of ``hash(key)`` of every stored row of a ``parts.STAGED`` table (the
        calls), made at its first de-duplication of this run: each file's first question, "is
        any of my keys stored?", is then a join of integers in memory instead of a scan of every
        stored key in the Parquet files (which made a first ingest of N files cost N scans of a
        growing history, and a night one scan of the whole history per new file). The rows this
        Ingestor loads are added as they are loaded (``_hashes_add``): the only way rows enter the
        table during a run. None: ask the table itself."""
        if not key or table not in parts.STAGED:
            return None
        if table not in self._hashes:
            # made at the run's first file, from the hashes each of the table's Parquet files keeps
            # of its keys (warehouse/parts.py: 0.2 s for 32M stored calls, against 2.0 s to hash
            # every stored id), then 0.012 s a file
            if tuple(key) != parts.STAGED_KEYS[table]:
                raise RuntimeError(f"{table}: de-duplicated on {key}, its files keep the hashes of {parts.STAGED_KEYS[table]}")
            name = f"_key_hashes_{len(self._hashes)}"
            k = ", ".join(f'"{c}"' for c in key)
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {parts.key_hashes_sql(self.con, table)}")
            self._hashes[table] = (name, k)
        return self._hashes[table][0]

    def _hashes_add(self, table: str, rows: str, where: str = "") -> None:
        """Add the keys of the rows just loaded into ``table`` (from ``rows``) to its key hashes."""
        if table in self._hashes:
            name, k = self._hashes[table]
            self.con.execute(f"INSERT INTO {name} SELECT hash({k}) FROM {rows} {where}")

    def _drop_hashes(self) -> None:
        for name, _k in self._hashes.values():
            self.con.execute(f"DROP TABLE IF EXISTS {name}")
        self._hashes.clear()

    def _classify(self, table: str, key: tuple[str, ...] | None, col_names: list[str]) -> tuple[int, int]:
        """Add _verdict ('new', 'duplicate', 'conflict') to _incoming; return (duplicates, conflicts)."""
        con = self.con
        if not verdicts(con, table, key, col_names, "_incoming", ("_ord",), self._key_hashes(table, key)):
            return 0, 0
        dup, conflict = con.execute(
            "SELECT count(*) FILTER (_verdict = 'duplicate'), count(*) FILTER (_verdict = 'conflict') FROM _incoming"
        ).fetchall()[0]
        return dup, conflict


def verdict_sql(rows: str, stored: str | None, key: tuple[str, ...], values: list[str], order: tuple[str, ...],
                empty_types: dict[str, str] | None = None) -> str:
    """The one de-duplication rule (issue 27), as a SELECT in DuckDB's dialect: every row of ``rows``
    (in ``order``) with ``_verdict`` -- 'duplicate' when a row of ``stored`` (or an earlier row of
    ``rows``) has the same natural ``key`` and the same ``values``, 'conflict' when it has the same
    key and other values, else 'new' -- plus the helper columns ``_rn``, ``_first_vals``. The DuckDB
    ingest runs it as is (``verdicts``); the Spark ingest renders it for Spark SQL with sqlglot
    (warehouse/spark/ingest.py), so the rule is written once. ``stored`` None: nothing stored has
    these keys (the DuckDB ingest's fast path), typed by ``empty_types``."""
    k = ", ".join(f'"{c}"' for c in key)
    pos = ", ".join(order)

    def vals(alias: str) -> str:
        return "struct_pack(" + ", ".join(f'"{c}" := {alias}."{c}"' for c in values) + ")"

    if stored is not None:
        key_eq = " AND ".join(f'i."{c}" IS NOT DISTINCT FROM s."{c}"' for c in key)
        existing = (f"SELECT {', '.join(f'i.{c} AS _e{c}' for c in order)}, "
                    f"bool_or({vals('i')} IS NOT DISTINCT FROM {vals('s')}) AS same_vals "
                    f"FROM ranked i JOIN {stored} s ON {key_eq} GROUP BY {', '.join(f'i.{c}' for c in order)}")
    else:
        existing = ("SELECT " + ", ".join(f"NULL::{(empty_types or {})[c]} AS _e{c}" for c in order)
                    + ", NULL::BOOLEAN AS same_vals WHERE false")
    hit = f"e._e{order[0]} IS NOT NULL"
    on = " AND ".join(f"ranked.{c} = e._e{c}" for c in order)
    return f"""WITH ranked AS (
            SELECT *, row_number() OVER (PARTITION BY {k} ORDER BY {pos}) AS _rn,
                   first_value({vals(rows)}) OVER (PARTITION BY {k} ORDER BY {pos}
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _first_vals
            FROM {rows}
        ),
        existing AS (
            {existing}
        )
        SELECT ranked.*,
               CASE
                   WHEN {hit} AND e.same_vals THEN 'duplicate'
                   WHEN {hit} THEN 'conflict'
                   WHEN _rn > 1 AND {vals('ranked')} IS NOT DISTINCT FROM _first_vals THEN 'duplicate'
                   WHEN _rn > 1 THEN 'conflict'
                   ELSE 'new'
               END AS _verdict
        FROM ranked LEFT JOIN existing e ON {on}"""


def verdicts(con: duckdb.DuckDBPyConnection, table: str, key: tuple[str, ...] | None, col_names: list[str],
             rows: str, order: tuple[str, ...], key_hashes: str | None = None) -> bool:
    """Add ``_verdict`` ('new', 'duplicate', 'conflict') to the temp table ``rows`` (one file's rows,
    or a batch's: ``order`` = their position, e.g. ``("_file", "_ord")``) against the rows stored in
    ``table`` under the natural ``key`` and against the earlier rows of ``rows`` itself (the rule:
    ``verdict_sql``). Returns False when every row is new (no key, or no key stored nor repeated:
    nothing to count). ``key_hashes``: a temp table (column ``h``) holding ``hash(key)`` of every
    stored row of ``table`` (``Ingestor._key_hashes``): a key whose hash is not there is not
    stored, so the scan of the stored keys is made only when some hash is there."""
    if not key:
        con.execute(f"ALTER TABLE {rows} ADD COLUMN _verdict VARCHAR DEFAULT 'new'")
        return False
    values = [c for c in col_names if c != "line"]
    k = ", ".join(f'"{c}"' for c in key)
    pos = ", ".join(order)
    key_eq = " AND ".join(f'i."{c}" IS NOT DISTINCT FROM s."{c}"' for c in key)
    # Is any key of the rows stored already? A scan of the key column(s) only. Usually not (a new
    # day of calls): then the comparison of whole rows, which reads every column of the stored
    # table, is skipped, and the cost of a new file barely grows with the history.
    seen = (key_hashes is None or con.execute(
        f"SELECT 1 FROM {key_hashes} s SEMI JOIN (SELECT hash({k}) AS h FROM {rows}) i ON s.h = i.h LIMIT 1").fetchall() != [])
    seen = seen and con.execute(f"SELECT 1 FROM {table} s SEMI JOIN {rows} i ON {key_eq} LIMIT 1").fetchall() != []
    if not seen:
        n, keys = con.execute(
            f"SELECT (SELECT count(*) FROM {rows}), (SELECT count(*) FROM (SELECT DISTINCT {k} FROM {rows}))"
        ).fetchall()[0]
        if n == keys:  # no key stored, none repeated in the rows: every row is new
            con.execute(f"ALTER TABLE {rows} ADD COLUMN _verdict VARCHAR DEFAULT 'new'")
            return False
    sql = verdict_sql(rows, table if seen else None, key, values, order,
                      empty_types={"_file": "INTEGER", "_ord": "BIGINT"})
    con.execute(f"CREATE OR REPLACE TEMP TABLE {rows} AS SELECT * EXCLUDE (_rn, _first_vals) FROM ({sql}) ORDER BY {pos}")
    return True
