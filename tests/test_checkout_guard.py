"""No test may read or write the checkout's runtime paths (issue 40): `make run` publishes the demo
into ./var, and `make test` after it must neither answer from it nor change it. tests/conftest.py
runs the session in a temporary folder and each test in its tmp_path, and fails the session when the
checkout's var/, landing/ or thinktax.toml changed. Here that guard is run on a stand-in checkout
(THINKTAX_TEST_GUARD_ROOT) by a pytest process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    checkout = tmp_path / "checkout"
    (checkout / "var").mkdir(parents=True, exist_ok=True)
    (checkout / "var" / "thinktax.duckdb").write_bytes(b"the demo's published file")
    test = tmp_path / "probe" / "test_probe.py"
    test.parent.mkdir(exist_ok=True)
    test.write_text("from pathlib import Path\nimport os\n\ndef test_probe():\n" + body)
    env = {**os.environ, "THINKTAX_TEST_GUARD_ROOT": str(checkout), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "--rootdir", str(test.parent), str(test)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_session_whose_tests_leave_the_checkout_alone_passes(tmp_path: Path):
    # the test's working folder is a temporary one of its own, so a default path lands there
    proc = _pytest(tmp_path, "    Path('var').mkdir()\n    Path('var/thinktax.duckdb').write_text('mine')\n"
                             f"    assert Path.cwd() != Path({str(REPO)!r})\n")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "1 passed" in proc.stdout and "runtime paths" not in proc.stdout


def test_a_session_that_writes_the_checkouts_var_fails_naming_the_file(tmp_path: Path):
    target = tmp_path / "checkout" / "var" / "thinktax.duckdb"
    proc = _pytest(tmp_path, f"    Path({str(target)!r}).write_text('overwritten')\n")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "1 passed" in proc.stdout  # the test itself passed: the session fails
    assert "changed the checkout's runtime paths" in proc.stdout and "var/thinktax.duckdb" in proc.stdout


def test_a_new_landing_folder_in_the_checkout_fails_too(tmp_path: Path):
    landing = tmp_path / "checkout" / "landing"
    proc = _pytest(tmp_path, f"    Path({str(landing)!r}).mkdir()\n")
    assert proc.returncode == 1 and "landing" in proc.stdout, proc.stdout[-2000:]
