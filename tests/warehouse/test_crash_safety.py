"""Crash safety of ingest: a process killed (SIGKILL) in the middle of a file's transaction leaves no
half-registered file, and the next run ingests it fully -- the rows then match a clean run's.

The victim process is told to pause inside the victim file's transaction, after its staging rows
and quarantine rows were inserted and just before it is registered in ops.ingested_files; the
test kills it there from outside. Two levels: the ingest engine on one DuckDB file, and a real
`thinktax run` (whose build file is thrown away; the published file must not change).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from services.config import Config
from warehouse.checks import load_checks
from warehouse.db import Build, connect, migrate
from warehouse.ingest import Ingestor
from warehouse.transform import build_all

REPO = Path(__file__).resolve().parents[2]
NOW = dt.datetime(2025, 8, 1)


def call(rid: str, prompt: int | str = 1000) -> str:
    return json.dumps({"ts": "2025-07-01T10:00:00Z", "request_id": rid, "model": "o3", "provider": "openai",
                       "usage": {"prompt_tokens": prompt, "completion_tokens": 500,
                                 "completion_tokens_details": {"reasoning_tokens": 200}}})


LANDING = {
    "prices/llm/prices.2025-06-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok\nopenai,o3,2,8\n",
    "telemetry/requests/a.jsonl": "\n".join([call("a1"), call("a2")]) + "\n",
    # b: 3 new, 1 duplicate of a1, 1 bad value -> loaded + duplicate + quarantined in one transaction
    "telemetry/requests/b.jsonl": "\n".join([call("b1"), call("b2"), call("b3"), call("a1"), call("bad", "abc")]) + "\n",
    "telemetry/requests/c.jsonl": "\n".join([call("c1"), call("c2")]) + "\n",
}


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


# Runs in the victim process: every Ingestor's connection is wrapped so that, in the victim file's
# transaction, the statement that registers the file writes the marker and waits to be killed. The
# statement is told by the victim's name among its parameters: a build's ingest registers the
# members of a prepared batch together (Ingestor._flush), possibly while the loop is at a later file.
VICTIM = r"""
import pathlib, sys, time
import warehouse.ingest as wi

marker, victim, mode, *rest = sys.argv[1:]

class Pausing:
    def __init__(self, con):
        self._con = con
    def execute(self, sql, *args):
        if sql.startswith("INSERT INTO ops.ingested_files") and victim in (args[0] if args else ()):
            pathlib.Path(marker).write_text("inside the transaction of " + victim)
            time.sleep(600)
        return self._con.execute(sql, *args)
    def __getattr__(self, name):
        return getattr(self._con, name)

init = wi.Ingestor.__init__
def __init__(self, con, *a, **k):
    init(self, Pausing(con), *a, **k)
wi.Ingestor.__init__ = __init__

if mode == "db":
    import datetime as dt
    from warehouse.db import connect, migrate
    db, landing = rest
    con = connect(db)
    migrate(con)
    wi.Ingestor(con, pathlib.Path(landing), now=dt.datetime(2025, 8, 1)).ingest()
else:
    from thinktax.cli import main
    sys.exit(main(rest))
"""


def kill_inside_transaction(tmp_path: Path, victim: str, mode: str, *args: str) -> None:
    marker = tmp_path / f"marker-{mode}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKTAX_")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-c", VICTIM, str(marker), victim, mode, *args], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if proc.poll() is not None:
                raise AssertionError(f"the victim ended before the transaction: {proc.stderr.read().decode()[-2000:]}")
            assert time.monotonic() < deadline, "the victim never reached the transaction"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def snapshot(con) -> dict[str, list]:
    """What ingest wrote, in a comparable form."""
    return {
        "files": con.sql("SELECT file_id, file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined "
                         "FROM ops.ingested_files ORDER BY file_id").fetchall(),
        "quarantine": con.sql("SELECT file_id, file, line, field, reason FROM ops.quarantine ORDER BY ALL").fetchall(),
        "requests": con.sql("SELECT * FROM stg.requests ORDER BY ALL").fetchall(),
        "prices": con.sql("SELECT * FROM stg.llm_prices ORDER BY ALL").fetchall(),
    }


def no_half_registered_file(con) -> None:
    for table in ("stg.requests", "stg.llm_prices", "ops.quarantine"):
        orphans = con.sql(f"SELECT count(*) FROM {table} WHERE file_id NOT IN (SELECT file_id FROM ops.ingested_files)")
        assert orphans.fetchall() == [(0,)], table
    accounting = next(c for c in load_checks() if c.name == "ingest_accounting")
    assert accounting.run(con)[0] == 0


def clean_ingest(landing: Path, db: Path) -> dict[str, list]:
    con = connect(db)
    migrate(con)
    Ingestor(con, landing, now=NOW).ingest()
    out = snapshot(con)
    con.close()
    return out


@pytest.mark.parametrize("victim", ["telemetry/requests/b.jsonl", "telemetry/requests/broken.jsonl.gz"])
def test_killed_inside_a_file_transaction_the_file_is_absent_then_ingested_fully(tmp_path, victim):
    files = {**LANDING, "telemetry/requests/broken.jsonl.gz": gzip.compress(call("x").encode(), mtime=0)[:20]}
    landing = write(tmp_path / "landing", files)
    db = tmp_path / "crash.duckdb"
    kill_inside_transaction(tmp_path, victim, "db", str(db), str(landing))

    con = connect(db)  # reopening replays the committed part of the WAL
    registered = [r[0] for r in con.sql("SELECT file FROM ops.ingested_files ORDER BY file_id").fetchall()]
    everything = sorted(files)
    assert registered == everything[: everything.index(victim)]  # the files before it, not the victim
    no_half_registered_file(con)
    Ingestor(con, landing, now=NOW).ingest()  # the next run
    after = snapshot(con)
    con.close()
    no_half_registered_file(connect(db))
    assert after == clean_ingest(landing, tmp_path / "clean.duckdb")
    # b: 3 loaded + 1 duplicate + 1 quarantined; a 2 and c 2 loaded -> 7 calls
    assert len(after["requests"]) == 7


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_real_run_killed_during_ingest_publishes_nothing_and_the_next_run_ingests_fully(tmp_path, monkeypatch):
    from thinktax.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    first = {k: v for k, v in LANDING.items() if not k.endswith(("b.jsonl", "c.jsonl"))}
    landing = write(tmp_path / "landing", first)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    b = Build(wh, "first")
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, landing).ingest()
        build_all(con)
    b.publish(files_new=2, landing=str(landing))
    before = sha256(wh)

    write(landing, LANDING)  # b and c arrive
    kill_inside_transaction(tmp_path, "telemetry/requests/b.jsonl", "run",
                            "run", "--landing", str(landing), "--warehouse", str(wh), "--quiet")
    assert sha256(wh) == before
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--quiet"]) == 0

    with duckdb.connect(str(wh), read_only=True) as con:
        got = snapshot(con)
        task_calls = con.sql("SELECT sum(calls) FROM marts.task_costs").fetchall()
    want = clean_ingest(landing, tmp_path / "clean.duckdb")
    # same rows as a clean ingest of the whole folder (a was ingested by the first run, at another time)
    assert got["requests"] == want["requests"]
    assert got["quarantine"] == want["quarantine"]
    assert [f[1:] for f in got["files"]] == [f[1:] for f in want["files"]]
    assert task_calls == [(7,)]
    assert not list(wh.parent.glob(f"{wh.name}.build-*"))


def test_publish_refuses_a_build_still_open_in_this_process_and_leaves_the_published_file(tmp_path):
    """A connection left open on the build would, after the rename, checkpoint into the file readers
    hold (issue: a reader of the published file saw 'No more data remaining in MetadataReader' once
    in CI). Publishing refuses while one is open, naming the file, and publishes once it is dropped."""
    from warehouse.db import StillOpen

    wh = tmp_path / "thinktax.duckdb"
    first = Build(wh, "one")
    first.start(Config().settings_row())
    first.publish(files_new=0, landing="x")
    before = hashlib.sha256(wh.read_bytes()).hexdigest()

    second = Build(wh, "two")
    second.start(Config().settings_row())
    forgotten = second.connect()  # never closed
    forgotten.execute("CREATE TABLE ops.left_open AS SELECT 1 AS x")
    with pytest.raises(StillOpen, match=r"thinktax\.duckdb\.build-two"):
        second.publish(files_new=0, landing="x")
    assert hashlib.sha256(wh.read_bytes()).hexdigest() == before  # the published file untouched
    forgotten.close()

    third = Build(wh, "three")
    third.start(Config().settings_row())
    con = third.connect()
    con.execute("CREATE TABLE ops.garbage AS SELECT 1 AS x")
    del con  # dropped without close(): its database goes with it, so the build publishes
    third.publish(files_new=0, landing="x")
    with duckdb.connect(str(wh), read_only=True) as ro:
        assert ro.execute("SELECT build_id FROM ops.settings").fetchall() == [("three",)]
        assert ro.execute("SELECT count(*) FROM ops.garbage").fetchall() == [(1,)]
