"""`thinktax run` as a process always returns, with its documented exit code, and leaves no process
behind (issue 47): the Great Expectations worker process is ON here, as a user runs it (the rest
of the suite turns it off, tests/conftest.py).

The hang this guards against: a run whose new files add no rows (all duplicates, all conflicting,
or unreadable) started the GX worker at its first new file and never sent it anything; the fast
exit (thinktax/cli.py ``entry``) then ran multiprocessing's exit handler, which closed the pool's
queue before the pool had told its process to end, and joined that process forever.

Each case runs the console script's function (``thinktax.cli.entry``) in a fresh interpreter with
a timeout, records every process it starts while it runs (psutil), and checks after it ended
that the GX worker is gone at once, and Dagster's own helpers (its compute-log ``tail`` and
``watch_orphans``) within their one-second poll. A local Spark run's process (its JVM and Python
workers gone when it has exited) is checked on the run tests/warehouse/spark/test_run_cli.py makes
as a process, not on a run of its own here.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from tests.conftest import MINI_FILES, REPO, write_files

TIMEOUT = 300  # seconds: a run on the 4-file landing takes ~5-20 s on a loaded 2-core machine

pytestmark = pytest.mark.slow  # a dozen `thinktax run` processes: `make test`, not `make check`


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("THINKTAX_LANDING", "THINKTAX_WAREHOUSE", "THINKTAX_CONFIG")}
    return {**env, "PYTHONWARNINGS": "ignore", "THINKTAX_GX_WORKER": "1",
            "DAGSTER_HOME": str(tmp_path / "dagster_home")}


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str, children: dict[int, psutil.Process],
                 cmdlines: dict[int, str]):
        self.returncode, self.stdout, self.stderr, self.children = returncode, stdout, stderr, children
        self.cmdlines = cmdlines  # as seen while the run ran

    def gx_workers(self) -> list[psutil.Process]:
        """The spawned GX worker (``multiprocessing.spawn``; not the spawn context's resource tracker)."""
        return [p for pid, p in self.children.items() if "spawn_main" in self.cmdlines.get(pid, "")]


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def thinktax(tmp_path: Path, *args: str, prelude: str = "", signal_when: Path | None = None,
             timeout: float = TIMEOUT) -> Ran:
    """Run ``thinktax <args>`` (``prelude``: Python run first, in the same process); with
    ``signal_when``, send SIGTERM once that file exists."""
    code = f"{prelude}\nimport sys\nfrom thinktax.cli import entry\nsys.argv = ['thinktax', *{list(args)!r}]\nentry()\n"
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env(tmp_path), stdout=o, stderr=e)
        me = psutil.Process(proc.pid)
        children: dict[int, psutil.Process] = {}
        cmdlines: dict[int, str] = {}
        deadline = time.monotonic() + timeout
        sent = False
        parent = ""  # the run's own command line: a child seen between its fork and its exec still shows it
        while proc.poll() is None:
            if time.monotonic() > deadline:
                for c in [me, *children.values()]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        c.kill()
                pytest.fail(f"thinktax {' '.join(args)} did not exit within {timeout} s")
            try:
                parent = parent or " ".join(_cmdline(me))
                for c in me.children(recursive=True):
                    if c.pid not in children or cmdlines.get(c.pid, "") in ("", parent):
                        children[c.pid] = c
                        cmdlines[c.pid] = " ".join(_cmdline(c))
            except psutil.NoSuchProcess:
                pass
            if signal_when is not None and not sent and signal_when.exists():
                proc.send_signal(signal.SIGTERM)
                sent = True
            time.sleep(0.05)
    if signal_when is not None:
        assert sent, "the run ended before it reached the point to be interrupted"
    return Ran(proc.returncode, out.read_text(), err.read_text(), children, cmdlines)


def assert_nothing_left(ran: Ran) -> None:
    """The GX worker is gone when the run has exited; Dagster's helpers within their poll."""
    assert not [p.pid for p in ran.gx_workers() if _alive(p)], ran.stderr[-3000:]
    _gone, alive = psutil.wait_procs([p for p in ran.children.values() if _alive(p)], timeout=10)
    assert not alive, [ran.cmdlines.get(p.pid) for p in alive]
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]


def new_file_rows(wh: Path, name: str) -> tuple:
    with duckdb.connect(str(wh), read_only=True) as con:
        return con.execute("SELECT status, rows_in, rows_loaded, rows_duplicate, rows_quarantined FROM ops.ingested_files "
                           "WHERE file = ?", [name]).fetchone()


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The hand-worked mini landing (tests/conftest.py), run once: (landing, warehouse)."""
    root = tmp_path_factory.mktemp("published")
    landing = write_files(root / "landing", MINI_FILES)
    wh = root / "wh" / "thinktax.duckdb"
    ran = thinktax(root, "run", "--landing", str(landing), "--warehouse", str(wh), "--quiet")
    assert ran.returncode == 0, ran.stderr[-3000:]
    # the first run had new rows: the worker validated them and was ended, not abandoned
    assert ran.gx_workers(), "the GX worker process was not started: the test would prove nothing"
    assert_nothing_left(ran)
    return landing, wh


def _copy(published: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the published landing and warehouse folder (each case adds its own night)."""
    import shutil

    landing, wh = published
    shutil.copytree(landing, tmp_path / "landing")
    shutil.copytree(wh.parent, tmp_path / "wh")
    return tmp_path / "landing", tmp_path / "wh" / wh.name


CALLS = MINI_FILES["telemetry/requests/calls.jsonl"]


def _reversed(text: str) -> str:
    return "\n".join(reversed(text.strip().splitlines())) + "\n"


def _conflicting(text: str) -> str:
    """The same request ids with other token counts: each line is a conflicting duplicate."""
    out = []
    for line in text.strip().splitlines():
        rec = json.loads(line)
        u = rec["usage"]
        for k in ("prompt_tokens", "input_tokens"):
            if k in u:
                u[k] += 1
        out.append(json.dumps(rec))
    return "\n".join(out) + "\n"


def _truncated_gz(text: str) -> bytes:
    whole = gzip.compress(text.encode())
    return whole[: len(whole) // 2]


@pytest.mark.parametrize(("night", "files", "status", "counts"), [
    # a re-export of the ingested day (other bytes, same records): 5 in, 5 duplicate
    ("duplicates", {"telemetry/requests/calls-reexport.jsonl": _reversed(CALLS)}, "loaded", (5, 0, 5, 0)),
    # the day again under the same request ids with other counts: 5 in, 5 quarantined
    ("conflicting", {"telemetry/requests/calls-again.jsonl": _conflicting(CALLS)}, "loaded", (5, 0, 0, 5)),
    # half a gzip stream: the file is quarantined whole (one quarantine row, no rows in)
    ("unreadable", {"telemetry/requests/calls-cut.jsonl.gz": _truncated_gz(CALLS)}, "unreadable", None),
])
def test_a_night_whose_new_files_add_no_rows_exits_0(published, tmp_path, night, files, status, counts):
    landing, wh = _copy(published, tmp_path)
    write_files(landing, files)
    ran = thinktax(tmp_path, "run", "--landing", str(landing), "--warehouse", str(wh))
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "rebuild: nothing (no new rows, no requested days)" in ran.stdout
    assert ran.gx_workers(), "the GX worker process was not started: the hang's precondition is missing"
    assert_nothing_left(ran)
    (name,) = files
    row = new_file_rows(wh, name)
    assert row[0] == status
    if counts is not None:
        assert row[1:] == counts
        assert row[1] == row[2] + row[3] + row[4]  # rows in = loaded + duplicate + quarantined


def test_a_night_with_nothing_new_exits_0_and_starts_no_worker(published, tmp_path):
    landing, wh = _copy(published, tmp_path)
    ran = thinktax(tmp_path, "run", "--landing", str(landing), "--warehouse", str(wh))
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "rebuild: nothing (no new rows, no requested days)" in ran.stdout
    assert not ran.gx_workers()
    assert_nothing_left(ran)


# The parser of telemetry/requests let a bad row through (as tests/pipelines/test_gx_checks.py
# does in-process): line 2 of day2.jsonl dated 2099 reaches staging, the GX suite's blocking check fails.
LEAKY = """
import dataclasses, datetime as dt
import pyarrow as pa, pyarrow.compute as pc
import warehouse.ingest
from sources.registry import all_specs

def leaky(spec):
    def parse(data, name, ctx):
        parsed = spec.parse(data, name, ctx)
        if name.endswith("day2.jsonl"):
            ts = pc.if_else(pc.equal(parsed.rows["line"], 2), pa.scalar(dt.datetime(2099, 1, 1), pa.timestamp("us")),
                            parsed.rows["ts"])
            parsed.rows = parsed.rows.set_column(parsed.rows.schema.get_field_index("ts"), "ts", ts)
        return parsed
    return dataclasses.replace(spec, parse=parse) if spec.folder == "telemetry/requests" else spec

warehouse.ingest.all_specs = lambda: [leaky(s) for s in all_specs()]
"""

DAY2 = "".join(
    json.dumps({"ts": f"2026-07-01T1{i}:00:00Z", "request_id": f"d2-{i}", "model": "o3", "provider": "openai",
                "usage": {"prompt_tokens": 100, "completion_tokens": 10}}) + "\n" for i in range(3))


def test_a_failing_blocking_check_exits_1_and_ends_the_worker_it_used(published, tmp_path):
    landing, wh = _copy(published, tmp_path)
    before = wh.read_bytes()
    write_files(landing, {"telemetry/requests/day2.jsonl": DAY2})
    ran = thinktax(tmp_path, "run", "--landing", str(landing), "--warehouse", str(wh), prelude=LEAKY)
    assert ran.returncode == 1, ran.stderr[-3000:]
    assert "blocking check failed: stg/requests:gx_suite" in ran.stderr
    assert "1 offending row(s)" in ran.stderr
    assert ran.gx_workers()
    assert_nothing_left(ran)
    assert wh.read_bytes() == before  # nothing published


SLOW = """
import dataclasses, pathlib, time
import warehouse.ingest
from sources.registry import all_specs

MARK = pathlib.Path({mark!r})

def slow(spec):
    def parse(data, name, ctx):
        if name.endswith("zz-slow.jsonl"):
            MARK.write_text("parsing")
            time.sleep(120)  # SIGTERM arrives here
        return spec.parse(data, name, ctx)
    return dataclasses.replace(spec, parse=parse) if spec.folder == "telemetry/requests" else spec

warehouse.ingest.all_specs = lambda: [slow(s) for s in all_specs()]
"""


def test_sigterm_mid_ingest_exits_143_publishes_nothing_and_ends_every_child(published, tmp_path):
    """SIGTERM while the ingest parses its second new file (the GX worker was started at the
    first): exit 143 (128 + SIGTERM), the published warehouse keeps its bytes, the build is
    thrown away, the lock is released (a next run succeeds), and no process is left."""
    landing, wh = _copy(published, tmp_path)
    before = wh.read_bytes()
    write_files(landing, {"telemetry/requests/day2.jsonl": DAY2, "telemetry/requests/zz-slow.jsonl": DAY2.replace("d2-", "d3-")})
    mark = tmp_path / "parsing"
    ran = thinktax(tmp_path, "run", "--landing", str(landing), "--warehouse", str(wh),
                   prelude=SLOW.format(mark=str(mark)), signal_when=mark)
    assert ran.returncode == 143, ran.stderr[-3000:]
    assert "stopped by SIGTERM" in ran.stderr
    assert ran.gx_workers()
    assert not [p.pid for p in ran.gx_workers() if _alive(p)]
    _gone, alive = psutil.wait_procs([p for p in ran.children.values() if _alive(p)], timeout=10)
    assert not alive, [ran.cmdlines.get(p.pid) for p in alive]
    assert wh.read_bytes() == before
    assert not list(wh.parent.glob("*.build-*"))
    again = thinktax(tmp_path, "run", "--landing", str(landing), "--warehouse", str(wh))
    assert again.returncode == 0, again.stderr[-3000:]
    assert new_file_rows(wh, "telemetry/requests/zz-slow.jsonl") == ("loaded", 3, 3, 0, 0)
