"""The Superset dashboards of bi/superset/, provisioned and opened in a real browser (issue 45).

One Superset per module: a small demo is published (45 days, 60 tasks a day: long enough for the Vertex AI
days, the anomalies' history and the agent traces, so that every chart has rows; the anomaly floor is
lowered to $2 for its small traffic), Superset's venv (.thinktax/superset-venv, tools/superset.txt; made
once and kept, like the FOCUS validator's) provisions a fresh metadata DB under tmp_path with
tools/superset_bi.py exactly as `make bi` does (its migrations started first, while the demo runs), gunicorn serves it on 127.0.0.1 at a free port, and
tools/superset_shot.py opens every dashboard in Debian's headless chromium (playwright driving
/usr/bin/chromium, the flags of docs/bi.md, a fresh profile), records each chart's own data request
and writes a PNG of the page.

Set THINKTAX_BI_SHOTS=docs/img (`make bi-screenshots`) to copy the PNGs there for docs/bi.md, as
docs/img/superset-<dashboard>.png.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.services.test_report import chromium  # noqa: F401  (the fixture: apt-installs Debian's chromium when missing)

# a 45-day demo run, Superset's migrations, its import and eight dashboards in Chromium: ~10 min here under load
pytestmark = [pytest.mark.slow, pytest.mark.venv, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
PINS = REPO / "tools" / "superset.txt"
VENV = REPO / ".thinktax" / "superset-venv"
PASSWORD = "thinktax-test-pw"
DASHBOARDS = {"thinktax-spend-overview", "thinktax-thinking-tax", "thinktax-tier-mix",
              "thinktax-self-host-breakeven", "thinktax-bills-and-invoices", "thinktax-data-quality",
              "thinktax-anomalies", "thinktax-chargeback"}
# Floors for a page that shows its charts, measured on the 45-day demo at 1400 px wide (2026-12-07): the share
# of pixels that are neither of the page's two commonest colours (white cards, grey page) was 6.3 % (anomalies)
# to 15.7 %; the share of coloured pixels (bars, table bars: max - min channel > 40) 1.4 % to 8.8 %. A page whose
# charts are blank or errors falls below (a blank grid: 0.5 %).
INK_FLOOR = 0.05
COLOUR_FLOOR = 0.01


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def superset_python() -> Path:
    """Superset's venv, made from tools/superset.txt with .venv's uv when missing or stale."""
    py = VENV / "bin" / "python"
    stamp = VENV / ".installed"
    if not (stamp.exists() and stamp.read_text() == PINS.read_text()):
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        uv = Path(sys.executable).with_name("uv")
        r = subprocess.run([str(uv), "pip", "sync", "--quiet", "--python", str(py), "--compile-bytecode", str(PINS)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"could not install Superset from {PINS.name} (no package index?): {r.stderr[-500:]}")
        stamp.write_text(PINS.read_text())
    return py


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    """A small demo (45 days, 60 tasks a day), published by `thinktax demo` (the whole Dagster job)."""
    from thinktax.cli import main

    base = tmp_path_factory.mktemp("bi_demo")
    wh = base / "thinktax.duckdb"
    saved = dict(os.environ)
    os.environ["DAGSTER_HOME"] = str(base / "dagster_home")
    try:
        # the demo's drift and spike at 60 tasks a day are ~$5 and ~$8 a day over (the $100 default is for 1,700)
        (base / "thinktax.toml").write_text("[anomaly]\nmin_impact_usd = 2.0\n")
        rc = main(["demo", "--landing", str(base / "landing"), "--warehouse", str(wh), "--config",
                   str(base / "thinktax.toml"), "--days", "45", "--tasks-per-day", "60"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert rc == 0
    return wh


@pytest.fixture(scope="module")
def superset_init(superset_python, tmp_path_factory):
    """The metadata DB's migrations and the user (`superset_bi.py init`, about a minute), started in the
    background first: they need no warehouse, so they run while the demo is being published."""
    home = tmp_path_factory.mktemp("superset_home")
    env = {**os.environ, "THINKTAX_BI_PASSWORD": PASSWORD}
    proc = subprocess.Popen([str(superset_python), str(REPO / "tools" / "superset_bi.py"), "init", "--home", str(home)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    yield home, proc
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@pytest.fixture(scope="module")
def superset(superset_python, superset_init, warehouse):
    """Provisioned as `make bi` does, then served by gunicorn on 127.0.0.1:<free port>; yields its URL."""
    home, init = superset_init
    out, _ = init.communicate(timeout=900)
    assert init.returncode == 0, out[-3000:]
    env = {**os.environ, "THINKTAX_BI_PASSWORD": PASSWORD}
    r = subprocess.run([str(superset_python), str(REPO / "tools" / "superset_bi.py"), "provision", "--home", str(home),
                        "--warehouse", str(warehouse)], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "8 dashboards, 37 charts, 20 datasets" in r.stdout, r.stdout[-2000:]
    port = _free_port()
    log = (home / "serve.log").open("w")
    proc = subprocess.Popen([str(superset_python), str(REPO / "tools" / "superset_bi.py"), "serve", "--home", str(home),
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, (home / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "Superset did not answer /health within 240 s"
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def shots(superset, superset_python, chromium, tmp_path_factory) -> dict:  # noqa: F811
    """{slug: the dashboard's report from tools/superset_shot.py}."""
    out = tmp_path_factory.mktemp("superset_shots")
    r = subprocess.run([str(superset_python), str(REPO / "tools" / "superset_shot.py"), "--url", superset,
                        "--password", PASSWORD, "--out", str(out), "--chromium", chromium, "--timeout", "180"],
                       capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = {d["slug"]: d for d in json.loads(r.stdout)["dashboards"]}
    if os.environ.get("THINKTAX_BI_SHOTS"):
        dest = Path(os.environ["THINKTAX_BI_SHOTS"])
        dest.mkdir(parents=True, exist_ok=True)
        for slug, d in report.items():
            shutil.copyfile(d["png"], dest / f"superset-{slug.removeprefix('thinktax-')}.png")
    return report


def _charts(shots: dict) -> dict[str, dict]:
    return {c["name"]: c for d in shots.values() for c in d["charts"].values()}


def test_every_dashboard_is_there(shots):
    assert set(shots) == DASHBOARDS
    assert sum(len(d["charts"]) for d in shots.values()) == 37


def test_every_chart_answers_its_data_request_with_rows_and_no_error(shots):
    charts = _charts(shots)
    failed = {n: (c["status"], c["error"]) for n, c in charts.items() if c["status"] != 200 or c["error"]}
    assert not failed
    empty = {n for n, c in charts.items() if not c["rows"]}
    assert not empty  # the demo exercises every source (synthetic/demo_sources.py): every mart has rows


def test_each_dashboard_renders_its_charts_above_the_pixel_floors(shots):
    for slug, d in shots.items():
        assert not d["page_errors"], (slug, d["page_errors"])
        assert d["drawn"], (slug, "not every chart holder drew within 180 s", d["loads"], "loads")
        assert Path(d["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", slug
        width, height = d["size"]
        assert width == 1400 and height >= 1000, (slug, d["size"])
        flat = np.frombuffer(Path(d["rgb"]).read_bytes(), dtype=np.uint8).reshape(height * width, 3).astype(np.int64)
        keys, counts = np.unique((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2], return_counts=True)
        page = [np.array([k >> 16, (k >> 8) & 255, k & 255]) for k in keys[counts.argsort()[::-1][:2]]]
        ink = np.ones(len(flat), bool)
        for bg in page:
            ink &= np.abs(flat - bg).sum(axis=1) > 24
        coloured = (flat.max(axis=1) - flat.min(axis=1)) > 40
        assert ink.mean() > INK_FLOOR, (slug, ink.mean())
        assert coloured.mean() > COLOUR_FLOOR, (slug, coloured.mean())


def _sql(warehouse: Path, query: str) -> list[dict]:
    """`thinktax sql --format json`, the figures a user gets outside Superset."""
    r = subprocess.run([str(Path(sys.executable).with_name("thinktax")), "sql", "--warehouse", str(warehouse),
                        "--format", "json", query], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_charts_show_what_thinktax_sql_gives_on_the_same_marts(shots, warehouse):
    charts = _charts(shots)
    [tot] = _sql(warehouse, "SELECT SUM(cost_usd) AS spend, SUM(reasoning_cost_usd) / SUM(cost_usd) AS share, "
                            "(SELECT count(*) FROM ops.quarantine) AS quarantined FROM marts.daily_spend")
    assert float(tot["spend"]) > 0
    [spend] = charts["Spend"]["data"]
    assert float(spend["spend (USD)"]) == pytest.approx(float(tot["spend"]), abs=1e-6)
    [share] = charts["Thinking share of spend"]["data"]
    assert float(share["thinking share"]) == pytest.approx(float(tot["share"]), rel=1e-9)

    tiers = {r["tier"]: int(r["calls"]) for r in _sql(
        warehouse, "SELECT tier, SUM(calls) AS calls FROM marts.tier_mix WHERE team = '*' GROUP BY tier")}
    got = {r["tier"]: r for r in charts["Tier mix against the 80/15/5 target (all teams)"]["data"]}
    assert {t: int(r["calls"]) for t, r in got.items()} == tiers
    assert {t: r["target share"] for t, r in got.items()} == {"fast": 0.8, "medium": 0.15, "full": 0.05}
    # Superset's percent metric: each tier's calls over all calls
    assert got["full"]["%calls"] == pytest.approx(tiers["full"] / sum(tiers.values()), rel=1e-9)

    acct = {r["folder"]: r for r in _sql(
        warehouse, "SELECT folder, SUM(rows_in) AS rows_in, SUM(rows_loaded) AS loaded, SUM(rows_quarantined) AS q, "
                   "SUM(coalesce(rows_skipped, 0)) AS skipped FROM ops.ingested_files GROUP BY folder")}
    shown = {r["folder"]: r for r in charts["Rows in = loaded + duplicate + quarantined + skipped, per source"]["data"]}
    assert set(shown) == set(acct)
    for folder, r in shown.items():
        a = acct[folder]
        assert (r["rows in"], r["loaded"], r["quarantined"], r["skipped"]) == (a["rows_in"], a["loaded"], a["q"],
                                                                             a["skipped"]), folder
        assert r["unaccounted"] == 0, folder
    by_source = charts["Quarantined records by source folder"]["data"]
    assert sum(r["records"] for r in by_source) == tot["quarantined"] > 0


def test_the_new_sources_and_dashboards_show_what_thinktax_sql_gives(shots, warehouse):
    """The charts of issue 45's sources and of the Anomalies and Chargeback dashboards, against the same marts."""
    charts = _charts(shots)
    # Chargeback: each cost center's total (its '*' row), to the cent as the chart's SUM gives it
    want = {r["cost_center"]: float(r["total"]) for r in _sql(
        warehouse, "SELECT cost_center, SUM(total_cost_usd) AS total FROM marts.chargeback WHERE principal_kind = '*' "
                   "GROUP BY cost_center")}
    got = {r["cost_center"]: float(r["total (USD)"]) for r in charts["Chargeback per cost center"]["data"]}
    assert got.keys() == want.keys() and len(got) > 3
    assert all(got[k] == pytest.approx(want[k], abs=1e-6) for k in want)
    # Anomalies: the anomalous days and their impact
    [an] = _sql(warehouse, "SELECT count(*) AS n, SUM(impact_usd) AS impact FROM marts.spend_anomalies WHERE is_anomaly")
    rows = charts["Anomalous days: what moved, by how much, and its root cause"]["data"]
    assert 0 < len(rows) == min(int(an["n"]), 50)
    if int(an["n"]) <= 50:
        assert sum(float(r["impact (USD)"] or 0) for r in rows) == pytest.approx(float(an["impact"] or 0), abs=1e-6)
    # Cloud invoices: the demo's planted difference (synthetic/demo_sources.py: 200,000 Bedrock output tokens
    # billed and not logged, x $15 per 1M = $3.00) is in the Bedrock output row, explained; nothing unexplained
    inv = {(r["provider"], r["bucket"]): r for r in charts["Cloud invoices against the logs"]["data"]}
    [sql] = _sql(warehouse, "SELECT SUM(difference_usd) AS d, SUM(explained_usd) AS e, SUM(unexplained_usd) AS u "
                            "FROM marts.invoice_reconciliation WHERE provider = 'bedrock' AND bucket = 'output'")
    out = inv[("bedrock", "output")]
    assert float(out["difference (USD)"]) == pytest.approx(float(sql["d"]), abs=1e-6)
    assert float(out["difference (USD)"]) == pytest.approx(3.0, abs=0.01)  # the plant, + rounding under a cent
    assert float(out["explained (USD)"]) == pytest.approx(float(sql["e"]), abs=1e-6)
    assert all(float(r["unexplained (USD)"]) == 0 for r in inv.values())
    # Bills: the OpenAI project no gateway logs ($25.00 at o3's rates before the 07-24 cut, 1.5M in + 250k out)
    mism = {(r["provider"], r["model"]): r for r in charts["Largest differences: bill against usage"]["data"]}
    [o3] = _sql(warehouse, "SELECT SUM(difference_usd) AS d FROM marts.bill_reconciliation "
                           "WHERE provider = 'openai' AND model = 'o3'")
    assert float(mism[("openai", "o3")]["difference (USD)"]) == pytest.approx(float(o3["d"]), abs=1e-6)
    assert float(o3["d"]) == pytest.approx(25.0, abs=0.01)
