"""``marts.spend_anomalies`` (issue 42): spend, call and thinking anomalies per day and series.

A Python mart (pipelines/defs/economics_assets.py) that does its per-row work in one DuckDB SQL
statement on the build's connection, so it runs the same after a DuckDB and after a Spark run
(warehouse/spark/economics.py brings ``core.call_costs``' columns it reads, ``SCOPES`` included,
into the DuckDB build before the Python marts are built).

The series. Every pay-per-use API call (``core.call_costs`` with ``serving = 'api'`` and
``price_basis`` not ``'provisioned'``: self-hosted node cost and provisioned throughput are paid by a
commitment whatever the traffic does; credits, discounts, taxes and commitment fees are invoice
lines, never calls) is summed per UTC day for the scope ``all`` and for every scope of ``SCOPES``
(one series per value), in three metrics:

* ``cost_usd``: list-price spend of the day (a day without calls is 0);
* ``calls``: calls of the day (a day without calls is 0);
* ``reasoning_tokens_per_call``: thinking tokens / calls (a day without calls has no value).

The method (docs/economics.md "Spend anomalies" has a worked example). For each series and day D:

    history   = the series' values on the ``adapt_days`` days before D (D-14 .. D-1 by default) of the
                same day type as D (Monday-Friday or Saturday-Sunday): 10 weekdays or 4 weekend days
    expected  = median(history)
    band      = expected -/+ 3 x 1.4826 x MAD(history)   (MAD: the median absolute deviation; 1.4826 x
                MAD estimates a normal standard deviation; lower floored at 0)
    impact_usd = cost_usd: actual - expected
                 calls: (actual - expected) x the day's cost per call
                 reasoning_tokens_per_call: (actual - expected) x the day's calls x the day's thinking
                 cost per thinking token (the extra thinking priced)
    impact_pct = 100 x (actual - expected) / expected (NULL when expected is 0)
    is_anomaly = actual > upper AND impact_usd > min_impact_usd AND (impact_pct > min_impact_pct OR
                 expected = 0)    -- both floors beaten, increases only (a drop costs nothing)

A row exists from the day the series has ``min_history_days`` days of history (its first day with
calls + min_history_days) and at least 2 values of its day type in the window. Why median / MAD of
the same day type: the weekday / weekend swing of business traffic is the weekly pattern that
matters, a day type keeps 10 (4) points in a 14-day window where a same-weekday baseline would keep
2, and the median ignores a spike in the history (a one-day spike does not raise the next days'
baseline); after a permanent level change every value in the window is of the new level after
``adapt_days`` days, so the baseline has adapted by then (the median flips after about half of it).

Episodes: the anomalous days of one series (metric x scope x scope_value) where consecutive ones
at most ``EPISODE_GAP_DAYS`` + 1 days apart (one normal day between two anomalous days is bridged)
are one episode; ``episode_id`` = ``<metric>:<scope>=<scope_value>:<first day>``.

Root cause: for an anomalous day of a series, every other scope of ``SCOPES`` splits it into child
series (team x task type, ...; for ``all``: every scope) scored by the same method. The values whose
positive ``impact_usd`` is at least ``ROOT_CAUSE_NEAR`` (90%) of the largest are the candidates
('unknown', a principal the calls did not report, never is); the most specific of them is
``root_cause`` (``'<scope>=<value>'``): one holding part of the parent's calls that day before one
holding them all (a cost center that is the team says nothing), then the fewest calls (the task type
whose thinking jumped rather than the API key that carries it among others); ties: the larger impact,
``SCOPES`` order, then the value. And ``root_cause_share`` is its impact over the sum of the positive impacts of its
scope's children (0-1: how much of the rise that scope's values show is this one's).

Feedback: ``catalog/anomaly_feedback.csv`` (``stg.anomaly_feedback``, the newest file in force),
``scope,scope_value,from,to,label`` with label ``planned`` or ``not_anomaly``: a row whose day is in
[from, to] for its scope and value gets the label in ``feedback``, and every day of an episode that
has one labelled day carries it too; the alert and the report skip episodes with feedback.
"""

from __future__ import annotations

import duckdb

from sources.contract import ANOMALY_SCOPES

SPEND_ANOMALIES = "marts.spend_anomalies"
# what it reads (warehouse/economics.py INPUTS says why declared here)
INPUTS: dict[str, frozenset[str]] = {SPEND_ANOMALIES: frozenset({"ops.settings", "core.call_costs", "stg.anomaly_feedback"})}

# The scopes a series is kept for: scope name -> the core.call_costs column holding its value, declared
# once in sources/contract.py (the feedback file is checked against it at staging).
SCOPES: dict[str, str] = ANOMALY_SCOPES
METRICS = ("cost_usd", "calls", "reasoning_tokens_per_call")
BAND_MADS = 3.0            # band half-width in robust standard deviations
MAD_TO_SD = 1.4826         # MAD x 1.4826 = the standard deviation of a normal sample
EPISODE_GAP_DAYS = 1       # normal days bridged inside an episode
MIN_HISTORY_POINTS = 2     # values of the day type the window must hold
ROOT_CAUSE_NEAR = 0.9      # root cause: the most specific value whose excess is at least this share of the largest
FEEDBACK_LABELS = ("planned", "not_anomaly")
# [anomaly] in thinktax.toml (services.config.Anomaly, which has the same defaults): read from ops.settings,
# these where a build file's settings predate issue 42
DEFAULTS = {"adapt_days": 14, "min_history_days": 14, "min_impact_usd": 100.0, "min_impact_pct": 25.0}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def daily_sql(scopes: dict[str, str] = SCOPES) -> str:
    """The per-day input of the method from ``core.call_costs``: one row per day x scope values."""
    dims = ", ".join(f"coalesce(CAST({_q(col)} AS VARCHAR), 'unknown') AS {_q(name)}" for name, col in scopes.items())
    return f"""
        SELECT day, {dims},
               sum(cost_usd) AS cost_usd, count(*) AS calls,
               sum(thinking_tokens) AS thinking_tokens, sum(thinking_cost_usd) AS thinking_cost_usd
        FROM core.call_costs
        WHERE serving = 'api' AND price_basis IS DISTINCT FROM 'provisioned'
        GROUP BY ALL"""


def _scored(p: str, dense: str, series: str, adapt_days: int, k: float) -> str:
    """The CTEs ``{p}filled`` .. ``{p}scored`` of the method over the days of ``dense`` (a series' key
    columns, ``first_day`` and ``day``), the sums of ``series`` joined on them (0 where none)."""
    return f"""
{p}filled AS (
    SELECT n.*, CAST(coalesce(s.cost_usd, 0) AS DOUBLE) AS cost, coalesce(s.calls, 0) AS n_calls,
           CAST(coalesce(s.thinking_tokens, 0) AS DOUBLE) AS tt, CAST(coalesce(s.thinking_cost_usd, 0) AS DOUBLE) AS tc,
           isodow(n.day) >= 6 AS weekend
    FROM {dense} n LEFT JOIN {series} s USING (scope, scope_value, child_scope, child_value, day)
),
{p}long AS (
    SELECT *, 'cost_usd' AS metric, cost AS x FROM {p}filled
    UNION ALL SELECT *, 'calls', CAST(n_calls AS DOUBLE) FROM {p}filled
    UNION ALL SELECT *, 'reasoning_tokens_per_call', CASE WHEN n_calls > 0 THEN tt / n_calls END FROM {p}filled
),
{p}base AS (
    SELECT *, median(x) OVER w AS expected, mad(x) OVER w AS mad_x, count(x) OVER w AS n_hist
    FROM {p}long
    WINDOW w AS (PARTITION BY metric, scope, scope_value, child_scope, child_value, weekend ORDER BY day
                 RANGE BETWEEN INTERVAL {int(adapt_days)} DAYS PRECEDING AND INTERVAL 1 DAYS PRECEDING)
),
{p}scored AS (
    SELECT *, expected + {k} * mad_x AS upper, greatest(expected - {k} * mad_x, 0) AS lower,
           CASE metric WHEN 'cost_usd' THEN x - expected
                       WHEN 'calls' THEN (x - expected) * CASE WHEN n_calls > 0 THEN cost / n_calls ELSE 0 END
                       ELSE (x - expected) * n_calls * CASE WHEN tt > 0 THEN tc / tt ELSE 0 END END AS impact,
           CASE WHEN expected > 0 THEN 100 * (x - expected) / expected END AS impact_pct
    FROM {p}base
    WHERE x IS NOT NULL AND n_hist >= {MIN_HISTORY_POINTS}
)"""


def anomalies_sql(daily: str, *, adapt_days: int, min_history_days: int, min_impact_usd: float,
                  min_impact_pct: float, feedback: str | None, scopes: tuple[str, ...] = tuple(SCOPES)) -> str:
    """The mart's rows from ``daily`` (a relation with ``day``, one column per scope name, ``cost_usd``,
    ``calls``, ``thinking_tokens``, ``thinking_cost_usd``) and ``feedback`` (a query with ``scope,
    scope_value, from_day, to_day, label``; None: none). The module doc states the method.

    The parent series (``all`` and each scope's values) are scored on every day; a child series (a
    parent's calls split by another scope's values) only on the days its score can be read: the
    anomalous days of its parent and the ``adapt_days`` before each, which hold that day's whole
    window (its first day, from which a day without calls counts as 0, is the series' own over all
    days). The root causes are the same as scoring every child on every day (issue 42's first
    version did: 4.9 s of the demo's 6.6 s economics phase, for 21 anomalous days)."""
    agg = ("sum(cost_usd) AS cost_usd, sum(calls) AS calls, sum(thinking_tokens) AS thinking_tokens, "
           "sum(thinking_cost_usd) AS thinking_cost_usd")
    parents = [f"SELECT 'all' AS scope, '*' AS scope_value, '' AS child_scope, '' AS child_value, day, {agg} FROM d GROUP BY day"]
    # a child's sums on the days its parent needs (need), and its first day with calls (over all days)
    sums, firsts = [], []  # the children of 'all' are the other parents: scored already
    for a in scopes:
        parents.append(f"SELECT '{a}', {_q(a)}, '', '', day, {agg} FROM d GROUP BY day, {_q(a)}")
        for b in scopes:
            if b != a:
                sums.append(f"SELECT '{a}' AS scope, d.{_q(a)} AS scope_value, '{b}' AS child_scope, d.{_q(b)} AS child_value, "
                            f"d.day, {agg} FROM d JOIN need n "
                            f"ON n.scope = '{a}' AND n.scope_value = d.{_q(a)} AND n.day = d.day GROUP BY ALL")
                firsts.append(f"SELECT '{a}' AS scope, {_q(a)} AS scope_value, '{b}' AS child_scope, {_q(b)} AS child_value, "
                              f"min(day) AS first_day FROM d "
                              f"WHERE {_q(a)} IN (SELECT scope_value FROM hot WHERE scope = '{a}') GROUP BY ALL")
    union = "\n        UNION ALL "
    rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(scopes))
    fb = feedback or ("SELECT CAST(NULL AS VARCHAR) AS scope, CAST(NULL AS VARCHAR) AS scope_value, "
                      "CAST(NULL AS DATE) AS from_day, CAST(NULL AS DATE) AS to_day, CAST(NULL AS VARCHAR) AS label "
                      "WHERE false")
    k = BAND_MADS * MAD_TO_SD
    return f"""
WITH d AS (SELECT * FROM {daily}),
s AS (
        {union.join(parents)}
),
last AS (SELECT max(day) AS last_day FROM d),
keys AS (SELECT scope, scope_value, child_scope, child_value, min(day) AS first_day FROM s GROUP BY ALL),
dense AS (
    -- every day from the series' first to the data's last: a day without calls is a day of 0 spend
    SELECT k.*, CAST(unnest(generate_series(k.first_day, l.last_day, INTERVAL 1 DAY)) AS DATE) AS day
    FROM keys k, last l
),{_scored("", "dense", "s", adapt_days, k)},
parent AS (
    SELECT *, x > upper AND impact > {float(min_impact_usd)}
              AND (impact_pct > {float(min_impact_pct)} OR expected = 0) AS is_anomaly
    FROM scored
    WHERE day - first_day >= {int(min_history_days)}
),
hot AS (SELECT DISTINCT scope, scope_value, day FROM parent WHERE is_anomaly AND scope <> 'all'),
need AS (
    -- the days a child's score on an anomalous day of its parent reads: that day and its window
    SELECT DISTINCT scope, scope_value,
           CAST(unnest(generate_series(day - {int(adapt_days)}, day, INTERVAL 1 DAY)) AS DATE) AS day
    FROM hot
),
c_s AS (
        {union.join(sums)}
),
c_keys AS (
        {union.join(firsts)}
),
c_dense AS (
    SELECT k.*, n.day FROM c_keys k JOIN need n ON n.scope = k.scope AND n.scope_value = k.scope_value AND n.day >= k.first_day
),{_scored("c_", "c_dense", "c_s", adapt_days, k)},
children AS (
    SELECT metric, scope, scope_value, day, child_scope, child_value, impact, n_calls FROM c_scored
    UNION ALL
    -- a child of 'all' (a scope's value) is that value's own series
    SELECT metric, 'all', '*', day, scope, scope_value, impact, n_calls FROM scored WHERE scope <> 'all'
),
candidates AS (
    -- a child value not reported ('unknown': no key, no user on those calls) names nothing: never a cause
    SELECT c.metric, c.scope, c.scope_value, c.day, c.child_scope, c.child_value, c.impact, c.n_calls,
           c.n_calls >= p.n_calls AS holds_all,
           c.impact / sum(c.impact) OVER (PARTITION BY c.metric, c.scope, c.scope_value, c.day, c.child_scope) AS share,
           max(c.impact) OVER (PARTITION BY c.metric, c.scope, c.scope_value, c.day) AS top_impact
    FROM children c JOIN parent p USING (metric, scope, scope_value, day)
    WHERE p.is_anomaly AND c.impact > 0 AND c.child_value <> 'unknown'
),
causes AS (
    -- of the values whose excess is at least {ROOT_CAUSE_NEAR:.0%} of the largest, the most specific: one that
    -- holds only part of the parent's calls before one that holds them all (a cost center that is the
    -- team says nothing), then the fewest calls (the task type whose thinking jumped, not the API key
    -- that carries it among others)
    SELECT metric, scope, scope_value, day, child_scope || '=' || child_value AS root_cause, share
    FROM candidates
    WHERE impact >= {ROOT_CAUSE_NEAR} * top_impact
    QUALIFY row_number() OVER (PARTITION BY metric, scope, scope_value, day
                               ORDER BY holds_all, n_calls, impact DESC, CASE child_scope {rank} END, child_value) = 1
),
flagged AS (
    SELECT metric, scope, scope_value, day,
           CASE WHEN day - lag(day) OVER w <= {EPISODE_GAP_DAYS + 1} THEN NULL ELSE day END AS starts
    FROM parent WHERE is_anomaly
    WINDOW w AS (PARTITION BY metric, scope, scope_value ORDER BY day)
),
episodes AS (
    SELECT metric, scope, scope_value, day,
           metric || ':' || scope || '=' || scope_value || ':'
           || strftime(max(starts) OVER (PARTITION BY metric, scope, scope_value ORDER BY day
                                         ROWS UNBOUNDED PRECEDING), '%Y-%m-%d') AS episode_id
    FROM flagged
),
fb AS (
    SELECT * FROM ({fb}) WHERE label IN {FEEDBACK_LABELS}
),
labelled AS (
    SELECT p.*, e.episode_id, c.root_cause, c.share,
           (SELECT max(f.label) FROM fb f
            WHERE f.scope = p.scope AND f.scope_value = p.scope_value AND p.day BETWEEN f.from_day AND f.to_day) AS day_label
    FROM parent p
    LEFT JOIN episodes e USING (metric, scope, scope_value, day)
    LEFT JOIN causes c USING (metric, scope, scope_value, day)
),
final AS (
    SELECT day, metric, scope, scope_value,
           x AS actual, expected, lower, upper,
           CAST(round(impact, 6) AS DECIMAL(18,6)) AS impact_usd,
           round(impact_pct, 4) AS impact_pct,
           is_anomaly, episode_id, root_cause,
           round(share, 4) AS root_cause_share,
           CASE WHEN episode_id IS NULL THEN day_label
                ELSE max(day_label) OVER (PARTITION BY episode_id) END AS feedback,
           CAST(n_hist AS INTEGER) AS history_points,
           'median_mad_' || CASE WHEN weekend THEN 'weekend' ELSE 'weekday' END || '_{int(adapt_days)}d' AS method
    FROM labelled
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
ORDER BY metric, scope, scope_value, day"""


def _params(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_schema = 'ops' AND table_name = 'settings'").fetchall()}
    names = {f"anomaly_{k}": v for k, v in DEFAULTS.items()}
    have = [n for n in names if n in cols]
    row = con.execute(f"SELECT {', '.join(have)} FROM ops.settings").fetchall()[0] if have else ()
    out = dict(names) | dict(zip(have, row or (), strict=False))
    return {k.removeprefix("anomaly_"): v for k, v in out.items()}


def build_spend_anomalies(con: duckdb.DuckDBPyConnection):
    """(Re)create ``marts.spend_anomalies`` from ``core.call_costs`` and ``stg.anomaly_feedback``."""
    from warehouse.economics import Built, _finish  # noqa: PLC0415 - services.config imports SCOPES from here
    from warehouse.incremental import has_table  # noqa: PLC0415

    built = Built(SPEND_ANOMALIES)
    p = _params(con)
    feedback = None
    if has_table(con, "stg.anomaly_feedback"):
        feedback = ("(SELECT scope, scope_value, from_day, to_day, label FROM stg.anomaly_feedback "
                    "WHERE file_id = (SELECT max(file_id) FROM stg.anomaly_feedback))")
    sql = anomalies_sql(f"({daily_sql()})", adapt_days=int(p["adapt_days"]),
                        min_history_days=int(p["min_history_days"]), min_impact_usd=float(p["min_impact_usd"]),
                        min_impact_pct=float(p["min_impact_pct"]), feedback=feedback)
    con.execute(f"CREATE OR REPLACE TABLE {SPEND_ANOMALIES} AS {sql}")
    built.rows = con.execute(f"SELECT count(*) FROM {SPEND_ANOMALIES}").fetchall()[0][0]
    return _finish(built)
