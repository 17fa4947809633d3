"""`thinktax dev`: the Dagster UI answers on 127.0.0.1 with the schedule and sensors, and SIGTERM
to the wrapper takes the whole process group down (webserver, daemon, code servers)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from thinktax.commands.dev import group_members

REPO = Path(__file__).resolve().parents[2]
QUERY = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  name schedules { name cronSchedule } sensors { name } } } } }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int) -> dict | None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": QUERY}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


@pytest.mark.slow
def test_dev_serves_the_ui_and_stops_its_whole_group(tmp_path: Path, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    port = _free_port()
    log = tmp_path / "dev.log"
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"),
           "THINKTAX_LANDING": str(tmp_path / "landing"), "THINKTAX_WAREHOUSE": str(tmp_path / "wh" / "t.duckdb")}
    with open(log, "wb") as out:
        # its own session, so that signalling it cannot reach pytest's process group
        wrapper = subprocess.Popen([sys.executable, "-m", "thinktax.cli", "dev", "--port", str(port), "--grace", "20"],
                                   env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        pgid = None
        names: set[str] = set()
        deadline = time.monotonic() + 240  # a cold start on a loaded 2-core machine takes 20-60 s
        while time.monotonic() < deadline and wrapper.poll() is None:
            if pgid is None and (m := re.search(r"process group (\d+)", log.read_text(errors="replace"))):
                pgid = int(m[1])
            answer = _graphql(port)
            nodes = (answer or {}).get("data", {}).get("repositoriesOrError", {}).get("nodes") or []
            if nodes:
                names = {s["name"] for n in nodes for s in n["schedules"] + n["sensors"]}
                crons = {s["name"]: s["cronSchedule"] for n in nodes for s in n["schedules"]}
                break
            time.sleep(1)
        assert wrapper.poll() is None, log.read_text(errors="replace")[-3000:]
        assert pgid is not None and group_members(pgid), "dagster dev is not running in its own group"
        assert {"nightly", "landing_files", "notify_run_failure"} <= names, log.read_text(errors="replace")[-3000:]
        assert crons["nightly"] == "0 2 * * *"
        assert len(group_members(pgid)) >= 3  # dagster dev + webserver + daemon (+ code servers)

        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(timeout=60) == 0
        assert group_members(pgid) == []  # webserver, daemon and code servers are all gone
        assert "process group" in log.read_text() and "is gone" in log.read_text()
        with pytest.raises((urllib.error.URLError, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2)
    finally:
        if wrapper.poll() is None:
            os.killpg(wrapper.pid, signal.SIGKILL)
        if pgid is not None and group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)
