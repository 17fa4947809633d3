"""Shared by the alert, schedule/sensor and instance tests: a webhook receiver on 127.0.0.1 and a
small landing folder whose reasoning spend is worked by hand.

Prices (USD per million tokens, effective 2025-01-01; reasoning empty = the output price):
    openai  o3          input 2  output 8      catalog: reasoning true
    openai  gpt-4o      input 2.5 output 10    catalog: reasoning false
    acme    mystery-r1  input 1  output 4      not in the catalog; its calls report thinking
    acme    plain-x     input 1  output 1      not in the catalog; no thinking
Calls (one file per month, telemetry/requests/<month>.jsonl):
    high month: every day one o3 call, 1,000,000 completion tokens of which 500,000 reasoning
                = 500,000 x 8/1e6 + 500,000 x 8/1e6 = $8.00 a day (thinking $4.00)
                and one gpt-4o call of 1,000,000 completion = $10.00 a day (not reasoning)
                and one plain-x call of 1,000,000 prompt = $1.00 a day (not reasoning)
    low month:  every day one o3 call of 10,000 completion (5,000 reasoning) = $0.08 a day
    mystery-r1: one call on the 15th of a high month, 100,000 completion (50,000 reasoning)
                = 100,000 x 4/1e6 = $0.40
A 30-day high window (days 1..30): o3 30 x 8 = $240 + mystery-r1 $0.40 = $240.40 of reasoning API
spend = 240.40 x 730 / (24 x 30) = 175,492 / 720 = $243.738889 a month.
A 30-day low window: 30 x 0.08 = $2.40 = 2.40 x 730 / 720 = $2.433333 a month.
"""

from __future__ import annotations

import calendar
import json
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HIGH_WINDOW_USD = Decimal("240.40")
HIGH_PER_MONTH = Decimal("243.738889")
LOW_WINDOW_USD = Decimal("2.40")
LOW_PER_MONTH = Decimal("2.433333")

MODELS_CSV = (
    "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
    "o3,openai,true,,,,,\n"
    "gpt-4o,openai,false,,,,,\n"
)
PRICES_CSV = (
    "provider,model,effective_from,input_usd_per_mtok,output_usd_per_mtok,currency\n"
    "openai,o3,2025-01-01,2,8,USD\n"
    "openai,gpt-4o,2025-01-01,2.5,10,USD\n"
    "acme,mystery-r1,2025-01-01,1,4,USD\n"
    "acme,plain-x,2025-01-01,1,1,USD\n"
)


def _call(ts: str, rid: str, model: str, provider: str, prompt: int, completion: int, reasoning: int) -> str:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "completion_tokens_details": {"reasoning_tokens": reasoning}}
    return json.dumps({"ts": ts, "request_id": rid, "model": model, "provider": provider, "usage": usage})


def month_calls(year: int, month: int, high: bool) -> str:
    """One month of calls (see the module docstring)."""
    lines = []
    for day in range(1, calendar.monthrange(year, month)[1] + 1):
        d = f"{year}-{month:02d}-{day:02d}"
        if high:
            lines.append(_call(f"{d}T10:00:00Z", f"o3-{d}", "o3", "openai", 0, 1_000_000, 500_000))
            lines.append(_call(f"{d}T11:00:00Z", f"4o-{d}", "gpt-4o", "openai", 0, 1_000_000, 0))
            lines.append(_call(f"{d}T12:00:00Z", f"px-{d}", "plain-x", "acme", 1_000_000, 0, 0))
            if day == 15:
                lines.append(_call(f"{d}T13:00:00Z", f"my-{d}", "mystery-r1", "acme", 0, 100_000, 50_000))
        else:
            lines.append(_call(f"{d}T10:00:00Z", f"o3-{d}", "o3", "openai", 0, 10_000, 5_000))
    return "\n".join(lines) + "\n"


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def alert_landing(root: Path, months: list[tuple[int, int, bool]]) -> Path:
    """A landing folder with the catalog, the prices and one calls file per (year, month, high)."""
    write(root, "catalog/models.csv", MODELS_CSV)
    write(root, "prices/llm/prices.2025-01-01.csv", PRICES_CSV)
    for year, month, high in months:
        write(root, f"telemetry/requests/{year}-{month:02d}.jsonl", month_calls(year, month, high))
    return root


def config_file(path: Path, webhook: str, threshold: float, window_days: int = 30) -> Path:
    path.write_text(f'[alert]\nwebhook_url = "{webhook}"\nwindow_days = {window_days}\n'
                    f"threshold_usd_per_month = {threshold}\n")
    return path


class Receiver:
    """A webhook receiver on 127.0.0.1 (random port). ``statuses`` are answered in order, then 200."""

    def __init__(self, statuses: list[int] | None = None, delay_s: float = 0.0):
        self.statuses = list(statuses or [])
        self.delay_s = delay_s
        self.bodies: list[dict] = []
        self.answered: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                status = outer.statuses.pop(0) if outer.statuses else 200
                outer.bodies.append(json.loads(body))
                outer.answered.append(status)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"error")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def posts(self) -> int:
        return len(self.bodies)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def as_table(con, table: str) -> None:
    """Make ``table`` (a view over Parquet files in a run's build: warehouse/parts.py) a table of
    the build file with the same rows, so that a test can corrupt it with an UPDATE."""
    con.execute(f"CREATE TEMP TABLE _rows AS SELECT * FROM {table}")
    con.execute(f"DROP VIEW IF EXISTS {table}")
    con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _rows")
    con.execute("DROP TABLE _rows")
