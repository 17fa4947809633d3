"""A nightly ingest does not read the history again: a landed file whose path, size and mtime are
those recorded in ops.ingested_files is skipped without being read or hashed (issue 10).

Reads are counted with a spy on ``Path.read_bytes`` (what the ingest reads a file with), never
with a clock. Every changed file is still read, hashed and ingested as before: same bytes = no-op,
new bytes = loaded, and rows_in = loaded + duplicate + quarantined.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import MINI_FILES, NOW, write_files
from warehouse.db import connect, migrate
from warehouse.ingest import Ingestor

CALLS = "telemetry/requests/calls.jsonl"
NEW_CALL = ('{"ts":"2026-07-02T10:00:00Z","request_id":"r6","model":"o3","provider":"openai",'
            '"usage":{"prompt_tokens":100,"completion_tokens":10}}\n')


@pytest.fixture
def con(tmp_path):
    c = connect(tmp_path / "w.duckdb")
    migrate(c)
    yield c
    c.close()


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Names of the files read through Path.read_bytes while the test runs."""
    seen: list[str] = []
    original = Path.read_bytes

    def spy(self: Path) -> bytes:
        seen.append(self.name)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    return seen


def ingest(con, landing: Path) -> dict[str, str]:
    summary = Ingestor(con, landing, now=NOW).ingest()
    return {f.file: f.status for f in summary.files}


def files(con) -> list[tuple]:
    return con.sql("SELECT file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined "
                   "FROM ops.ingested_files ORDER BY file_id").fetchall()


def accounting_holds(con) -> bool:
    return con.sql("SELECT count(*) FROM ops.ingested_files "
                   "WHERE rows_in <> rows_loaded + rows_duplicate + rows_quarantined").fetchall() == [(0,)]


def test_the_second_night_reads_no_file_that_did_not_change(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", MINI_FILES)
    assert set(ingest(con, landing).values()) == {"loaded"}
    assert sorted(reads) == sorted(Path(f).name for f in MINI_FILES)  # first night: each file read once
    reads.clear()
    before = files(con)
    assert set(ingest(con, landing).values()) == {"already_ingested"}
    assert reads == []
    assert files(con) == before


def test_ingested_files_records_size_on_disk_and_mtime(con, tmp_path):
    body = gzip.compress(MINI_FILES[CALLS].encode())
    landing = write_files(tmp_path / "landing", {CALLS + ".gz": body})
    ingest(con, landing)
    st = (landing / (CALLS + ".gz")).stat()
    # bytes is the size of the file as landed (compressed), the size a later run compares
    assert con.sql("SELECT file, bytes, file_mtime_ns FROM ops.ingested_files").fetchall() == [
        (CALLS + ".gz", len(body), st.st_mtime_ns)]
    assert len(body) == st.st_size


def test_rewritten_with_the_same_bytes_size_and_mtime_is_not_read(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    ingest(con, landing)
    path = landing / CALLS
    st = path.stat()
    path.write_text(MINI_FILES[CALLS])  # same content, written again ...
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and its mtime restored
    reads.clear()
    assert ingest(con, landing) == {CALLS: "already_ingested"}
    assert reads == []


def test_a_file_that_grew_is_read_and_its_new_rows_loaded(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    ingest(con, landing)
    path = landing / CALLS
    st = path.stat()
    path.write_text(MINI_FILES[CALLS] + NEW_CALL)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime as before: the size alone gives it away
    reads.clear()
    assert ingest(con, landing) == {CALLS: "loaded"}
    assert reads == ["calls.jsonl"]
    # the 5 calls of the first night are duplicates, r6 is new; nothing lost
    assert files(con) == [(CALLS, "loaded", 5, 5, 0, 0), (CALLS, "loaded", 6, 1, 5, 0)]
    assert accounting_holds(con)
    assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == [(6,)]


def test_same_size_new_mtime_new_content_is_read_and_loaded(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    ingest(con, landing)
    path = landing / CALLS
    st = path.stat()
    changed = MINI_FILES[CALLS].replace('"request_id":"r5"', '"request_id":"r9"')
    assert len(changed) == len(MINI_FILES[CALLS])
    path.write_text(changed)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    reads.clear()
    assert ingest(con, landing) == {CALLS: "loaded"}
    assert reads == ["calls.jsonl"]
    assert files(con)[1] == (CALLS, "loaded", 5, 1, 4, 0)
    assert accounting_holds(con)


def test_touched_with_the_same_bytes_is_read_once_then_skipped(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    ingest(con, landing)
    path = landing / CALLS
    st = path.stat()
    touched = st.st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(st.st_atime_ns, touched))
    reads.clear()
    assert ingest(con, landing) == {CALLS: "already_ingested"}  # read and hashed: same sha, no-op
    assert reads == ["calls.jsonl"]
    assert con.sql("SELECT count(*), max(file_mtime_ns) FROM ops.ingested_files").fetchall() == [(1, touched)]
    reads.clear()
    assert ingest(con, landing) == {CALLS: "already_ingested"}
    assert reads == []


def test_rows_from_before_the_mtime_column_are_filled_in_by_one_read(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", MINI_FILES)
    ingest(con, landing)
    con.execute("UPDATE ops.ingested_files SET file_mtime_ns = NULL")  # as a warehouse migrated by 092
    reads.clear()
    assert set(ingest(con, landing).values()) == {"already_ingested"}
    assert len(reads) == len(MINI_FILES)
    assert con.sql("SELECT count(*) FROM ops.ingested_files WHERE file_mtime_ns IS NULL").fetchall() == [(0,)]
    reads.clear()
    assert set(ingest(con, landing).values()) == {"already_ingested"}
    assert reads == []


def test_same_bytes_under_another_name_is_read_and_stays_a_no_op(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    ingest(con, landing)
    copy = landing / "telemetry" / "requests" / "copy.jsonl"
    shutil.copy2(landing / CALLS, copy)  # same bytes, size and mtime, another path
    reads.clear()
    assert ingest(con, landing) == {CALLS: "already_ingested", "telemetry/requests/copy.jsonl": "already_ingested"}
    assert reads == ["copy.jsonl"]
    assert con.sql("SELECT file FROM ops.ingested_files").fetchall() == [(CALLS,)]  # the first name stays


def test_unreadable_files_are_skipped_unread_too(con, tmp_path, reads):
    landing = write_files(tmp_path / "landing", {"telemetry/requests/latin1.jsonl": "caf\xe9\n".encode("latin-1")})
    assert ingest(con, landing) == {"telemetry/requests/latin1.jsonl": "unreadable"}
    reads.clear()
    assert ingest(con, landing) == {"telemetry/requests/latin1.jsonl": "already_ingested"}
    assert reads == []
    assert files(con) == [("telemetry/requests/latin1.jsonl", "unreadable", 1, 0, 0, 1)]


def test_a_file_that_changes_while_it_is_read_is_read_again_next_night(con, tmp_path, monkeypatch):
    landing = write_files(tmp_path / "landing", {CALLS: MINI_FILES[CALLS]})
    path = landing / CALLS
    original = Path.read_bytes
    read: list[str] = []

    def read_then_append(self: Path) -> bytes:
        data = original(self)
        if not read:  # a writer appends right after the first read
            with open(self, "a") as fh:
                fh.write(NEW_CALL)
        read.append(self.name)
        return data

    monkeypatch.setattr(Path, "read_bytes", read_then_append)
    assert ingest(con, landing) == {CALLS: "loaded"}
    assert con.sql("SELECT rows_loaded, file_mtime_ns FROM ops.ingested_files").fetchall() == [(5, None)]
    assert ingest(con, landing) == {CALLS: "loaded"}  # read again: r6 loaded, r1-r5 duplicates
    assert read == ["calls.jsonl", "calls.jsonl"]
    assert files(con)[1] == (CALLS, "loaded", 6, 1, 5, 0)
    assert con.sql("SELECT file_mtime_ns FROM ops.ingested_files ORDER BY file_id").fetchall()[1][0] == path.stat().st_mtime_ns


class CountingCon:
    """A connection that counts the statements reading ops.ingested_files."""

    def __init__(self, con):
        self._con = con
        self.lookups = 0

    def execute(self, sql, *args):
        if "FROM ops.ingested_files" in sql:
            self.lookups += 1
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_one_bookkeeping_query_per_night_not_one_per_file(con, tmp_path):
    landing = write_files(tmp_path / "landing", {
        **MINI_FILES, **{f"telemetry/requests/day-{d:02d}.jsonl": NEW_CALL.replace("r6", f"d{d}") for d in range(20)}})
    ingest(con, landing)
    counting = CountingCon(con)
    summary = Ingestor(counting, landing, now=NOW).ingest()
    assert len(summary.files) == len(MINI_FILES) + 20
    assert {f.status for f in summary.files} == {"already_ingested"}
    assert counting.lookups == 1
