"""`thinktax scrape` against loopback HTTP servers started here (127.0.0.1, random ports)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import socket
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sources.base import ParseContext
from sources.prometheus import parse
from thinktax.commands import scrape as scrape_cmd
from services.scraper import load_targets, parse_duration, run_scrapes

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "metrics"
VLLM = (FIX / "gpu-node-a__2026-11-03T14-05-00Z.prom").read_bytes()
DCGM = (FIX / "gpu-node-a__2026-11-03T14-05-00Z.dcgm.prom").read_bytes()
CTX = ParseContext(ingested_at=dt.datetime(2026, 11, 4))
BASE = dt.datetime(2026, 11, 3, 14, 0, tzinfo=dt.UTC)


@contextlib.contextmanager
def serve(status: int, body: bytes, content_type: str = "text/plain; version=0.0.4; charset=utf-8"):
    """An HTTP server on 127.0.0.1:<random port> answering GET /metrics; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            code, payload = (status, body) if self.path == "/metrics" else (404, b"not found")
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):  # keep test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeTime:
    """monotonic clock + sleep + UTC wall clock that move only when the scraper sleeps."""

    def __init__(self):
        self.t = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s

    def now(self) -> dt.datetime:
        return BASE + dt.timedelta(seconds=self.t)


def metrics_files(landing: Path) -> list[Path]:
    return sorted((landing / "telemetry" / "metrics").iterdir())


def test_cli_two_url_targets_one_down(tmp_path, capsys):
    down = closed_port()
    with serve(200, VLLM) as up:
        args = argparse.Namespace(targets=f"{up},http://127.0.0.1:{down}", every="30s", for_=None,
                                  max_scrapes=1, timeout="2s", landing=str(tmp_path / "landing"))
        assert scrape_cmd.run(args) == 0
    out, err = capsys.readouterr()
    up_port = up.rsplit(":", 1)[1]
    files = metrics_files(tmp_path / "landing")
    assert len(files) == 1  # nothing for the down target, no temporary file left behind
    assert files[0].name.startswith(f"127.0.0.1_{up_port}__") and files[0].name.endswith("Z.prom")
    assert files[0].read_bytes() == VLLM
    parsed = parse(files[0].read_bytes(), f"telemetry/metrics/{files[0].name}", CTX)
    rows = parsed.rows.to_pylist()
    assert {r["node_id"] for r in rows} == {f"127.0.0.1_{up_port}"}
    assert [r["value"] for r in rows if r["metric"] == "prompt_tokens_total"] == [48213377.0]
    err_lines = err.strip().splitlines()
    assert len(err_lines) == 1 and f"127.0.0.1_{down}" in err_lines[0] and "skipped" in err_lines[0]
    assert "1 file(s) written" in out and "1 scrape(s) skipped" in out


def test_nodes_csv_rounds_tags_and_failures(tmp_path):
    # gpu-node-a has a vLLM and a DCGM endpoint; gpu-node-c answers 500; gpu-node-d serves HTML;
    # gpu-node-e is down; gpu-node-f has no metrics_url (not a scrape target).
    down = closed_port()
    fake = FakeTime()
    log = io.StringIO()
    with serve(200, VLLM) as vllm, serve(200, DCGM) as dcgm, serve(500, b"oops") as broken, \
            serve(200, b"<html>login</html>", "text/html") as html:
        nodes = tmp_path / "nodes.csv"
        nodes.write_text(
            "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to,metrics_url\n"
            f"gpu-node-a,nebius,H100,2,Qwen/Qwen3-32B,bf16,2.95,2026-11-01,,{vllm}/metrics;{dcgm}\n"
            f"gpu-node-c,nebius,H100,1,Qwen/Qwen3-32B,bf16,2.95,2026-11-01,,{broken}\n"
            f"gpu-node-d,nebius,H100,1,Qwen/Qwen3-32B,bf16,2.95,2026-11-01,,{html}\n"
            f"gpu-node-e,nebius,H100,1,Qwen/Qwen3-32B,bf16,2.95,2026-11-01,,http://127.0.0.1:{down}\n"
            "gpu-node-f,nebius,H100,1,Qwen/Qwen3-32B,bf16,2.95,2026-11-01,,\n"
        )
        targets = load_targets(str(nodes))
        assert [t.node_id for t in targets] == ["gpu-node-a", "gpu-node-a", "gpu-node-c", "gpu-node-d", "gpu-node-e"]
        # --every 30s --for 90s: rounds start at 0, 30 and 60 s
        results = run_scrapes(targets, tmp_path, every_s=30, for_s=90, timeout_s=2,
                              clock=fake.clock, sleep=fake.sleep, now=fake.now, log=log)
    assert len(results) == 3 * 5
    assert fake.sleeps == [30.0, 30.0]
    vllm_tag = "127-0-0-1_" + vllm.rsplit(":", 1)[1]
    dcgm_tag = "127-0-0-1_" + dcgm.rsplit(":", 1)[1]
    names = [p.name for p in metrics_files(tmp_path)]
    assert names == sorted(
        f"gpu-node-a__2026-11-03T14-{m}Z.{tag}.prom"
        for m in ("00-00", "00-30", "01-00") for tag in (vllm_tag, dcgm_tag)
    )
    for path in metrics_files(tmp_path):
        parsed = parse(path.read_bytes(), f"telemetry/metrics/{path.name}", CTX)
        assert {r["node_id"] for r in parsed.rows.to_pylist()} == {"gpu-node-a"}
        engines = set(parsed.meta["engines"])
        assert engines == ({"dcgm"} if dcgm_tag in path.name else {"vllm", "other"})
    lines = log.getvalue().strip().splitlines()
    assert len(lines) == 3 * 3  # three failing targets, three rounds, one line each
    assert sum("gpu-node-c" in line and "HTTP 500" in line for line in lines) == 3
    assert sum("gpu-node-d" in line and "not Prometheus" in line for line in lines) == 3
    assert sum("gpu-node-e" in line for line in lines) == 3


def _count_rounds(**kw) -> int:
    """Rounds run_scrapes makes for one target (fake clock, fake fetch; files go to a temp dir)."""
    fake = FakeTime()
    n = 0

    def fetcher(url, timeout):
        nonlocal n
        n += 1
        return b"up 1\n"

    with tempfile.TemporaryDirectory() as tmp:
        run_scrapes(load_targets("10.0.0.1:8000"), Path(tmp), clock=fake.clock, sleep=fake.sleep,
                    now=fake.now, fetcher=fetcher, log=io.StringIO(), **kw)
    return n


def test_round_bounds_and_durations():
    targets = load_targets("10.0.0.1:8000")
    assert targets[0].node_id == "10.0.0.1_8000" and targets[0].url == "http://10.0.0.1:8000/metrics"
    assert _count_rounds(every_s=30, for_s=600) == 20  # --every 30s --for 10m: 600 / 30
    assert _count_rounds(every_s=30, for_s=600, max_scrapes=3) == 3
    assert _count_rounds(every_s=30, for_s=None, max_scrapes=4) == 4
    assert _count_rounds(every_s=30, for_s=31) == 2  # rounds at 0 and 30 s
    assert parse_duration("30s") == 30 and parse_duration("10m") == 600 and parse_duration("500ms") == 0.5
    assert parse_duration("2h") == 7200 and parse_duration("45") == 45
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_slow_round_skips_missed_ticks(tmp_path):
    # Each scrape takes 70 s of (fake) time with --every 30s: rounds start at 0, 90, 180 s
    # (the ticks at 30, 60, 120, 150 s are skipped, not run back to back).
    fake = FakeTime()
    starts: list[float] = []

    def slow_fetch(url, timeout):
        starts.append(fake.t)
        fake.t += 70
        return b"up 1\n"

    run_scrapes(load_targets("10.0.0.1:8000"), tmp_path, every_s=30, for_s=200, clock=fake.clock,
                sleep=fake.sleep, now=fake.now, fetcher=slow_fetch, log=io.StringIO())
    assert starts == [0.0, 90.0, 180.0]


def test_bad_targets_are_reported(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("node_id,gpu_type\nn1,H100\n")
    with pytest.raises(ValueError, match="metrics_url"):
        load_targets(str(nodes))
    args = argparse.Namespace(targets=str(nodes), every="30s", for_="1m", max_scrapes=None, timeout="5s",
                              landing=str(tmp_path))
    assert scrape_cmd.run(args) == 2
    assert "metrics_url" in capsys.readouterr().err
    args = argparse.Namespace(targets="127.0.0.1:1", every="0.5s", for_="1m", max_scrapes=None, timeout="5s",
                              landing=str(tmp_path))
    assert scrape_cmd.run(args) == 2
