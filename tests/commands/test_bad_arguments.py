"""Every command, given bad arguments, says what is wrong and exits 2: never a traceback (issue 47).

Run in this process through ``thinktax.cli.main`` (what the console script calls): an exception
that escapes it is what would print a traceback, so each case fails on any exception but
argparse's ``SystemExit(2)``. The process entry itself is checked on the issue's cases at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from thinktax.cli import main


def _cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    """(id, argv, a phrase the message must hold)."""
    bad_toml = tmp / "bad.toml"
    bad_toml.write_text('[tiers]\nmedium_min_thinking_tokens = "lots"\n')
    a_file = tmp / "a-file.txt"
    a_file.write_text("x")
    landing = tmp / "landing"
    landing.mkdir(exist_ok=True)
    missing = tmp / "missing"
    return [
        ("run-config-type", ["run", "--landing", str(landing), "--warehouse", str(tmp / "w.duckdb"), "--config", str(bad_toml)],
         "[tiers] medium_min_thinking_tokens = 'lots': expected an integer"),
        ("run-config-missing", ["run", "--landing", str(landing), "--config", str(missing / "t.toml")], "config file not found"),
        ("run-config-folder", ["run", "--landing", str(landing), "--config", str(tmp)], "cannot be read as a TOML file"),
        ("run-landing-missing", ["run", "--landing", str(missing), "--warehouse", str(tmp / "w.duckdb")], "does not exist"),
        ("run-days", ["run", "--landing", str(landing), "--days", "yesterday"], "--days"),
        ("run-as-of", ["run", "--landing", str(landing), "--as-of", "2026-13-01"], "--as-of"),
        ("run-engine", ["run", "--engine", "oracle"], "invalid choice"),
        ("demo-days", ["demo", "--days", "many"], "invalid int value"),
        ("dev-port", ["dev", "--port", "http"], "invalid int value"),
        ("export-out-file", ["export", "focus", "--out", str(a_file), "--warehouse", str(tmp / "w.duckdb")], "is a file"),
        ("export-month", ["export", "focus", "--out", str(tmp / "o"), "--month", "2026-7"], "--month must be YYYY-MM"),
        ("export-no-warehouse", ["export", "focus", "--out", str(tmp / "o"), "--warehouse", str(missing / "w.duckdb")], "missing"),
        ("export-spec", ["export", "focus", "--out", str(tmp / "o"), "--spec", "0.9"], "invalid choice"),
        ("fetch-bills-since", ["fetch-bills", "--since", "last week", "--landing", str(landing)], "--since"),
        ("fetch-spendlogs-since", ["fetch-spendlogs", "--dsn", "postgresql://u@127.0.0.1:1/db", "--since", "2026-02-30",
                                   "--landing", str(landing)], "--since"),
        ("report-no-warehouse", ["report", "--warehouse", str(missing / "w.duckdb")], "missing"),
        ("scrape-targets-missing", ["scrape", "--targets", str(missing / "nodes.csv"), "--landing", str(landing)],
         "does not exist"),
        ("scrape-every", ["scrape", "--targets", "http://127.0.0.1:1/metrics", "--every", "often", "--landing", str(landing)],
         "not a duration"),
        ("size-config-missing", ["size", "--config-json", str(missing / "config.json"), "--gpu", "H100", "--gpus", "1",
                                 "--prompt", "1", "--thinking", "1", "--output", "1"], "config.json"),
        ("size-gpus", ["size", "--config-json", str(a_file), "--gpu", "H100", "--gpus", "two",
                       "--prompt", "1", "--thinking", "1", "--output", "1"], "invalid int value"),
        ("sql-no-warehouse", ["sql", "SELECT 1", "--warehouse", str(missing / "w.duckdb")], "missing"),
        ("unknown-command", ["frobnicate"], "invalid choice"),
    ]


CASE_IDS = [
    "run-config-type", "run-config-missing", "run-config-folder", "run-landing-missing", "run-days", "run-as-of",
    "run-engine", "demo-days", "dev-port", "export-out-file", "export-month", "export-no-warehouse", "export-spec",
    "fetch-bills-since", "fetch-spendlogs-since", "report-no-warehouse", "scrape-targets-missing", "scrape-every",
    "size-config-missing", "size-gpus", "sql-no-warehouse", "unknown-command"]


@pytest.mark.parametrize("case", CASE_IDS)
def test_a_bad_argument_is_a_message_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, case: str):
    cases = {c[0]: c for c in _cases(tmp_path)}
    assert set(cases) == set(CASE_IDS)
    _id, argv, phrase = cases[case]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2, text[-2000:]
    assert "Traceback" not in text
    assert phrase.lower() in text.lower(), text[-2000:]


def test_every_command_has_a_bad_argument_case():
    commands = {p.stem.replace("_", "-") for p in (REPO / "thinktax" / "commands").glob("[a-z]*.py")}
    covered = {c.split("-", 1)[0] if not c.startswith("fetch") else "-".join(c.split("-")[:2]) for c in CASE_IDS}
    assert commands <= covered, commands - covered


@pytest.mark.parametrize("argv", [
    ["scrape", "--targets", "/nonexistent/nodes.csv"],
    ["run", "--config", "bad.toml"],  # a traceback before issue 47
])
def test_the_console_entry_prints_no_traceback(tmp_path: Path, argv: list[str]):
    (tmp_path / "landing").mkdir()
    (tmp_path / "bad.toml").write_text('hours_per_month = "abc"\n')
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "THINKTAX_LANDING": str(tmp_path / "landing"),
           "THINKTAX_WAREHOUSE": str(tmp_path / "w.duckdb")}
    proc = subprocess.run([sys.executable, "-m", "thinktax.cli", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_the_contract_and_the_readme_list_every_command():
    """docs/contract.md section 1 has a row for every `thinktax` command, README.md's table too."""
    contract = (REPO / "docs" / "contract.md").read_text().split("## 2.")[0]
    readme = (REPO / "README.md").read_text()
    for p in (REPO / "thinktax" / "commands").glob("[a-z]*.py"):
        name = p.stem.replace("_", "-")
        assert f"| `thinktax {name}" in contract, name
        assert f"thinktax {name}" in readme, name
    assert "`metrics_url`" in readme and "THINKTAX_OPENAI_BASE_URL" in readme and "THINKTAX_ANTHROPIC_BASE_URL" in readme
