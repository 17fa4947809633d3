"""Publication under load: readers never fail and never see half a build, and a killed run changes nothing.

Two reader processes open the published warehouse read-only per query (as BI tools do) and read
the marts in a loop while the warehouse is rebuilt 22 times: 20 rebuilds straight through the
warehouse API (Build.start + ingest + build_all + publish: what a run does, without Dagster's
start-up cost) and 2 real `thinktax run`s. Every mart carries the build id of the run that built
it (from ops.settings); a reader counts a *partial snapshot* when one connection sees more than one
build id across the marts, or marts whose call totals disagree with each other or with staging.
"""

from __future__ import annotations

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
from warehouse.db import Build, run_lock
from warehouse.ingest import Ingestor
from warehouse.transform import build_all
from pipelines.defs.economics_assets import ECONOMICS

REPO = Path(__file__).resolve().parents[2]
REBUILDS = 20
CALLS_PER_BATCH = 3

BASE = {
    "prices/llm/prices.2025-06-01.csv": "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok\n"
                                        "openai,o3,2,0.5,8\nanthropic,claude-x,3,0.3,15\n",
    "catalog/nodes.csv": "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
                         "n1,nebius,H100,2,qwen3-32b,fp8,2.95,2025-07-01T00:00:00Z,2025-07-02T00:00:00Z\n",
}


def batch(i: int) -> str:
    """CALLS_PER_BATCH calls on 2025-07-01: API (chat and Anthropic shapes) and self-hosted."""
    rows = []
    for k in range(CALLS_PER_BATCH):
        rid = f"b{i}-{k}"
        ts = f"2025-07-01T{(i + k) % 24:02d}:{k:02d}:00Z"
        if k % 3 == 0:
            rows.append({"ts": ts, "request_id": rid, "model": "o3", "provider": "openai", "task_id": f"t{i}",
                         "usage": {"prompt_tokens": 1000 + i, "completion_tokens": 400,
                                   "completion_tokens_details": {"reasoning_tokens": 100 * (i % 5)}}})
        elif k % 3 == 1:
            rows.append({"ts": ts, "request_id": rid, "model": "claude-x", "provider": "anthropic", "team": "ops",
                         "usage": {"input_tokens": 50, "cache_read_input_tokens": 500, "output_tokens": 300,
                                   "thinking_tokens": 200}})
        else:
            rows.append({"ts": ts, "request_id": rid, "model": "qwen3-32b", "node_id": "n1",
                         "usage": {"prompt_tokens": 200, "completion_tokens": 100}})
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def rebuild(landing: Path, wh: Path, build_id: str) -> None:
    """One run without Dagster: copy, ingest what is new, rebuild every model (SQL and Python), publish."""
    with run_lock(wh):
        b = Build(wh, build_id)
        b.start(Config().settings_row())
        with b.connect() as con:
            summary = Ingestor(con, landing).ingest()
            build_all(con)
            for e in ECONOMICS:  # the Python-built marts (forecast, outlook, ...) carry the build id too
                e.builder(con)
        b.publish(files_new=len(summary.new_files), landing=str(landing))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def subprocess_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKTAX_")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# A reader: a separate process that opens the published file read-only for every query, as a BI
# tool does, until the stop file appears. Prints its counts as JSON.
READER = r"""
import json, os, sys, time
import duckdb

path, stop = sys.argv[1], sys.argv[2]
reads = errors = partial = went_back = 0
builds, samples = [], []
last_runs = 0
while not os.path.exists(stop):
    try:
        con = duckdb.connect(path, read_only=True, config={"threads": 1})
        try:
            marts = [r[0] for r in con.execute(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = 'marts' AND column_name = 'build_id'").fetchall()]
            union = " UNION ALL ".join(f"SELECT build_id FROM marts.{m}" for m in marts)
            ids = {r[0] for r in con.execute(f"SELECT DISTINCT build_id FROM ({union})").fetchall()}
            settings_id = con.execute("SELECT build_id FROM ops.settings").fetchall()[0][0]
            totals = con.execute(
                "SELECT (SELECT coalesce(sum(calls), 0) FROM marts.task_costs), "
                "(SELECT coalesce(sum(calls), 0) FROM marts.tier_mix WHERE team = '*'), "
                "(SELECT coalesce(sum(calls), 0) FROM marts.daily_spend WHERE source <> 'api_bill' AND team <> 'idle'), "
                "(SELECT count(*) FROM stg.requests)").fetchall()[0]
            runs = con.execute("SELECT count(*) FROM ops.runs").fetchall()[0][0]
        finally:
            con.close()
        reads += 1
        if len(marts) < 5 or ids != {settings_id} or len(set(totals)) != 1:
            partial += 1
            samples.append({"marts": marts, "ids": sorted(ids), "settings": settings_id, "totals": list(totals)})
        if runs < last_runs:
            went_back += 1
        last_runs = runs
        if not builds or builds[-1] != settings_id:
            builds.append(settings_id)
    except Exception as exc:
        errors += 1
        samples.append(repr(exc)[:300])
    time.sleep(0.1)  # a dashboard refreshing, not a busy loop: each read costs ~50 ms of CPU
print(json.dumps({"reads": reads, "errors": errors, "partial": partial, "went_back": went_back,
                  "builds_seen": len(builds), "samples": samples[:5]}))
"""


@pytest.mark.slow
def test_readers_never_fail_nor_see_a_partial_snapshot_under_rebuilds(tmp_path, monkeypatch, capsys):
    from thinktax.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    landing = write(tmp_path / "landing", {**BASE, "telemetry/requests/batch-000.jsonl": batch(0)})
    wh = tmp_path / "wh" / "thinktax.duckdb"
    rebuild(landing, wh, "initial")
    stop = tmp_path / "stop"
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(wh), str(stop)], cwd=REPO,
                                env=subprocess_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    try:
        time.sleep(0.5)
        start = time.monotonic()
        n = 1
        write(landing, {f"telemetry/requests/batch-{n:03d}.jsonl": batch(n)})
        assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--quiet"]) == 0  # real run 1
        real_1 = time.monotonic() - start
        for i in range(REBUILDS):
            n += 1
            write(landing, {f"telemetry/requests/batch-{n:03d}.jsonl": batch(n)})
            rebuild(landing, wh, f"load{i:03d}")
        direct = time.monotonic() - start - real_1
        n += 1
        write(landing, {f"telemetry/requests/batch-{n:03d}.jsonl": batch(n)})
        assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--quiet"]) == 0  # real run 2
        real_2 = time.monotonic() - start - real_1 - direct
        time.sleep(0.3)
    finally:
        stop.write_text("stop")
        outs = [r.communicate(timeout=60) for r in readers]
    stats = [json.loads(out) for out, err in outs]
    total = {k: sum(s[k] for s in stats) for k in ("reads", "errors", "partial", "went_back")}
    with capsys.disabled():
        print(f"\npublication under load: {REBUILDS + 2} rebuilds, 2 readers: "
              f"reads={total['reads']} errors={total['errors']} partial_snapshots={total['partial']} "
              f"builds_seen={[s['builds_seen'] for s in stats]}; thinktax run {real_1:.1f} s and {real_2:.1f} s, "
              f"{REBUILDS} direct rebuilds {direct:.1f} s")
    assert total["errors"] == 0, [s["samples"] for s in stats]
    assert total["partial"] == 0, [s["samples"] for s in stats]
    assert total["went_back"] == 0
    assert all(s["reads"] >= 50 for s in stats), stats
    assert all(s["builds_seen"] >= 3 for s in stats), stats  # the readers really read across rebuilds
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == [((n + 1) * CALLS_PER_BATCH,)]
        assert con.sql("SELECT count(*) FROM ops.runs").fetchall() == [(REBUILDS + 3,)]
    assert not list(wh.parent.glob("*.build-*"))


KILLABLE_RUN = "import sys; from thinktax.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.slow
def test_a_run_killed_mid_way_leaves_the_published_file_and_the_next_run_completes(tmp_path, monkeypatch):
    from thinktax.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    landing = write(tmp_path / "landing", {**BASE, "telemetry/requests/batch-000.jsonl": batch(0)})
    wh = tmp_path / "wh" / "thinktax.duckdb"
    rebuild(landing, wh, "initial")
    before = sha256(wh)
    write(landing, {"telemetry/requests/batch-001.jsonl": batch(1)})
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE_RUN, "run", "--landing", str(landing),
                             "--warehouse", str(wh), "--quiet"],
                            env=subprocess_env(tmp_path), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(wh.parent.glob(f"{wh.name}.build-*")):
            assert proc.poll() is None, "the run ended before it started a build"
            assert time.monotonic() < deadline, "no build file appeared"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert sha256(wh) == before  # the published file is untouched
    with duckdb.connect(str(wh), read_only=True) as con:  # and still opens, with the old data
        assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == [(CALLS_PER_BATCH,)]
    # the next run takes the lock the dead one held (flock dies with its process), clears its
    # build file and publishes everything
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--quiet"]) == 0
    assert sha256(wh) != before
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == [(2 * CALLS_PER_BATCH,)]
        assert con.sql("SELECT sum(calls) FROM marts.task_costs").fetchall() == [(2 * CALLS_PER_BATCH,)]
    assert not list(wh.parent.glob(f"{wh.name}.build-*"))


def test_batches_are_well_formed():
    """The generated telemetry parses with no rejects (so the counts above are what they say)."""
    import datetime as dt

    from sources.base import ParseContext
    from sources.requests import parse

    parsed = parse(batch(7).encode(), "batch.jsonl", ParseContext(ingested_at=dt.datetime(2025, 8, 1)))
    assert (parsed.rows.num_rows, parsed.rejects) == (CALLS_PER_BATCH, [])
