"""Ruff and the type checker (issue 43), as `make lint` runs them, in `make test` so CI runs them.

Ruff's rules are in pyproject.toml ``[tool.ruff]`` (RUF100 fails a ``noqa`` no enabled rule needs);
mypy is strict on the engine seam and the staging contract (``[tool.mypy] files``), where
``warehouse/engine.py`` asks it to prove that ``DuckDBEngine`` and ``SparkEngine`` satisfy ``Engine``.
The last test checks the same at run time, by signature, so a drift shows without the type checker too.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from warehouse.engine import DuckDBEngine, Engine
from warehouse.spark.engine import SparkEngine

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.timeout(300)


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=280)


def test_ruff_passes():
    r = _run("ruff", "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_mypy_passes_strict_on_the_engine_seam_and_the_contract():
    r = _run("mypy", "--cache-dir", "/dev/null")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Success" in r.stdout and "4 source files" in r.stdout, r.stdout


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


@pytest.mark.parametrize("adapter", [DuckDBEngine, SparkEngine])
def test_each_adapter_has_every_method_of_the_protocol_with_its_parameters(adapter):
    want = _methods(Engine)
    assert want.keys() >= {"ingest", "build", "check", "publish", "abandon"}
    assert adapter.kind in ("duckdb", "spark")
    for name, sig in want.items():
        got = getattr(adapter, name, None)
        assert callable(got), (adapter.__name__, name)
        have = inspect.signature(got)
        assert [(p.name, p.kind) for p in have.parameters.values()] == \
               [(p.name, p.kind) for p in sig.parameters.values()], (adapter.__name__, name, str(have), str(sig))
