""".ci/ensure-jdk: CI installs Debian's openjdk-17-jdk-headless when no javac 17+ is found (issue 46).

The script runs with a PATH of stubs only (no real javac, no real apt-get): ``apt-get`` records
its arguments and, on ``install``, puts a ``javac`` printing the given version on that PATH, as
the Debian package does; JAVA_HOME is unset and the JDK folder it searches is an empty one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "ensure-jdk"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bash"), reason="the install branch runs as root")


def _stubs(tmp_path: Path, javac_version: str | None) -> tuple[Path, Path]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("sed", "head", "id", "cp"):
        os.symlink(shutil.which(tool), bin_ / tool)
    log = tmp_path / "apt.log"
    package = tmp_path / "javac-from-the-package"
    package.write_text(f'#!/bin/sh\necho "javac {javac_version}" >&2\n')
    package.chmod(0o755)
    (bin_ / "apt-get").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        f'case "$*" in *install*) cp {package} {bin_}/javac;; esac\n')
    (bin_ / "apt-get").chmod(0o755)
    return bin_, log


def _run(bin_: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_), "ENSURE_JDK_JVM_DIRS": str(tmp_path / "jvm")}
    return subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def test_without_a_javac_it_updates_then_installs_openjdk_17_headless(tmp_path):
    bin_, log = _stubs(tmp_path, "17.0.15")
    r = _run(bin_, tmp_path)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "update -qq"  # the package lists first: a fresh CI image has none
    assert calls[1:] == ["install -y -qq --no-install-recommends openjdk-17-jdk-headless"]
    assert "ensure-jdk: javac 17.0.15" in r.stdout


def test_a_javac_17_already_there_installs_nothing_and_an_older_one_does_not_count(tmp_path):
    bin_, log = _stubs(tmp_path, "11.0.2")
    (bin_ / "javac").write_text('#!/bin/sh\necho "javac 17.0.15" >&2\n')
    (bin_ / "javac").chmod(0o755)
    r = _run(bin_, tmp_path)
    assert r.returncode == 0 and not log.exists() and "javac 17.0.15 at" in r.stdout
    # a JDK 11 under the searched folder is not enough: 17 is installed
    (bin_ / "javac").unlink()
    old = tmp_path / "jvm" / "java-11-openjdk-amd64" / "bin"
    old.mkdir(parents=True)
    (old / "javac").write_text('#!/bin/sh\necho "javac 11.0.2" >&2\n')
    (old / "javac").chmod(0o755)
    r = _run(bin_, tmp_path)
    assert r.returncode == 0 and "openjdk-17-jdk-headless" in log.read_text()


def test_when_apt_get_fails_it_says_the_connect_test_will_be_skipped(tmp_path):
    bin_, log = _stubs(tmp_path, "17.0.15")
    (bin_ / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexit 100\n')
    r = _run(bin_, tmp_path)
    assert r.returncode == 0  # CI goes on; the test's skip reason says why
    assert "could not install openjdk-17-jdk-headless: the Spark Connect test will be skipped" in r.stderr
