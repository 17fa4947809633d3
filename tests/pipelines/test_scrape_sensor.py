"""The scrape sensor writes one .prom file per reachable target and skips the one that is down."""

from __future__ import annotations

import http.server
import socket
import threading
from pathlib import Path

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.scrape_sensor import scrape_metrics
from sources.prometheus import parse
from sources.base import ParseContext

BODY = b"# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3.0\n"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scrape_sensor_writes_files_and_skips_down_targets(tmp_path: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        up, down = server.server_address[1], _free_port()
        landing = tmp_path / "landing"
        (landing / "catalog").mkdir(parents=True)
        (landing / "catalog" / "nodes.csv").write_text(
            "node_id,provider,gpu_type,gpus,active_from,metrics_url\n"
            f"node-up,p,H100,1,2026-01-01,http://127.0.0.1:{up}/metrics\n"
            f"node-down,p,H100,1,2026-01-01,http://127.0.0.1:{down}/metrics\n")
        # a context manager, as Dagster asks for a resource with a teardown (the run's engine)
        with dg.build_sensor_context(resources={"thinktax": ThinktaxResource(
                landing=str(landing), warehouse=str(tmp_path / "w.duckdb"))}) as ctx:
            result = scrape_metrics(ctx)
        assert "scraped 1 of 2" in result.skip_message
        files = sorted((landing / "telemetry" / "metrics").iterdir())
        assert [f.name.split("__")[0] for f in files] == ["node-up"]
        parsed = parse(files[0].read_bytes(), f"telemetry/metrics/{files[0].name}", ParseContext(ingested_at=__import__("datetime").datetime(2030, 1, 1)))
        assert parsed.rows.column("value").to_pylist() == [3.0]
    finally:
        server.shutdown()
