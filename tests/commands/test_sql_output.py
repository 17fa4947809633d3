"""What a person sees from `thinktax sql`: readable at 80 columns, plain text when piped.

The terminal cases use a real rich Console at width 80 and a real pseudo-terminal (the command
in a subprocess whose stdout is a pty of 80 columns); nothing about the terminal is mocked.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import duckdb
import pytest
from rich.console import Console

from thinktax.cli import main
from thinktax.console import print_rows

# the columns of marts.self_host_breakeven (24), with values of its shape
COLS = ["month", "model", "deployment", "provider", "gpu_type", "gpus", "precision", "api_calls", "api_spend_usd",
        "api_cost_per_call_usd", "usd_per_gpu_hour", "self_host_usd_per_month", "calls_per_minute",
        "calls_per_minute_source", "capacity_calls_per_month", "deployments_needed", "breakeven_calls_per_month",
        "breakeven_api_spend_usd", "savings_usd", "fits", "verdict", "p50_profile", "p95_profile", "build_id"]
ROW = ("2026-11-01", "Qwen/Qwen3-32B", "qwen3-32b-h100x2-fp8", "nebius", "H100", "2", "fp8", "224391",
       "5234.118200", "0.023326", "2.950000", "4307.000000", "61.2", "estimated", "2680560", "1", "184644",
       "4307.000000", "927.118200", "True", "self_host_cheaper", "in=3812 out=1290 think=3104",
       "in=9920 out=4100 think=12033", "a1b2c3d4")


def test_wide_rows_become_one_block_per_row_at_80_columns():
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    print_rows(COLS, [ROW, ROW])
    print_rows(COLS, [ROW, ROW], console=console)
    text = buf.getvalue()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "row 1" in text and "row 2" in text
    for col, value in zip(COLS, ROW):
        # every column is named and its whole value shown on its line (nothing cut to an empty box or '…')
        assert any(line.split() and line.split()[0] == col and value in line for line in lines), col
    assert "…" not in text


def test_narrow_rows_stay_a_table():
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    print_rows(["tier", "calls", "cost_usd"], [("fast", 120, 1.5), ("deep", 7, None)], console=console)
    text = buf.getvalue()
    deep = next(line for line in text.splitlines() if "deep" in line)
    assert [c.strip() for c in deep.strip("│ ").split("│")] == ["deep", "7", "NULL"]  # one table row, boxed
    assert "row 1" not in text


@pytest.fixture
def wide_warehouse(tmp_path: Path) -> Path:
    wh = tmp_path / "wh.duckdb"
    with duckdb.connect(str(wh)) as con:
        con.execute("CREATE SCHEMA marts")
        cols = ", ".join(f'? AS "{c}"' for c in COLS)
        con.execute(f"CREATE TABLE marts.self_host_breakeven AS SELECT {cols}", list(ROW))
    return wh


def test_piped_output_is_plain_and_unwrapped(wide_warehouse: Path, capsys):
    assert main(["sql", "--warehouse", str(wide_warehouse), "SELECT * FROM marts.self_host_breakeven"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 3  # header, rule, the row: never wrapped
    assert lines[0].split() == COLS
    assert lines[2].split()[:3] == list(ROW[:3]) and len(lines[2]) > 80
    assert not any(ch in out for ch in "┃│━─")


def test_in_an_80_column_pty_the_sql_command_prints_blocks(wide_warehouse: Path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")} | {"TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-m", "thinktax.cli", "sql", "--warehouse", str(wide_warehouse),
                             "SELECT * FROM marts.self_host_breakeven"], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    os.close(master)
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode())  # colour codes off
    lines = text.replace("\r", "").splitlines()
    assert "row 1" in text
    assert max(len(line) for line in lines) <= 80
    assert any(line.split()[:2] == ["breakeven_calls_per_month", "184644"] for line in lines if line.split())
