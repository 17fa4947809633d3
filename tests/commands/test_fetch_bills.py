"""`thinktax fetch-bills` and thinktax/billing_api.py against loopback servers started here.

The servers (127.0.0.1, random ports) replay the hand-written pages of tests/fixtures/bills/
(see its README), with pagination through `next_page`, a 429 with Retry-After and 5xx errors.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import socket
import threading
import urllib.parse
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sources import bills_anthropic as ba
from sources import bills_openai as bo
from sources.base import ParseContext
from services import billing_api as api
from thinktax.cli import main
from thinktax.commands import fetch_bills as cmd

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "bills"
CTX = ParseContext(ingested_at=dt.datetime(2025, 7, 1))
OPENAI_KEY = "sk-admin-TEST-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-admin01-TEST-anthropic-fedcba9876543210"
NOW = dt.datetime(2025, 7, 1, 12, 0, tzinfo=dt.timezone.utc)

OA_USAGE = "/v1/organization/usage/completions"
OA_COSTS = "/v1/organization/costs"
AN_USAGE = "/v1/organizations/usage_report/messages"
AN_COSTS = "/v1/organizations/cost_report"


def fixture(rel: str) -> bytes:
    return (FIX / rel).read_bytes()


def next_page(rel: str) -> str:
    return json.loads(fixture(rel))["next_page"]


class Script:
    """Responses per (path, page token): consumed in order, the last one repeats."""

    def __init__(self, routes: dict[tuple[str, str | None], list[tuple[int, dict[str, str], bytes]]]):
        self.routes = routes
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def respond(self, path: str, query: dict[str, list[str]], headers: dict[str, str]):
        with self.lock:
            self.requests.append({"path": path, "query": query, "headers": headers})
            queue = self.routes.get((path, query.get("page", [None])[0]))
            if not queue:
                return 404, {}, b'{"error": "not found"}'
            return queue.pop(0) if len(queue) > 1 else queue[0]


@contextlib.contextmanager
def serve(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urllib.parse.urlsplit(self.path)
            status, headers, body = script.respond(parts.path, urllib.parse.parse_qs(parts.query),
                                                   {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
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


def ok(body: bytes):
    return (200, {}, body)


def openai_script() -> Script:
    return Script({
        (OA_USAGE, None): [ok(fixture("openai/usage_completions__2025-06-01__p1.json"))],
        (OA_USAGE, next_page("openai/usage_completions__2025-06-01__p1.json")): [
            (429, {"Retry-After": "7"}, b'{"error": {"message": "Rate limit reached"}}'),
            ok(fixture("openai/usage_completions__2025-06-01__p2.json")),
        ],
        (OA_COSTS, None): [(503, {}, b"upstream unavailable"), ok(fixture("openai/costs__2025-06-01__p1.json"))],
    })


def anthropic_script() -> Script:
    return Script({
        (AN_USAGE, None): [ok(fixture("anthropic/usage_report_messages__2025-06-01__p1.json"))],
        (AN_USAGE, next_page("anthropic/usage_report_messages__2025-06-01__p1.json")): [
            # a 5xx whose body echoes the key: it must be scrubbed from what we print
            (500, {}, f'{{"type": "error", "error": {{"message": "internal error for {ANTHROPIC_KEY}"}}}}'.encode()),
            ok(fixture("anthropic/usage_report_messages__2025-06-01__p2.json")),
        ],
        (AN_COSTS, None): [ok(fixture("anthropic/cost_report__2025-06-01__p1.json"))],
    })


@pytest.fixture
def sleeps(monkeypatch):
    waited: list[float] = []
    monkeypatch.setattr(cmd, "_sleep", waited.append)
    return waited


@pytest.fixture
def servers(monkeypatch):
    oa, an = openai_script(), anthropic_script()
    with serve(oa) as oa_url, serve(an) as an_url:
        monkeypatch.setenv("THINKTAX_OPENAI_BASE_URL", oa_url)
        monkeypatch.setenv("THINKTAX_ANTHROPIC_BASE_URL", an_url)
        monkeypatch.setenv("OPENAI_ADMIN_KEY", OPENAI_KEY)
        monkeypatch.setenv("ANTHROPIC_ADMIN_KEY", ANTHROPIC_KEY)
        yield oa, an


def all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


# ---------------------------------------------------------------- the command, end to end


def test_fetch_bills_saves_every_page_as_returned(tmp_path, servers, sleeps, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    landing = tmp_path / "landing"
    code = main(["fetch-bills", "--since", "2025-06-01", "--until", "2025-06-03", "--landing", str(landing)])
    out, err = capsys.readouterr()
    assert code == 0, err

    saved = sorted(p.relative_to(landing).as_posix() for p in landing.rglob("*.json"))
    assert saved == [
        "bills/anthropic/cost_report__2025-06-01__p1.json",
        "bills/anthropic/usage_report_messages__2025-06-01__p1.json",
        "bills/anthropic/usage_report_messages__2025-06-01__p2.json",
        "bills/openai/costs__2025-06-01__p1.json",
        "bills/openai/usage_completions__2025-06-01__p1.json",
        "bills/openai/usage_completions__2025-06-01__p2.json",
    ]
    for rel in saved:  # byte for byte what the server sent
        assert (landing / rel).read_bytes() == fixture(rel.removeprefix("bills/"))
    assert not [p for p in landing.rglob("*") if p.name.startswith(".")]  # no temp files left

    # 429 Retry-After: 7 honoured; 503 and 500 backed off 1 s (first retry), in request order.
    assert sleeps == [7.0, 1.0, 1.0]
    assert "HTTP 429" in err and "HTTP 503" in err and "HTTP 500" in err
    assert "openai usage_completions 2025-06-01..2025-06-03: 2 page(s) (2 new" in out

    # The keys went only where they belong, and nowhere else.
    for text in (out, err, caplog.text, all_bytes(landing).decode()):
        assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text
    assert "[redacted]" in err  # the 500 body that echoed the key

    oa, an = servers
    first = oa.requests[0]
    assert first["path"] == OA_USAGE and first["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert "x-api-key" not in first["headers"]
    # 2025-06-01T00:00Z .. 2025-06-04T00:00Z (until is inclusive)
    assert first["query"] == {"start_time": ["1748736000"], "end_time": ["1748995200"], "bucket_width": ["1d"],
                              "group_by": ["model", "project_id"], "limit": ["31"]}
    assert [r["query"].get("page") for r in oa.requests if r["path"] == OA_USAGE] == [
        None, [next_page("openai/usage_completions__2025-06-01__p1.json")]] + [
        [next_page("openai/usage_completions__2025-06-01__p1.json")]]  # the 429, then the retry
    costs_q = [r["query"] for r in oa.requests if r["path"] == OA_COSTS][0]
    assert costs_q["group_by"] == ["project_id", "line_item"]

    a = an.requests[0]
    assert a["path"] == AN_USAGE and a["headers"]["x-api-key"] == ANTHROPIC_KEY
    assert a["headers"]["anthropic-version"] == "2023-06-01" and "authorization" not in a["headers"]
    assert a["query"]["starting_at"] == ["2025-06-01T00:00:00Z"] and a["query"]["ending_at"] == ["2025-06-04T00:00:00Z"]
    assert a["query"]["group_by[]"] == ["model", "workspace_id", "service_tier", "context_window"]
    cost_q = [r["query"] for r in an.requests if r["path"] == AN_COSTS][0]
    assert cost_q["group_by[]"] == ["workspace_id", "description"]

    # The saved pages are what the parsers read.
    oa_dir, an_dir = landing / "bills" / "openai", landing / "bills" / "anthropic"
    costs = bo.parse_costs((oa_dir / "costs__2025-06-01__p1.json").read_bytes(), "c", CTX)
    assert sum(costs.rows.column("amount_usd").to_pylist()) == Decimal("1.13328")
    usage = [bo.parse_usage(p.read_bytes(), p.name, CTX) for p in sorted(oa_dir.glob("usage_*"))]
    assert sum(sum(u.rows.column("output_tokens").to_pylist()) for u in usage) == 45000 + 800 + 30000 + 10000
    an_cost = ba.parse_costs((an_dir / "cost_report__2025-06-01__p1.json").read_bytes(), "c", CTX)
    assert sum(an_cost.rows.column("amount_usd").to_pylist()) == Decimal("3.407567")  # 340.7567 cents
    an_usage = [ba.parse_usage(p.read_bytes(), p.name, CTX) for p in sorted(an_dir.glob("usage_*"))]
    assert sum(u.rows.num_rows for u in an_usage) == 4 and not any(u.rejects for u in an_usage)


def test_fetching_again_keeps_identical_pages_and_never_overwrites_amended_ones(tmp_path, servers, sleeps, capsys):
    landing = tmp_path / "landing"
    args = ["fetch-bills", "--since", "2025-06-01", "--until", "2025-06-03", "--landing", str(landing),
            "--provider", "anthropic"]
    assert main(args) == 0
    assert main(args) == 0
    assert "1 page(s) (0 new, 0 revised, 1 unchanged)" in capsys.readouterr().out
    assert len(list(landing.rglob("*.json"))) == 3

    # The provider amends a day: the old page stays, the new one lands beside it.
    _, an = servers
    amended = fixture("anthropic/cost_report__2025-06-01__p1.json").replace(b'"123.4567"', b'"123.4568"')
    an.routes[(AN_COSTS, None)] = [ok(amended)]
    assert main(args) == 0
    folder = landing / "bills" / "anthropic"
    assert (folder / "cost_report__2025-06-01__p1.json").read_bytes() == fixture("anthropic/cost_report__2025-06-01__p1.json")
    assert (folder / "cost_report__2025-06-01__p1__r2.json").read_bytes() == amended


def test_missing_keys(tmp_path, servers, sleeps, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_ADMIN_KEY")
    landing = tmp_path / "landing"
    base = ["fetch-bills", "--since", "2025-06-01", "--until", "2025-06-03", "--landing", str(landing)]
    assert main([*base, "--provider", "anthropic"]) == 2
    assert "ANTHROPIC_ADMIN_KEY is not set" in capsys.readouterr().err
    assert main(base) == 0  # all: OpenAI fetched, Anthropic skipped with a message
    assert "skipping anthropic" in capsys.readouterr().err
    assert {p.parent.name for p in landing.rglob("*.json")} == {"openai"}
    monkeypatch.delenv("OPENAI_ADMIN_KEY")
    assert main(base) == 2


def test_bad_day_range(tmp_path, capsys):
    assert main(["fetch-bills", "--since", "2025-06-05", "--until", "2025-06-03", "--landing", str(tmp_path)]) == 2
    assert "nothing to fetch" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fetch-bills", "--since", "June 1"])


def test_an_http_error_stops_that_provider_with_a_clean_message(tmp_path, servers, sleeps, capsys):
    oa, _ = servers
    oa.routes[(OA_USAGE, None)] = [(401, {}, f'{{"error": "invalid key {OPENAI_KEY}"}}'.encode())]
    code = main(["fetch-bills", "--since", "2025-06-01", "--until", "2025-06-03", "--landing", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "openai: HTTP 401 from /v1/organization/usage/completions" in err and OPENAI_KEY not in err + out
    assert sleeps == [1.0]  # no retry of the 401; the Anthropic 500 was retried
    assert {p.parent.name for p in tmp_path.rglob("*.json")} == {"anthropic"}


# ---------------------------------------------------------------- the HTTP client


def client_get(url, policy=None, headers=None):
    waited: list[float] = []
    body = None
    error = None
    try:
        body = api.get(url, headers or {}, secrets=[OPENAI_KEY], policy=policy or api.RetryPolicy(),
                       sleep=waited.append, now=lambda: NOW)
    except api.BillingAPIError as exc:
        error = str(exc)
    return body, error, waited


def test_5xx_backs_off_exponentially_then_gives_up():
    script = Script({("/x", None): [(502, {}, b"bad gateway")]})
    with serve(script) as url:
        body, error, waited = client_get(f"{url}/x", api.RetryPolicy(max_attempts=7, base_delay_s=1, max_delay_s=20))
    assert body is None and "giving up after 7 attempts: HTTP 502" in error
    assert waited == [1, 2, 4, 8, 16, 20]  # doubled, capped at 20
    assert len(script.requests) == 7


def test_retry_after_forms_and_limits():
    assert api.retry_after_seconds("7", lambda: NOW) == 7
    assert api.retry_after_seconds("Tue, 01 Jul 2025 12:00:30 GMT", lambda: NOW) == 30
    assert api.retry_after_seconds("Tue, 01 Jul 2025 11:00:00 GMT", lambda: NOW) == 0  # in the past
    assert api.retry_after_seconds("soon", lambda: NOW) is None
    script = Script({("/x", None): [(429, {"Retry-After": "3600"}, b"{}")]})
    with serve(script) as url:
        _, error, waited = client_get(f"{url}/x")
    assert waited == [] and "Retry-After 3600s exceeds 600s" in error
    script = Script({("/x", None): [(429, {}, b"{}"), (429, {"Retry-After": "Tue, 01 Jul 2025 12:00:02 GMT"}, b"{}"),
                                    ok(b'{"data": []}')]})
    with serve(script) as url:
        body, _, waited = client_get(f"{url}/x")
    assert body == b'{"data": []}' and waited == [1, 2]  # no header: back-off; a date: 2 s from NOW


def test_redirects_are_refused_so_the_key_stays_home():
    elsewhere = Script({("/steal", None): [ok(b"{}")]})
    with serve(elsewhere) as other:
        home = Script({("/x", None): [(302, {"Location": f"{other}/steal"}, b"")]})
        with serve(home) as url:
            _, error, _ = client_get(f"{url}/x", headers={"Authorization": f"Bearer {OPENAI_KEY}"})
    assert "HTTP 302" in error and elsewhere.requests == []


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _, error, waited = client_get(f"http://127.0.0.1:{port}/x", api.RetryPolicy(max_attempts=3))
    assert waited == [1, 2] and "connection error to 127.0.0.1" in error


def test_pagination_guards():
    page = {"data": [], "has_more": True, "next_page": "same"}
    script = Script({("/p", None): [ok(json.dumps(page).encode())], ("/p", "same"): [ok(json.dumps(page).encode())]})
    endpoint = api.Endpoint("openai", "p", "/p", ())
    with serve(script) as url, pytest.raises(api.BillingAPIError, match="next_page token repeats"):
        list(api.iter_pages("openai", endpoint, dt.date(2025, 6, 1), dt.date(2025, 6, 1), key=OPENAI_KEY, base=url,
                            policy=api.RetryPolicy(), sleep=lambda s: None, now=lambda: NOW))
    script = Script({("/p", None): [ok(b"<html>maintenance</html>")]})
    with serve(script) as url, pytest.raises(api.BillingAPIError, match="not JSON"):
        list(api.iter_pages("openai", endpoint, dt.date(2025, 6, 1), dt.date(2025, 6, 1), key=OPENAI_KEY, base=url,
                            policy=api.RetryPolicy(), sleep=lambda s: None, now=lambda: NOW))


def test_base_urls():
    assert api.check_base_url("https://api.openai.com/") == "https://api.openai.com"
    assert api.check_base_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert api.check_base_url("http://localhost:9") == "http://localhost:9"
    for bad in ("http://example.com", "ftp://api.openai.com", "https://user:pw@api.openai.com", "https://x.com/?a=1"):
        with pytest.raises(api.BillingAPIError):
            api.check_base_url(bad)
    assert api.base_url("anthropic", {}) == "https://api.anthropic.com"


def test_time_params_cover_whole_utc_days():
    assert api.time_params("openai", dt.date(2025, 6, 1), dt.date(2025, 6, 1)) == [
        ("start_time", "1748736000"), ("end_time", "1748822400")]  # one day: 86,400 s
    assert api.time_params("anthropic", dt.date(2025, 6, 30), dt.date(2025, 7, 1)) == [
        ("starting_at", "2025-06-30T00:00:00Z"), ("ending_at", "2025-07-02T00:00:00Z")]
