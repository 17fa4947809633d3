"""Monthly spend forecasts with prediction intervals, from a daily spend series.

The series is one scope's spend per UTC day (0 on days without spend) from its first day with spend
to the warehouse's last day with data. The forecast covers every day after that up to the end of
the horizon and is summed per calendar month; a month already under way adds what was spent in it.

Candidates (statsmodels ``ETSModel``, additive errors, parameters by maximum likelihood):

    ETS(A,N,N)   level only (simple exponential smoothing): tomorrow looks like the smoothed level
    ETS(A,Ad,N)  level + damped trend, the damping phi estimated in [0.8, 1]: phi = 1 is Holt's
                 linear trend, phi < 1 flattens the trend out over the horizon (``method`` states phi)

A free linear trend (phi fixed at 1) is not a candidate: on the demo it read o3's 2026-07-24 price
cut as a trend and ran o3's spend to $0 from September; with phi estimated the same series gets
phi = 0.80 and a flat ~$870 a month, while a truly linear history still gets phi = 1.00.

Choice: each candidate is backtested on the series itself. A window holds back ``BACKTEST_DAYS``
(30) days after an origin, fits on the days before it and forecasts the held-back days' total:

    APE    = |forecast total − actual total| / actual total      (windows with actual 0 skipped)
    MAPE   = mean APE over the windows, in percent
    origins = n − 30, n − 37, ... (every ``BACKTEST_STEP_DAYS``), while at least ``MIN_TRAIN_DAYS``
              (14) days are left to fit on; at most ``MAX_BACKTEST_WINDOWS`` (3)

The candidate with the lowest MAPE (ties: the simpler one) is refitted on the whole series. With a
single window (44 to 50 days of history) the choice is not made: ETS(A,N,N) is used and says so in
``method`` (one window that holds a level shift, such as a price cut, would pick a trend that runs
spend to 0 within months; the demo's o3 series did exactly that). Its
intervals come from ``PATHS`` (1,000) simulated sample paths (normal errors with the fitted
variance, seeded: the same input gives the same output): each path is clipped at 0 per day (spend
is never negative), summed per month, and the 10th/90th and 2.5th/97.5th percentiles of the sums are
the 80 % and 95 % bounds. The point forecast is the model's mean forecast, clipped at 0 per day.
The backtest also records whether each window's actual total fell inside its 80 % and 95 %
intervals (the interval coverage ``docs/economics.md`` reports).

Short history (stated in ``method``, never a silent zero):

    no spend at all           'no_spend_in_history': 0 with 0-wide bounds
    1 day                     'fallback_single_day': that day × days; no interval (NULL bounds)
    2 .. 13 days              'fallback_mean_rate': mean daily spend m, sample sd s over n days;
                              a month of D future days: m × D ± z × sqrt(D × s² + (D × s)² / n)
                              (day-to-day noise plus the uncertainty of the mean), floored at 0
    14 .. 43 days             too short for a 30-day backtest: 'ETS(A,N,N) (no backtest)'

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
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("thinktax.forecast")

BACKTEST_DAYS = 30
BACKTEST_STEP_DAYS = 7
MIN_TRAIN_DAYS = 14
MAX_BACKTEST_WINDOWS = 3
MIN_WINDOWS_TO_CHOOSE = 2
PATHS = 1000
SEED = 20261203
Z80, Z95 = 1.2815515655446004, 1.959963984540054

#: name -> (trend, damped_trend); in order of simplicity (ties go to the first).
CANDIDATES: dict[str, tuple[str | None, bool]] = {
    "ETS(A,N,N)": (None, False),
    "ETS(A,Ad,N)": ("add", True),
}
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
    """The held-back windows of one candidate."""

    windows: int = 0
    mape_pct: float | None = None
    covered80: int = 0
    covered95: int = 0
    ape_pct: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class SeriesForecast:
    method: str
    history_days: int
    backtest: Backtest
    months: list[MonthForecast]
    candidates: dict[str, Backtest] = field(default_factory=dict)  # every candidate's backtest


def month_start(day: dt.date) -> dt.date:
    return day.replace(day=1)


def add_months(month: dt.date, n: int) -> dt.date:
    y, m = divmod(month.month - 1 + n, 12)
    return dt.date(month.year + y, m + 1, 1)


def month_end(month: dt.date) -> dt.date:
    return month.replace(day=calendar.monthrange(month.year, month.month)[1])


def horizon_days(last_day: dt.date, horizon_months: int) -> tuple[list[dt.date], int]:
    """The months forecast (first: the month of ``last_day + 1``) and how many days follow ``last_day``."""
    first = month_start(last_day + dt.timedelta(days=1))
    months = [add_months(first, k) for k in range(horizon_months)]
    return months, (month_end(months[-1]) - last_day).days


# --------------------------------------------------------------------------- fitting
def _fit(y: np.ndarray, name: str):
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: PLC0415 - heavy import

    trend, damped = CANDIDATES[name]
    model = ETSModel(y.astype(float), error="add", trend=trend, damped_trend=damped,
                     bounds={"damping_trend": DAMPING_BOUNDS} if damped else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on short, flat series
        return model.fit(disp=False)


def _paths(res, steps: int, seed: int) -> np.ndarray:
    """(steps × PATHS) simulated daily values, clipped at 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = res.simulate(steps, anchor="end", repetitions=PATHS, rng=np.random.default_rng(seed))
    return np.clip(np.asarray(sim, dtype=float).reshape(steps, -1), 0.0, None)


def _point(res, steps: int) -> np.ndarray:
    return np.clip(np.asarray(res.forecast(steps), dtype=float), 0.0, None)


def backtest(y: np.ndarray, name: str, seed: int = SEED) -> Backtest:
    """Held-back 30-day windows of candidate ``name`` on ``y`` (module docstring)."""
    n = len(y)
    apes: list[float] = []
    c80 = c95 = windows = 0
    for k in range(MAX_BACKTEST_WINDOWS):
        origin = n - BACKTEST_DAYS - k * BACKTEST_STEP_DAYS
        if origin < MIN_TRAIN_DAYS:
            break
        actual = float(y[origin:origin + BACKTEST_DAYS].sum())
        res = _fit(y[:origin], name)
        fc = float(_point(res, BACKTEST_DAYS).sum())
        sums = _paths(res, BACKTEST_DAYS, seed + k).sum(axis=0)
        lo80, hi80, lo95, hi95 = np.percentile(sums, [10, 90, 2.5, 97.5])
        windows += 1
        c80 += int(lo80 <= actual <= hi80)
        c95 += int(lo95 <= actual <= hi95)
        if actual > 0:
            apes.append(abs(fc - actual) / actual * 100.0)
    return Backtest(windows, float(np.mean(apes)) if apes else None, c80, c95, apes)


# --------------------------------------------------------------------------- the forecast
def forecast_daily(first_day: dt.date, values: np.ndarray | list[float], last_day: dt.date,
                   horizon_months: int = 6, *, seed: int = SEED) -> SeriesForecast:
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
            f = observed[j] + float(point[month_of_step == j].sum())
            b = bounds[j]
            if b is None:
                out.append(MonthForecast(m, observed[j], int(per_month_days[j]), f, None, None, None, None))
                continue
            lo80, hi80, lo95, hi95 = (observed[j] + x for x in b)
            out.append(MonthForecast(m, observed[j], int(per_month_days[j]), f,
                                     min(lo80, f), max(hi80, f), min(lo95, f), max(hi95, f)))
        return out

    if n == 0 or not np.any(y > 0):
        zero = np.zeros(steps)
        return SeriesForecast("no_spend_in_history", n, Backtest(), rows(zero, [(0.0, 0.0, 0.0, 0.0)] * len(months)))
    if n == 1:
        return SeriesForecast("fallback_single_day", n, Backtest(), rows(np.full(steps, y[0]), [None] * len(months)))
    if n < MIN_TRAIN_DAYS:
        m, s = float(y.mean()), float(y.std(ddof=1))
        bounds = []
        for j in range(len(months)):
            d = int(per_month_days[j])
            sd = math.sqrt(d * s * s + (d * s) ** 2 / n)
            bounds.append((max(m * d - Z80 * sd, 0.0), m * d + Z80 * sd, max(m * d - Z95 * sd, 0.0), m * d + Z95 * sd))
        return SeriesForecast("fallback_mean_rate", n, Backtest(), rows(np.full(steps, m), bounds))

    tested = {name: backtest(y, name, seed) for name in CANDIDATES} if n >= MIN_TRAIN_DAYS + BACKTEST_DAYS else {}
    scored = [(bt.mape_pct, i, name) for i, (name, bt) in enumerate(tested.items()) if bt.mape_pct is not None]
    if scored and tested["ETS(A,N,N)"].windows >= MIN_WINDOWS_TO_CHOOSE:
        name = min(scored)[2]
        method, bt = name, tested[name]
    elif scored:
        # one held-back window is too little to prefer a trend: a level shift (a price cut, a node
        # added) inside it reads as a trend that runs spend to 0 or doubles it within months
        name = "ETS(A,N,N)"
        method, bt = f"{name} (1 backtest window: no trend chosen)", tested[name]
    else:
        name = "ETS(A,N,N)"
        method, bt = f"{name} (no backtest)", Backtest()
    res = _fit(y, name)
    if CANDIDATES[name][1] and method == name:
        method = f"{name} phi={float(res.damping_trend):.2f}"
    point = _point(res, steps)
    paths = _paths(res, steps, seed)
    sums = np.vstack([paths[month_of_step == j].sum(axis=0) for j in range(len(months))])
    q = np.percentile(sums, [10, 90, 2.5, 97.5], axis=1)
    bounds = [tuple(float(v) for v in q[:, j]) for j in range(len(months))]
    return SeriesForecast(method, n, bt, rows(point, bounds), tested)


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


def prewarm() -> None:
    """Import statsmodels' ETS (~1-2 s) in a background thread. The models step starts it when the
    spend forecast will be rebuilt, before its SQL models, which run in DuckDB without the GIL:
    the import overlaps them. :func:`forecast_many` waits for the thread before anything else
    (before its fork in particular); an import that failed here is retried there, which raises."""
    global _PREWARM
    if _PREWARM is not None or _ETS in sys.modules:
        return

    def run() -> None:
        try:
            importlib.import_module(_ETS)
        except Exception:  # noqa: BLE001 - forecast_many imports it again, and raises
            log.debug("statsmodels import in the background failed", exc_info=True)

    _PREWARM = threading.Thread(target=run, name="thinktax-statsmodels-import", daemon=True)
    _PREWARM.start()


def forecast_many(jobs: list[Job], *, seed: int = SEED) -> list[SeriesForecast]:
    """``forecast_daily(first_day, values, last_day, horizon_months, seed=seed)`` for each job, in order.

    The results are those of calling :func:`forecast_daily` on each job (the same function on the
    same floats, in another process: ``tests/test_forecast.py`` compares them). Jobs with equal
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
    # series with at least MIN_TRAIN_DAYS days are fitted (ETS); shorter ones are arithmetic
    fitted = sum(1 for (first, y, last, horizon), _ in todo if len(y) >= MIN_TRAIN_DAYS and np.any(y > 0))
    workers = _workers(fitted)
    results: list[SeriesForecast] | None = None
    if workers > 1:
        import multiprocessing  # noqa: PLC0415
        from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
        from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

        from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: F401, PLC0415 - before the fork

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
