"""Open every thinktax dashboard of a running Superset in headless Chromium; report what each chart got.

Runs with the Python of Superset's venv (it has playwright, tools/superset.txt), driving Debian's
``/usr/bin/chromium`` (no browser download). Used by tests/bi/test_superset.py and for the screenshots of
docs/bi.md:

    python tools/superset_shot.py --url http://127.0.0.1:8088 --password ... --out DIR

Prints one JSON object: per dashboard its slug, title, the PNG written (``DIR/<slug>.png``, the whole
page; its pixels also as raw RGB bytes, ``DIR/<slug>.rgb``, decoded by Pillow, with the size), the charts the dashboard holds (Superset's API) and, per chart, what the browser's own data
request got back (HTTP status, rows, error, the first rows), plus the error messages shown in the page.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MAX_ROWS = 50  # rows of each chart's data kept in the report
# what Superset draws when a chart fails (its ErrorAlert / ErrorMessage components)
ERROR_SELECTOR = ".dashboard-component-chart-holder .ant-alert-error, .dashboard-component-chart-holder [role=alert]"


def _chart_data(resp, seen: dict) -> None:
    if "/api/v1/chart/data" not in resp.url:
        return
    try:
        body = resp.request.post_data_json or {}
    except ValueError:
        body = {}
    slice_id = (body.get("form_data") or {}).get("slice_id")
    entry = {"status": resp.status, "rows": None, "error": None, "data": None}
    try:
        payload = resp.json()
        results = payload.get("result") or []
        entry["rows"] = sum(int(r.get("rowcount") or 0) for r in results)
        entry["data"] = [row for r in results for row in (r.get("data") or [])][:MAX_ROWS]
        errors = [r.get("error") for r in results if r.get("error")]
        entry["error"] = "; ".join(errors) or payload.get("message") or None
    except Exception as exc:  # noqa: BLE001  (an unreadable body is itself the error to report)
        entry["error"] = f"unreadable response: {exc}"
    seen[slice_id] = entry


def _login(page, url: str, user: str, password: str, timeout_s: float) -> None:
    """Log in through Superset's form, again every minute while the browser is sent back to /login/
    (CI, 2026-12-07, under load: the form was submitted and the browser landed on
    /login/?next=/superset/welcome/ for 180 s; the login page is a React app that can re-render its
    form after it was filled). Fails with the page's own message after ``timeout_s``."""
    t0 = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        page.goto(f"{url}/login/", wait_until="domcontentloaded")
        page.wait_for_load_state("networkidle")
        page.fill("input[name=username], #username", user)
        page.fill("input[name=password], #password", password)
        page.keyboard.press("Enter")
        try:
            page.wait_for_url(lambda u: "/login" not in u, timeout=60_000)
        except Exception:  # noqa: BLE001  (a timeout: the session is checked below either way)
            pass
        if page.request.get(f"{url}/api/v1/me/").status == 200:  # the session is a logged-in one
            return
        if time.monotonic() - t0 > timeout_s:
            shown = page.inner_text("body")[:500] if page.query_selector("body") else ""
            raise RuntimeError(f"not logged in to {url} as {user} after {attempts} attempts in "
                               f"{time.monotonic() - t0:.0f} s, at {page.url}; the page says: {shown!r}")


def run(url: str, user: str, password: str, out: Path, slugs: list[str], chromium: str, user_data: Path,
        timeout_s: float) -> dict:
    from PIL import Image  # noqa: PLC0415
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"dashboards": []}
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(user_data), executable_path=chromium, headless=True, args=FLAGS,
            viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        _login(page, url, user, password, timeout_s)
        if not slugs:
            listing = page.request.get(f"{url}/api/v1/dashboard/?q=(page_size:100)").json()
            slugs = sorted(d["slug"] for d in listing["result"] if (d.get("slug") or "").startswith("thinktax-"))
        for slug in slugs:
            charts = page.request.get(f"{url}/api/v1/dashboard/{slug}/charts").json()["result"]
            meta = page.request.get(f"{url}/api/v1/dashboard/{slug}").json()["result"]
            want = {c["id"]: c["slice_name"] for c in charts}
            seen: dict = {}
            handler = lambda resp, seen=seen: _chart_data(resp, seen)  # noqa: E731
            page.on("response", handler)
            t0 = time.monotonic()
            page.goto(f"{url}/superset/dashboard/{slug}/?standalone=1", wait_until="domcontentloaded")
            while set(want) - set(seen) and time.monotonic() - t0 < timeout_s:
                page.wait_for_timeout(250)
            page.wait_for_load_state("networkidle")
            # on a loaded machine the grid can still be (re-)mounting once the data has arrived, and the first
            # dashboard opened after login can stay a blank grid (CI, 2026-12-07: the anomalies page, 0.6 % ink):
            # wait until every chart holder has drawn, reloading the page every minute,
            # for up to --timeout seconds in all; the report says whether it drew and after how many loads
            # (not just an svg: Superset's loading spinner and the chart menu's icons are svgs, so a page of
            # spinners passed that test; now a canvas, table or big number, and no loading indicator left)
            drawn = ("(() => { const h = [...document.querySelectorAll('.dashboard-component-chart-holder')];"
                     f" return h.length >= {len(want)} && h.every(x => x.querySelector('canvas, table, .superset-legacy-chart-big-number')"
                     " && !x.querySelector('[data-test=loading-indicator]')); })()")
            loads, ok = 1, False
            while True:
                try:
                    page.wait_for_function(drawn, timeout=60_000)
                    ok = True
                    break
                except Exception:  # noqa: BLE001  (a timeout: reload, or give up and report drawn=false)
                    if time.monotonic() - t0 > timeout_s:
                        break
                    page.reload(wait_until="domcontentloaded")
                    loads += 1
                    page.wait_for_load_state("networkidle")
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1500)  # the ECharts entry animation
            errors = [e.inner_text()[:300] for e in page.query_selector_all(ERROR_SELECTOR)]
            png = out / f"{slug}.png"
            page.screenshot(path=str(png), full_page=True)
            with Image.open(png) as im:  # the pixels, decoded once by Pillow, for the test's pixel counts
                rgb = im.convert("RGB")
                png.with_suffix(".rgb").write_bytes(rgb.tobytes())
                size = list(rgb.size)
            page.remove_listener("response", handler)
            report["dashboards"].append({
                "slug": slug, "title": meta["dashboard_title"], "png": str(png),
                "rgb": str(png.with_suffix(".rgb")), "size": size,
                "seconds": round(time.monotonic() - t0, 1), "drawn": ok, "loads": loads,
                "charts": {str(cid): {"name": name, **seen.get(cid, {"status": None, "rows": None,
                                                                      "error": "no data request seen"})}
                           for cid, name in want.items()},
                "page_errors": errors})
        ctx.close()
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--user", default="admin")
    ap.add_argument("--password", default=os.environ.get("THINKTAX_BI_PASSWORD"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dashboard", action="append", default=[], help="a slug; default: every thinktax-* dashboard")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--user-data-dir", type=Path, default=None, help="default: <out>/chromium-profile (fresh)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per dashboard (its charts drawn)")
    a = ap.parse_args(argv)
    if not a.password:
        ap.error("--password or THINKTAX_BI_PASSWORD is needed")
    if not Path(a.chromium).exists():
        print(f"{a.chromium}: no Chromium there (Debian: apt-get install -y chromium)", file=sys.stderr)
        return 2
    profile = a.user_data_dir or a.out / "chromium-profile"
    json.dump(run(a.url, a.user, a.password, a.out, a.dashboard, a.chromium, profile, a.timeout), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
