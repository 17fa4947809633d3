"""The HTML report: one self-contained file (inline CSS and SVG, no script, no URL) that works offline.

It opens the published warehouse read-only and draws, with SVG written here (no chart library):
  1. daily spend stacked by source and tier (+ the billed API amount as a line, when bills exist);
  2. thinking share of spend per model;
  3. cost per task by task type (the 20 most expensive);
  4. the tier mix against the target mix;
  5. the self-host break-even per reasoning model: API cost rising with monthly calls against the
     self-host step function (a deployment's monthly cost for every `capacity` calls), the observed
     volume marked; a note when marts.self_host_breakeven does not exist yet;
  6. the alert state (ops.alerts).
The 30-day charts use the window of the BI example queries in sql/bi/ (the 30 days ending with
the latest day in the warehouse), by running those very files.

`thinktax report` writes it; the Dagster asset ops/report (pipelines/defs/report.py) writes it
next to the warehouse after every publish. `screenshot()` renders it to PNG with headless Chromium
(`make screenshot` -> docs/img/report.png, and tests/services/test_report.py).
"""

from __future__ import annotations

import datetime as dt
import html
import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path

import duckdb

from warehouse.db import read_only
from warehouse.parts import has_table

REPORT_NAME = "report.html"
DAILY_DAYS = 90  # the daily spend chart shows at most this many days, ending with the latest

TIER_ORDER = ("fast", "medium", "full", "idle")
# One hue per source, darker for deeper tiers.
SOURCE_COLOURS = {
    "api": {"fast": "#9ecae1", "medium": "#4292c6", "full": "#08519c"},
    "self_hosted": {"fast": "#a1d99b", "medium": "#41ab5d", "full": "#006d2c", "idle": "#bdbdbd"},
}
BILL_COLOUR = "#cb181d"
THINK_COLOUR = "#d94801"
OTHER_COLOUR = "#fdd0a2"
ACTUAL_COLOUR = "#3182bd"
TARGET_COLOUR = "#bdbdbd"
STEP_COLOUR = "#31a354"


def default_path(warehouse: Path) -> Path:
    """Where the report of a warehouse goes: report.html in the warehouse's folder."""
    return Path(warehouse).with_name(REPORT_NAME)


def bi_query(name: str) -> str:
    """The text of sql/bi/<name>.sql."""
    return resources.files("sql").joinpath("bi", f"{name}.sql").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# formatting

def usd(x: float | Decimal | None) -> str:
    if x is None:
        return "—"
    v = float(x)
    sign, a = ("-" if v < 0 else ""), abs(v)
    if a >= 100:
        return f"{sign}${a:,.0f}"
    if a >= 1 or a == 0:
        return f"{sign}${a:,.2f}"
    return f"{sign}${a:,.4f}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * float(x):.1f}%"


def count(x) -> str:
    return "—" if x is None else f"{float(x):,.0f}"


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def nice_step(span: float, ticks: int = 5) -> float:
    """A 1/2/5 x 10^n step giving about `ticks` ticks over `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def axis_max(v: float) -> tuple[float, float]:
    """(top of the axis, tick step) for values up to v."""
    step = nice_step(v if v > 0 else 1.0)
    top = step * max(1, math.ceil((v if v > 0 else 1.0) / step - 1e-9))
    return top, step


def short(x: float) -> str:
    """Axis label: 1.2k, 3M, 0.05."""
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:g}M"
    if a >= 1e3:
        return f"{x / 1e3:g}k"
    return f"{x:g}"


# ---------------------------------------------------------------------------------------------
# SVG charts

@dataclass
class Frame:
    width: int = 1200
    height: int = 320
    left: int = 70
    right: int = 20
    top: int = 20
    bottom: int = 50

    @property
    def pw(self) -> int:
        return self.width - self.left - self.right

    @property
    def ph(self) -> int:
        return self.height - self.top - self.bottom


def _svg(f: Frame, body: list[str], label: str) -> str:
    return (f'<svg role="img" aria-label="{esc(label)}" viewBox="0 0 {f.width} {f.height}" '
            f'width="{f.width}" height="{f.height}">' + "".join(body) + "</svg>")


def _y_axis(f: Frame, top: float, step: float, fmt) -> list[str]:
    out = []
    v = 0.0
    while v <= top + 1e-9:
        y = f.top + f.ph - f.ph * v / top
        out.append(f'<line x1="{f.left}" x2="{f.left + f.pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{f.left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{esc(fmt(v))}</text>')
        v += step
    return out


def legend(items: list[tuple[str, str]]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{c}"></i>{esc(t)}</span>' for t, c in items) + "</div>"


def stacked_days(days: list[dt.date], series: list[tuple[str, str, list[float]]],
                 line: tuple[str, str, list[float | None]] | None = None) -> str:
    """Stacked bars per day; series = (label, colour, value per day); optional overlay line."""
    f = Frame()
    totals = [sum(s[2][i] for s in series) for i in range(len(days))]
    peak = max(totals + ([v for v in line[2] if v is not None] if line else []) + [0.0])
    top, step = axis_max(peak)
    body = _y_axis(f, top, step, lambda v: "$" + short(v))
    n = max(len(days), 1)
    slot = f.pw / n
    bar = max(1.0, slot * 0.8)
    for i, day in enumerate(days):
        x = f.left + i * slot + (slot - bar) / 2
        y = f.top + f.ph
        for label, colour, values in series:
            v = values[i]
            if v <= 0:
                continue
            h = f.ph * v / top
            y -= h
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour}">'
                        f'<title>{esc(day)} {esc(label)}: {esc(usd(v))}</title></rect>')
    every = max(1, math.ceil(n / 12))
    for i, day in enumerate(days):
        if i % every == 0 or i == n - 1:
            x = f.left + i * slot + slot / 2
            body.append(f'<text x="{x:.1f}" y="{f.top + f.ph + 18}" class="tick" text-anchor="middle">{esc(day.isoformat()[5:])}</text>')
    if line:
        pts = [(f.left + i * slot + slot / 2, f.top + f.ph - f.ph * v / top)
               for i, v in enumerate(line[2]) if v is not None]
        if pts:
            body.append(f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}" fill="none" '
                        f'stroke="{line[1]}" stroke-width="2" stroke-dasharray="6 3"/>')
            body.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{line[1]}"/>' for x, y in pts)
    body.append(f'<text x="{f.left + f.pw / 2}" y="{f.height - 8}" class="axis" text-anchor="middle">day (UTC)</text>')
    return _svg(f, body, "daily spend stacked by source and tier")


def hbars(rows: list[tuple[str, list[tuple[float, str]], str]], fmt, label: str, width: int = 1200) -> str:
    """Horizontal stacked bars: (row label, [(value, colour)], text at the end of the bar)."""
    f = Frame(width=width, height=30 + 26 * max(len(rows), 1), left=260, right=200, top=10, bottom=20)
    peak = max([sum(v for v, _ in parts) for _, parts, _ in rows] + [0.0])
    top, _ = axis_max(peak)
    body = []
    for i, (name, parts, note) in enumerate(rows):
        y = f.top + i * 26
        body.append(f'<text x="{f.left - 8}" y="{y + 15}" class="lab" text-anchor="end">{esc(name)}</text>')
        x = float(f.left)
        for v, colour in parts:
            w = f.pw * v / top if top else 0
            if w > 0:
                body.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="18" fill="{colour}">'
                            f'<title>{esc(name)}: {esc(fmt(v))}</title></rect>')
            x += w
        body.append(f'<text x="{x + 6:.1f}" y="{y + 15}" class="lab">{esc(note)}</text>')
    return _svg(f, body, label)


def grouped_bars(groups: list[str], series: list[tuple[str, str, list[float]]], label: str) -> str:
    """Vertical grouped bars of shares (0-1): one group per tier, one bar per series."""
    f = Frame(width=700, height=300, left=60)
    body = _y_axis(f, 1.0, 0.2, lambda v: f"{100 * v:.0f}%")
    slot = f.pw / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    for g, name in enumerate(groups):
        for s, (_, colour, values) in enumerate(series):
            v = values[g]
            h = f.ph * v
            x = f.left + g * slot + slot * 0.1 + s * bar
            y = f.top + f.ph - h
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 4:.1f}" height="{h:.1f}" fill="{colour}"/>')
            body.append(f'<text x="{x + (bar - 4) / 2:.1f}" y="{y - 4:.1f}" class="tick" text-anchor="middle">{100 * v:.1f}%</text>')
        body.append(f'<text x="{f.left + g * slot + slot / 2:.1f}" y="{f.top + f.ph + 18}" class="lab" text-anchor="middle">{esc(name)}</text>')
    return _svg(f, body, label)


def self_host_usd(calls: float, capacity: float, monthly: float) -> float:
    """Monthly self-host cost at a volume: max(1, ceil(calls / capacity)) deployments (models/breakeven.py).

    200,000 calls a month with a capacity of 150,000 need 2 deployments: 2 x monthly.
    """
    return (max(1, math.ceil(calls / capacity)) if capacity > 0 else 1) * monthly


def breakeven_chart(model: str, row: dict) -> str:
    """API cost (a line through 0 at api_cost_per_call_usd per call) against the self-host step function."""
    f = Frame(width=1200, height=340, left=80, bottom=55)
    per_call = float(row["api_cost_per_call_usd"] or 0)
    monthly = float(row["self_host_usd_per_month"] or 0)
    capacity = float(row["capacity_calls_per_month"] or 0)
    observed = float(row["api_calls"] or 0)
    breakeven = float(row["breakeven_calls_per_month"] or 0)
    pays = 0 < breakeven <= capacity or capacity <= 0  # break-even within one deployment's capacity
    # show the crossing when there is one, else a few steps of the function
    x_top, x_step = axis_max(max(observed * 1.6, breakeven * 1.5 if pays else capacity * 3.2, 1.0))

    y_top, y_step = axis_max(max(per_call * x_top, self_host_usd(x_top, capacity, monthly)) * 1.05)
    body = _y_axis(f, y_top, y_step, lambda v: "$" + short(v))

    def px(x: float) -> float:
        return f.left + f.pw * x / x_top

    def py(y: float) -> float:
        return f.top + f.ph - f.ph * min(y, y_top) / y_top

    v = 0.0
    while v <= x_top + 1e-9:
        body.append(f'<text x="{px(v):.1f}" y="{f.top + f.ph + 18}" class="tick" text-anchor="middle">{esc(short(v))}</text>')
        v += x_step
    body.append(f'<text x="{f.left + f.pw / 2}" y="{f.height - 10}" class="axis" text-anchor="middle">calls per month</text>')
    # the self-host step function: k deployments from (k-1) x capacity to k x capacity
    pts = []
    k = 1
    while True:
        start = (k - 1) * capacity if capacity > 0 else 0.0
        end = min(k * capacity, x_top) if capacity > 0 else x_top
        level = self_host_usd(end, capacity, monthly)
        pts += [(px(start), py(level)), (px(end), py(level))]
        if capacity <= 0 or end >= x_top or k > 200:
            break
        k += 1
    body.append(f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" fill="none" stroke="{STEP_COLOUR}" stroke-width="3"/>')
    body.append(f'<line x1="{px(0):.1f}" y1="{py(0):.1f}" x2="{px(x_top):.1f}" y2="{py(per_call * x_top):.1f}" '
                f'stroke="{ACTUAL_COLOUR}" stroke-width="3"/>')
    if pays and 0 < breakeven <= x_top:
        body.append(f'<circle cx="{px(breakeven):.1f}" cy="{py(per_call * breakeven):.1f}" r="6" fill="none" stroke="#000" stroke-width="2"/>')
        body.append(f'<text x="{px(breakeven) + 8:.1f}" y="{py(per_call * breakeven) + 18:.1f}" class="lab">'
                    f'break-even {esc(count(breakeven))} calls/month</text>')
    if observed > 0:
        x = px(observed)
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.top}" y2="{f.top + f.ph}" stroke="{BILL_COLOUR}" stroke-width="2" stroke-dasharray="6 4"/>')
        body.append(f'<text x="{x + 6:.1f}" y="{f.top + 14}" class="lab" fill="{BILL_COLOUR}">observed {esc(count(observed))} calls '
                    f'({esc(usd(row["api_spend_usd"]))})</text>')
    return _svg(f, body, f"break-even for {model}")


# ---------------------------------------------------------------------------------------------
# data



def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> list[dict]:
    rel = con.execute(sql, params or [])
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r)) for r in rel.fetchall()]


def _daily(con) -> str:
    rows = _rows(con, """
        WITH last_day AS (SELECT max(day) AS day FROM marts.cost_per_task)
        SELECT c.day, c.serving, c.tier, sum(c.cost_usd) AS cost_usd
        FROM marts.cost_per_task c, last_day
        WHERE c.day > last_day.day - to_days(CAST(? AS INTEGER))
        GROUP BY ALL ORDER BY ALL""", [DAILY_DAYS])
    if not rows:
        return '<p class="note">No priced calls yet.</p>'
    first, last = rows[0]["day"], max(r["day"] for r in rows)
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    index = {d: i for i, d in enumerate(days)}
    keys = sorted({(r["serving"], r["tier"]) for r in rows},
                  key=lambda k: (k[0] != "api", TIER_ORDER.index(k[1]) if k[1] in TIER_ORDER else 9))
    series = []
    for serving, tier in keys:
        values = [0.0] * len(days)
        for r in rows:
            if (r["serving"], r["tier"]) == (serving, tier) and r["cost_usd"] is not None:
                values[index[r["day"]]] += float(r["cost_usd"])
        colour = SOURCE_COLOURS.get(serving, {}).get(tier, "#969696")
        series.append((f"{serving.replace('_', '-')} · {tier}", colour, values))
    line = None
    bills = _rows(con, """
        SELECT day, sum(cost_usd) AS cost_usd FROM marts.daily_spend
        WHERE source = 'api_bill' AND day BETWEEN ? AND ? GROUP BY day""", [first, last])
    if bills:
        billed: list[float | None] = [None] * len(days)
        for b in bills:
            billed[index[b["day"]]] = float(b["cost_usd"] or 0)
        line = ("API bill", BILL_COLOUR, billed)
    items = [(s[0], s[1]) for s in series] + ([("billed by API providers", BILL_COLOUR)] if line else [])
    return stacked_days(days, series, line) + legend(items)


def _thinking(con) -> str:
    rows = _rows(con, bi_query("thinking_share_by_model"))
    if not rows:
        return '<p class="note">No spend in the window.</p>'
    bars = []
    for r in rows:
        cost, think = float(r["cost_usd"] or 0), float(r["thinking_cost_usd"] or 0)
        name = f"{r['model']} ({r['source'].replace('_', '-')})"
        note = f"{usd(cost)} · thinking {pct(r['thinking_share'])}"
        bars.append((name, [(think, THINK_COLOUR), (cost - think, OTHER_COLOUR)], note))
    return hbars(bars, usd, "thinking share of spend per model") + legend(
        [("thinking tokens", THINK_COLOUR), ("everything else (input, output, idle node time)", OTHER_COLOUR)])


def _per_task(con) -> str:
    rows = _rows(con, bi_query("top_task_types_by_cost_per_task"))
    if not rows:
        return '<p class="note">No tasks in the window.</p>'
    bars = [(r["task_type"], [(float(r["cost_per_task_usd"] or 0), ACTUAL_COLOUR)],
             f"{usd(r['cost_per_task_usd'])} per task · {count(r['tasks'])} tasks") for r in rows]
    return hbars(bars, usd, "cost per task by task type")


def _tiers(con, first_day: dt.date | None, last_day: dt.date | None) -> str:
    rows = _rows(con, """
        SELECT tier, sum(calls) AS calls, sum(cost_usd) AS cost_usd, any_value(target_share) AS target_share
        FROM marts.tier_mix WHERE team = '*' AND day BETWEEN ? AND ? GROUP BY tier""", [first_day, last_day])
    by = {r["tier"]: r for r in rows}
    calls = sum(int(r["calls"] or 0) for r in rows)
    cost = sum(float(r["cost_usd"] or 0) for r in rows)
    if not calls:
        return '<p class="note">No calls in the window.</p>'
    tiers = ["fast", "medium", "full"]
    actual = [int(by[t]["calls"] or 0) / calls if t in by else 0.0 for t in tiers]
    target = [float(by[t]["target_share"] or 0) if t in by else 0.0 for t in tiers]
    spend = [float(by[t]["cost_usd"] or 0) / cost if t in by and cost else 0.0 for t in tiers]
    chart = grouped_bars(tiers, [("share of calls", ACTUAL_COLOUR, actual), ("target share of calls", TARGET_COLOUR, target),
                                 ("share of spend", THINK_COLOUR, spend)], "tier mix against target")
    return chart + legend([("share of calls", ACTUAL_COLOUR), ("target share of calls", TARGET_COLOUR),
                           ("share of spend", THINK_COLOUR)])


def _beyond(r: dict) -> str:
    """A note when the break-even volume is more than one deployment serves (then self-hosting never pays)."""
    be, cap = r.get("breakeven_calls_per_month"), r.get("capacity_calls_per_month")
    if be is not None and cap and float(be) > float(cap):
        return (", more than one deployment serves, so every extra deployment costs more than its calls "
                "save: self-hosting does not pay at any volume")
    return ""


def _breakeven(con) -> str:
    if not has_table(con, "marts.self_host_breakeven"):
        return ('<p class="note">marts.self_host_breakeven is not in this warehouse yet, so there is no break-even '
                'chart. It appears here once the break-even mart is built (deployments.csv candidates and '
                'GPU prices in the landing folder).</p>')
    rows = _rows(con, bi_query("breakeven_status"))
    if not rows:
        return '<p class="note">marts.self_host_breakeven has no rows (no reasoning API traffic or no candidate deployments).</p>'
    parts = []
    for r in rows:
        parts.append(f'<h3>{esc(r["model"])} — {esc(r["best_deployment"])}: <span class="verdict">{esc(r["verdict"])}</span></h3>')
        parts.append(
            f'<p class="caption">{esc(r["month"])}: {esc(count(r["api_calls"]))} API calls at {esc(usd(r["api_cost_per_call_usd"]))} '
            f'= {esc(usd(r["api_spend_usd"]))}; one deployment costs {esc(usd(r["self_host_usd_per_month"]))}/month for up to '
            f'{esc(count(r["capacity_calls_per_month"]))} calls; break-even at {esc(count(r["breakeven_calls_per_month"]))} '
            f'calls/month{_beyond(r)}; savings at the observed volume {esc(usd(r["savings_usd"]))}.</p>')
        if r["verdict"] == "infeasible":
            parts.append('<p class="note">No candidate deployment fits this model.</p>')
            continue
        parts.append(breakeven_chart(str(r["model"]), r))
    return "".join(parts) + legend([("API cost", ACTUAL_COLOUR), ("self-host (step per deployment)", STEP_COLOUR),
                                     ("observed volume", BILL_COLOUR)])


def _columns(con, table: str) -> set[str]:
    schema, name = table.split(".")
    return {r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = ? AND table_name = ?", [schema, name]).fetchall()}


def _table(head: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{esc(v)}</td>" for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    return f'<table class="alerts"><tr>{th}</tr>{body}</table>'


def _alerts(con) -> str:
    parts = []
    if has_table(con, "ops.alert_state"):
        state = _rows(con, """
            SELECT alert, model, status, window_spend_usd_per_month, threshold_usd_per_month, window_end
            FROM ops.alert_state ORDER BY alert, model""")
        if state:
            parts.append("<h3>Current state</h3>")
            parts.append(_table(
                ["alert", "model", "status", "window spend / month", "threshold / month", "window ends"],
                [[r["alert"], "all reasoning" if r["model"] == "*" else r["model"], r["status"],
                  usd(r["window_spend_usd_per_month"]), usd(r["threshold_usd_per_month"]), str(r["window_end"] or "—")]
                 for r in state], {3, 4}))
    if not has_table(con, "ops.alerts"):
        return "".join(parts) + '<p class="note">ops.alerts does not exist in this warehouse.</p>'
    per_month = "window_spend_usd_per_month" in _columns(con, "ops.alerts")
    rows = _rows(con, f"""
        SELECT alert, model, fired_at, {'window_spend_usd_per_month' if per_month else 'window_spend_usd'} AS spend,
               threshold_usd, delivered
        FROM ops.alerts ORDER BY fired_at DESC LIMIT 20""")
    if not rows:
        parts.append('<p class="ok">No alert has fired: reasoning API spend has stayed below the break-even threshold.</p>')
        return "".join(parts)
    parts.append("<h3>Alerts sent (newest first)</h3>")
    parts.append(_table(
        ["fired at (UTC)", "alert", "model", "window spend / month" if per_month else "window spend",
         "threshold / month", "delivered"],
        [[f"{r['fired_at']:%Y-%m-%d %H:%M}", r["alert"], "all reasoning" if r["model"] in (None, "*") else r["model"],
          usd(r["spend"]), usd(r["threshold_usd"]), "yes" if r["delivered"] else "no"] for r in rows], {3, 4}))
    return "".join(parts)


CSS = """
body{font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif;margin:24px 32px;color:#222;background:#fff;max-width:1240px}
h1{font-size:26px;margin:0 0 4px} h2{font-size:19px;margin:32px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 2px} .sub{color:#555;margin:0 0 16px}
.kpis{display:flex;gap:14px;flex-wrap:wrap} .kpi{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:150px}
.kpi b{display:block;font-size:22px} .kpi span{color:#555;font-size:13px}
.grid{stroke:#e5e5e5} .tick{font-size:11px;fill:#555} .lab{font-size:12px;fill:#222} .axis{font-size:12px;fill:#555}
.legend{font-size:12px;margin:4px 0 0 70px} .legend span{margin-right:16px;white-space:nowrap}
.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px}
.note{color:#8a6d3b;background:#fcf8e3;padding:8px 12px;border-radius:4px} .ok{color:#2b6e2b;background:#eaf6ea;padding:8px 12px;border-radius:4px}
.caption{color:#444;font-size:13px;margin:0 0 4px} .verdict{font-weight:normal;color:#555}
table.alerts{border-collapse:collapse;font-size:13px} table.alerts td,table.alerts th{border:1px solid #ddd;padding:4px 8px}
.num{text-align:right} footer{margin-top:32px;color:#777;font-size:12px}
.multiples{display:flex;flex-wrap:wrap;gap:8px}
"""


def forecast_chart(rows: list[dict]) -> str:
    """Monthly forecast bars (API blue, self-hosted green, side by side) with 80 % (thick) and 95 % (thin)
    interval whiskers; the observed part of a month under way is drawn darker."""
    months = sorted({r["month"] for r in rows})
    series = [("api", "#2b6cb0", "#1a4472"), ("self_hosted", "#2f855a", "#1c5236")]
    by = {(r["month"], r["serving"]): r for r in rows}
    peak = max([float(r["hi95_usd"] if r["hi95_usd"] is not None else r["forecast_usd"]) for r in rows] + [1.0])
    top, step = axis_max(peak)
    f = Frame(width=1200, height=320, left=80)
    body = _y_axis(f, top, step, lambda v: "$" + short(v))
    slot = f.pw / max(len(months), 1)
    bar = slot * 0.8 / len(series)

    def py(v: float) -> float:
        return f.top + f.ph - f.ph * v / top

    for i, m in enumerate(months):
        for j, (serving, colour, dark) in enumerate(series):
            r = by.get((m, serving))
            if r is None:
                continue
            x = f.left + i * slot + slot * 0.1 + j * bar
            fc, obs = float(r["forecast_usd"]), float(r["observed_usd"] or 0)
            body.append(f'<rect x="{x:.1f}" y="{py(fc):.1f}" width="{bar - 4:.1f}" height="{py(0) - py(fc):.1f}" fill="{colour}">'
                        f'<title>{esc(serving)} {m:%Y-%m}: {esc(usd(fc))} ({esc(r["method"])})</title></rect>')
            if obs > 0:
                body.append(f'<rect x="{x:.1f}" y="{py(obs):.1f}" width="{bar - 4:.1f}" height="{py(0) - py(obs):.1f}" fill="{dark}"/>')
            cx = x + (bar - 4) / 2
            if r["lo95_usd"] is not None:
                body.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{py(float(r["lo95_usd"])):.1f}" y2="{py(float(r["hi95_usd"])):.1f}" stroke="#000" stroke-width="1"/>')
                body.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{py(float(r["lo80_usd"])):.1f}" y2="{py(float(r["hi80_usd"])):.1f}" stroke="#000" stroke-width="4"/>')
        body.append(f'<text x="{f.left + i * slot + slot / 2:.1f}" y="{f.top + f.ph + 18}" class="lab" text-anchor="middle">{m:%Y-%m}</text>')
    return legend([("API", "#2b6cb0"), ("self-hosted", "#2f855a")]) + _svg(f, body, "Spend forecast per month with 80 % and 95 % intervals")


def _forecast(con) -> str:
    if not has_table(con, "marts.spend_forecast"):
        return '<p class="note">marts.spend_forecast is not in this warehouse yet.</p>'
    rows = _rows(con, "SELECT * FROM marts.spend_forecast WHERE scope = 'all' ORDER BY month, serving")
    if not rows:
        return '<p class="note">No spend to forecast yet.</p>'
    def mape(x) -> str:
        return "—" if x is None else f"{x:.1f}%"

    def cover(r) -> str:
        if r.get("backtest_coverage80") is None:
            return "—"
        widened = [f"×{r[k]:.2f}" for k in ("interval_scale80", "interval_scale95") if (r.get(k) or 1) > 1]
        return (f"{r['backtest_coverage80']:.0%} / {r['backtest_coverage95']:.0%} of {r['backtest_windows']}"
                + (f" (widened {' / '.join(widened)})" if widened else ""))

    table = _table(["month", "serving", "forecast", "80 % interval", "95 % interval", "method", "backtest MAPE",
                    "runner-up", "runner-up MAPE", "backtest coverage 80 / 95"],
                   [[f"{r['month']:%Y-%m}", r["serving"], usd(r["forecast_usd"]),
                     "—" if r["lo80_usd"] is None else f"{usd(r['lo80_usd'])} – {usd(r['hi80_usd'])}",
                     "—" if r["lo95_usd"] is None else f"{usd(r['lo95_usd'])} – {usd(r['hi95_usd'])}",
                     r["method"], mape(r["backtest_mape_pct"]), r.get("runner_up_method") or "—",
                     mape(r.get("runner_up_mape_pct")), cover(r)]
                    for r in rows], {2, 3, 4, 6, 8})
    return forecast_chart(rows) + table


def _capacity(con) -> str:
    if not has_table(con, "marts.capacity_plan"):
        return '<p class="note">marts.capacity_plan is not in this warehouse yet.</p>'
    rows = _rows(con, "SELECT * FROM marts.capacity_plan ORDER BY from_model, deployment")
    if not rows:
        return '<p class="note">No reasoning API model has a candidate deployment or substitution.</p>'

    def n(x) -> str:
        return "—" if x is None else count(x)

    def sec(x) -> str:
        return "—" if x is None else f"{x:,.1f} s"

    return _table(["traffic of", "deployment", "calls replayed", "slots / replica", "p95 slot time", "target",
                   "replicas p95 (delay)", "replicas p99 (delay)", "peak sizing", "planned replicas", "planned GPUs", "basis"],
                  [[r["from_model"], r["deployment"], n(r["calls_replayed"]), n(r["slots_per_replica"]),
                    sec(r["p95_service_seconds"]), sec(r["max_queue_seconds"]),
                    "—" if r["replicas_p95"] is None else f"{count(r['replicas_p95'])} ({sec(r['p95_queue_seconds'])})",
                    "—" if r["replicas_p99"] is None else f"{count(r['replicas_p99'])} ({sec(r['p99_queue_seconds'])})",
                    n(r["peak_deployments_needed"]), n(r["planned_replicas"]), n(r["planned_gpus"]),
                    r["sizing_basis"] or ("does not fit" if not r["fits"] else "—")]
                   for r in rows], {2, 3, 4, 5, 8, 9, 10})


def _outlook(con) -> str:
    if not has_table(con, "marts.breakeven_outlook"):
        return '<p class="note">marts.breakeven_outlook is not in this warehouse yet.</p>'
    rows = _rows(con, "SELECT * FROM marts.breakeven_outlook ORDER BY model, to_model, threshold_usd_per_month, deployment")
    if not rows:
        return '<p class="note">No reasoning API model has a candidate deployment or substitution.</p>'

    def ym(d) -> str:
        return "—" if d is None else f"{d:%Y-%m}"

    return _table(["API model", "moved to", "deployment", "self-host / month", "last full month", "expected", "earliest",
                   "latest", "status", "offer"],
                  [[r["model"], r["to_model"] + ("" if r["model"] == r["to_model"] else
                                                 f" (thinking ×{r['thinking_ratio']:g}, output ×{r['output_ratio']:g})"),
                    f"{r['deployment']} ×{r['deployments_needed'] or 1}", usd(r["threshold_usd_per_month"]),
                    usd(r["last_full_month_api_spend_usd"]), ym(r["crossing_month_expected"]),
                    ym(r["crossing_month_earliest"]), ym(r["crossing_month_latest"]), r["status"], r["offer"] or "own price"]
                   for r in rows], {3, 4})


def _buying(con) -> str:
    """Each API model's three monthly costs and the cheapest (marts.buying_options)."""
    if not has_table(con, "marts.buying_options"):
        return '<p class="note">marts.buying_options is not in this warehouse yet.</p>'
    rows = _rows(con, "SELECT * FROM marts.buying_options ORDER BY on_demand_usd_per_month DESC, provider, model")
    if not rows:
        return '<p class="note">No API calls in the window.</p>'

    def opt(x) -> str:
        return "—" if x is None else usd(x)

    def vol(x) -> str:
        return "—" if x is None else count(x)

    return _table(["provider", "model", "calls / month", "on demand / month", "provisioned / month", "self-hosted / month",
                   "cheapest", "on demand at forecast", "provisioned pays from (calls / month)",
                   "self-hosting pays from (calls / month)"],
                  [[r["provider"], r["model"], vol(round(r["calls_per_month"])), opt(r["on_demand_usd_per_month"]),
                    opt(r["provisioned_usd_per_month"])
                    + ("" if r["provisioned_source"] is None else f" ({r['provisioned_source'].replace('_', ' ')})"),
                    opt(r["self_hosted_usd_per_month"])
                    + ("" if r["self_host_deployment"] is None else f" ({r['self_host_deployment']})"),
                    (r["cheapest"] or "—").replace("_", " "), opt(r["on_demand_usd_per_month_forecast"]),
                    vol(r["provisioned_crossover_calls_per_month"]), vol(r["self_host_crossover_calls_per_month"])]
                   for r in rows], {2, 3, 4, 5, 7, 8, 9})


def _bills(con) -> str:
    """What the providers billed against usage x price (marts.bill_reconciliation) per provider and model, over the
    days a bill covers, and the cloud invoices against the logs per provider and month (marts.invoice_mismatch)."""
    parts = []
    if not has_table(con, "marts.bill_reconciliation"):
        parts.append('<p class="note">marts.bill_reconciliation is not in this warehouse.</p>')
    else:
        rows = _rows(con, """
            SELECT provider, coalesce(model, '(no model)') AS model,
                   count(billed_usd) AS days_billed,
                   sum(billed_usd) AS billed,
                   sum(computed_usd) FILTER (WHERE billed_usd IS NOT NULL) AS computed,
                   sum(difference_usd) FILTER (WHERE billed_usd IS NOT NULL) AS difference,
                   count(*) FILTER (WHERE billed_usd IS NOT NULL AND abs(difference_usd) >= 0.01) AS days_off,
                   coalesce(sum(computed_usd) FILTER (WHERE billed_usd IS NULL), 0) AS unbilled
            FROM marts.bill_reconciliation GROUP BY ALL
            ORDER BY days_billed = 0, abs(coalesce(difference, 0)) DESC, provider, model""")
        if not rows:
            parts.append('<p class="note">No provider bill or usage to reconcile: land the OpenAI / Anthropic '
                         'usage and cost reports in bills/openai/ and bills/anthropic/ (thinktax fetch-bills).</p>')
        else:
            parts.append("<h3>Provider bills against usage x price</h3>")
            parts.append(_table(
                ["provider", "model", "days billed", "billed", "usage x price (those days)", "difference",
                 "days off by a cent or more", "usage on days no bill covers"],
                [[r["provider"], r["model"], count(r["days_billed"]),
                  usd(r["billed"]) if r["days_billed"] else "no bill landed",
                  usd(r["computed"]), usd(r["difference"]), count(r["days_off"]), usd(r["unbilled"])]
                 for r in rows], {2, 3, 4, 5, 6, 7}))
    if has_table(con, "marts.invoice_mismatch"):
        inv = _rows(con, """
            SELECT provider, month, invoice_usage_usd, invoice_net_usd, logs_usd, difference_usd, explained_usd,
                   unexplained_usd, unexplained_pct
            FROM marts.invoice_mismatch ORDER BY month DESC, abs(unexplained_usd) DESC, provider""")
        if inv:
            parts.append("<h3>Cloud invoices against the logs, per month</h3>")
            parts.append(_table(
                ["provider", "month", "invoice usage", "invoice net", "logs x price", "difference", "explained",
                 "unexplained", "unexplained %"],
                [[r["provider"], f"{r['month']:%Y-%m}", usd(r["invoice_usage_usd"]), usd(r["invoice_net_usd"]),
                  usd(r["logs_usd"]), usd(r["difference_usd"]), usd(r["explained_usd"]), usd(r["unexplained_usd"]),
                  pct(None if r["unexplained_pct"] is None else float(r["unexplained_pct"]) / 100)] for r in inv],
                {2, 3, 4, 5, 6, 7, 8}))
        else:
            parts.append('<p class="note">No cloud invoice landed (AWS CUR in bills/aws/, Azure cost details in '
                         'bills/azure/, GCP billing export in bills/gcp/, FOCUS in bills/focus/).</p>')
    return "".join(parts)


def _quality(con) -> str:
    """Every landed file accounted for, per source folder (ops.ingested_files), the quarantine by folder and reason,
    and the usage no price covers (marts.unpriced_usage)."""
    parts = []
    acct = _rows(con, """
        SELECT folder, count(*) AS files, sum(rows_in) AS rows_in, sum(rows_loaded) AS loaded,
               sum(rows_duplicate) AS duplicate, sum(rows_quarantined) AS quarantined,
               sum(coalesce(rows_skipped, 0)) AS skipped
        FROM ops.ingested_files GROUP BY folder ORDER BY folder""")
    if not acct:
        return '<p class="note">No file has been ingested.</p>'
    parts.append("<h3>Rows in = loaded + duplicate + quarantined + skipped, per source</h3>")
    parts.append(_table(
        ["source folder", "files", "rows in", "loaded", "duplicate", "quarantined", "skipped (non-AI invoice lines)",
         "adds up"],
        [[r["folder"], count(r["files"]), count(r["rows_in"]), count(r["loaded"]), count(r["duplicate"]),
          count(r["quarantined"]), count(r["skipped"]),
          "yes" if r["rows_in"] == r["loaded"] + r["duplicate"] + r["quarantined"] + r["skipped"] else "NO"]
         for r in acct], {1, 2, 3, 4, 5, 6}))
    q = _rows(con, """
        SELECT coalesce(f.folder, '(unknown file)') AS folder, coalesce(q.field, '') AS field, q.reason,
               count(*) AS records, min(q.file || coalesce(':' || q.line, '')) AS first_at
        FROM ops.quarantine q LEFT JOIN ops.ingested_files f USING (file_id)
        GROUP BY ALL ORDER BY records DESC, folder, reason LIMIT 15""")
    if q:
        total = _rows(con, "SELECT count(*) AS n FROM ops.quarantine")[0]["n"]
        parts.append(f"<h3>Quarantine: {count(total)} records (the 15 largest groups)</h3>")
        parts.append(_table(["source folder", "field", "reason", "records", "first at (file:line)"],
                            [[r["folder"], r["field"], r["reason"], count(r["records"]), r["first_at"]] for r in q], {3}))
    else:
        parts.append('<p class="ok">Nothing quarantined: every record of every file was read.</p>')
    if has_table(con, "ops.unknown_fields"):
        parts.append(_unknown_fields(con))
    if has_table(con, "marts.unpriced_usage"):
        up = _rows(con, """
            SELECT serving, coalesce(provider, node_id, '') AS source, reported_model,
                   reason || CASE WHEN reason = 'partially_priced' THEN ' (' || field || ' not priced)' ELSE '' END AS reason,
                   calls_or_hours,
                   first_seen, last_seen
            FROM marts.unpriced_usage ORDER BY calls_or_hours DESC, source, reported_model LIMIT 15""")
        if up:
            parts.append("<h3>Unpriced usage (costed at nothing until a price covers it; partially_priced: costed "
                         "without the token count named)</h3>")
            parts.append(_table(["serving", "provider / node", "model", "reason", "calls or node-hours", "first seen",
                                 "last seen"],
                                [[r["serving"], r["source"], r["reported_model"], r["reason"], count(r["calls_or_hours"]),
                                  str(r["first_seen"]), str(r["last_seen"])] for r in up], {4}))
        else:
            parts.append('<p class="ok">No unpriced usage: every call and node-hour has a price.</p>')
    return "".join(parts)


def _unknown_fields(con) -> str:
    """Issue 44: the keys of landed JSON records their parser does not read (ops.unknown_fields)."""
    rows = _rows(con, """
        SELECT source, path, count(*) AS files, sum(records) AS records, bool_or(token_like) AS token_like,
               sum(nonzero_records) AS nonzero, min(file || ':' || first_line) AS first_at, any_value(example) AS example
        FROM ops.unknown_fields GROUP BY source, path ORDER BY nonzero DESC, records DESC, path LIMIT 15""")
    if not rows:
        return '<p class="ok">No unknown fields: every key of every JSON record landed is one its parser reads or names.</p>'
    return ("<h3>Unknown fields (keys a parser does not read: a new provider field is dropped until it does)</h3>"
            + _table(["source", "path", "files", "records", "token-looking", "records partially priced", "first at (file:line)",
                      "example"],
                     [[r["source"], r["path"], count(r["files"]), count(r["records"]), "yes" if r["token_like"] else "no",
                       count(r["nonzero"]), r["first_at"], r["example"] or ""] for r in rows], {2, 3, 5}))


def burndown_chart(team: str, month: dt.date, points: list[tuple[dt.date, float]], r: dict) -> str:
    """One team's month: cumulative spend per day (solid), the projection at the burn rate to month end
    (dashed, with its 95 % band at the end), the budget (red) and the soft limit (orange)."""
    days_in_month = (month.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    n_days = days_in_month.day
    budget, soft = float(r["budget_usd"]), float(r["soft_usd"])
    proj, hi = float(r["projected_month_end_usd"]), float(r["projected_month_end_hi95_usd"])
    cumulative = [v for _, v in points]
    top, step = axis_max(max([budget * 1.1, hi, *cumulative, 1e-9]))
    f = Frame(width=380, height=190, left=62, right=12, top=24, bottom=30)
    body = _y_axis(f, top, step, lambda v: "$" + short(v))

    def px(day: int) -> float:
        return f.left + f.pw * day / n_days

    def py(v: float) -> float:
        return f.top + f.ph - f.ph * v / top

    body.append(f'<text x="{f.left}" y="14" class="lab">{esc(team)}: {esc(r["status"])}</text>')
    for limit, colour in ((budget, "#c53030"), (soft, "#dd6b20")):
        body.append(f'<line x1="{f.left}" x2="{f.left + f.pw}" y1="{py(limit):.1f}" y2="{py(limit):.1f}" stroke="{colour}" stroke-width="1.5"/>')
    pts = " ".join(f"{px(d.day):.1f},{py(v):.1f}" for d, v in points)
    body.append(f'<polyline points="{pts}" fill="none" stroke="#2b6cb0" stroke-width="2"/>')
    if r["days_remaining"] and cumulative:
        x0, y0 = px(r["last_day"].day), py(cumulative[-1])
        body.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{px(n_days):.1f}" y2="{py(proj):.1f}" stroke="#2b6cb0" stroke-dasharray="5,4"/>')
        body.append(f'<line x1="{px(n_days):.1f}" x2="{px(n_days):.1f}" y1="{py(float(r["projected_month_end_lo95_usd"])):.1f}" '
                    f'y2="{py(hi):.1f}" stroke="#000" stroke-width="3"/>')
    if r["runs_out_on"]:
        x = px(r["runs_out_on"].day)
        body.append(f'<circle cx="{x:.1f}" cy="{py(budget):.1f}" r="5" fill="none" stroke="#c53030" stroke-width="2">'
                    f'<title>runs out on {r["runs_out_on"]}</title></circle>')
    for d in (1, 10, 20, n_days):
        body.append(f'<text x="{px(d):.1f}" y="{f.top + f.ph + 16}" class="tick" text-anchor="middle">{d}</text>')
    return _svg(f, body, f"Budget burn-down of {team}, {month:%Y-%m}")


def _budgets(con) -> str:
    if not has_table(con, "marts.budget_status"):
        return '<p class="note">marts.budget_status is not in this warehouse yet.</p>'
    rows = _rows(con, "SELECT * FROM marts.budget_status WHERE month = (SELECT max(month) FROM marts.budget_status) ORDER BY team")
    if not rows:
        return '<p class="note">No budgets (catalog/budgets.csv) yet.</p>'
    bars = []
    for r in rows:
        spent, proj, budget = float(r["spent_usd"]), float(r["projected_month_end_usd"]), float(r["budget_usd"])
        note = (f"{usd(spent)} spent, {usd(proj)} projected of {usd(budget)}"
                + (f"; runs out {r['runs_out_on']}" if r["runs_out_on"] else ""))
        bars.append((str(r["team"]), [(spent, "#2b6cb0"), (max(proj - spent, 0.0), "#a3bffa")], note))
    month = rows[0]["month"]
    daily = _rows(con, """
        SELECT team, day, sum(sum(cost_usd)) OVER (PARTITION BY team ORDER BY day) AS cumulative_usd
        FROM marts.daily_spend WHERE source IN ('api_usage', 'self_hosted') AND date_trunc('month', day) = ?
        GROUP BY team, day ORDER BY team, day""", [month])
    cum: dict[str, list[tuple[dt.date, float]]] = {}
    for d in daily:
        cum.setdefault(d["team"], []).append((d["day"], float(d["cumulative_usd"])))
    charts = "".join(burndown_chart(str(r["team"]), month, cum.get(r["team"], []), r) for r in rows)
    return (legend([("cumulative spend", "#2b6cb0"), ("budget", "#c53030"), ("soft limit", "#dd6b20")])
            + f'<div class="multiples">{charts}</div>'
            + legend([("spent", "#2b6cb0"), ("projected to month end", "#a3bffa")])
            + hbars(bars, usd, f"Budget burn-down {month:%Y-%m}")
            + _table(["team", "budget", "spent", "burn / day", "projected (95 %)", "runs out on", "status"],
                     [[r["team"], usd(r["budget_usd"]), usd(r["spent_usd"]), usd(r["burn_usd_per_day"]),
                       f"{usd(r['projected_month_end_usd'])} ({usd(r['projected_month_end_lo95_usd'])} – "
                       f"{usd(r['projected_month_end_hi95_usd'])})", str(r["runs_out_on"] or "—"), r["status"]]
                      for r in rows], {1, 2, 3, 4})
            + _budget_outlook(con))


def _budget_outlook(con) -> str:
    """The next three forecast months of each budgeted team (marts.budget_outlook: the chosen forecast)."""
    if not has_table(con, "marts.budget_outlook"):
        return ""
    rows = _rows(con, """
        SELECT * FROM marts.budget_outlook
        WHERE month < (SELECT min(month) FROM marts.budget_outlook) + INTERVAL 3 MONTH ORDER BY team, month""")
    if not rows:
        return ""
    return ('<p class="caption">Budget outlook: the chosen spend forecast of the next months (marts.budget_outlook).</p>'
            + _table(["team", "month", "budget", "forecast", "95 % interval", "expected"],
                     [[r["team"], f"{r['month']:%Y-%m}", usd(r["budget_usd"]), usd(r["forecast_usd"]),
                       "—" if r["lo95_usd"] is None else f"{usd(r['lo95_usd'])} – {usd(r['hi95_usd'])}",
                       r["status_expected"]] for r in rows], {2, 3, 4}))


_METRIC_LABEL = {"cost_usd": "API spend", "calls": "calls", "reasoning_tokens_per_call": "reasoning tokens per call"}
ANOMALY_CHART_DAYS = 60


def band_chart(rows: list[dict], metric: str) -> str:
    """One series of marts.spend_anomalies: its expected band (grey area), the expected value (dashed),
    the actual value (line) and the anomalous days (red dots)."""
    if not rows:
        return ""
    peak = max([float(r["actual"]) for r in rows] + [float(r["upper"]) for r in rows] + [1.0])
    top, step = axis_max(peak)
    money = metric == "cost_usd"
    f = Frame(width=1200, height=280, left=80)
    body = _y_axis(f, top, step, (lambda v: "$" + short(v)) if money else short)
    n = len(rows)

    def px(i: int) -> float:
        return f.left + f.pw * (i + 0.5) / n

    def py(v: float) -> float:
        return f.top + f.ph - f.ph * min(float(v), top) / top

    band = ([f"{px(i):.1f},{py(r['upper']):.1f}" for i, r in enumerate(rows)]
            + [f"{px(i):.1f},{py(r['lower']):.1f}" for i, r in reversed(list(enumerate(rows)))])
    body.append(f'<polygon points="{" ".join(band)}" fill="#cbd5e0" opacity="0.7"/>')
    body.append('<polyline fill="none" stroke="#718096" stroke-dasharray="4 3" points="'
                + " ".join(f"{px(i):.1f},{py(r['expected']):.1f}" for i, r in enumerate(rows)) + '"/>')
    body.append('<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="'
                + " ".join(f"{px(i):.1f},{py(r['actual']):.1f}" for i, r in enumerate(rows)) + '"/>')
    for i, r in enumerate(rows):
        if r["is_anomaly"]:
            body.append(f'<circle cx="{px(i):.1f}" cy="{py(r["actual"]):.1f}" r="5" fill="#c53030">'
                        f'<title>{r["day"]}: {esc(short(float(r["actual"])))} against {esc(short(float(r["expected"])))} '
                        f'expected ({esc(usd(r["impact_usd"]))} over)</title></circle>')
        if i % max(1, n // 10) == 0:
            body.append(f'<text x="{px(i):.1f}" y="{f.top + f.ph + 18}" class="lab" text-anchor="middle">{r["day"]:%m-%d}</text>')
    return (legend([("actual", "#2b6cb0"), ("expected band", "#cbd5e0"), ("anomalous day", "#c53030")])
            + _svg(f, body, f"{_METRIC_LABEL.get(metric, metric)} against its expected band"))


def _anomalies(con) -> str:
    if not has_table(con, "marts.spend_anomalies"):
        return '<p class="note">marts.spend_anomalies is not in this warehouse yet.</p>'
    eps = _rows(con, """
        SELECT episode_id, metric, scope, scope_value, min(day) AS first_day, max(day) AS last_day, count(*) AS days,
               sum(impact_usd) AS impact_usd, 100 * sum(actual - expected) / nullif(sum(expected), 0) AS impact_pct,
               arg_max(root_cause, impact_usd) AS root_cause, arg_max(root_cause_share, impact_usd) AS share,
               any_value(feedback) AS label
        FROM marts.spend_anomalies WHERE is_anomaly AND scope <> 'all'
        GROUP BY episode_id, metric, scope, scope_value
        ORDER BY label IS NOT NULL, sum(impact_usd) DESC, scope <> 'team', metric <> 'cost_usd', episode_id LIMIT 10""")
    if not eps:
        return '<p class="note">No anomaly: every series stayed within its band or under the [anomaly] floors.</p>'
    out = []
    for e in [x for x in eps if x["label"] is None][:2]:
        rows = _rows(con, f"""
            SELECT day, actual, expected, lower, upper, impact_usd, is_anomaly FROM marts.spend_anomalies
            WHERE metric = ? AND scope = ? AND scope_value = ? AND day > CAST(? AS DATE) - {ANOMALY_CHART_DAYS // 2}
              AND day <= CAST(? AS DATE) + {ANOMALY_CHART_DAYS // 2} ORDER BY day""",
                     [e["metric"], e["scope"], e["scope_value"], e["first_day"], e["first_day"]])
        out.append(f'<p class="caption">{esc(_METRIC_LABEL.get(e["metric"], e["metric"]))} of {esc(e["scope"])} '
                   f'{esc(e["scope_value"])}, around its episode of {e["first_day"]}.</p>' + band_chart(rows, e["metric"]))

    def when(e: dict) -> str:
        return str(e["first_day"]) if e["first_day"] == e["last_day"] else f"{e['first_day']} – {e['last_day']}"

    out.append(_table(["series", "days", "anomalous days", "impact", "impact %", "root cause", "feedback"],
                      [[f"{_METRIC_LABEL.get(e['metric'], e['metric'])} of {e['scope']} {e['scope_value']}", when(e),
                        count(e["days"]), usd(e["impact_usd"]),
                        "—" if e["impact_pct"] is None else f"{e['impact_pct']:+.0f}%",
                        "—" if not e["root_cause"] else f"{e['root_cause']} ({e['share']:.0%})",
                        e["label"] or "—"] for e in eps], {2, 3, 4}))
    return "".join(out)


def _chargeback(con) -> str:
    """The latest month's cost centers, and its top API keys and users (marts.chargeback)."""
    if not has_table(con, "marts.chargeback"):
        return '<p class="note">marts.chargeback is not in this warehouse yet.</p>'
    month = _rows(con, "SELECT max(month) AS m FROM marts.chargeback")[0]["m"]
    if month is None:
        return '<p class="note">No calls yet.</p>'
    centers = _rows(con, "SELECT * FROM marts.chargeback WHERE month = ? AND principal_kind = '*' "
                         "ORDER BY total_cost_usd DESC, cost_center LIMIT 15", [month])
    parts = [f'<p class="note">{esc(month.strftime("%B %Y"))}: each cost center\'s calls, the part of the '
             "invoiced commitments its provisioned calls consumed, its share of the shared costs (idle node-days, "
             "unconsumed commitment fees, invoice lines no call explains; [chargeback] shared) "
             "and what prompt caching saved it.</p>",
             _table(["cost center", "calls", "usage", "thinking", "commitments", "shared", "total", "cache savings"],
                    [[r["cost_center"], count(r["calls"]), usd(r["usage_cost_usd"]), usd(r["thinking_cost_usd"]),
                      usd(r.get("commitment_cost_usd") or 0), usd(r["shared_cost_usd"]), usd(r["total_cost_usd"]),
                      usd(r["cache_savings_usd"])] for r in centers],
                    {1, 2, 3, 4, 5, 6, 7})]
    for kind, label in (("api_key", "API key"), ("user", "user")):
        rows = _rows(con, "SELECT principal_value, cost_center, calls, usage_cost_usd FROM marts.chargeback "
                          "WHERE month = ? AND principal_kind = ? AND principal_value IS NOT NULL "
                          "ORDER BY usage_cost_usd DESC, principal_value LIMIT 10", [month, kind])
        if rows:
            parts.append(_table([label, "cost center", "calls", "usage"],
                                [[r["principal_value"], r["cost_center"], count(r["calls"]), usd(r["usage_cost_usd"])]
                                 for r in rows], {2, 3}))
    return "".join(parts)


def _agent_runs(con) -> str:
    """The most expensive traced runs, each with its agent tree (marts.run_costs, marts.agent_runs)."""
    if not has_table(con, "marts.run_costs") or not has_table(con, "marts.agent_runs"):
        return '<p class="note">marts.run_costs is not in this warehouse yet.</p>'
    runs = _rows(con, "SELECT * FROM marts.run_costs ORDER BY cost_usd DESC, trace_id LIMIT 5")
    if not runs:
        return '<p class="note">No traced runs (OpenTelemetry spans or metadata.trace_id) yet.</p>'
    rows: list[list[str]] = []
    for r in runs:
        rows.append([f"run {r['trace_id'][:12]}… ({r['root_agent'] or 'no agent'})", r["session_id"] or "—",
                     count(r["calls"]), usd(r["cost_usd"]), "", usd(r["thinking_cost_usd"])])
        agents = _rows(con, "SELECT * FROM marts.agent_runs WHERE trace_id = ? ORDER BY depth, started_at, span_id",
                       [r["trace_id"]])
        # the tree: each agent under its parent, depth first
        children: dict[str | None, list[dict]] = {}
        for a in agents:
            children.setdefault(a["parent_agent_span_id"], []).append(a)

        def walk(parent: str | None, depth: int) -> None:
            for a in children.get(parent, []):  # noqa: B023
                rows.append(["\u00a0\u00a0" * depth + "└ " + (a["agent_name"] or a["span_id"]), "",
                             f"{count(a['calls'])} own / {count(a['total_calls'])}", usd(a["own_cost_usd"]),
                             usd(a["total_cost_usd"]), usd(a["thinking_cost_usd"])])
                walk(a["span_id"], depth + 1)

        walk(None, 1)
    return _table(["run / agent", "session", "calls", "own cost", "total below", "thinking"], rows, {2, 3, 4, 5})


def build_html(con: duckdb.DuckDBPyConnection) -> str:
    """The whole report from an open (read-only) connection to a warehouse."""
    window = _rows(con, """
        WITH last_day AS (SELECT max(day) AS day FROM marts.cost_per_task)
        SELECT CAST(day - INTERVAL 29 DAY AS DATE) AS first_day, day AS last_day FROM last_day""")[0]
    first_day, last_day = window["first_day"], window["last_day"]
    head = _rows(con, """
        SELECT sum(cost_usd) AS cost_usd, sum(reasoning_cost_usd) AS thinking_usd, sum(calls) AS calls
        FROM marts.daily_spend WHERE source <> 'api_bill' AND day BETWEEN ? AND ?""", [first_day, last_day])[0]
    tasks = _rows(con, "SELECT count(*) AS n FROM marts.task_costs WHERE day BETWEEN ? AND ?", [first_day, last_day])[0]["n"]
    unpriced = _rows(con, "SELECT coalesce(sum(calls_or_hours), 0) AS n FROM marts.unpriced_usage")[0]["n"]
    quarantined = _rows(con, "SELECT count(*) AS n FROM ops.quarantine")[0]["n"]
    run = _rows(con, "SELECT build_id, published_at, started_at FROM ops.runs ORDER BY started_at DESC LIMIT 1")
    snapshot = (f"build {run[0]['build_id']}, started {run[0]['started_at']:%Y-%m-%d %H:%M} UTC" if run else "no run recorded")
    cost = float(head["cost_usd"] or 0)
    think = float(head["thinking_usd"] or 0)
    period = f"{first_day} to {last_day}" if last_day else "no data yet"
    kpis = [
        (usd(cost), "spend, last 30 days"),
        (f"{pct(think / cost) if cost else '—'}", f"of it thinking ({usd(think)})"),
        (count(head["calls"] or 0), "calls"),
        (count(tasks), "tasks"),
        (count(unpriced), "unpriced calls / node-hours"),
        (count(quarantined), "quarantined records"),
    ]
    sections = [
        ("Daily spend by source and tier", f"The last {DAILY_DAYS} days at most. API calls at the price in force (blue), "
         "self-hosted node cost allocated to the calls it served (green; grey = node time no call used). Tier = the task's tier.", _daily(con)),
        ("Thinking share of spend per model", "Last 30 days. The orange part is what the hidden reasoning tokens cost.", _thinking(con)),
        ("Cost per task by task type", "Last 30 days, the 20 most expensive task types per task (sql/bi/top_task_types_by_cost_per_task.sql).", _per_task(con)),
        ("Tier mix against target", "Last 30 days, all teams: share of calls per tier against the target mix in thinktax.toml, and each tier's share of spend.",
         _tiers(con, first_day, last_day)),
        ("Self-host break-even per reasoning model", "Latest month: API cost grows with every call; a self-hosted deployment costs the same "
         "each month up to its capacity, then another one is needed (the step function).", _breakeven(con)),
        ("Spend forecast", "All spend, API and self-hosted, for the months ahead (marts.spend_forecast): the bar is the "
         "expected spend (darker: already observed), the thick whisker the 80 % interval, the thin one the 95 % interval. "
         "The method is chosen per series by a rolling-origin backtest on month totals over daily and monthly candidates "
         "(docs/economics.md section 11); its error (MAPE), the runner-up's, and how often the backtest's intervals held "
         "the actual month (short coverage widens them) are shown.", _forecast(con)),
        ("Break-even outlook per model and substitution", "The month forecast API spend first reaches what self-hosting the "
         "peak load would cost (marts.breakeven_outlook): expected, earliest (upper 95 % bound) and latest (lower 95 % bound).",
         _outlook(con)),
        ("Buying options", "Each API model's calls of the last [alert] window_days scaled to a month, bought three ways "
         "(marts.buying_options): on demand (per token, at the price sheet), provisioned throughput (the fixed monthly "
         "cost of a commitment: catalog/commitments.csv or the invoice, marts.commitments) and self-hosted (the cheapest "
         "deployment that fits, marts.self_host_breakeven); the cheapest, and the monthly volume from which each fixed "
         "option costs less than on demand (docs/economics.md, three ways to buy).", _buying(con)),
        ("Capacity plan for bursty reasoning load", "The busiest observed hours replayed through each deployment's KV "
         "slots (marts.capacity_plan): the fewest replicas that keep the p95 (and p99) queueing delay under "
         "[capacity] max_queue_seconds, next to the peak-concurrency sizing; the break-even pays for the larger.",
         _capacity(con)),
        ("Spend anomalies and thinking drift", "Each team's, model's and task type's daily spend, calls and reasoning "
         "tokens per call against the median of its own weekdays (or weekends) of the [anomaly] adapt_days before, with a "
         "band of 3 robust standard deviations (marts.spend_anomalies, docs/economics.md); a day is anomalous above the "
         "band when its excess beats both [anomaly] floors. The biggest episodes, with the value that explains most of "
         "the excess and any label from catalog/anomaly_feedback.csv.", _anomalies(con)),
        ("Team budgets", "The latest month: spend so far and projected to month end at the month's burn rate "
         "(marts.budget_status, catalog/budgets.csv).", _budgets(con)),
        ("Bills and invoices", "What the providers billed against what thinktax computes from usage x the price in "
         "force (marts.bill_reconciliation; over the days a bill covers, a day off when it differs by a cent or more), "
         "and the cloud invoices against the logs (marts.invoice_mismatch).", _bills(con)),
        ("Data quality", "Every landed file accounted for (ops.ingested_files), what was quarantined and why "
         "(ops.quarantine), and the usage no price covers (marts.unpriced_usage).", _quality(con)),
        ("Chargeback: who spent it", "The latest month by cost center (catalog/cost_centers.csv, else the team, else "
         "'unallocated'), with the top API keys and users (marts.chargeback).", _chargeback(con)),
        ("Most expensive agent runs", "The five costliest traced runs and their agent trees (marts.run_costs, "
         "marts.agent_runs): each agent's own calls and everything below it; an agent's self-reported usage is never counted.",
         _agent_runs(con)),
        ("Alert state", "The break-even alert: its current state per model (ops.alert_state) and the alerts sent (ops.alerts).", _alerts(con)),
    ]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>thinktax report</title>", f"<style>{CSS}</style></head><body>",
           "<h1>thinktax — what reasoning costs</h1>",
           f'<p class="sub">{esc(period)} · snapshot {esc(snapshot)}</p>',
           '<div class="kpis">' + "".join(f'<div class="kpi"><b>{esc(v)}</b><span>{esc(t)}</span></div>' for v, t in kpis) + "</div>"]
    for title, caption, content in sections:
        out.append(f"<section><h2>{esc(title)}</h2><p class=\"caption\">{esc(caption)}</p>{content}</section>")
    out.append("<footer>Generated by thinktax from the published warehouse. Every figure comes from the marts "
               "(see docs/warehouse.md); the queries behind the 30-day charts are in sql/bi/.</footer>")
    out.append("</body></html>")
    return "\n".join(out)


def write_report(warehouse: Path, out: Path | None = None) -> Path:
    """Render the report of the published warehouse to ``out`` (default: next to it); atomic replace."""
    out = Path(out) if out else default_path(warehouse)
    with read_only(Path(warehouse)) as con:
        text = build_html(con)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


# ---------------------------------------------------------------------------------------------
# PNG through headless Chromium

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(html_file: Path, png: Path, *, width: int = 1400, height: int = 3000, timeout: float = 120) -> Path:
    """Render ``html_file`` to ``png`` with headless Chromium (Debian package `chromium`), offline."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium not found: apt-get install -y chromium")
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="thinktax-chromium-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={width},{height}", Path(html_file).resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return png
