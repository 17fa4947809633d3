"""The DuckDB file: connect, migrate, build and publish.

A run never writes the published file. It copies it to ``<name>.build-<id>``, ingests and
rebuilds there, and when every blocking check has passed it renames the build over the
published file (``os.replace``: atomic on POSIX). Readers that open the published file per
query see either the old snapshot or the new one, never half a build; a run that fails or is
killed leaves the published file exactly as it was, and its build file is removed by the next
run. One run at a time: the build holds ``<name>.lock`` (an ``flock``) until it ends.

The large per-call tables are not in the file (issue 26): they are Parquet files under
``<stem>.parts/`` that a build adds to and never changes, listed by the file's views
(warehouse/parts.py). So the copy is of the small tables only, and the rename still publishes one
whole build: the files the old snapshot lists are kept for ``keep_builds`` published builds.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import duckdb

from warehouse import parts

MIGRATIONS = "warehouse.migrations"


def utcnow() -> dt.datetime:
    """Naive UTC now (the warehouse stores naive UTC timestamps)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


# Files are written in a storage format that DuckDB 1.4+ reads, so BI tools and CLIs that bundle
# an older DuckDB than this library (2.x) can open the published warehouse (docs/bi.md).
STORAGE_VERSION = "v1.4.0"


# A build may use this much memory (resident, the whole process) before DuckDB spills to a temp
# folder beside the warehouse (the rebuild's peak otherwise grows with history: docs/performance.md).
# THINKTAX_MEMORY_LIMIT overrides it, e.g. "8GB".
MEMORY_LIMIT = "3GB"
# DuckDB's memory_limit bounds its buffer manager only; the Python process and the allocations
# outside the buffer manager come on top (300-600 MiB measured at 1.2M-32M calls). So DuckDB gets
# this share of the build's budget, which keeps the process under the budget.
POOL_SHARE = 0.75
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?\s*", re.I)
_UNIT = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def memory_budget() -> str:
    """The build's memory budget as configured (THINKTAX_MEMORY_LIMIT, else MEMORY_LIMIT)."""
    return os.environ.get("THINKTAX_MEMORY_LIMIT", MEMORY_LIMIT)


def duckdb_memory_limit(budget: str | None = None) -> str:
    """DuckDB's ``memory_limit`` for a build budget (``POOL_SHARE`` of it, in MB); a value that is
    not a size (DuckDB's own spellings) is passed on as written."""
    text = budget if budget is not None else memory_budget()
    m = _SIZE.fullmatch(text)
    if not m:
        return text
    mb = float(m[1]) * _UNIT[(m[2] or "MB").upper()] * POOL_SHARE / 1e6
    return f"{max(int(mb), 1)}MB"


def connect(path: Path | str, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    config: dict[str, str] = {}
    if not read_only:
        config = {
            "storage_compatibility_version": STORAGE_VERSION,
            "memory_limit": duckdb_memory_limit(),
            "temp_directory": str(Path(path).parent / ".thinktax_tmp"),
        }
    con = duckdb.connect(str(path), read_only=read_only, config=config)
    con.execute("SET TimeZone = 'UTC'")
    return con


def migration_files() -> list[tuple[str, str]]:
    """(name, sql) of every migration, in name order."""
    pkg = resources.files(MIGRATIONS)
    return sorted((p.name, p.read_text(encoding="utf-8")) for p in pkg.iterdir() if p.name.endswith(".sql"))


def migrate(con: duckdb.DuckDBPyConnection, parts_dir: Path | None = None) -> None:
    """Apply every migration; each is idempotent (CREATE ... IF NOT EXISTS / OR REPLACE). A staging
    table stored as Parquet (warehouse/parts.py) is a table again while they run, so that they can
    ALTER it. ``parts_dir``: where this build's Parquet parts live (a build: ``Build.start``); the
    staging tables are then stored there from this build on."""
    unstaged = parts.unstage(con)
    for _name, sql in migration_files():
        con.execute(sql)
    if parts_dir is not None:
        parts.set_location(con, parts_dir)
    if unstaged or parts_dir is not None:
        parts.stage(con)


def write_settings(con: duckdb.DuckDBPyConnection, settings: dict[str, object], build_id: str | None = None) -> None:
    """The one-row ops.settings table the SQL reads thinktax.toml from, plus the run's build id.

    Every mart selects ``(SELECT build_id FROM ops.settings) AS build_id``, so a reader can prove
    that all the marts it sees in one connection come from one build (no partial snapshot).
    """
    cols = ", ".join([f"? AS {name}" for name in settings] + ["CAST(? AS VARCHAR) AS build_id"])
    con.execute(f"CREATE OR REPLACE TABLE ops.settings AS SELECT {cols}", [*settings.values(), build_id])


@dataclass(frozen=True)
class Build:
    published: Path
    build_id: str

    @property
    def path(self) -> Path:
        return self.published.with_name(f"{self.published.name}.build-{self.build_id}")

    @property
    def lock_path(self) -> Path:
        return self.published.with_name(f"{self.published.name}.lock")

    @property
    def parts_dir(self) -> Path:
        return parts.parts_dir_for(self.published)

    def connect(self) -> duckdb.DuckDBPyConnection:
        return connect(self.path)

    def start(self, settings: dict[str, object], *, keep_builds: int = parts.DEFAULT_KEEP_BUILDS) -> None:
        """Copy the published warehouse (if any) into the build file and migrate it; remove the
        Parquet parts no build a reader may hold lists any more (warehouse/parts.py)."""
        self.published.parent.mkdir(parents=True, exist_ok=True)
        for stale in self.published.parent.glob(f"{self.published.name}.build-*"):
            if stale != self.path and not stale.name.endswith(".wal"):
                stale.unlink(missing_ok=True)
                stale.with_name(stale.name + ".wal").unlink(missing_ok=True)
        if self.published.exists():
            shutil.copyfile(self.published, self.path)
        else:
            self.path.unlink(missing_ok=True)
        with self.connect() as con:
            # stg.requests: a view over its files; the ingest appends to stg.requests__pending
            migrate(con, self.parts_dir.resolve())
            write_settings(con, settings, self.build_id)
            parts.collect_garbage(con, keep_builds, self.build_id)
            con.execute(
                "INSERT OR REPLACE INTO ops.runs (build_id, started_at) VALUES (?, ?)",
                [self.build_id, utcnow()],
            )

    def publish(self, files_new: int, landing: str) -> Path:
        """Checkpoint the build and atomically rename it over the published file (the rows it
        ingested written out as Parquet first, if the ingest step did not: ``parts.flush``)."""
        with self.connect() as con:
            parts.flush(con, self.build_id)
            con.execute(
                "UPDATE ops.runs SET published_at = ?, files_new = ?, landing = ? WHERE build_id = ?",
                [utcnow(), files_new, landing, self.build_id],
            )
            parts.sync(con, self.build_id)
            con.execute("CHECKPOINT")
        compact(self.path)
        ensure_closed(self.path)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.path, self.published)
        dir_fd = os.open(self.published.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return self.published

    def abandon(self) -> None:
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".wal").unlink(missing_ok=True)


class StillOpen(RuntimeError):
    """A connection of this process still has the build file open read-write at publish time."""


def ensure_closed(path: Path) -> None:
    """Raise :class:`StillOpen` if a connection of this process still has ``path`` open read-write.

    After the rename that connection's database would be the published file: a checkpoint it makes
    later (when it is closed or garbage-collected) would write into the file readers have open,
    under no lock (closing the fd that ``publish`` fsyncs drops this process's locks on the file).
    DuckDB refuses a read-only connection to a file an instance of this process holds read-write,
    which is the probe; a connection that is merely garbage is collected first.
    """
    for attempt in (0, 1):
        try:
            duckdb.connect(str(path), read_only=True).close()
            return
        except duckdb.ConnectionException as exc:
            if attempt:
                raise StillOpen(f"{path} is still open read-write in this process ({exc}); close every "
                                "connection to the build before publishing it") from exc
            import gc  # noqa: PLC0415 - only on this rare path

            gc.collect()


# A build file whose free blocks (rows deleted or dropped in it: stg.requests' pending rows, a table
# rebuilt) exceed this share of it, and COMPACT_MIN_BYTES, is rewritten before it is published:
# DuckDB reuses free blocks but never gives them back, and every later run copies the file whole.
COMPACT_SHARE = 0.25
COMPACT_MIN_BYTES = 16 << 20


def compact(path: Path, *, force: bool = False) -> bool:
    """Rewrite the DuckDB file at ``path`` without its free blocks (``COPY FROM DATABASE``: every
    schema, table, view, macro, sequence, constraint and comment), if they are worth it (``force``:
    if it has any). Returns whether it did."""
    with connect(path) as con:
        row = con.execute("SELECT block_size, total_blocks, free_blocks FROM pragma_database_size() "
                          "WHERE database_name = current_database()").fetchall()[0]
    block, total, free = row
    if not total or not free or (not force and (free < total * COMPACT_SHARE or free * block < COMPACT_MIN_BYTES)):
        return False
    tmp = path.with_name(path.name + ".compact")
    tmp.unlink(missing_ok=True)
    with connect(tmp) as con:
        (name,) = con.execute("SELECT current_database()").fetchall()[0]
        con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS build_src (READ_ONLY)")
        con.execute(f'COPY FROM DATABASE build_src TO "{name}"')
        con.execute("DETACH build_src")
        con.execute("CHECKPOINT")
    os.replace(tmp, path)
    return True


def copy_warehouse(src: Path, dst: Path) -> Path:
    """A copy of the published warehouse ``src`` at ``dst``: the DuckDB file, and its Parquet parts
    folder (warehouse/parts.py) hard-linked where the file system allows (the files are never
    changed once written; each warehouse removes only its own links), with the views remade over
    the copy's files. What a backup or a second warehouse to experiment on needs; copying the
    DuckDB file alone gives a file whose views read ``src``'s parts."""
    src, dst = Path(src), Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    src_parts, dst_parts = parts.parts_dir_for(src), parts.parts_dir_for(dst)
    if src_parts.is_dir():
        shutil.rmtree(dst_parts, ignore_errors=True)
        shutil.copytree(src_parts, dst_parts, copy_function=parts.link_or_copy)
        with connect(dst) as con:
            if parts.location(con) is not None:
                parts.set_location(con, dst_parts.resolve())
                con.execute("CHECKPOINT")
    return dst


class WarehouseBusy(RuntimeError):
    pass


@contextmanager
def run_lock(published: Path) -> Iterator[None]:
    """Hold the warehouse's run lock (one writer at a time); fail fast if another run holds it."""
    published.parent.mkdir(parents=True, exist_ok=True)
    lock = published.with_name(f"{published.name}.lock")
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WarehouseBusy(f"another thinktax run is building {published} (lock {lock})") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def read_only(published: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the published warehouse read-only (what BI tools and `thinktax sql` do)."""
    if not published.exists():
        raise FileNotFoundError(f"no published warehouse at {published}: run `thinktax run` first")
    con = connect(published, read_only=True)
    try:
        yield con
    finally:
        con.close()
