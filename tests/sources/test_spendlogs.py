"""LiteLLM proxy spend logs from a real PostgreSQL server: `thinktax fetch-spendlogs`, the
landing files it writes, their ingest (sources/litellm_spendlogs.py) and marts.cost_crosscheck.

The server is PostgreSQL 16 from the `pgserver` wheel (installed by `make test` from the lock),
started by this module in a temporary folder; the table is created from LiteLLM's own
schema.prisma definition (tests/fixtures/litellm/LiteLLM_SpendLogs.sql). No mock of the database.

Hand-worked calls (prices/llm sheet below, USD per 1M tokens):
* a1 o3 (openai) 2026-06-30 10:00, usage_object: prompt 8,000 of which 2,000 cached, completion
  15,500 of which 15,000 reasoning -> 6,000 x 2.50 + 2,000 x 0.625 + 15,000 x 12 + 500 x 12
  = 0.015 + 0.00125 + 0.18 + 0.006 = 0.20225. LiteLLM's spend: 0.20225 (agrees).
* a4 2026-06-30 10:15: status 'failure' -> quarantined, never costed.
* a2 claude-x (anthropic) 10:30, usage_object in LiteLLM's form: prompt_tokens 7,000 = 1,000
  input + 4,000 cache reads + 2,000 cache writes (LiteLLM adds both to the prompt), completion
  3,000 of which 2,500 reasoning -> 1,000 x 3 + 4,000 x 0.30 + 2,000 x 3.75 + 2,500 x 15 + 500 x 15
  = 0.003 + 0.0012 + 0.0075 + 0.0375 + 0.0075 = 0.0567. LiteLLM's spend: 0.06 (5.8% more: differs).
* a3 o3 11:00, no usage_object: the row's prompt_tokens 1,000 / completion_tokens 100 ->
  1,000 x 2.50 + 100 x 12 = 0.0025 + 0.0012 = 0.0037. spend 0.0037 (agrees).
Day 2026-06-30, o3: thinktax 0.20225 + 0.0037 = 0.20595 = reported; claude-x: 0.0567 vs 0.06,
difference +0.0033, 1 differing call.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from tests.conftest import build_warehouse, write_files
from thinktax.commands import fetch_spendlogs as fs

DDL = Path(__file__).resolve().parents[1] / "fixtures" / "litellm" / "LiteLLM_SpendLogs.sql"
PASSWORD = "s3cret-Pw-7781"  # must never appear in output, landing files or the warehouse

PRICES = {
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2.50,0.625,,12,USD\n"
        "anthropic,claude-x,3,0.30,3.75,15,USD\n"
    ),
}


def row(request_id, start, model, provider, spend, prompt, completion, usage=None, status="success",
        team_id=None, alias=None, session_id=None, tags=()):
    metadata = {}
    if usage is not None:
        metadata["usage_object"] = usage
    if alias is not None:
        metadata["user_api_key_team_alias"] = alias
    return {
        "request_id": request_id, "call_type": "acompletion", "api_key": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",
        "spend": spend, "total_tokens": prompt + completion, "prompt_tokens": prompt, "completion_tokens": completion,
        "startTime": start, "endTime": start + dt.timedelta(seconds=3), "model": model, "custom_llm_provider": provider,
        "metadata": json.dumps(metadata), "request_tags": json.dumps(list(tags)), "team_id": team_id,
        "session_id": session_id, "status": status, "messages": json.dumps({"secret": "prompt text"}),
    }


T0 = dt.datetime(2026, 6, 30, 10, 0)
FIRST = [
    row("a1", T0, "o3", "openai", 0.20225, 8000, 15500,
        usage={"prompt_tokens": 8000, "completion_tokens": 15500, "total_tokens": 23500,
               "prompt_tokens_details": {"cached_tokens": 2000}, "completion_tokens_details": {"reasoning_tokens": 15000}},
        team_id="9f1c-uuid", alias="search", session_id="task-1", tags=("qa", "beta")),
    row("a4", T0 + dt.timedelta(minutes=15), "o3", "openai", 0.0, 0, 0, status="failure"),
    row("a2", T0 + dt.timedelta(minutes=30), "claude-x", "anthropic", 0.06, 7000, 3000,
        usage={"prompt_tokens": 7000, "completion_tokens": 3000, "total_tokens": 10000,
               "prompt_tokens_details": {"cached_tokens": 4000}, "cache_read_input_tokens": 4000,
               "cache_creation_input_tokens": 2000, "completion_tokens_details": {"reasoning_tokens": 2500}},
        team_id="ops-uuid", session_id="task-1", tags=("review",)),
    row("a3", T0 + dt.timedelta(hours=1), "o3", "openai", 0.0037, 1000, 100, team_id="ops-uuid"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import pgserver

    srv = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    try:
        srv.psql("CREATE DATABASE litellm;")
        host = parse_qs(urlparse(srv.get_uri()).query)["host"][0]
        yield f"postgresql://postgres:{PASSWORD}@/litellm?host={host}"
    finally:
        srv.cleanup()


@pytest.fixture
def dsn(server):
    with psycopg.connect(server, autocommit=True) as c:
        c.execute('DROP TABLE IF EXISTS "LiteLLM_SpendLogs"')
        c.execute(DDL.read_text())
    return server


def insert(dsn: str, rows: list[dict]) -> None:
    with psycopg.connect(dsn) as c:
        for r in rows:
            cols = ", ".join(f'"{k}"' for k in r)
            c.execute(f'INSERT INTO "LiteLLM_SpendLogs" ({cols}) VALUES ({", ".join(["%s"] * len(r))})', list(r.values()))


def landed(landing: Path) -> list[Path]:
    return sorted((landing / fs.FOLDER).iterdir())


def test_fetch_ingest_and_crosscheck_end_to_end(tmp_path, dsn, capsys):
    insert(dsn, FIRST)
    landing = write_files(tmp_path / "landing", PRICES)
    assert fs.run(_args(dsn, landing, since="2026-06-01", batch_rows=2)) == 0  # 2 rows a round trip
    out = capsys.readouterr()
    assert "4 spend log rows" in out.out and PASSWORD not in out.out + out.err
    files = landed(landing)
    assert [p.name for p in files if not p.name.startswith(".")] == [
        "spendlogs.20260630T100000000000--20260630T110000000000.4.jsonl"]
    lines = [json.loads(x) for x in files[-1].read_text().splitlines()]
    assert [r["request_id"] for r in lines] == ["a1", "a4", "a2", "a3"]  # startTime order
    assert "api_key" not in lines[0] and "messages" not in lines[0]  # only the call's facts are copied
    assert lines[0]["metadata"]["usage_object"]["prompt_tokens"] == 8000

    con, summary = build_warehouse(landing, tmp_path / "w.duckdb")
    (f,) = [r for r in summary.files if r.format == "litellm_spendlogs"]
    assert (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) == (4, 3, 0, 1)
    assert con.execute("SELECT field, reason FROM ops.quarantine WHERE file_id = (SELECT file_id FROM ops.ingested_files "
                       "WHERE format = 'litellm_spendlogs')").fetchall() == [
        ("status", "failed call (status failure): LiteLLM logged no usage, nothing is billed")]
    calls = {r[0]: r[1:] for r in con.execute(
        "SELECT request_id, task_id, task_type, team, provider, uncached_input_tokens, cached_input_tokens, "
        "cache_write_tokens, thinking_tokens, output_tokens FROM stg.requests").fetchall()}
    assert calls == {
        "a1": ("task-1", "qa", "search", "openai", 6000, 2000, 0, 15000, 500),  # alias wins over team_id
        "a2": ("task-1", "review", "ops-uuid", "anthropic", 1000, 4000, 2000, 2500, 500),
        "a3": ("a3", None, "ops-uuid", "openai", 1000, 0, 0, 0, 100),  # no session: the request is the task
    }
    costs = dict(con.execute("SELECT request_id, cost_usd FROM core.call_costs").fetchall())
    assert costs == {"a1": D("0.20225"), "a2": D("0.0567"), "a3": D("0.0037")}
    assert dict(con.execute("SELECT request_id, reported_cost_usd FROM stg.reported_costs").fetchall()) == {
        "a1": D("0.20225"), "a2": D("0.06"), "a3": D("0.0037")}
    got = con.execute("SELECT day, reporter, provider, model, calls, thinktax_cost_usd, reported_cost_usd, difference_usd, "
                      "differing_calls, unpriced_calls FROM marts.cost_crosscheck ORDER BY model").fetchall()
    assert got == [
        (dt.date(2026, 6, 30), "litellm", "anthropic", "claude-x", 1, D("0.0567"), D("0.06"), D("0.0033"), 1, 0),
        (dt.date(2026, 6, 30), "litellm", "openai", "o3", 2, D("0.20595"), D("0.20595"), D("0"), 0, 0),
    ]
    con.close()
    # the password is nowhere: landing files (cursor included) and the warehouse file
    for p in (landing / fs.FOLDER).iterdir():
        assert PASSWORD.encode() not in p.read_bytes(), p
    db_files = [p for p in tmp_path.iterdir() if p.name.startswith("w.duckdb")]  # the build file (and its WAL)
    assert db_files and all(PASSWORD.encode() not in p.read_bytes() for p in db_files)
    host = parse_qs(urlparse(dsn).query)["host"][0]  # a Unix socket folder
    assert json.loads((landing / fs.FOLDER / fs.CURSOR).read_text())["source"] == f"postgres@{host}:5432/litellm"


def test_the_same_calls_cost_the_same_as_per_request_jsonl(tmp_path, dsn):
    """a1 and a2 written as telemetry/requests JSONL (OpenAI chat and Anthropic shapes) cost what
    they cost through the spend logs."""
    insert(dsn, FIRST)
    landing = write_files(tmp_path / "sl", PRICES)
    fs.fetch(dsn, landing)
    con, _ = build_warehouse(landing, tmp_path / "a.duckdb")
    via_spendlogs = dict(con.execute("SELECT request_id, cost_usd FROM core.call_costs WHERE request_id IN ('a1', 'a2')").fetchall())
    jsonl = write_files(tmp_path / "jl", {**PRICES, "telemetry/requests/calls.jsonl": "\n".join([
        '{"ts":"2026-06-30T10:00:00Z","request_id":"a1","model":"o3","provider":"openai",'
        '"usage":{"prompt_tokens":8000,"completion_tokens":15500,"prompt_tokens_details":{"cached_tokens":2000},"completion_tokens_details":{"reasoning_tokens":15000}}}',
        '{"ts":"2026-06-30T10:30:00Z","request_id":"a2","model":"claude-x","provider":"anthropic",'
        '"usage":{"input_tokens":1000,"cache_read_input_tokens":4000,"cache_creation_input_tokens":2000,"output_tokens":3000,"thinking_tokens":2500}}',
    ]) + "\n"})
    con2, _ = build_warehouse(jsonl, tmp_path / "b.duckdb")
    via_jsonl = dict(con2.execute("SELECT request_id, cost_usd FROM core.call_costs").fetchall())
    assert via_spendlogs == via_jsonl == {"a1": D("0.20225"), "a2": D("0.0567")}


def test_pagination_across_runs_reads_only_new_rows(tmp_path, dsn):
    insert(dsn, FIRST)
    landing = write_files(tmp_path / "landing", PRICES)
    p1, n1 = fs.fetch(dsn, landing, since=dt.date(2026, 6, 1), batch_rows=3)
    assert n1 == 4
    # a5 starts at the same instant as a3 (the cursor): the (startTime, request_id) key still
    # orders it after a3; a6 is the next day
    insert(dsn, [row("a5", T0 + dt.timedelta(hours=1), "o3", "openai", 0.0025, 1000, 0),
                 row("a6", T0 + dt.timedelta(days=1), "o3", "openai", 0.0025, 1000, 0)])
    p2, n2 = fs.fetch(dsn, landing, batch_rows=3)  # 15-minute overlap: a3 (11:00) is read again
    assert [json.loads(x)["request_id"] for x in p2.read_text().splitlines()] == ["a3", "a5", "a6"] and n2 == 3
    assert fs.fetch(dsn, landing, overlap_minutes=0) == (None, 0)  # nothing after the cursor
    con, summary = build_warehouse(landing, tmp_path / "w.duckdb")
    by_file = {r.file.rsplit("/", 1)[-1]: (r.rows_in, r.rows_loaded, r.rows_duplicate, r.rows_quarantined)
               for r in summary.files if r.format == "litellm_spendlogs"}
    assert by_file == {p1.name: (4, 3, 0, 1), p2.name: (3, 2, 1, 0)}  # a3 again: a duplicate, not a second call
    assert con.execute("SELECT count(*), count(DISTINCT request_id) FROM stg.reported_costs").fetchall() == [(5, 5)]
    assert con.execute("SELECT count(*) FROM stg.requests").fetchall() == [(5,)]


def test_a_dropped_connection_lands_nothing_and_keeps_the_cursor(tmp_path, dsn, capsys, monkeypatch):
    insert(dsn, FIRST)
    landing = write_files(tmp_path / "landing", PRICES)
    fs.fetch(dsn, landing, since=dt.date(2026, 6, 1))
    cursor_before = (landing / fs.FOLDER / fs.CURSOR).read_text()
    files_before = landed(landing)
    insert(dsn, [row(f"b{i}", T0 + dt.timedelta(days=1, minutes=i), "o3", "openai", 0.0025, 1000, 0) for i in range(6)])

    def kill_after_first_batch(n: int, conn) -> None:
        if n == 1:  # the server ends the reading session, as a restart or failover would
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                              [fs.APP_NAME])

    with pytest.raises(psycopg.OperationalError):
        fs.fetch(dsn, landing, batch_rows=1, after_batch=kill_after_first_batch)
    assert landed(landing) == files_before  # no partial file, no temporary file left
    assert (landing / fs.FOLDER / fs.CURSOR).read_text() == cursor_before
    # through the CLI the failure is a message naming the server, never the password
    monkey_fetch = fs.fetch

    def failing(dsn_, landing_, since, overlap_minutes, batch_rows):
        return monkey_fetch(dsn_, landing_, since, overlap_minutes, 1, after_batch=kill_after_first_batch)

    with monkeypatch.context() as m:
        m.setattr(fs, "fetch", failing)
        assert fs.run(_args(dsn, landing)) == 1
    err = capsys.readouterr().err
    host = parse_qs(urlparse(dsn).query)["host"][0]
    assert f"postgres@{host}:5432/litellm" in err and "nothing landed" in err and PASSWORD not in err
    # the next run reads everything the failed one did not land
    path, n = fs.fetch(dsn, landing)
    assert n == 7 and [json.loads(x)["request_id"] for x in path.read_text().splitlines()] == ["a3"] + [f"b{i}" for i in range(6)]


def test_a_wrong_database_is_reported_without_the_password(tmp_path, server, capsys):
    bad = server.replace("/litellm?", "/no_such_db?")
    assert fs.run(_args(bad, tmp_path / "landing")) == 1
    err = capsys.readouterr().err
    assert "no_such_db" in err and PASSWORD not in err
    assert not list((tmp_path / "landing" / fs.FOLDER).glob("*.jsonl"))


def test_the_fetch_reads_in_one_read_only_transaction(tmp_path, dsn):
    insert(dsn, FIRST)
    seen = []

    def check(n: int, conn) -> None:
        seen.append(conn.execute("SHOW transaction_read_only").fetchall()[0][0])
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # a write in it is refused
            with conn.transaction():
                conn.execute('DELETE FROM "LiteLLM_SpendLogs"')

    fs.fetch(dsn, tmp_path / "landing", batch_rows=2, after_batch=check)
    assert seen == ["on", "on"]


def _args(dsn, landing, since=None, batch_rows=5000, overlap=15):
    import argparse

    return argparse.Namespace(dsn=dsn, landing=str(landing), since=dt.date.fromisoformat(since) if since else None,
                              overlap_minutes=overlap, batch_rows=batch_rows)
