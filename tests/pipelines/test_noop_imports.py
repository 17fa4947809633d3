"""A run with nothing new imports none of the heavy libraries only some steps need: Great
Expectations (staging checks of new rows), the parsers' polars/pandas (new files), statsmodels
(the spend forecast, rebuilt only when its inputs changed). Checked in a fresh process, as a
nightly `thinktax run` starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from thinktax.cli import main

HEAVY = ("great_expectations", "polars", "statsmodels")

PROBE = """
import json, sys
from thinktax.cli import main
rc = main(["run", "--landing", sys.argv[1], "--warehouse", sys.argv[2], "--quiet"])
print(json.dumps({"rc": rc, "imported": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def test_a_noop_run_imports_no_heavy_library(mini_landing: Path, tmp_path: Path):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(mini_landing), "--warehouse", str(wh), "--quiet"]) == 0
    proc = subprocess.run([sys.executable, "-c", PROBE, str(mini_landing), str(wh)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"rc": 0, "imported": []}
    # the probe itself can see them: a new landed file does import the parsers
    (mini_landing / "telemetry" / "requests" / "late.jsonl").write_text(
        '{"ts":"2026-07-01T12:00:00Z","request_id":"late-1","model":"o3","provider":"openai",'
        '"usage":{"prompt_tokens":10,"completion_tokens":5}}\n')
    proc = subprocess.run([sys.executable, "-c", PROBE, str(mini_landing), str(wh)],
                          capture_output=True, text=True, timeout=600)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and "great_expectations" in got["imported"]
