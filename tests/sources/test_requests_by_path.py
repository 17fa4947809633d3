"""Large request files read by path (``sources.requests.read_by_path``, DuckDB's ``read_json``) give
exactly what the line path (``sources.requests.parse``) gives, or hand the file back to it.

The claim is checked on every request file the repository holds: the bad-input corpus
(tests/corpus/), the provider payloads of tests/fixtures/real/payloads landed as request lines, and
a generated demo landing (with its Bedrock / Vertex AI / Azure traffic). For each file, either the
fast path takes it and its rows are the line path's rows, column for column, or it declines it,
and then the line path finds a reason the fast path cannot reproduce (a reject, a blank line, a
byte-order mark, an error). Nothing else may make it decline: a file the line path loads whole is
taken. Then the whole ingest of every request corpus case, with every file forced through the fast
path route, leaves staging, quarantine and the file accounting identical to the batched line path.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from pathlib import Path

import duckdb
import pytest

from sources import requests
from sources.base import InTable, ParseContext, SourceFormatError
from synthetic.demo import DemoSpec, write_landing
from tests.sources.test_real_payloads import MANIFEST, landing_line
from warehouse import ingest as ingest_mod
from warehouse.db import migrate
from warehouse.ingest import Ingestor

TESTS = Path(__file__).resolve().parents[1]
CORPUS = TESTS / "corpus"
NOW = dt.datetime(2025, 8, 1)  # the corpus' "today" (tests/warehouse/test_corpus.py)
CORPUS_FILES = sorted(p for p in CORPUS.glob("req_*/telemetry/requests/**/*") if p.is_file())
NO_ROUTE = {"req_empty_file", "req_not_utf8", "req_anthropic_batch_results", "req_openai_batch_output"}
CORPUS_FILES += sorted(p for p in CORPUS.glob("accounting_*/telemetry/requests/**/*") if p.is_file())


def _decoded(path: Path) -> bytes | None:
    raw = path.read_bytes()
    try:
        data = gzip.decompress(raw) if path.name.endswith(".gz") else raw
        data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError):
        return None  # the ingest rejects the file before any parser sees it
    return data


def _blank_lines(data: bytes) -> bool:
    return any(not line.strip(b" \t\r") for line in data.split(b"\n")[:-1 if data.endswith(b"\n") else None])


def _compare(path: Path, ctx: ParseContext) -> str:
    """'fast' when the fast path took the file (and its rows are asserted equal to the line path's),
    else the reason the line path gives for declining."""
    data = _decoded(path)
    assert data is not None
    fast = requests.read_by_path(path, data, ctx)
    try:
        slow = requests.parse(data, path.name, ctx)
    except SourceFormatError as exc:
        assert fast is None, f"{path}: the line path stops ({exc}), the fast path must decline"
        return "error"
    if fast is not None:
        assert slow.rejects == [], f"{path}: fast path took a file with rejects"
        assert fast.rows.schema == slow.rows.schema
        assert fast.rows.equals(slow.rows), f"{path}: rows differ"
        assert fast.format == slow.format and fast.table == slow.table
        return "fast"
    if slow.rejects:
        return "rejects"
    if data.startswith(b"\xef\xbb\xbf"):
        return "bom"
    if _blank_lines(data):
        return "blank lines"
    if path.name.startswith("vertex_imagen__") and slow.rows.num_rows:
        return "media_units"  # see test_demo_request_files_by_path_are_the_line_path
    pytest.fail(f"{path}: the fast path declined a file the line path loads whole")


@pytest.fixture(scope="module")
def corpus_outcomes() -> dict[str, str]:
    """Every request file of the corpus through both paths once (``_compare`` asserts on each)."""
    ctx = ParseContext(ingested_at=NOW.replace(tzinfo=dt.timezone.utc))
    return {str(p.relative_to(CORPUS)): _compare(p, ctx) for p in CORPUS_FILES if _decoded(p) is not None}


def test_every_corpus_file_by_path_is_the_line_path_or_declined_for_a_reason(corpus_outcomes):
    # two files never reach a parser (corrupt gzip, Latin-1): the ingest refuses them first
    assert len(corpus_outcomes) == len(CORPUS_FILES) - 2
    assert set(corpus_outcomes.values()) <= {"fast", "rejects", "bom", "blank lines", "error"}


def test_the_corpus_exercises_both_outcomes(corpus_outcomes):
    outcomes = corpus_outcomes
    # worked from the corpus README: which cases hold a bad line, which are clean
    assert outcomes["req_three_usage_shapes/telemetry/requests/calls.jsonl"] == "fast"
    assert outcomes["req_naive_vs_utc_timestamps/telemetry/requests/calls.jsonl"] == "fast"
    assert outcomes["req_gzip_good_and_corrupt/telemetry/requests/good.jsonl.gz"] == "fast"
    assert outcomes["req_bad_numbers/telemetry/requests/calls.jsonl"] == "rejects"
    assert outcomes["req_truncated_last_line/telemetry/requests/calls.jsonl"] == "rejects"
    assert outcomes["req_bom_crlf_blank_lines/telemetry/requests/calls.jsonl"] in ("bom", "blank lines")
    assert outcomes["req_empty_file/telemetry/requests/empty.jsonl"] == "error"


def test_real_payloads_by_path_are_the_line_path(tmp_path: Path):
    path = tmp_path / "payloads.jsonl"
    path.write_text("".join(json.dumps(landing_line(p)) + "\n" for p in MANIFEST))
    assert _compare(path, ParseContext(ingested_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))) == "fast"
    # CRLF line ends: the same rows again
    crlf = tmp_path / "payloads_crlf.jsonl"
    crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert _compare(crlf, ParseContext(ingested_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))) == "fast"


def test_unusual_but_valid_values_read_the_same_by_path(tmp_path: Path):
    """Values the line path accepts in a form of their own (a whole number written 12.0 or as text
    with spaces, epoch timestamps in seconds and milliseconds, an offset, numbers as text, tiers in
    capitals, a JSON false) in a file with no reject: the fast path must take it and agree."""
    base = {"model": "o3", "provider": "openai"}
    lines = [
        {**base, "ts": "2025-07-01T00:00:00+02:00", "request_id": "u1",
         "usage": {"prompt_tokens": 12.0, "completion_tokens": "7", "completion_tokens_details": {"reasoning_tokens": " 5 "}}},
        {**base, "ts": 1751328000, "request_id": "u2", "latency_ms": "12.5", "ttft_ms": 3,
         "usage": {"prompt_tokens": "100", "completion_tokens": 40.0, "prompt_tokens_details": {"cached_tokens": 20}}},
        {**base, "ts": 1751328000123, "request_id": "u3", "service_tier": "DEFAULT", "batch": False,
         "usage": {"input_tokens": 9, "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0}}},
        {"ts": "2025-07-01 08:00:00", "request_id": "u4", "model": "claude-sonnet-4-5", "provider": "Anthropic",
         "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 30,
                   "cache_creation": {"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20},
                   "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 20}, "service_tier": "priority"}},
        {"ts": "2025-07-01T09:00:00Z", "responseId": "u5", "modelVersion": "gemini-2.5-pro", "provider": "vertex_ai",
         "usageMetadata": {"promptTokenCount": 30, "cachedContentTokenCount": 10, "candidatesTokenCount": 5,
                           "thoughtsTokenCount": 7, "trafficType": "ON_DEMAND"}},
    ]
    path = tmp_path / "unusual.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert _compare(path, ParseContext(ingested_at=NOW.replace(tzinfo=dt.timezone.utc))) == "fast"
    rows = requests.read_by_path(path, path.read_bytes(), ParseContext(ingested_at=NOW.replace(tzinfo=dt.timezone.utc)))
    got = {r["request_id"]: r for r in rows.rows.to_pylist()}
    # worked by hand from the shapes (sources/requests.py): chat 12 prompt, 7 completion of which 5 thinking
    assert (got["u1"]["uncached_input_tokens"], got["u1"]["thinking_tokens"], got["u1"]["output_tokens"]) == (12, 5, 2)
    assert got["u1"]["ts"] == dt.datetime(2025, 6, 30, 22, 0)  # +02:00 read as UTC
    assert got["u2"]["ts"] == dt.datetime(2025, 7, 1, 0, 0) and got["u3"]["ts"] == dt.datetime(2025, 7, 1, 0, 0, 0, 123000)
    assert (got["u2"]["uncached_input_tokens"], got["u2"]["cached_input_tokens"], got["u2"]["latency_ms"]) == (80, 20, 12.5)
    assert got["u3"]["service_tier"] is None and got["u3"]["is_batch"] is None  # standard, not batch
    assert (got["u4"]["cache_write_tokens"], got["u4"]["cache_write_1h_tokens"], got["u4"]["thinking_tokens"],
            got["u4"]["output_tokens"], got["u4"]["service_tier"]) == (30, 20, 20, 30, "priority")
    assert (got["u5"]["uncached_input_tokens"], got["u5"]["cached_input_tokens"], got["u5"]["thinking_tokens"],
            got["u5"]["output_tokens"]) == (20, 10, 7, 5)


def test_demo_request_files_by_path_are_the_line_path(tmp_path: Path):
    write_landing(tmp_path / "landing", DemoSpec(days=3, tasks_per_day=150, seed=11))
    files = sorted((tmp_path / "landing" / "telemetry" / "requests").rglob("*.jsonl*"))
    assert len(files) >= 3
    ctx = ParseContext(ingested_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    outcomes = {p.name: _compare(p, ctx) for p in files}
    # the demo lands one file of deliberately bad lines (synthetic/demo.py): the line path's rejects
    assert outcomes.pop("openai_chat__late-fixups.jsonl") == "rejects"
    # issue 44's Imagen predict responses (usage shape media_units: images counted from predictions[])
    # are not read by the fast path's typed read_json (its type has no predictions list): it declines
    # them and the line path loads them whole (_compare checks the line path's rows; known, to be read)
    imagen = {name for name in outcomes if name.startswith("vertex_imagen__")}
    assert len(imagen) == 3
    for name in imagen:
        outcomes.pop(name)
    assert set(outcomes.values()) == {"fast"}


def test_a_file_changed_since_it_was_read_is_left_to_the_line_path(tmp_path: Path):
    path = tmp_path / "calls.jsonl"
    line = {"ts": "2026-07-01T00:00:00Z", "request_id": "r1", "model": "o3", "provider": "openai",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    path.write_text(json.dumps(line) + "\n")
    data, stat = path.read_bytes(), path.stat()
    ctx = ParseContext(ingested_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert requests.read_by_path(path, data, ctx, stat) is not None
    path.write_text(json.dumps({**line, "request_id": "r2"}) + "\n" + json.dumps(line) + "\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert requests.read_by_path(path, data, ctx, stat) is None


def _ingest(landing: Path, db: Path, by_path_bytes: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    monkeypatch.setattr(ingest_mod, "BY_PATH_BYTES", by_path_bytes)
    con = duckdb.connect(str(db))
    migrate(con)
    Ingestor(con, landing, now=NOW).ingest()
    out = {
        "stg.requests": con.sql("SELECT * EXCLUDE (file_id) , (SELECT file FROM ops.ingested_files f WHERE f.file_id = r.file_id) "
                                "FROM stg.requests r ORDER BY ALL").fetchall(),
        "ops.quarantine": con.sql("SELECT f.file, q.line, q.field, q.reason, q.raw FROM ops.quarantine q "
                                  "JOIN ops.ingested_files f USING (file_id) ORDER BY ALL").fetchall(),
        "ops.ingested_files": con.sql("SELECT file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined, rows_skipped "
                                      "FROM ops.ingested_files ORDER BY file").fetchall(),
    }
    con.close()
    return out


@pytest.mark.slow  # three ingests per corpus case, ~60 s in all: `make test`, not `make check`
@pytest.mark.parametrize("case", sorted({p.relative_to(CORPUS).parts[0] for p in CORPUS_FILES}))
def test_ingest_by_path_equals_the_batched_line_path(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Both routes of the fast path: the query run in the warehouse connection straight into the
    ingest's temp table while the file is hashed (``Ingestor._ingest_in_place``, the default), and ``read_by_path``'s Arrow
    table from a private connection (a format without an in-place query)."""
    landing = CORPUS / case
    batched = _ingest(landing, tmp_path / "batched.duckdb", 1 << 62, monkeypatch)
    tried: list[str] = []  # files whose in-place query ran
    taken: dict[str, set[str]] = {"in_place": set(), "arrow": set()}  # files whose rows each route took
    real_query, real_load, real = Ingestor._query_in_place, Ingestor._load, requests.read_by_path

    def query(self, spec, path):
        tried.append(path.name)
        return real_query(self, spec, path)

    def load(self, rel, *a):
        if isinstance(a[-1].rows, InTable):
            taken["in_place"].add(Path(rel).name)
        return real_load(self, rel, *a)

    def counted(path, *a, **k):
        out = real(path, *a, **k)
        if out is not None:
            taken["arrow"].add(path.name)
        return out

    monkeypatch.setattr(Ingestor, "_query_in_place", query)
    monkeypatch.setattr(Ingestor, "_load", load)
    monkeypatch.setattr("sources.requests_many.BY_PATH", {requests.parse: counted})
    in_place = _ingest(landing, tmp_path / "in_place.duckdb", 0, monkeypatch)
    assert in_place == batched
    monkeypatch.setattr("sources.requests_many.IN_PLACE", {})
    arrow = _ingest(landing, tmp_path / "arrow.duckdb", 0, monkeypatch)
    assert arrow == batched
    # files that never reach the request parser: an empty file and a Latin-1 one are refused first,
    # batch result files have their own parser (sources/requests_batch.py)
    # (the in-place query of a plain file runs while the file is read and checked, so it starts for
    # the Latin-1 one too; its rows are dropped and the file is unreadable, as on the other routes)
    assert bool(tried) == (case not in NO_ROUTE - {"req_not_utf8"}), tried
    assert not (case in NO_ROUTE and taken["in_place"]), taken
    # each route takes exactly the files the other takes
    assert taken["in_place"] == taken["arrow"], taken
