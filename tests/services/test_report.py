"""`thinktax report`: one self-contained HTML file, written after every run, rendered by Chromium."""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pytest

from tests import bi_landing
from pipelines.defs.report import REPORT, report as report_asset
from pipelines.defs.resources import ThinktaxResource
from services import report
from thinktax.cli import main
from warehouse.db import copy_warehouse

EXTERNAL = re.compile(r"""(?:src|href|xlink:href|action)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                      re.IGNORECASE)


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> bi_landing.Published:
    return bi_landing.published(tmp_path_factory)


def _has_column(con, table: str, column: str) -> bool:
    schema, name = table.split(".")
    return con.execute("SELECT count(*) FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? AND column_name = ?",
                       [schema, name, column]).fetchall()[0][0] > 0


@pytest.fixture(scope="module")
def full(pub, tmp_path_factory) -> Path:
    """The fixture warehouse plus a contract-shaped break-even mart and one alert, so every chart has data."""
    path = tmp_path_factory.mktemp("full") / "thinktax.duckdb"
    copy_warehouse(pub.warehouse, path)
    with duckdb.connect(str(path)) as con:
        con.execute(bi_landing.BREAKEVEN_ROWS)
        con.execute("INSERT INTO ops.alerts (alert, model, fired_at, window_spend_usd, threshold_usd, delivered, message) "
                    "VALUES ('breakeven', 'o3', TIMESTAMP '2025-06-10 02:00:00', 40800, 23593.60, false, 'o3 crossed')")
        if _has_column(con, "ops.alerts", "window_spend_usd_per_month"):  # nightly alert columns (migration 090)
            # $40,800 over 30 days scaled to a month: 40,800 x 730 / (24 x 30) = 41,366.67
            con.execute("UPDATE ops.alerts SET window_spend_usd_per_month = 41366.666667")
    return path


def test_report_of_the_fixture_warehouse(pub, tmp_path):
    out = report.write_report(pub.warehouse, tmp_path / "r.html")
    html = out.read_text(encoding="utf-8")
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assert "http://" not in html and "https://" not in html and "<script" not in html
    # daily spend, thinking share, cost per task, tier mix, break-even for o3, spend forecast
    assert html.count("<svg") == 6
    for title in ("Daily spend by source and tier", "Thinking share of spend per model", "Cost per task by task type",
                  "Tier mix against target", "Self-host break-even per reasoning model", "Spend forecast",
                  "Break-even outlook per model and substitution", "Team budgets", "Alert state"):
        assert f"<h2>{title}</h2>" in html
    # headline: last 30 days (2025-05-12 .. 2025-06-10) = $12.234; thinking 4.08 + 0.075 + 1.2 = 5.355 = 43.8 %
    assert "2025-05-12 to 2025-06-10" in html
    assert "<b>$12.23</b><span>spend, last 30 days</span>" in html
    assert "<b>43.8%</b><span>of it thinking ($5.36)</span>" in html
    assert "<b>28</b><span>calls</span>" in html  # 8 named calls (not c1) + 20 misc
    # thinking share per model: o3 4.08 / 4.59 = 88.9 %; qwen3-32b 1.2 / 6.0 = 20.0 %
    assert "$4.59 · thinking 88.9%" in html and "$6.00 · thinking 20.0%" in html
    # cost per task: code_review (4.216 + 0.274) / 2
    assert "$2.25 per task · 2 tasks" in html
    # tier mix of calls: fast 23/28 = 82.1 %, medium 2/28 = 7.1 %, full 3/28 = 10.7 %, targets 80/15/5
    for share in (">82.1%<", ">7.1%<", ">10.7%<", ">80.0%<", ">15.0%<", ">5.0%<"):
        assert share in html
    # the daily chart's bars: one rect per (day, serving, tier) with spend, over 2025-05-11 .. 2025-06-10
    assert "<title>2025-05-11 api · fast: $2.00</title>" in html
    assert "<title>2025-06-09 self-hosted · idle: $2.00</title>" in html
    assert "billed by API providers" in html  # the OpenAI cost page, drawn as a line over the bars
    # break-even, 2025-06: 2 o3 calls at $0.187; 2 x H100 $2,920/month for 438,000 calls; 2,920 / 0.187 = 15,615
    assert 'o3 — o3-2xh100: <span class="verdict">stay_on_api</span>' in html
    assert "break-even 15,615 calls/month" in html
    assert "one deployment costs $2,920/month for up to 438,000 calls" in html
    # alert state: o3 window spend 4.59 x 730 / 720 = $4.65 a month, far below $2,920: armed, nothing sent
    assert "<td>breakeven</td><td>o3</td><td>armed</td><td class=num>$4.65</td><td class=num>$2,920</td>" in html
    assert "No alert has fired" in html


def test_a_note_instead_of_the_break_even_chart_when_the_mart_is_absent(pub, tmp_path):
    path = tmp_path / "old.duckdb"
    copy_warehouse(pub.warehouse, path)
    with duckdb.connect(str(path)) as con:
        con.execute("DROP TABLE IF EXISTS marts.self_host_breakeven")
    html = report.write_report(path, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "marts.self_host_breakeven is not in this warehouse yet" in html
    assert html.count("<svg") == 5  # the forecast chart stays


def test_breakeven_chart_and_alerts(full, tmp_path):
    html = report.write_report(full, tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 7  # the four above + the forecast + one break-even chart per feasible model (o3, deepseek-r1)
    assert "o3 — big-16xh200: <span class=\"verdict\">self_host</span>" in html
    assert "break-even 114,531 calls/month" in html  # 23,593.60 / 0.206
    assert "observed 200,000 calls ($41,200)" in html
    assert "break-even 95,254 calls/month" in html    # deepseek-r1 on 8 x B200: 19,622.40 / 0.206
    assert "savings at the observed volume -$7,262" in html
    with duckdb.connect(str(full), read_only=True) as con:
        per_month = _has_column(con, "ops.alerts", "window_spend_usd_per_month")
    spend = "$41,367" if per_month else "$40,800"
    assert f"<td>o3</td><td class=num>{spend}</td><td class=num>$23,594</td><td>no</td>" in html
    assert not EXTERNAL.search(html)


def test_self_host_step_function():
    # 200,000 calls with a capacity of 150,000 need 2 deployments of $23,593.60
    assert report.self_host_usd(200_000, 150_000, 23_593.60) == pytest.approx(47_187.20)
    assert report.self_host_usd(150_000, 150_000, 23_593.60) == pytest.approx(23_593.60)
    assert report.self_host_usd(150_001, 150_000, 23_593.60) == pytest.approx(47_187.20)
    assert report.self_host_usd(0, 150_000, 23_593.60) == pytest.approx(23_593.60)  # one deployment at least


def test_cli_report(pub, tmp_path, capsys):
    out = tmp_path / "cli.html"
    assert main(["report", "--warehouse", str(pub.warehouse), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"report: {out}" in capsys.readouterr().out
    assert main(["report", "--warehouse", str(tmp_path / "missing.duckdb")]) == 2
    assert "no published warehouse" in capsys.readouterr().err


def test_default_path_is_next_to_the_warehouse():
    assert report.default_path(Path("/data/warehouse/thinktax.duckdb")) == Path("/data/warehouse/report.html")


def _materialize_report(warehouse: Path, landing: Path) -> dg.ExecuteInProcessResult:
    return dg.materialize([report_asset], resources={"thinktax": ThinktaxResource(landing=str(landing), warehouse=str(warehouse))},
                          raise_on_error=False)


def test_report_asset_writes_next_to_the_warehouse(pub, tmp_path):
    wh = tmp_path / "thinktax.duckdb"
    copy_warehouse(pub.warehouse, wh)
    result = _materialize_report(wh, pub.landing)
    assert result.success
    [mat] = result.asset_materializations_for_node(report_asset.op.name)
    assert mat.metadata["rendered"].value is True
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    [check] = result.get_asset_check_evaluations()
    assert (check.asset_key, check.check_name, check.passed) == (REPORT, "rendered", True)


def test_a_report_bug_does_not_fail_the_run_and_keeps_the_old_report(tmp_path, monkeypatch):
    wh = tmp_path / "thinktax.duckdb"
    duckdb.connect(str(wh)).close()  # a warehouse without the marts: rendering fails
    (tmp_path / "report.html").write_text("yesterday's report")
    result = _materialize_report(wh, tmp_path)
    assert result.success  # the data run goes on
    [check] = result.get_asset_check_evaluations()
    assert check.passed is False and "CatalogException" in check.metadata["error"].value
    [mat] = result.asset_materializations_for_node(report_asset.op.name)
    assert mat.metadata["rendered"].value is False
    assert (tmp_path / "report.html").read_text() == "yesterday's report"
    assert not list(tmp_path.glob(".report-*")), "no temporary file left behind"


def test_the_nightly_job_writes_the_report(tmp_path_factory):
    """`thinktax run` (the whole Dagster job) publishes the warehouse and then writes report.html beside it."""
    pub = bi_landing.published(tmp_path_factory)
    html = pub.report.read_text(encoding="utf-8")
    assert "<b>$12.23</b><span>spend, last 30 days</span>" in html
    assert not EXTERNAL.search(html)


# --- PNG through headless Chromium -------------------------------------------------------------

@pytest.fixture(scope="session")
def chromium() -> str:
    exe = report.chromium()
    if exe:
        return exe
    try:
        subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, timeout=300)
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True, capture_output=True, timeout=600,
                       env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"chromium is not installed and `apt-get install -y chromium` failed ({exc}); "
                    "the PNG rendering test needs Debian's chromium package")
    exe = report.chromium()
    if not exe:
        pytest.skip("apt-get installed chromium but no chromium binary is on PATH")
    return exe


def decode_png(data: bytes) -> np.ndarray:
    """RGB pixels of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes), with zlib + numpy."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1)
        if kind == 0:  # None
            cur = line.copy()
        elif kind == 1:  # Sub: a running sum per channel, mod 256
            cur = np.cumsum(line.reshape(width, bpp).astype(np.uint32), axis=0).astype(np.uint8).reshape(stride)
        elif kind == 2:  # Up
            cur = line + prev
        else:  # Average (3) and Paeth (4) depend on the decoded left byte: byte by byte
            row, up = bytearray(line.tobytes()), prev.tobytes()
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b = up[i]
                if kind == 3:
                    row[i] = (row[i] + ((a + b) >> 1)) & 0xFF
                    continue
                c = up[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            cur = np.frombuffer(bytes(row), dtype=np.uint8)
        out[y] = cur
        prev = out[y]
    return out.reshape(height, width, bpp)[:, :, :3]


def colour_counts(img: np.ndarray) -> dict[int, int]:
    flat = img.reshape(-1, 3).astype(np.uint32)
    codes, counts = np.unique((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2], return_counts=True)
    return dict(zip(codes.tolist(), counts.tolist()))


def test_report_renders_to_a_png_with_charts(full, tmp_path, chromium):
    html = report.write_report(full, tmp_path / "report.html")
    png = report.screenshot(html, tmp_path / "report.png")  # --window-size=1400,3000, offline flags
    img = decode_png(png.read_bytes())
    assert img.shape == (3000, 1400, 3)
    counts = colour_counts(img)
    assert len(counts) > 50, "the page rendered (nearly) blank"
    white = counts.get(0xFFFFFF, 0)
    assert white < 0.97 * 3000 * 1400
    # every chart paints its own solid colours (bar interiors are exact, not anti-aliased):
    for name, colour in [("thinking share (thinking part)", report.THINK_COLOUR), ("cost per task bars", report.ACTUAL_COLOUR),
                         ("break-even step function", report.STEP_COLOUR), ("API full tier in daily spend", "#08519c"),
                         ("idle node time in daily spend", "#bdbdbd"), ("thinking share (other part)", report.OTHER_COLOUR)]:
        assert counts.get(int(colour[1:], 16), 0) > 500, f"{name} ({colour}) is missing from the PNG"


def test_break_even_beyond_one_deployment_is_said_not_drawn():
    # capacity 100,000 calls for $20,000 a month, API $0.10 a call: break-even 200,000 > 100,000, so the API
    # line (0.10 x) never reaches the steps (20,000 x ceil(x / 100,000) >= 0.20 x): no crossing to mark.
    row = {"api_cost_per_call_usd": 0.10, "self_host_usd_per_month": 20_000, "capacity_calls_per_month": 100_000,
           "api_calls": 30_000, "breakeven_calls_per_month": 200_000, "api_spend_usd": 3_000}
    svg = report.breakeven_chart("m", row)
    assert "break-even 200,000" not in svg and 'r="6"' not in svg  # no break-even marker
    assert ">300k<" in svg or ">400k<" in svg  # x axis runs past 3 x capacity: the steps show
    assert "does not pay at any volume" in report._beyond(row)
    assert report._beyond({**row, "breakeven_calls_per_month": 50_000}) == ""
    pays = report.breakeven_chart("m", {**row, "self_host_usd_per_month": 5_000, "breakeven_calls_per_month": 50_000})
    assert "break-even 50,000 calls/month" in pays
