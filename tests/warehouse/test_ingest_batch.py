"""Small request files are parsed several per query (sources/requests_many.py); every table the
ingest writes must be exactly what parsing one file at a time writes."""

from __future__ import annotations

import gzip

import pytest

from tests.conftest import NOW, write_files
from warehouse import ingest
from warehouse.db import Build
from services.config import Config

CALL = ('{{"ts":"2026-06-{d:02d}T10:00:00Z","request_id":"{rid}","model":"o3","provider":"openai",'
        '"usage":{{"prompt_tokens":{p},"completion_tokens":10}}}}')


def _calls(prefix: str, n: int, day: int = 10) -> str:
    return "\n".join(CALL.format(d=day, rid=f"{prefix}{k}", p=k + 1) for k in range(n)) + "\n"


FILES = {
    "telemetry/requests/a.jsonl": _calls("a", 30),
    # rejects among good lines: invalid JSON, a negative count, a missing model, a blank line
    "telemetry/requests/b.jsonl": _calls("b", 5) + "{oops\n"
        + '{"ts":"2026-06-11T00:00:00Z","request_id":"bn","model":"o3","usage":{"prompt_tokens":-3,"completion_tokens":1}}\n'
        + '{"ts":"2026-06-11T00:00:00Z","request_id":"bm","usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'
        + _calls("b2", 3),
    "telemetry/requests/c-blank.jsonl": "\n \n",  # no JSON lines: unreadable (no format)
    "telemetry/requests/d-copy.jsonl": _calls("a", 30),  # the same bytes as a.jsonl: already ingested
    "telemetry/requests/e.jsonl.gz": gzip.compress(_calls("e", 7, day=12).encode()),
    "telemetry/requests/f.jsonl": _calls("a", 2) + _calls("f", 4),  # a0, a1 again: duplicates
    "telemetry/requests/g.jsonl": "caf\xe9\n".encode("latin-1"),  # not UTF-8
    "telemetry/requests/h.jsonl": '{"ts":"2026-06-13T00:00:00Z","request_id":"h0","model":"o3","usage":{"prompt_tokens":1,"completion_tokens":1}}',  # no final newline
    "telemetry/requests/i.jsonl": "\n".join(['{"x": 1}', "[1, 2]", "42", '"text"']) + "\n",  # no good line
}

TABLES = {
    "stg.requests": "SELECT * EXCLUDE (file_id), file_id FROM stg.requests ORDER BY file_id, line",
    "ops.quarantine": "SELECT * FROM ops.quarantine ORDER BY file_id, line",
    "ops.ingested_files": "SELECT * EXCLUDE (file_mtime_ns) FROM ops.ingested_files ORDER BY file_id",
}


def _ingest(landing, path, monkeypatch, batch_files, commit_every=1):
    monkeypatch.setattr(ingest, "BATCH_FILES", batch_files)
    b = Build(path, "t")
    b.start(Config().settings_row())
    with b.connect() as con:
        summary = ingest.Ingestor(con, landing, now=NOW, commit_every=commit_every).ingest()
        tables = {t: con.execute(q).fetchall() for t, q in TABLES.items()}
    return summary, tables


@pytest.mark.parametrize(("batch_files", "commit_every"), [(2, 1), (3, 1), (64, 1), (1, 4), (3, 2), (64, 64)])
def test_batched_parse_writes_what_one_file_at_a_time_writes(tmp_path, monkeypatch, batch_files, commit_every):
    """... and so does committing a group of files at a time (the pipeline's build: commit_every)."""
    landing = write_files(tmp_path / "landing", FILES)
    one_summary, one = _ingest(landing, tmp_path / "one.duckdb", monkeypatch, 1)
    many_summary, many = _ingest(landing, tmp_path / "many.duckdb", monkeypatch, batch_files, commit_every)
    assert many == one
    assert [(f.file, f.status, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined, f.message)
            for f in many_summary.files] == [
        (f.file, f.status, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined, f.message)
        for f in one_summary.files]
    # the folder's own story, worked out by hand from FILES
    status = {f.file.rsplit("/", 1)[1]: (f.status, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined)
              for f in many_summary.files}
    assert status["a.jsonl"] == ("loaded", 30, 30, 0, 0)
    assert status["b.jsonl"] == ("loaded", 11, 8, 0, 3)  # 5 + 3 good, 3 rejects, the blank line is not a record
    assert status["c-blank.jsonl"][0] == "unreadable"
    assert status["d-copy.jsonl"][0] == "already_ingested"
    assert status["e.jsonl.gz"] == ("loaded", 7, 7, 0, 0)
    assert status["f.jsonl"] == ("loaded", 6, 4, 2, 0)
    assert status["g.jsonl"][0] == "unreadable"
    assert status["h.jsonl"] == ("loaded", 1, 1, 0, 0)
    assert status["i.jsonl"] == ("loaded", 4, 0, 0, 4)
    # quarantine lines are each file's own line numbers
    lines = [r for r in many["ops.quarantine"] if r[1].endswith("b.jsonl")]
    assert [r[2] for r in lines] == [6, 7, 8]


def test_a_failing_batch_query_falls_back_to_one_file_at_a_time(tmp_path, monkeypatch):
    from sources import requests, requests_many

    landing = write_files(tmp_path / "landing", FILES)
    _, one = _ingest(landing, tmp_path / "one.duckdb", monkeypatch, 1)
    real, batches = requests.run_lines, []

    def failing_on_batches(table, ctx, allow_empty=False):
        if table.num_rows and max(table["line"].to_pylist()) >= 1 << 32:  # lines of a second file
            batches.append(table.num_rows)
            raise RuntimeError("simulated failure of the batch query")
        return real(table, ctx, allow_empty)

    monkeypatch.setattr(requests_many.requests, "run_lines", failing_on_batches)
    _, many = _ingest(landing, tmp_path / "many.duckdb", monkeypatch, 64)
    assert batches  # the batch was tried ...
    assert many == one  # ... and each file was parsed alone after it failed


def test_the_registry_parser_is_batched(tmp_path, monkeypatch):
    """The batch path is the one a real ingest takes: fewer request queries than request files."""
    from sources import requests, requests_many

    landing = write_files(tmp_path / "landing", {f"telemetry/requests/{k:02d}.jsonl": _calls(f"r{k}-", 3) for k in range(10)})
    real, calls = requests.run_lines, []

    def counted(table, ctx, allow_empty=False):
        calls.append(table.num_rows)
        return real(table, ctx, allow_empty)

    monkeypatch.setattr(requests_many.requests, "run_lines", counted)
    summary, tables = _ingest(landing, tmp_path / "w.duckdb", monkeypatch, 64)
    assert [f.rows_loaded for f in summary.files] == [3] * 10
    assert calls == [30]  # one query for the ten files


def _call(rid: str, prompt: int, day: int = 10) -> str:
    return CALL.format(d=day, rid=rid, p=prompt)


def test_prepared_batch_classifies_repeats_across_files_as_one_file_at_a_time_does(tmp_path, monkeypatch):
    """The rows of a batch are de-duplicated together (Ingestor._prepare) but must get the verdicts
    of file-by-file loading: a key already stored, a key first seen in an earlier file of the
    batch, a key repeated inside one file, each with equal or other values."""
    stored = {"telemetry/requests/0-stored.jsonl": "\n".join([_call("x0", 1), _call("x1", 1)]) + "\n"}
    batch = {
        # r1 twice with equal values (a duplicate), x0 as stored (duplicate), x1 with another count (conflict)
        "telemetry/requests/m1.jsonl": "\n".join([_call("r0", 1), _call("r1", 1), _call("r1", 1), _call("r2", 1),
                                                  _call("x0", 1), _call("x1", 2)]) + "\n",
        # r0 as in m1 (duplicate), r2 with another count (conflict), s0 then s0 with another count (conflict)
        "telemetry/requests/m2.jsonl": "\n".join([_call("r0", 1), _call("r2", 5), _call("s0", 1), _call("s0", 3)]) + "\n",
        "telemetry/requests/m3-copy.jsonl": "\n".join([_call("r0", 1), _call("r1", 1), _call("r1", 1), _call("r2", 1),
                                                       _call("x0", 1), _call("x1", 2)]) + "\n",  # m1's bytes
        "telemetry/requests/m4-blank.jsonl": "\n\n",  # no JSON line: unreadable, inside the batch
        # s0 as m2's first s0 (duplicate), s0 as m2's second (conflict: the stored s0 is the first), s1 new
        "telemetry/requests/m5.jsonl": "\n".join([_call("s0", 1), _call("s0", 3), _call("s1", 1)]) + "\n",
    }
    results = {}
    for batch_files in (1, 64):
        landing = write_files(tmp_path / f"landing{batch_files}", stored)
        monkeypatch.setattr(ingest, "BATCH_FILES", batch_files)
        b = Build(tmp_path / f"w{batch_files}.duckdb", "t")
        b.start(Config().settings_row())
        with b.connect() as con:
            ingest.Ingestor(con, landing, now=NOW).ingest()
            write_files(landing, batch)
            ing = ingest.Ingestor(con, landing, now=NOW)
            summary = ing.ingest()
            if batch_files == 64:
                assert ing._prepared is None  # every member was loaded from the prepared batch
            results[batch_files] = (
                [(f.file.rsplit("/", 1)[1], f.status, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined)
                 for f in summary.files if "stored" not in f.file],
                {t: con.execute(q).fetchall() for t, q in TABLES.items()})
    assert results[64] == results[1]
    files, tables = results[64]
    assert files == [  # worked out by hand from the comments above
        ("m1.jsonl", "loaded", 6, 3, 2, 1),
        ("m2.jsonl", "loaded", 4, 1, 1, 2),
        ("m3-copy.jsonl", "already_ingested", 0, 0, 0, 0),
        ("m4-blank.jsonl", "unreadable", 1, 0, 0, 1),
        ("m5.jsonl", "loaded", 3, 1, 1, 1),
    ]
    conflicts = [(r[1].rsplit("/", 1)[1], r[2]) for r in tables["ops.quarantine"] if r[4].startswith("conflicting")]
    assert sorted(conflicts) == [("m1.jsonl", 6), ("m2.jsonl", 2), ("m2.jsonl", 4), ("m5.jsonl", 2)]


def test_a_batch_that_cannot_be_prepared_loads_file_by_file(tmp_path, monkeypatch):
    """If de-duplicating a batch together fails in DuckDB, each file is loaded on its own instead."""
    import duckdb

    landing = write_files(tmp_path / "landing", FILES)
    _, one = _ingest(landing, tmp_path / "one.duckdb", monkeypatch, 1)
    tried = []

    def failing(self, *args):
        tried.append(args[0])
        raise duckdb.InvalidInputException("simulated failure of the batch classification")

    monkeypatch.setattr(ingest.Ingestor, "_classify_batch", failing)
    _, many = _ingest(landing, tmp_path / "many.duckdb", monkeypatch, 64)
    assert tried == ["stg.requests"]
    assert many == one


def test_a_duckdb_error_while_preparing_does_not_abort_the_open_group_of_files(tmp_path, monkeypatch):
    """Files are committed in groups in a build (commit_every); a batch's preparation fails inside
    DuckDB (a real error, which aborts a transaction it runs in): it is caught and the files load
    one by one, so the group before it must have been committed first, not lost."""
    files = {"prices/llm/prices.2026-06-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok\nopenai,o3,2,8\n",
             **FILES}
    landing = write_files(tmp_path / "landing", files)
    _, one = _ingest(landing, tmp_path / "one.duckdb", monkeypatch, 1)

    def failing(self, *args):
        self.con.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(ingest.Ingestor, "_classify_batch", failing)
    summary, many = _ingest(landing, tmp_path / "many.duckdb", monkeypatch, 64, commit_every=64)
    assert many == one
    assert summary.files[0].file.startswith("prices/") and summary.files[0].rows_loaded == 1


@pytest.mark.parametrize("batch_files", [1, 64])
def test_an_error_inside_a_group_rolls_the_whole_group_back(tmp_path, monkeypatch, batch_files):
    """commit_every=64: the third file's load fails; nothing of the group is left (no file
    registered, no row, no quarantine row), and the next ingest loads everything as a clean one."""
    landing = write_files(tmp_path / "landing", FILES)
    _, clean = _ingest(landing, tmp_path / "clean.duckdb", monkeypatch, 1)
    monkeypatch.setattr(ingest, "BATCH_FILES", batch_files)
    real, seen = ingest.Ingestor._record_loaded, []

    def failing_third(self, file_id, rel, *args):
        seen.append(rel)
        if len(seen) == 3:
            raise RuntimeError(f"{rel}: simulated failure")
        return real(self, file_id, rel, *args)

    b = Build(tmp_path / "w.duckdb", "t")
    b.start(Config().settings_row())
    with b.connect() as con:
        monkeypatch.setattr(ingest.Ingestor, "_record_loaded", failing_third)
        with pytest.raises(RuntimeError, match="simulated failure"):
            ingest.Ingestor(con, landing, now=NOW, commit_every=64).ingest()
        assert len(seen) == 3
        for table in ("ops.ingested_files", "stg.requests", "ops.quarantine"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
        monkeypatch.setattr(ingest.Ingestor, "_record_loaded", real)
        ingest.Ingestor(con, landing, now=NOW, commit_every=64).ingest()
        assert {t: con.execute(q).fetchall() for t, q in TABLES.items()} == clean


def test_commit_every_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="commit_every"):
        ingest.Ingestor(None, tmp_path, commit_every=0)
