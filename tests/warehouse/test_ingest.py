"""Ingest accounting: rows in = loaded + duplicate + quarantined; same bytes = no-op; bad files quarantined."""

from __future__ import annotations

import gzip

from tests.conftest import MINI_FILES, NOW, build_warehouse, write_files
from warehouse.ingest import Ingestor

CALL = ('{{"ts":"2026-06-30T10:00:00Z","request_id":"{rid}","model":"o3","provider":"openai",'
        '"usage":{{"prompt_tokens":{p},"completion_tokens":10}}}}')


def files_table(con):
    return con.sql("SELECT file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined "
                   "FROM ops.ingested_files ORDER BY file_id").fetchall()


def test_same_bytes_under_a_new_name_adds_nothing(mini_landing, tmp_path):
    con, _ = build_warehouse(mini_landing, tmp_path / "w.duckdb")
    before = con.sql("SELECT count(*) FROM stg.requests").fetchall()
    copy = mini_landing / "telemetry" / "requests" / "copy-of-calls.jsonl"
    copy.write_text(MINI_FILES["telemetry/requests/calls.jsonl"])
    result = Ingestor(con, mini_landing, now=NOW).ingest(paths=[copy])
    assert result.files[0].status == "already_ingested"
    assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == before


def test_duplicates_and_conflicts_are_counted_not_lost(tmp_path):
    landing = write_files(tmp_path / "landing", {
        "telemetry/requests/a.jsonl": "\n".join([CALL.format(rid="a", p=1), CALL.format(rid="b", p=2)]) + "\n",
        # b repeated exactly (duplicate), a with other values (conflict), c new, c again in-file (duplicate), bad line
        "telemetry/requests/b.jsonl": "\n".join([CALL.format(rid="b", p=2), CALL.format(rid="a", p=99),
                                                CALL.format(rid="c", p=3), CALL.format(rid="c", p=3), "{oops"]) + "\n",
    })
    con, summary = build_warehouse(landing, tmp_path / "w.duckdb")
    assert files_table(con) == [
        ("telemetry/requests/a.jsonl", "loaded", 2, 2, 0, 0),
        ("telemetry/requests/b.jsonl", "loaded", 5, 1, 2, 2),
    ]
    reasons = con.sql("SELECT line, reason FROM ops.quarantine ORDER BY line").fetchall()
    assert reasons[0][0] == 2 and reasons[0][1].startswith("conflicting_duplicate")
    assert reasons[1] == (5, "not a JSON object (invalid JSON line)")
    assert con.sql("SELECT request_id, uncached_input_tokens FROM stg.requests ORDER BY 1").fetchall() == [
        ("a", 1), ("b", 2), ("c", 3)]


def test_unreadable_files_are_quarantined_whole_and_the_run_goes_on(tmp_path):
    landing = write_files(tmp_path / "landing", {
        "telemetry/requests/broken.jsonl.gz": b"\x1f\x8b\x08\x00garbage",
        "telemetry/requests/latin1.jsonl": "caf\xe9\n".encode("latin-1"),
        "telemetry/requests/ok.jsonl.gz": gzip.compress((CALL.format(rid="z", p=5) + "\n").encode()),
        "prices/llm/empty.csv": "",
        "nowhere/readme.txt": "hello",
    })
    con, summary = build_warehouse(landing, tmp_path / "w.duckdb")
    status = {f.file: (f.status, f.message) for f in summary.files}
    assert status["telemetry/requests/ok.jsonl.gz"][0] == "loaded"
    assert status["telemetry/requests/broken.jsonl.gz"][0] == "unreadable"
    assert "corrupt gzip" in status["telemetry/requests/broken.jsonl.gz"][1]
    assert "not UTF-8" in status["telemetry/requests/latin1.jsonl"][1]
    assert "line 1" in status["telemetry/requests/latin1.jsonl"][1]
    assert status["prices/llm/empty.csv"][0] == "unreadable"
    assert "not in a known landing folder" in status["nowhere/readme.txt"][1]
    q = con.sql("SELECT file, reason FROM ops.quarantine WHERE line IS NULL OR file LIKE '%latin1%' ORDER BY file").fetchall()
    assert len(q) == 4 and all(r[1].startswith("unreadable file") for r in q)
    # accounting holds for every file, unreadable ones included (1 row in, 1 quarantined)
    assert con.sql("SELECT count(*) FROM ops.ingested_files WHERE rows_in <> rows_loaded + rows_duplicate + rows_quarantined").fetchall() == [(0,)]


def test_repeats_inside_a_new_file_are_classified_without_stored_rows(tmp_path):
    """No key of the file is stored yet (the usual new day): in-file repeats still count."""
    landing = write_files(tmp_path / "landing", {
        "telemetry/requests/a.jsonl": "\n".join([CALL.format(rid="x", p=1), CALL.format(rid="x", p=1),
                                                CALL.format(rid="y", p=2), CALL.format(rid="y", p=3)]) + "\n",
    })
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    assert files_table(con) == [("telemetry/requests/a.jsonl", "loaded", 4, 2, 1, 1)]
    assert con.sql("SELECT line, field FROM ops.quarantine").fetchall() == [(4, "request_id")]
    assert con.sql("SELECT request_id, uncached_input_tokens FROM stg.requests ORDER BY 1").fetchall() == [
        ("x", 1), ("y", 2)]


def test_dedupe_matches_a_plain_python_model(tmp_path):
    """Random files over a few request ids and values, ingested one after the other: each row's
    verdict is what a dict says. A stored key decides (same values = duplicate, other = conflict);
    otherwise the first row of a key in the file is new and its repeats are compared with it."""
    import random

    from warehouse.db import connect, migrate

    rng = random.Random(10)
    con = connect(tmp_path / "w.duckdb")
    migrate(con)
    landing = tmp_path / "landing"
    stored: dict[str, int] = {}
    for n in range(12):
        rows = [(rng.choice("abcdefgh"), rng.choice([1, 2])) for _ in range(rng.randint(1, 8))]
        if n % 3 == 0:  # some files with fresh keys only, one row each
            rows = [(f"n{n}-{i}", 1) for i in range(rng.randint(1, 4))]
        rel = f"telemetry/requests/f{n:02d}.jsonl"
        write_files(landing, {rel: "".join(CALL.format(rid=r, p=p) + "\n" for r, p in rows)})
        expect = {"new": 0, "duplicate": 0, "conflict": 0}
        first: dict[str, int] = {}
        for rid, p in rows:
            if rid in stored:
                expect["duplicate" if stored[rid] == p else "conflict"] += 1
            elif rid in first:
                expect["duplicate" if first[rid] == p else "conflict"] += 1
            else:
                first[rid] = p
                expect["new"] += 1
        for rid, p in first.items():
            stored.setdefault(rid, p)
        [f] = Ingestor(con, landing, now=NOW).ingest(paths=[landing / rel]).files
        assert (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) == (
            len(rows), expect["new"], expect["duplicate"], expect["conflict"]), (n, rows)
    assert dict(con.sql("SELECT request_id, uncached_input_tokens FROM stg.requests").fetchall()) == stored
