"""Monthly spend forecasts with calibrated prediction intervals, the model chosen by a rolling-origin
backtest across two grains (the daily series and its calendar-month totals) and several families.

The series is one scope's spend per UTC day (0 on days without spend) from its first day with spend
to the warehouse's last day with data. The forecast covers every day after that up to the end of
the horizon, per calendar month; a month already under way adds what was spent in it.

Candidates (``grain`` 'daily' on the daily series, 'monthly' on the totals of the full calendar
months of history; numpy where the arithmetic is closed-form, Theta included, statsmodels for ETS
and ARIMA: statsmodels is already pinned and gives both with likelihood fits and analytic
intervals, so no new dependency such as statsforecast is needed):

    daily seasonal naive     each weekday = its mean over the last 4 weeks, repeated
    daily linear trend       OLS on day number + weekday dummies, extrapolated
    daily log-linear trend   the same on ln(spend) (days with spend): constant % growth a day
    daily ETS(A,N,N) weekday-adjusted    statsmodels ETS (level) on the daily series minus its
                             additive weekday effects (each weekday's mean - the mean, last <= 8
                             whole weeks), the effects added back to the forecast and paths
    daily ETS(A,Ad,N) weekday-adjusted   the same with a damped additive trend (phi in [0.8, 1])
    monthly naive            next month = the last full month
    monthly drift            last month + the mean month-over-month change
    monthly linear trend     OLS on the month number
    monthly log-linear trend OLS on log(total): constant growth in % a month (exponential)
    monthly ETS(A,A,N), ETS(A,Ad,N)           Holt's trend, undamped and damped (statsmodels)
    monthly log ETS(A,A,N), log ETS(A,Ad,N)   the same on log(total): multiplicative growth
    monthly Theta            the standard Theta method (SES + half the OLS slope), numpy
    monthly ARIMA(0,1,1)+drift               statsmodels ARIMA, from 12 months of training history

A monthly candidate forecasts whole months; the month under way gets its forecast x the share of
its days still to come. The numpy monthly candidates and log ETS(A,A,N) also come "per day": fitted
on each month's daily rate (total / its days) and multiplied back by the target month's days, so
that month lengths (28 to 31 days: a 10 % swing) are not read as noise or trend; on totals they
come first, so a series whose totals are exactly linear (the steps) keeps the totals fit on a tie.
Every candidate needs a minimum of training history (``Candidate.min_train``: 28 days for the
daily ones; 1 month naive, 2 drift and the trends, 4 Theta, 6 ETS, 12 ARIMA).

Choice (rolling origin): origins are the ends of the last ``K`` full months before the last full
month, ``K = min(MAX_ORIGINS (3), full months - 2)``. At each origin every candidate is fitted on
the history up to it and forecasts the full months after it, up to ``BACKTEST_MONTHS`` (3) months
ahead. The error is the absolute percentage error of each forecast month total,

    APE = |forecast - actual| / actual x 100         (months with actual 0 skipped)
    MAPE = mean APE over every (origin, month ahead)  — the published ``backtest_mape_pct``

A candidate that cannot be fitted at every origin (too few months) is left out. The lowest MAPE
wins (ties: the earlier, simpler candidate in the lists above); the runner-up and its MAPE are
published too. The winner is refitted on the whole history.

Intervals (80 % and 95 %): each candidate gives a standard deviation per forecast month — ETS
daily from ``PATHS`` seeded simulated sample paths (weekday effects added back), the statsmodels monthly models from their
analytic prediction intervals, the numpy models from their residuals (random walk: s sqrt(h);
drift: s sqrt(h (1 + h / (n - 1))); OLS: the prediction standard error; Theta: SES's
s sqrt(1 + (h - 1) alpha^2); daily: s sqrt(days x h); daily log-linear: the trend's prediction
error at the month's middle day).
Log models give it on the log scale (intervals point x exp(+-z sd)). It is floored at
``REL_SD_FLOOR`` (3 %) x sqrt(h) of the point, h = months ahead (a perfect fit is not certainty).
Calibration rule: on the backtest every (origin, month ahead) gives a score ``r = |actual -
point| / sd`` (on the log scale for log models); the window is covered at 80 % / 95 % when
``r <= z`` (1.2816 / 1.96). When the covered share falls short of 80 % / 95 %, that interval's
half-width is multiplied by ``max(1, r_(k) / z)``, ``r_(k)`` the ``ceil(level x (n + 1))``-th
smallest score (the largest when that exceeds n): the split-conformal quantile, the smallest
widening that would have covered the nominal share. The factors are published
(``interval_scale80`` / ``interval_scale95``). Bounds are floored at 0 (spend is never negative).

Short history (stated in ``method``, never a silent zero or a confident flat line):

    no spend at all           'no_spend_in_history': 0 with 0-wide bounds
    1 day                     'fallback_single_day': that day x days; no interval (NULL bounds)
    2 .. 13 days              'fallback_mean_rate': mean daily spend m, sample sd s over n days;
                              the h-th month (h = 1: the first forecast month) of D future days:
                              m x D +- z x max(sqrt(D x s^2 + (D x s)^2 / n), 20 % x sqrt(h) x m x D)
                              (day-to-day noise plus the uncertainty of the mean, never narrower
                              than the drift fallback's floor), floored at 0
    14 days .. < 3 full months  'fallback_drift': drift on trailing 7-day blocks: the last
                              block's daily rate plus the mean block-to-block change per day
                              since the last level shift (a block change more than 5 scaled
                              MADs from the median change and above 20 % of the rate: a price
                              cut is a new level, not a trend that runs spend to 0; no block
                              after it: no drift),
                              with a wide interval: relative sd max(``FALLBACK_REL_SD`` (20 %)
                              x sqrt(h), the drift's own) — no backtest is possible

Everything here is floats (numpy, statsmodels); the warehouse stores the results as DECIMAL.
statsmodels is imported inside the functions that fit (it takes ~2 s to import).

Many series (the spend forecast mart: one per team, model and serving) go through
:func:`forecast_many`: the same :func:`forecast_daily` for each, the same results, but a series
equal to an earlier one is fitted once and the others are fitted in parallel worker processes
(forked, one per CPU; ``THINKTAX_FORECAST_WORKERS=1`` fits them one after another here).
"""

from __future__ import annotations

import calendar
import datetime as dt
import gc
import importlib
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("thinktax.forecast")

MAX_ORIGINS = 3
BACKTEST_MONTHS = 3
MIN_FULL_MONTHS = 3          # fewer full months: fallback_drift
MIN_TRAIN_DAYS = 14
DAILY_MIN_TRAIN_DAYS = 28
PATHS = 1000
SEED = 20261203
Z80, Z95 = 1.2815515655446004, 1.959963984540054
REL_SD_FLOOR = 0.03
FALLBACK_REL_SD = 0.20
SHIFT_MADS, SHIFT_SHARE = 5.0, 0.20   # fallback_drift: a block change this far out is a level shift
DAMPING_BOUNDS = (0.8, 1.0)


@dataclass(frozen=True)
class MonthForecast:
    """One calendar month: what was already spent in it plus the forecast of its remaining days."""

    month: dt.date              # first of the month
    observed_usd: float         # spent in the month up to the last day with data
    forecast_days: int          # days of the month after the last day with data
    forecast_usd: float         # observed + the forecast of the remaining days
    lo80_usd: float | None
    hi80_usd: float | None
    lo95_usd: float | None
    hi95_usd: float | None


@dataclass(frozen=True)
class Backtest:
    """One candidate's rolling-origin backtest: every (origin, month ahead) is a window."""

    windows: int = 0
    mape_pct: float | None = None
    covered80: int = 0
    covered95: int = 0
    ape_pct: list[float] = field(default_factory=list)
    origins: int = 0
    scores: list[float] = field(default_factory=list)  # |actual - point| / sd per window

    @property
    def coverage80(self) -> float | None:
        return self.covered80 / self.windows if self.windows else None

    @property
    def coverage95(self) -> float | None:
        return self.covered95 / self.windows if self.windows else None


@dataclass(frozen=True)
class SeriesForecast:
    method: str
    history_days: int
    backtest: Backtest
    months: list[MonthForecast]
    candidates: dict[str, Backtest] = field(default_factory=dict)  # every candidate's backtest
    grain: str | None = None               # 'daily' / 'monthly' (None: a fallback)
    runner_up: str | None = None
    runner_up_mape_pct: float | None = None
    interval_scale80: float = 1.0
    interval_scale95: float = 1.0


def month_start(day: dt.date) -> dt.date:
    return day.replace(day=1)


def add_months(month: dt.date, n: int) -> dt.date:
    y, m = divmod(month.month - 1 + n, 12)
    return dt.date(month.year + y, m + 1, 1)


def month_end(month: dt.date) -> dt.date:
    return month.replace(day=calendar.monthrange(month.year, month.month)[1])


def months_between(a: dt.date, b: dt.date) -> int:
    return (b.year - a.year) * 12 + b.month - a.month


def horizon_days(last_day: dt.date, horizon_months: int) -> tuple[list[dt.date], int]:
    """The months forecast (first: the month of ``last_day + 1``) and how many days follow ``last_day``."""
    first = month_start(last_day + dt.timedelta(days=1))
    months = [add_months(first, k) for k in range(horizon_months)]
    return months, (month_end(months[-1]) - last_day).days


# --------------------------------------------------------------------------- predictions
@dataclass(frozen=True)
class Pred:
    """A candidate's forecast of some targets (sums of future days / month totals)."""

    point: np.ndarray           # per target
    sd: np.ndarray              # per target: absolute, or of log(actual / point) when ``log``
    log: bool = False


@dataclass(frozen=True)
class Targets:
    """What to forecast after an origin: per target, its day offsets (0 = the day after the origin)
    and its calendar month's position after the origin's month (1 = the next) with the share of
    that month's days it covers."""

    days: list[np.ndarray]
    month_ahead: np.ndarray
    share: np.ndarray
    first_weekday: int          # weekday (Mon = 0) of the day after the origin
    month_days: np.ndarray = field(default_factory=lambda: np.array([]))        # days of each target's month
    train_month_days: np.ndarray = field(default_factory=lambda: np.array([]))  # days of each training month

    @property
    def steps(self) -> int:
        return int(max(int(d.max()) for d in self.days) + 1)


def _quiet():
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("ignore")
    return w


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else float("nan")


# ---- daily candidates: y (daily, ending at the origin) -> Pred over the targets
def _daily_from_points(point: np.ndarray, s: float, t: Targets) -> Pred:
    p = np.array([point[d].sum() for d in t.days])
    sd = np.array([s * math.sqrt(len(d) * max(h, 1)) for d, h in zip(t.days, t.month_ahead, strict=True)])
    return Pred(np.clip(p, 0, None), sd)


def _weekdays(n: int, first_weekday_after: int) -> np.ndarray:
    """Weekday of each of n history days ending the day before a day with weekday first_weekday_after."""
    return (first_weekday_after - n + np.arange(n)) % 7


def daily_seasonal_naive(y: np.ndarray, t: Targets, seed: int) -> Pred:
    wd = _weekdays(len(y), t.first_weekday)
    last = slice(max(0, len(y) - 28), len(y))
    means = np.array([y[last][wd[last] == k].mean() if np.any(wd[last] == k) else y[last].mean() for k in range(7)])
    future = (t.first_weekday + np.arange(t.steps)) % 7
    resid = y[7:] - y[:-7]
    return _daily_from_points(means[future], _rms(resid) / math.sqrt(2), t)


def daily_linear_trend(y: np.ndarray, t: Targets, seed: int) -> Pred:
    n = len(y)
    wd = _weekdays(n, t.first_weekday)
    X = np.column_stack([np.ones(n), np.arange(n)] + [(wd == k).astype(float) for k in range(1, 7)])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    s = float(np.sqrt(resid @ resid / max(n - X.shape[1], 1)))
    fwd = (t.first_weekday + np.arange(t.steps)) % 7
    Xf = np.column_stack([np.ones(t.steps), n + np.arange(t.steps)] + [(fwd == k).astype(float) for k in range(1, 7)])
    return _daily_from_points(Xf @ beta, s, t)


def _weekday_effects(y: np.ndarray, wd: np.ndarray) -> np.ndarray:
    """Additive weekday effects: each weekday's mean minus the overall mean over the last whole weeks
    (at most 8)."""
    k = 7 * min(len(y) // 7, 8)
    tail, w = y[len(y) - k:], wd[len(y) - k:]
    return np.array([tail[w == d].mean() - tail.mean() for d in range(7)])


def daily_loglinear_trend(y: np.ndarray, t: Targets, seed: int) -> Pred:
    """OLS of ln(spend) on the day number + weekday dummies (days with spend > 0 only, at least 28):
    constant growth in % a day. Point: exp(fit) x exp(s^2 / 2) (the mean of a log-normal day); the
    month sum's sd on the log scale: the trend's prediction error at the month's middle day."""
    n = len(y)
    keep = y > 0
    if keep.sum() < DAILY_MIN_TRAIN_DAYS:
        raise ValueError("too few days with spend for a log model")
    wd = _weekdays(n, t.first_weekday)
    x = np.arange(n, dtype=float)
    X = np.column_stack([np.ones(n), x] + [(wd == k).astype(float) for k in range(1, 7)])[keep]
    v = np.log(y[keep])
    beta, *_ = np.linalg.lstsq(X, v, rcond=None)
    resid = v - X @ beta
    s = float(np.sqrt(resid @ resid / max(len(v) - X.shape[1], 1)))
    fwd = (t.first_weekday + np.arange(t.steps)) % 7
    xf = n + np.arange(t.steps, dtype=float)
    Xf = np.column_stack([np.ones(t.steps), xf] + [(fwd == k).astype(float) for k in range(1, 7)])
    point = np.exp(Xf @ beta + s * s / 2) * keep.mean()  # days without spend stay as frequent
    xk, sxx = x[keep], float(((x[keep] - x[keep].mean()) ** 2).sum())
    p = np.array([point[d].sum() for d in t.days])
    mid = np.array([n + float(d.mean()) for d in t.days])
    sd = s * np.sqrt(1 / len(v) + (mid - xk.mean()) ** 2 / sxx + 1 / np.array([len(d) for d in t.days]))
    return Pred(p, sd, True)


def _ets_daily(trend: str | None, damped: bool):
    """ETS on the weekday-adjusted daily series (y minus its weekday effects), the effects added back
    to the forecast and to every simulated path. A seasonal ETS state (period 7) fits 5-10x slower
    in statsmodels for the same forecasts; the adjustment keeps the daily fits to a fraction of a second."""
    def fit(y: np.ndarray, t: Targets, seed: int) -> Pred:
        from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: PLC0415 - heavy import

        n = len(y)
        effects = _weekday_effects(y, _weekdays(n, t.first_weekday))
        future = effects[(t.first_weekday + np.arange(t.steps)) % 7]
        adjusted = y - effects[_weekdays(n, t.first_weekday)]
        model = ETSModel(adjusted.astype(float), error="add", trend=trend, damped_trend=damped,
                         bounds={"damping_trend": DAMPING_BOUNDS} if damped else None)
        w = _quiet()
        try:
            res = model.fit(disp=False)
            point = np.clip(np.asarray(res.forecast(t.steps), dtype=float) + future, 0, None)
            sim = res.simulate(t.steps, anchor="end", repetitions=PATHS, rng=np.random.default_rng(seed + n))
        finally:
            w.__exit__(None, None, None)
        paths = np.clip(np.asarray(sim, dtype=float).reshape(t.steps, -1) + future[:, None], 0, None)
        p = np.array([point[d].sum() for d in t.days])
        sd = np.array([paths[d].sum(axis=0).std() for d in t.days])
        return Pred(p, sd)
    return fit


# ---- monthly candidates: m (full month totals, ending at the origin's month), h months -> (point, sd, log)
def _months_pred(point: np.ndarray, sd: np.ndarray, t: Targets, log_: bool = False) -> Pred:
    k = t.month_ahead - 1
    p = np.clip(point[k], 0, None) * t.share
    s = sd[k] if log_ else sd[k] * t.share
    return Pred(p, np.nan_to_num(s, nan=0.0), log_)


def monthly_naive(m: np.ndarray, t: Targets, seed: int) -> Pred:
    h = np.arange(1, t.month_ahead.max() + 1)
    s = _rms(np.diff(m)) if len(m) > 1 else 0.0
    return _months_pred(np.full(len(h), m[-1]), s * np.sqrt(h), t)


def monthly_drift(m: np.ndarray, t: Targets, seed: int) -> Pred:
    n = len(m)
    h = np.arange(1, t.month_ahead.max() + 1)
    c = (m[-1] - m[0]) / (n - 1)
    d = np.diff(m) - c
    s = float(np.sqrt(d @ d / (n - 2))) if n > 2 else 0.0
    return _months_pred(m[-1] + c * h, s * np.sqrt(h * (1 + h / (n - 1))), t)


def _ols(v: np.ndarray, H: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(v)
    x = np.arange(n, dtype=float)
    b, a = np.polyfit(x, v, 1)
    resid = v - (a + b * x)
    s = float(np.sqrt(resid @ resid / (n - 2))) if n > 2 else 0.0
    xf = n - 1 + np.arange(1, H + 1)
    sxx = float(((x - x.mean()) ** 2).sum())
    return a + b * xf, s * np.sqrt(1 + 1 / n + (xf - x.mean()) ** 2 / sxx)


def monthly_linear(m: np.ndarray, t: Targets, seed: int) -> Pred:
    return _months_pred(*_ols(m, int(t.month_ahead.max())), t)


def monthly_loglinear(m: np.ndarray, t: Targets, seed: int) -> Pred:
    if np.any(m <= 0):
        raise ValueError("log model needs positive totals")
    lp, sd = _ols(np.log(m), int(t.month_ahead.max()))
    return _months_pred(np.exp(lp), sd, t, True)


def _sm_pred(res, H: int, log_: bool) -> tuple[np.ndarray, np.ndarray]:
    """Point and sd from a statsmodels result with get_prediction (95 % interval / (2 x 1.96))."""
    n = int(res.model.nobs)
    frame = res.get_prediction(start=n, end=n + H - 1).summary_frame(alpha=0.05)
    point = np.asarray(frame["mean"], dtype=float)
    lo = np.asarray(frame.get("pi_lower", frame.get("mean_ci_lower")), dtype=float)
    hi = np.asarray(frame.get("pi_upper", frame.get("mean_ci_upper")), dtype=float)
    sd = (hi - lo) / (2 * Z95)
    return (np.exp(point), sd) if log_ else (point, sd)


def _ets_monthly(trend: str, damped: bool, log_: bool):
    def fit(m: np.ndarray, t: Targets, seed: int) -> Pred:
        from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: PLC0415

        if log_ and np.any(m <= 0):
            raise ValueError("log model needs positive totals")
        import pandas as pd  # noqa: PLC0415 - ETS get_prediction needs an indexed series

        v = pd.Series(np.log(m) if log_ else m.astype(float))
        w = _quiet()
        try:
            res = ETSModel(v, error="add", trend=trend, damped_trend=damped,
                           bounds={"damping_trend": DAMPING_BOUNDS} if damped else None).fit(disp=False)
            point, sd = _sm_pred(res, int(t.month_ahead.max()), log_)
        finally:
            w.__exit__(None, None, None)
        return _months_pred(point, sd, t, log_)
    return fit


def monthly_theta(m: np.ndarray, t: Targets, seed: int) -> Pred:
    """The standard Theta method (Assimakopoulos & Nikolopoulos 2000; Hyndman & Billah 2003: SES with a
    drift of half the OLS slope), closed form in numpy (statsmodels' ThetaModel gives the same point
    forecast but takes ~1 s a fit here):

        alpha  = the SES smoothing in 0.01 .. 1 with the least one-step squared error
        l_n    = the SES level after the last month;  b = the OLS slope of the months
        y(n+h) = l_n + b / 2 x ((h - 1) + (1 - (1 - alpha)^n) / alpha)
        sd(h)  = s x sqrt(1 + (h - 1) alpha^2)     (SES's, s = the one-step residual sd)
    """
    n = len(m)
    H = int(t.month_ahead.max())
    best = None
    for alpha in np.linspace(0.01, 1.0, 100):
        level, sse = m[0], 0.0
        for v in m[1:]:
            sse += (v - level) ** 2
            level += alpha * (v - level)
        if best is None or sse < best[0] - 1e-12:
            best = (sse, alpha, level)
    sse, alpha, level = best
    b = float(np.polyfit(np.arange(n, dtype=float), m, 1)[0])
    h = np.arange(1, H + 1)
    point = level + b / 2 * ((h - 1) + (1 - (1 - alpha) ** n) / alpha)
    s = math.sqrt(sse / max(n - 2, 1))
    return _months_pred(point, s * np.sqrt(1 + (h - 1) * alpha ** 2), t)


def monthly_arima(m: np.ndarray, t: Targets, seed: int) -> Pred:
    from statsmodels.tsa.arima.model import ARIMA  # noqa: PLC0415

    w = _quiet()
    try:
        res = ARIMA(m.astype(float), order=(0, 1, 1), trend="t").fit()
        point, sd = _sm_pred(res, int(t.month_ahead.max()), False)
    finally:
        w.__exit__(None, None, None)
    return _months_pred(point, sd, t)


def _per_day(fit: Callable[[np.ndarray, Targets, int], Pred]) -> Callable[[np.ndarray, Targets, int], Pred]:
    """The same monthly candidate on the months' daily rates (total / days in the month), the forecast
    rate times the target month's days: a 28-day February is no 10 % drop."""
    def per_day(m: np.ndarray, t: Targets, seed: int) -> Pred:
        pred = fit(m / t.train_month_days, t, seed)
        return Pred(pred.point * t.month_days, pred.sd if pred.log else pred.sd * t.month_days, pred.log)
    return per_day


@dataclass(frozen=True)
class Candidate:
    name: str
    grain: str                  # 'daily' / 'monthly'
    fit: Callable[[np.ndarray, Targets, int], Pred]
    min_train: int              # days (daily) or full months (monthly) to fit on


#: in order of simplicity (ties go to the first)
CANDIDATES: list[Candidate] = [
    Candidate("monthly naive", "monthly", monthly_naive, 1),
    Candidate("monthly naive per day", "monthly", _per_day(monthly_naive), 1),
    Candidate("monthly linear trend", "monthly", monthly_linear, 2),
    Candidate("monthly linear trend per day", "monthly", _per_day(monthly_linear), 2),
    Candidate("monthly drift", "monthly", monthly_drift, 2),
    Candidate("monthly drift per day", "monthly", _per_day(monthly_drift), 2),
    Candidate("daily seasonal naive", "daily", daily_seasonal_naive, DAILY_MIN_TRAIN_DAYS),
    Candidate("monthly log-linear trend", "monthly", monthly_loglinear, 2),
    Candidate("monthly log-linear trend per day", "monthly", _per_day(monthly_loglinear), 2),
    Candidate("daily linear trend", "daily", daily_linear_trend, DAILY_MIN_TRAIN_DAYS),
    Candidate("daily log-linear trend", "daily", daily_loglinear_trend, DAILY_MIN_TRAIN_DAYS),
    Candidate("monthly Theta", "monthly", monthly_theta, 4),
    Candidate("monthly Theta per day", "monthly", _per_day(monthly_theta), 4),
    Candidate("daily ETS(A,N,N) weekday-adjusted", "daily", _ets_daily(None, False), DAILY_MIN_TRAIN_DAYS),
    Candidate("daily ETS(A,Ad,N) weekday-adjusted", "daily", _ets_daily("add", True), DAILY_MIN_TRAIN_DAYS),
    Candidate("monthly ETS(A,A,N)", "monthly", _ets_monthly("add", False, False), 6),
    Candidate("monthly ETS(A,Ad,N)", "monthly", _ets_monthly("add", True, False), 6),
    Candidate("monthly log ETS(A,A,N)", "monthly", _ets_monthly("add", False, True), 6),
    Candidate("monthly log ETS(A,A,N) per day", "monthly", _per_day(_ets_monthly("add", False, True)), 6),
    Candidate("monthly log ETS(A,Ad,N)", "monthly", _ets_monthly("add", True, True), 6),
    Candidate("monthly ARIMA(0,1,1)+drift", "monthly", monthly_arima, 12),
]
BY_NAME = {c.name: c for c in CANDIDATES}


def _floored(pred: Pred, t: Targets) -> np.ndarray:
    """The sd per target with the floor REL_SD_FLOOR x sqrt(h) (relative: of the point, or on the log scale)."""
    floor = REL_SD_FLOOR * np.sqrt(np.maximum(t.month_ahead, 1))
    if pred.log:
        return np.maximum(pred.sd, floor)
    return np.maximum(pred.sd, floor * pred.point)


def _bounds(pred: Pred, sd: np.ndarray, z: float, scale: float) -> tuple[np.ndarray, np.ndarray]:
    if pred.log:
        return pred.point * np.exp(-z * scale * sd), pred.point * np.exp(z * scale * sd)
    return np.clip(pred.point - z * scale * sd, 0, None), pred.point + z * scale * sd


def _score(pred: Pred, sd: np.ndarray, actual: np.ndarray) -> np.ndarray:
    if pred.log:
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.abs(np.log(np.maximum(actual, 1e-12) / np.maximum(pred.point, 1e-12)))
    else:
        e = np.abs(actual - pred.point)
    return np.where(sd > 0, e / np.where(sd > 0, sd, 1), np.where(e > 0, np.inf, 0.0))


def conformal_scale(scores: list[float], z: float, level: float) -> float:
    """The widening factor of the calibration rule (module docstring): 1 when the backtest covered
    at least ``level`` of its windows, else max(1, r_(k) / z), k = ceil(level x (n + 1)) capped at n."""
    n = len(scores)
    if n == 0 or sum(s <= z for s in scores) / n >= level:
        return 1.0
    k = min(math.ceil(level * (n + 1)), n)
    r = sorted(scores)[k - 1]
    return max(1.0, r / z) if math.isfinite(r) else 1.0 + 9.0  # an infinite score: x10


# --------------------------------------------------------------------------- the forecast
def _full_months(first_day: dt.date, y: np.ndarray, last_day: dt.date) -> tuple[list[dt.date], np.ndarray]:
    """The calendar months wholly inside first_day .. last_day and their totals."""
    m = month_start(first_day) if first_day.day == 1 else add_months(month_start(first_day), 1)
    out, totals = [], []
    while month_end(m) <= last_day:
        a, b = (m - first_day).days, (month_end(m) - first_day).days
        out.append(m)
        totals.append(float(y[a:b + 1].sum()))
        m = add_months(m, 1)
    return out, np.array(totals)


def _predict(c: Candidate, y: np.ndarray, m: np.ndarray, t: Targets, seed: int) -> Pred:
    return c.fit(y if c.grain == "daily" else m, t, seed)


def _backtest(first_day: dt.date, y: np.ndarray, full: list[dt.date], totals: np.ndarray, seed: int
              ) -> tuple[dict[str, Backtest], int]:
    F = len(full)
    K = min(MAX_ORIGINS, F - 2)
    apes: dict[str, list[float]] = {c.name: [] for c in CANDIDATES}
    scores: dict[str, list[float]] = {c.name: [] for c in CANDIDATES}
    failed: set[str] = set()
    for k in range(K, 0, -1):
        i = F - 1 - k                     # the origin: the end of full month i
        origin = month_end(full[i])
        n_train = (origin - first_day).days + 1
        js = list(range(i + 1, min(i + BACKTEST_MONTHS, F - 1) + 1))
        t = Targets(days=[np.arange((full[j] - origin).days - 1, (month_end(full[j]) - origin).days) for j in js],
                    month_ahead=np.array([j - i for j in js]), share=np.ones(len(js)),
                    first_weekday=(origin + dt.timedelta(days=1)).weekday(),
                    month_days=np.array([month_end(full[j]).day for j in js], dtype=float),
                    train_month_days=np.array([month_end(mo).day for mo in full[:i + 1]], dtype=float))
        actual = totals[js]
        for c in CANDIDATES:
            if c.name in failed:
                continue
            enough = (n_train if c.grain == "daily" else i + 1) >= c.min_train
            if not enough:
                failed.add(c.name)
                continue
            try:
                pred = _predict(c, y[:n_train], totals[:i + 1], t, seed + k)
            except (ValueError, np.linalg.LinAlgError, IndexError, ZeroDivisionError):
                failed.add(c.name)
                continue
            if not np.all(np.isfinite(pred.point)):
                failed.add(c.name)
                continue
            sd = _floored(pred, t)
            scores[c.name] += [float(s) for s in _score(pred, sd, actual)]
            apes[c.name] += [abs(p - a) / a * 100.0 for p, a in zip(pred.point, actual, strict=True) if a > 0]
    out = {}
    for c in CANDIDATES:
        if c.name in failed or not scores[c.name]:
            continue
        sc = scores[c.name]
        out[c.name] = Backtest(windows=len(sc), mape_pct=float(np.mean(apes[c.name])) if apes[c.name] else None,
                               covered80=sum(s <= Z80 for s in sc), covered95=sum(s <= Z95 for s in sc),
                               ape_pct=apes[c.name], origins=K, scores=sc)
    return out, K


def _drift_fallback(y: np.ndarray, t: Targets) -> Pred:
    """'fallback_drift' (module docstring): trailing 7-day blocks, the last block's daily rate plus the
    mean block-to-block change since the last level shift, per day."""
    b = len(y) // 7
    rates = y[len(y) - 7 * b:].reshape(b, 7).mean(axis=1)
    d = np.diff(rates)
    med = float(np.median(d))
    mad = float(np.median(np.abs(d - med)))
    shifts = [i for i in range(len(d))
              if abs(d[i] - med) > SHIFT_MADS * 1.4826 * mad and abs(d[i]) > SHIFT_SHARE * rates[i]]
    since = rates[shifts[-1] + 1:] if shifts else rates
    c = (since[-1] - since[0]) / (7 * (len(since) - 1)) if len(since) > 1 else 0.0
    steps = np.arange(t.steps)
    point = np.clip(rates[-1] + c * (steps + 4), 0, None)
    s_rate = float(np.std(d, ddof=1)) if len(d) > 1 else abs(float(d[0])) if len(d) else 0.0
    p = np.array([point[d_].sum() for d_ in t.days])
    h = np.maximum(t.month_ahead, 1)
    sd = np.maximum(FALLBACK_REL_SD * np.sqrt(h) * p,
                    np.array([s_rate * len(d_) for d_ in t.days]) * np.sqrt(h))
    return Pred(p, sd)


def forecast_daily(first_day: dt.date, values: np.ndarray | list[float], last_day: dt.date,
                   horizon_months: int = 12, *, seed: int = SEED) -> SeriesForecast:
    """Forecast the months after ``last_day`` from daily spend ``values`` starting on ``first_day``.

    ``values`` covers ``first_day .. last_day`` (one value per day, 0 where nothing was spent).
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n != (last_day - first_day).days + 1:
        raise ValueError(f"{n} daily values do not span {first_day} .. {last_day}")
    if horizon_months < 1:
        raise ValueError("horizon_months must be >= 1")
    months, steps = horizon_days(last_day, horizon_months)
    days = [last_day + dt.timedelta(days=i + 1) for i in range(steps)]
    month_of_step = np.array([months.index(month_start(d)) for d in days])
    # the first month may be under way: what was spent in it so far counts towards it
    first_of = np.datetime64(months[0])
    hist = np.arange(np.datetime64(first_day), np.datetime64(last_day) + 1)
    observed = [float(y[hist >= first_of].sum())] + [0.0] * (len(months) - 1)
    per_month_days = np.bincount(month_of_step, minlength=len(months))

    def rows(point: np.ndarray, bounds: list[tuple[float, float, float, float] | None]) -> list[MonthForecast]:
        out = []
        for j, m in enumerate(months):
            f = observed[j] + float(point[j])
            b = bounds[j]
            if b is None:
                out.append(MonthForecast(m, observed[j], int(per_month_days[j]), f, None, None, None, None))
                continue
            lo80, hi80, lo95, hi95 = (observed[j] + x for x in b)
            out.append(MonthForecast(m, observed[j], int(per_month_days[j]), f,
                                     min(lo80, f), max(hi80, f), min(lo95, lo80, f), max(hi95, hi80, f)))
        return out

    def month_sums(daily: np.ndarray) -> np.ndarray:
        return np.array([float(daily[month_of_step == j].sum()) for j in range(len(months))])

    if n == 0 or not np.any(y > 0):
        return SeriesForecast("no_spend_in_history", n, Backtest(),
                              rows(np.zeros(len(months)), [(0.0, 0.0, 0.0, 0.0)] * len(months)))
    if n == 1:
        return SeriesForecast("fallback_single_day", n, Backtest(),
                              rows(month_sums(np.full(steps, y[0])), [None] * len(months)))
    if n < MIN_TRAIN_DAYS:
        m, s = float(y.mean()), float(y.std(ddof=1))
        bounds = []
        for j in range(len(months)):
            d = int(per_month_days[j])
            # at least FALLBACK_REL_SD x sqrt(h) of the point: days of equal spend are no certainty
            sd = max(math.sqrt(d * s * s + (d * s) ** 2 / n), FALLBACK_REL_SD * math.sqrt(j + 1) * m * d)
            bounds.append((max(m * d - Z80 * sd, 0.0), m * d + Z80 * sd, max(m * d - Z95 * sd, 0.0), m * d + Z95 * sd))
        return SeriesForecast("fallback_mean_rate", n, Backtest(), rows(month_sums(np.full(steps, m)), bounds))

    full, totals = _full_months(first_day, y, last_day)
    last_full = full[-1] if full else add_months(month_start(last_day), -1)
    final = Targets(days=[np.flatnonzero(month_of_step == j) for j in range(len(months))],
                    month_ahead=np.array([months_between(last_full, mo) for mo in months]),
                    share=per_month_days / np.array([month_end(mo).day for mo in months]),
                    first_weekday=(last_day + dt.timedelta(days=1)).weekday(),
                    month_days=np.array([month_end(mo).day for mo in months], dtype=float),
                    train_month_days=np.array([month_end(mo).day for mo in full], dtype=float))
    if len(full) < MIN_FULL_MONTHS:
        pred = _drift_fallback(y, final)
        lo80, hi80 = _bounds(pred, pred.sd, Z80, 1.0)
        lo95, hi95 = _bounds(pred, pred.sd, Z95, 1.0)
        return SeriesForecast("fallback_drift", n, Backtest(),
                              rows(pred.point, [tuple(map(float, b)) for b in zip(lo80, hi80, lo95, hi95, strict=True)]))

    tested, _ = _backtest(first_day, y, full, totals, seed)
    # MAPE rounded to 1e-6 % for the ranking: float noise on a perfect fit is no preference
    ranked = sorted((round(bt.mape_pct, 6), i, c.name) for i, c in enumerate(CANDIDATES)
                    if (bt := tested.get(c.name)) is not None and bt.mape_pct is not None)
    name = ranked[0][2] if ranked else "monthly naive"
    bt = tested.get(name, Backtest())
    runner = ranked[1] if len(ranked) > 1 else None
    c = BY_NAME[name]
    try:
        pred = _predict(c, y, totals, final, seed)
    except (ValueError, np.linalg.LinAlgError, IndexError, ZeroDivisionError):  # pragma: no cover - fitted at every origin
        c = BY_NAME["monthly naive"]
        name, pred = c.name, _predict(c, y, totals, final, seed)
    sd = _floored(pred, final)
    s80 = conformal_scale(bt.scores, Z80, 0.80)
    s95 = max(conformal_scale(bt.scores, Z95, 0.95), s80 * Z80 / Z95)
    lo80, hi80 = _bounds(pred, sd, Z80, s80)
    lo95, hi95 = _bounds(pred, sd, Z95, s95)
    bounds = [tuple(map(float, b)) for b in zip(lo80, hi80, lo95, hi95, strict=True)]
    return SeriesForecast(name, n, bt, rows(pred.point, bounds), tested, c.grain,
                          None if runner is None else runner[2],
                          None if runner is None else tested[runner[2]].mape_pct, s80, s95)


# --------------------------------------------------------------------------- many series
Job = tuple[dt.date, np.ndarray, dt.date, int]  # forecast_daily's (first_day, values, last_day, horizon_months)


def _run_job(job: tuple[Job, int]) -> SeriesForecast:
    (first, y, last, horizon), seed = job
    return forecast_daily(first, y, last, horizon, seed=seed)


def _workers(jobs: int) -> int:
    """Worker processes for ``jobs`` series to fit: one per CPU this process may use, at most one
    per series; 1 (no pool) where fork is not the safe default (not Linux)."""
    env = os.environ.get("THINKTAX_FORECAST_WORKERS", "").strip()
    if env:
        return max(1, min(int(env), jobs))
    if not sys.platform.startswith("linux"):
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), jobs))


_PREWARM: threading.Thread | None = None
_ETS = "statsmodels.tsa.exponential_smoothing.ets"
_HEAVY = (_ETS, "statsmodels.tsa.arima.model")


def prewarm() -> None:
    """Import statsmodels' ETS (~1-2 s) in a background thread. The models step starts it when the
    spend forecast will be rebuilt, before its SQL tables, which are built in DuckDB without the GIL:
    the import overlaps them. :func:`forecast_many` waits for the thread before anything else
    (before its fork in particular); an import that failed here is retried there, which raises."""
    global _PREWARM
    if _PREWARM is not None or _ETS in sys.modules:
        return

    def run() -> None:
        try:
            for mod in _HEAVY:
                importlib.import_module(mod)
        except Exception:
            log.debug("statsmodels import in the background failed", exc_info=True)

    _PREWARM = threading.Thread(target=run, name="thinktax-statsmodels-import", daemon=True)
    _PREWARM.start()


def forecast_many(jobs: list[Job], *, seed: int = SEED) -> list[SeriesForecast]:
    """``forecast_daily(first_day, values, last_day, horizon_months, seed=seed)`` for each job, in order.

    The results are those of calling :func:`forecast_daily` on each job (the same function on the
    same floats, in another process: ``tests/models/test_forecast.py`` compares them). Jobs with equal
    inputs are fitted once; the distinct ones that need model fits are spread over worker
    processes forked from this one (statsmodels imported first, so that no worker imports it).
    """
    if _PREWARM is not None:
        _PREWARM.join()  # no thread of ours may be importing when the workers are forked
    keys = [(first, np.asarray(y, dtype=float).tobytes(), last, horizon) for first, y, last, horizon in jobs]
    unique: dict[tuple, int] = {}
    for k in keys:
        unique.setdefault(k, len(unique))
    todo = [((first, np.frombuffer(yb, dtype=float), last, horizon), seed) for first, yb, last, horizon in unique]
    # series with at least MIN_TRAIN_DAYS days are fitted; shorter ones are arithmetic
    fitted = sum(1 for (first, y, last, horizon), _ in todo if len(y) >= MIN_TRAIN_DAYS and np.any(y > 0))
    workers = _workers(fitted)
    results: list[SeriesForecast] | None = None
    if workers > 1:
        import multiprocessing  # noqa: PLC0415
        from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
        from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

        for mod in _HEAVY:  # before the fork: no worker imports them
            importlib.import_module(mod)

        # The workers are forked from a process with other threads (DuckDB's, Dagster's): the
        # objects that exist now are frozen, so that no worker's garbage collection finalises
        # one of them (a database handle whose lock another thread held at the fork).
        gc.freeze()
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(_run_job, todo, chunksize=1))
        except (OSError, BrokenProcessPool):
            results = None  # no processes to be had: fit them here
        finally:
            gc.unfreeze()
    if results is None:
        results = [_run_job(job) for job in todo]
    return [results[unique[k]] for k in keys]
