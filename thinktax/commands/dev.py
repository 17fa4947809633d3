"""`thinktax dev`: the Dagster UI (webserver + daemon) on 127.0.0.1, stopped cleanly.

``dagster dev`` starts a webserver, a daemon and code servers as child processes. It ignores
SIGTERM, and started from a non-interactive shell in the background it inherits an *ignored*
SIGINT too (measured here: alive 60 s after either). thinktax installs its own SIGINT/SIGTERM
handlers before starting it (so the child starts with default signal handling), starts it in its
own process group (session), and on Ctrl-C or SIGTERM: SIGINT to dagster dev (its clean shutdown,
about 8-10 s), then, for anything in the group still alive after ``--grace`` seconds, SIGTERM and
finally SIGKILL. Nothing is left behind, whichever way it ends.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

NAME = "dev"
HELP = "Start the Dagster UI on 127.0.0.1 (nightly schedule, sensors, asset checks) with thinktax's DAGSTER_HOME."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--landing", help="landing folder (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")
    p.add_argument("--config", help="thinktax.toml (default $THINKTAX_CONFIG or ./thinktax.toml if present)")
    p.add_argument("--grace", type=float, default=20.0, help="seconds to wait after SIGTERM before SIGKILL (default 20)")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid`` (Linux /proc)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            alive.append(int(entry.name))
    return alive


def _wait_empty(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.2)
    return not group_members(pgid)


def stop_group(leader: subprocess.Popen, grace: float) -> None:
    """SIGINT the leader (dagster dev's own shutdown); then SIGTERM, then SIGKILL the whole group."""
    pgid = leader.pid
    try:
        leader.send_signal(signal.SIGINT)
    except ProcessLookupError:
        pass
    if _wait_empty(pgid, grace):
        return
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        if _wait_empty(pgid, wait):
            return


def run(args: argparse.Namespace) -> int:
    from services.config import ConfigError, load_config, resolve_paths  # noqa: PLC0415
    from thinktax.runner import dagster_home, export_paths  # noqa: PLC0415

    landing, warehouse = resolve_paths(args.landing, args.warehouse)
    try:
        load_config(args.config)
    except ConfigError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    export_paths(landing, warehouse, args.config)
    home = dagster_home()
    cmd = [sys.executable, "-m", "dagster", "dev", "-h", args.host, "-p", str(args.port), "-m", "pipelines.definitions"]

    stopping: dict[str, int | None] = {"signal": None}

    def on_signal(signum, _frame):
        stopping["signal"] = signum

    # Installed before the child starts: exec resets handled signals to their defaults, so
    # dagster dev gets a working SIGINT even when this process inherited an ignored one.
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    child = subprocess.Popen(cmd, start_new_session=True)  # its own process group: pgid = child.pid
    print(f"thinktax dev: http://{args.host}:{args.port} (DAGSTER_HOME {home}, landing {landing}, "
          f"warehouse {warehouse}); dagster dev pid {child.pid}, process group {child.pid}. Ctrl-C stops it.",
          file=sys.stderr, flush=True)
    try:
        while child.poll() is None and stopping["signal"] is None:
            time.sleep(0.2)
    finally:
        stop_group(child, args.grace)
        child.wait()
        for s, h in previous.items():
            signal.signal(s, h)
    if stopping["signal"] is not None:
        print(f"thinktax dev: stopped ({signal.Signals(stopping['signal']).name}); process group {child.pid} is gone",
              file=sys.stderr)
        return 0
    return child.returncode or 0
