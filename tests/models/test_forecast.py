"""models/forecast.py: a linear history crossing a threshold in a month worked by hand, the stated
fallbacks for short history, and interval coverage on series with known noise."""

from __future__ import annotations

import datetime as dt
import calendar
import math

import numpy as np
import pytest

from models.forecast import forecast_daily, forecast_many
from warehouse.outlook import crossing

JAN1 = dt.date(2026, 1, 1)


def test_linear_growth_crosses_a_threshold_in_the_month_worked_by_hand():
    # 60 days, Jan 1 (d = 0) .. Mar 1 (d = 59): 10 + 0.5 d USD a day, +-0.2 alternating (sums to ~0).
    d = np.arange(60)
    y = 10 + 0.5 * d + np.where(d % 2 == 0, 0.2, -0.2)
    f = forecast_daily(JAN1, y, dt.date(2026, 3, 1), 6)
    # two full months (Jan, Feb) are too few for a backtest: the stated fallback, drift on trailing
    # 7-day blocks, extends the straight line (a level-only model would forecast it flat)
    assert f.method == "fallback_drift" and f.backtest.windows == 0 and f.runner_up is None
    # Month sums of 10 + 0.5 d over the days of each month (sum of d over a..b = (a + b)(b - a + 1) / 2):
    #   Mar: observed Mar 1 (d 59: 10 + 29.5 - 0.2 = 39.3) + d 60..89: 300 + 0.5 x 2,235 = 1,417.5 -> 1,456.8
    #   Apr: d 90..119:  300 + 0.5 x 3,135 = 1,867.5      May: d 120..150: 310 + 0.5 x 4,185 = 2,402.5
    #   Jun: d 151..180: 300 + 0.5 x 4,965 = 2,782.5      Jul: d 181..211: 310 + 0.5 x 6,076 = 3,348.0
    #   Aug: d 212..242: 310 + 0.5 x 7,037 = 3,828.5
    hand = [1456.8, 1867.5, 2402.5, 2782.5, 3348.0, 3828.5]
    assert [m.month for m in f.months] == [dt.date(2026, k, 1) for k in range(3, 9)]
    assert f.months[0].observed_usd == pytest.approx(39.3) and f.months[0].forecast_days == 30
    for m, want in zip(f.months, hand, strict=True):
        assert m.forecast_usd == pytest.approx(want, rel=0.005)
        assert m.lo95_usd <= m.lo80_usd <= m.forecast_usd <= m.hi80_usd <= m.hi95_usd
    # threshold $2,500: May 2,402.5 < 2,500 <= Jun 2,782.5 -> expected crossing June
    rows = [{"month": m.month, "forecast_usd": m.forecast_usd, "hi95_usd": m.hi95_usd, "lo95_usd": m.lo95_usd}
            for m in f.months]
    got = crossing(rows, 2500, None, True)
    assert got["status"] == "within_horizon" and got["crossing_month_expected"] == dt.date(2026, 6, 1)
    # the fallback's interval is wide on purpose (relative sd 20 % x sqrt(months ahead)): the upper
    # bound crosses no later than expected, the lower one (latest crossing) not within six months
    assert got["crossing_month_earliest"] <= got["crossing_month_expected"] and got["crossing_month_latest"] is None
    # the same forecast against $5,000 (above Aug's 3,828.5): not within the horizon
    assert crossing(rows, 5000, None, True)["status"] == "not_within_horizon"
    assert crossing(rows, 5000, None, True)["crossing_month_expected"] is None
    # the last full month already at the threshold: crossed
    assert crossing(rows, 1000, (dt.date(2026, 2, 1), 1200), True)["status"] == "crossed"


def test_short_history_falls_back_to_the_mean_rate_and_says_so():
    # 5 days: mean m = 10, sample sd s = sqrt((0 + 4 + 4 + 0 + 0) / 4) = sqrt(2)
    f = forecast_daily(JAN1, [10, 12, 8, 10, 10], dt.date(2026, 1, 5), 2)
    assert f.method == "fallback_mean_rate" and f.backtest.mape_pct is None
    jan, feb = f.months
    # Jan: 50 observed + 26 days x 10 = 310; sd = sqrt(26 x 2 + 26^2 x 2 / 5) = sqrt(322.4) = 17.955, below
    # the floor 20 % x sqrt(1) x 260 = 52 (issue 28: ten days of equal spend are no certainty) -> 52
    assert (jan.observed_usd, jan.forecast_days, jan.forecast_usd) == (50, 26, pytest.approx(310))
    assert jan.hi95_usd == pytest.approx(310 + 1.959964 * 52, rel=1e-6)
    # Feb: 28 x 10 = 280; sd = sqrt(56 + 28^2 x 2 / 5) = sqrt(369.6) = 19.2 < 20 % x sqrt(2) x 280 = 79.196
    assert feb.forecast_usd == pytest.approx(280) and feb.lo80_usd == pytest.approx(280 - 1.281552 * 0.2 * math.sqrt(2) * 280, rel=1e-6)
    assert math.sqrt(369.6) < 0.2 * math.sqrt(2) * 280


def test_one_day_and_no_spend_are_stated_not_silent_zeros():
    one = forecast_daily(JAN1, [7.0], JAN1, 1)
    assert one.method == "fallback_single_day" and one.months[0].forecast_usd == pytest.approx(7 * 31)
    assert one.months[0].hi95_usd is None
    none = forecast_daily(JAN1, [0.0, 0.0], dt.date(2026, 1, 2), 1)
    assert none.method == "no_spend_in_history" and none.months[0].forecast_usd == 0


def test_backtest_coverage_is_counted_and_short_coverage_widens_by_the_stated_rule():
    # 12 series of iid noise around a level (100 +- 15 a day, Jan 1 .. Jun 30: six full months):
    # K = min(3, 6 - 2) = 3 origins (ends of March, April, May), 3 + 2 + 1 = 6 (origin, month ahead)
    # windows each. Coverage share = covered / windows; an interval is widened only when its share
    # falls short, and then at least to the nominal share of the backtest windows.
    from models.forecast import Z80, Z95, conformal_scale

    rng = np.random.default_rng(11)
    windows = c80 = c95 = 0
    for _ in range(12):
        y = 100 + rng.normal(0, 15, 181)
        f = forecast_daily(JAN1, y, dt.date(2026, 6, 30), 1)
        bt = f.backtest
        assert (bt.origins, bt.windows) == (3, 6) and bt.coverage80 == bt.covered80 / 6
        widened80 = [s <= Z80 * f.interval_scale80 + 1e-9 for s in bt.scores]
        assert f.interval_scale80 == 1.0 if bt.coverage80 >= 0.8 else sum(widened80) / 6 >= 0.8
        assert f.interval_scale95 >= 1.0
        windows, c80, c95 = windows + bt.windows, c80 + bt.covered80, c95 + bt.covered95
    assert windows == 72
    # the 95 % intervals of the chosen models held the actual month totals in >= 85 % of the windows
    assert c95 / windows >= 0.85 and c80 / windows >= 0.6
    # the rule by hand: scores 0.5, 1.0, 2.0, 3.0 at 80 %: covered 2 / 4 < 0.8 -> k = ceil(0.8 x 5) = 4
    # -> the 4th smallest, 3.0 / 1.2816 = 2.341; all covered -> 1
    assert conformal_scale([0.5, 1.0, 2.0, 3.0], Z80, 0.8) == pytest.approx(3.0 / Z80)
    assert conformal_scale([0.5, 1.0], Z95, 0.95) == 1.0


def test_horizon_and_warn_months_come_from_thinktax_toml(tmp_path):
    from services.config import ConfigError, load_config

    p = tmp_path / "thinktax.toml"
    p.write_text("[forecast]\nhorizon_months = 2\n[alert]\nwarn_months = 1\n")
    row = load_config(p).settings_row()
    assert (row["forecast_horizon_months"], row["alert_warn_months"]) == (2, 1)
    assert load_config(None).settings_row()["forecast_horizon_months"] == 12  # default (issue 28: a year ahead)
    p.write_text("[forecast]\nhorizon_months = 0\n")
    with pytest.raises(ConfigError, match="horizon_months"):
        load_config(p)
    # horizon 2 from Jan 5: January (under way) and February
    assert [m.month for m in forecast_daily(JAN1, [1.0] * 5, dt.date(2026, 1, 5), 2).months] == [JAN1, dt.date(2026, 2, 1)]


def test_many_series_in_worker_processes_give_exactly_the_one_by_one_results(monkeypatch):
    """forecast_many (the spend forecast mart's path) fits the series in forked worker processes and
    an equal series once; every result must equal forecast_daily's on the same job, float for
    float (dataclass ==), whatever the number of workers."""
    rng = np.random.default_rng(3)
    d = np.arange(151)  # Jan 1 .. May 31: five full months, min(3, 5 - 2) = 3 backtest origins
    trend = 10 + 0.5 * d + rng.normal(0, 1, 151)
    flat = 20 + rng.normal(0, 2, 151)
    jobs = [(JAN1, trend, dt.date(2026, 5, 31), 6),
            (JAN1, flat, dt.date(2026, 5, 31), 6),
            (JAN1, trend.copy(), dt.date(2026, 5, 31), 6),  # equal to the first: fitted once
            (JAN1, [10, 12, 8, 10, 10], dt.date(2026, 1, 5), 2),  # fallback_mean_rate, no fit
            (JAN1, flat[:45], JAN1 + dt.timedelta(days=44), 3)]  # one full month: fallback_drift
    want = [forecast_daily(*job) for job in jobs]
    assert want[0].backtest.origins == 3 and want[3].method == "fallback_mean_rate"
    assert want[4].method == "fallback_drift"
    for workers in ("2", "1"):
        monkeypatch.setenv("THINKTAX_FORECAST_WORKERS", workers)
        assert forecast_many(jobs) == want


PREWARM = """
import datetime as dt, os, sys, threading
import numpy as np
from models import forecast
assert forecast._ETS not in sys.modules
forecast.prewarm()
forecast.prewarm()  # a second call starts nothing
threads = [t for t in threading.enumerate() if t.name == "thinktax-statsmodels-import"]
rng = np.random.default_rng(3)
y = 20 + rng.normal(0, 2, 60)
jobs = [(dt.date(2026, 1, 1), y, dt.date(2026, 3, 1), 6), (dt.date(2026, 1, 1), y + 5, dt.date(2026, 3, 1), 6)]
os.environ["THINKTAX_FORECAST_WORKERS"] = "2"
got = forecast.forecast_many(jobs)  # waits for the import thread, then forks
alive = [t.is_alive() for t in threads]
print(len(threads), alive, forecast._ETS in sys.modules, got == [forecast.forecast_daily(*j) for j in jobs])
"""


def test_prewarm_imports_statsmodels_in_a_thread_that_forecast_many_waits_for():
    """The models step starts statsmodels' import in the background when the spend forecast will
    be rebuilt; forecast_many must wait for it before forking its workers, and give the same
    results as fitting each series alone."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.run([sys.executable, "-c", PREWARM], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "[False]", "True", "True"]


# --------------------------------------------------------------------------- issue 28: known futures
def _month_series(fn, months: int, seed: int = 0) -> tuple[list[dt.date], np.ndarray]:
    """Daily values over ``months`` calendar months from Jan 1 2026: fn(month index, day index, date, rng)."""
    from models.forecast import add_months, month_end

    rng = np.random.default_rng(seed)
    last = month_end(add_months(JAN1, months - 1))
    days = [JAN1 + dt.timedelta(days=i) for i in range((last - JAN1).days + 1)]
    return days, np.array([fn(12 * (d.year - 2026) + d.month - 1, i, d, rng) for i, d in enumerate(days)])


def _dim(d: dt.date) -> int:
    return calendar.monthrange(d.year, d.month)[1]


# name -> (daily value, months of history); the known future is the same rule continued
KNOWN_FUTURES = {
    # $1,000 in January, $2,000 in February ... flat within each month (the failing case)
    "monthly steps": (lambda k, i, d, r: 1000 * (k + 1) / _dim(d), 6),
    # $20 + $0.50 a day, noise sd $2 a day
    "smooth linear": (lambda k, i, d, r: 20 + 0.5 * i + r.normal(0, 2), 9),
    # 15 % a month compounded daily from $30 a day, 5 % multiplicative noise
    "exponential 15%/month": (lambda k, i, d, r: 30 * 1.15 ** (i / 30.4375) * (1 + r.normal(0, 0.05)), 9),
    # $100 on weekdays, $40 at weekends, 10 % noise
    "flat weekday + noise": (lambda k, i, d, r: (100 if d.weekday() < 5 else 40) * (1 + r.normal(0, 0.1)), 9),
    # $100 a day for five months, $160 from June on, 5 % noise
    "level shift": (lambda k, i, d, r: (100 if k < 5 else 160) * (1 + r.normal(0, 0.05)), 8),
}


def known_future_table(horizon: int = 12) -> list[tuple[str, str, str, float, float, float, float]]:
    """(series, chosen method, runner-up, 3-month-ahead error %, backtest MAPE %, 80 % and 95 % coverage
    of the six known future months): the table of docs/economics.md section 11."""
    from models.forecast import add_months, month_end

    out = []
    for name, (fn, hist) in KNOWN_FUTURES.items():
        days, y = _month_series(fn, hist + 6)
        cut = (month_end(add_months(JAN1, hist - 1)) - JAN1).days + 1
        f = forecast_daily(JAN1, y[:cut], days[cut - 1], horizon)
        future = []
        for j in range(6):
            m = add_months(JAN1, hist + j)
            future.append(float(y[(m - JAN1).days:(month_end(m) - JAN1).days + 1].sum()))
        err3 = (f.months[2].forecast_usd - future[2]) / future[2] * 100
        cov80 = sum(m.lo80_usd <= a <= m.hi80_usd for m, a in zip(f.months, future, strict=False)) / 6
        cov95 = sum(m.lo95_usd <= a <= m.hi95_usd for m, a in zip(f.months, future, strict=False)) / 6
        out.append((name, f.method, f.runner_up, err3, f.backtest.mape_pct, cov80, cov95, f))
    return out


def test_known_futures_trends_within_ten_percent_three_months_ahead():
    table = {row[0]: row for row in known_future_table()}
    for name, (_, method, runner_up, err3, mape, _cov80, cov95, f) in table.items():
        assert runner_up is not None and f.runner_up_mape_pct >= mape - 1e-6, name
        assert abs(err3) < 10, (name, method, err3)              # every series, the trends included
        third = f.months[2]
        assert third.lo95_usd <= third.forecast_usd <= third.hi95_usd
        assert cov95 >= 5 / 6, (name, cov95)                     # the 95 % interval holds the known future
    # which model wins where: the steps are linear in month totals (zero backtest error), exponential
    # growth is linear on the log scale, weekday seasonality is only visible at the daily grain
    assert table["monthly steps"][1] == "monthly linear trend" and table["monthly steps"][4] == pytest.approx(0, abs=1e-6)
    assert "log" in table["exponential 15%/month"][1]
    assert table["flat weekday + noise"][1].startswith("daily")


def test_monthly_steps_cross_the_deployment_cost_in_the_month_worked_by_hand():
    # The case: Jan $1,000, Feb $2,000 ... Jun $6,000 (flat within each month), last day Jun 30.
    # By hand: the month totals rise $1,000 a month, so month k (Jan = 1) totals $1,000 k; a deployment
    # at $11,680 a month is first reached when 1,000 k >= 11,680, k = 12: December (Nov: $11,000 < 11,680
    # <= Dec: $12,000). The forecast must cross within one month of December, and its 95 % upper bound
    # must not stay under $10,600 (the old daily ETS(A,Ad,N) forecast a flat ~$6,200).
    from models.forecast import add_months, month_end

    days, y = _month_series(KNOWN_FUTURES["monthly steps"][0], 6)
    f = forecast_daily(JAN1, y, dt.date(2026, 6, 30))             # the default horizon: 12 months
    assert len(f.months) == 12 and f.months[0].month == dt.date(2026, 7, 1)
    assert [round(m.forecast_usd) for m in f.months[:6]] == [7000, 8000, 9000, 10000, 11000, 12000]
    rows = [{"month": m.month, "forecast_usd": m.forecast_usd, "hi95_usd": m.hi95_usd, "lo95_usd": m.lo95_usd}
            for m in f.months]
    got = crossing(rows, 11680, (dt.date(2026, 6, 1), 6000), True)
    assert got["status"] == "within_horizon"
    assert abs((got["crossing_month_expected"] - dt.date(2026, 12, 1)).days) <= 31
    assert got["crossing_month_earliest"] <= got["crossing_month_expected"] <= got["crossing_month_latest"]
    assert max(m.hi95_usd for m in f.months[:6]) > 10600
    assert month_end(add_months(JAN1, 5)) == dt.date(2026, 6, 30)
