"""``thinktax.cli.end_children``: what the CLI runs before it exits (issue 47). Each kind of child
is ended within its bound whether it ends by itself or not; none is left running."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time
import types

import pytest

from thinktax import cli

# A stand-in for pyspark's gateway JVM: PythonGatewayServer exits when its stdin reaches EOF
# (pyspark/java_gateway.py launch_gateway: "We open a pipe to stdin so that the Java gateway can
# die when the pipe is broken"). One that does, and one that ignores it (a stuck JVM).
EXITS_ON_EOF = "import sys\nsys.stdin.read()\n"
IGNORES_EOF = "import sys, time\nsys.stdin.read()\ntime.sleep(600)\n"


def _fake_pyspark(monkeypatch: pytest.MonkeyPatch, code: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    gateway = types.SimpleNamespace(proc=proc)
    module = types.SimpleNamespace(SparkContext=types.SimpleNamespace(_gateway=gateway))
    monkeypatch.setitem(sys.modules, "pyspark.context", module)
    return proc


def test_a_gateway_that_exits_on_eof_is_waited_for(monkeypatch):
    proc = _fake_pyspark(monkeypatch, EXITS_ON_EOF)
    assert cli._end_spark_gateway(timeout=30) == []
    assert proc.poll() == 0


def test_a_gateway_that_does_not_exit_is_terminated_after_the_bound(monkeypatch):
    proc = _fake_pyspark(monkeypatch, IGNORES_EOF)
    assert cli._end_spark_gateway(timeout=0.5) == [proc.pid]
    assert proc.poll() is not None and proc.returncode != 0


def _sleep_forever() -> None:
    time.sleep(600)


def test_a_multiprocessing_child_nobody_ended_is_ended(monkeypatch):
    monkeypatch.delitem(sys.modules, "pyspark.context", raising=False)
    p = multiprocessing.get_context("spawn").Process(target=_sleep_forever)
    p.start()
    try:
        assert cli.end_children(timeout=0.5) == [p.pid]
        assert not p.is_alive() and p.exitcode is not None
    finally:
        if p.is_alive():
            p.kill()
    assert cli.end_children(timeout=0.5) == []  # nothing left
