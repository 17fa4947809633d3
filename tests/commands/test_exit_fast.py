"""`thinktax run` as a process: it exits without the interpreter teardown (thinktax/cli.py
``entry``), and must still say everything it has to say, with the right exit code, and leave the
warehouse published."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import duckdb

from tests.conftest import REPO


def _thinktax(*args: str) -> subprocess.CompletedProcess:
    # as a user runs it: Great Expectations in its worker process (off in the rest of the suite)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "THINKTAX_GX_WORKER": "1"}
    return subprocess.run([sys.executable, "-m", "thinktax.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_run_process_prints_its_summary_through_a_pipe_and_publishes(mini_landing: Path, tmp_path: Path):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    proc = _thinktax("run", "--landing", str(mini_landing), "--warehouse", str(wh))
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the summary is the last thing printed, after the run: it was flushed before the process ended
    # (cost of all calls: 0.20225 + 0.0028 + 0.0567 + 113.28 + 28.32, tests/sql/test_costs_hand_worked.py)
    assert "5 calls in 4 tasks" in proc.stdout and "$141.86" in proc.stdout
    assert proc.stdout.endswith("\n") and proc.stdout.splitlines()[-1].startswith("query it:  thinktax sql ")
    assert f"warehouse: {wh}" in proc.stdout
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.sql("SELECT count(*), sum(files_new) FROM ops.runs").fetchall() == [(1, 4)]
        assert con.sql("SELECT count(*) FROM stg.requests").fetchall() == [(5,)]
    # a second process with nothing new: exit 0, the one-line "nothing to rebuild" is printed
    again = _thinktax("run", "--landing", str(mini_landing), "--warehouse", str(wh))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "rebuild: nothing (no new rows, no requested days)" in again.stdout


def test_a_failed_run_process_exits_1_and_says_all_of_it(mini_landing: Path, tmp_path: Path):
    """Not a DuckDB file where the warehouse should be: the run fails. The process (fast exit)
    prints exactly what ``main()`` in a normal interpreter prints, and exits 1."""
    wh = tmp_path / "thinktax.duckdb"
    wh.write_bytes(b"not a duckdb file")
    proc = _thinktax("run", "--landing", str(mini_landing), "--warehouse", str(wh))
    assert proc.returncode == 1
    assert "is not a valid DuckDB database file" in proc.stderr
    assert "thinktax run failed (Dagster run" in proc.stderr
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    slow = subprocess.run([sys.executable, "-c", "import sys; from thinktax.cli import main; "
                           f"sys.exit(main(['run', '--landing', {str(mini_landing)!r}, '--warehouse', {str(wh)!r}]))"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert slow.returncode == 1
    last = lambda err: [x for x in err.splitlines() if x.strip()][-1]  # noqa: E731
    assert last(proc.stderr) == last(slow.stderr)


def test_a_usage_error_still_exits_2(tmp_path: Path):
    proc = _thinktax("run", "--landing", str(tmp_path / "missing"), "--warehouse", str(tmp_path / "w.duckdb"))
    assert proc.returncode == 2
    assert "landing folder" in proc.stderr and "does not exist" in proc.stderr


def test_the_console_script_is_the_fast_exiting_entry():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["thinktax"] == "thinktax.cli:entry"


def test_a_command_imports_only_its_own_module():
    """`thinktax run` builds just the run command's parser (the other commands' imports are not
    paid for); no name or an unknown one gets the whole command line, as before."""
    code = ("import sys; from thinktax.cli import build_parser\n"
            "def choices(p):\n"
            "    return sorted(next(a for a in p._actions if a.dest == 'command').choices)\n"
            "print(choices(build_parser(only='run')), 'thinktax.commands.export' in sys.modules)\n"
            "print(choices(build_parser(only='fetch-bills')))\n"
            "print(len(choices(build_parser(only='nope'))), len(choices(build_parser())))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "['run'] False"
    assert lines[1] == "['fetch-bills']"
    n = len(list((REPO / "thinktax" / "commands").glob("[a-z]*.py")))
    assert lines[2] == f"{n} {n}"
