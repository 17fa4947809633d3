"""marts.spend_anomalies scores a child series only where a root cause can be read from it (issue 42,
made fast for issue 45): on its parent's anomalous days and the adapt_days before each. This checks
that the mart's SQL (warehouse.anomalies.anomalies_sql) gives, row for row, what issue 42's first
version gave: every child series of every parent scored on every day (``reference_sql`` below, that
version's SQL verbatim).

The daily input is random (seeded) traffic over six scopes with spikes of cost, calls and thinking put
into chosen children (some anomalous for their parents, some not), children that start or stop mid-way
(a first day inside a window: a day without calls counts as 0 only from a series' first day),
'unknown' keys and users (never a root cause), and a feedback file; under the defaults and under a
shorter window and history.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pytest

from warehouse.anomalies import (
    BAND_MADS, EPISODE_GAP_DAYS, FEEDBACK_LABELS, MAD_TO_SD, MIN_HISTORY_POINTS, ROOT_CAUSE_NEAR, SCOPES, _q,
    anomalies_sql,
)

START = dt.date(2026, 5, 4)  # a Monday
DAYS = 63


def _daily(seed: int) -> list[tuple]:
    """(day, team, model, task_type, cost_center, api_key, user, cost_usd, calls, thinking_tokens, thinking_cost_usd)."""
    rng = np.random.default_rng(seed)
    teams = {"search": "cc-1", "legal": "cc-2", "ops": "cc-1", "ml": "cc-3"}
    models = ["m-a", "m-b", "m-c"]
    tasks = ["qa", "code", "agent", "summarise"]
    keys = {t: [f"key-{t}-{i}" for i in range(2)] + ["unknown"] for t in teams}
    users = {t: [f"{t}-u{i}" for i in range(4)] + ["unknown"] for t in teams}
    # spikes: (first day, last day, team, model, task, user index or None, factor on calls, factor on thinking)
    spikes = [(30, 31, "search", "m-a", "code", 1, 12.0, 1.0), (40, 40, "legal", None, "agent", None, 1.0, 9.0),
              (45, 47, "ml", "m-c", None, 2, 6.0, 4.0), (52, 52, None, "m-b", "qa", None, 20.0, 1.0),
              (58, 60, "ops", None, None, 0, 3.0, 2.0)]
    rows = []
    for i in range(DAYS):
        day = START + dt.timedelta(days=i)
        weekend = day.isoweekday() >= 6
        for team, cc in teams.items():
            if team == "ml" and i < 20:  # a team that starts later: its first day is inside some windows
                continue
            for model in models:
                if model == "m-c" and 25 <= i < 33:  # a model that pauses: days of 0 inside a window
                    continue
                for task in tasks:
                    if rng.random() < 0.35:
                        continue
                    key = keys[team][rng.integers(len(keys[team]))]
                    user_i = int(rng.integers(len(users[team])))
                    calls = int(rng.integers(1, 6 if weekend else 30))
                    tokens = int(calls * rng.integers(200, 3000))
                    for a, b, t, m, k, u, fc, ft in spikes:
                        if a <= i <= b and t in (None, team) and m in (None, model) and k in (None, task) \
                                and u in (None, user_i):
                            calls, tokens = int(calls * fc), int(tokens * fc * ft)
                    cost = round(calls * 0.4 + tokens * 2e-5 + rng.random(), 6)
                    rows.append((day, team, model, task, cc, key, users[team][user_i], cost, calls, tokens,
                                 round(tokens * 2e-5, 6)))
    return rows


def _connection(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA ops; CREATE TABLE ops.settings AS SELECT 'test' AS build_id")
    con.execute('CREATE TABLE raw (day DATE, team VARCHAR, model VARCHAR, task_type VARCHAR, cost_center VARCHAR, '
                'api_key VARCHAR, "user" VARCHAR, cost_usd DECIMAL(18,6), calls BIGINT, thinking_tokens BIGINT, '
                'thinking_cost_usd DECIMAL(18,6))')
    con.executemany("INSERT INTO raw VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    # one row per day x scope values, as warehouse.anomalies.daily_sql makes of core.call_costs
    con.execute('CREATE TABLE daily AS SELECT day, team, model, task_type, cost_center, api_key, "user", sum(cost_usd) '
                'AS cost_usd, sum(calls) AS calls, sum(thinking_tokens) AS thinking_tokens, '
                'sum(thinking_cost_usd) AS thinking_cost_usd FROM raw GROUP BY ALL')
    con.execute("CREATE TABLE fb (scope VARCHAR, scope_value VARCHAR, from_day DATE, to_day DATE, label VARCHAR)")
    con.execute("INSERT INTO fb VALUES ('team', 'legal', DATE '2026-06-13', DATE '2026-06-13', 'planned'), "
                "('all', '*', DATE '2026-05-25', DATE '2026-05-25', 'not_anomaly')")
    return con


@pytest.mark.parametrize(("params", "min_scopes"), [
    # at the defaults' $100 floor only days of scope all are anomalous: their children are the other parents
    ({"adapt_days": 14, "min_history_days": 14, "min_impact_usd": 100.0, "min_impact_pct": 25.0}, 1),
    # lower floors: anomalous days in every scope, whose children are scored on their windows only
    ({"adapt_days": 7, "min_history_days": 5, "min_impact_usd": 20.0, "min_impact_pct": 10.0}, 7),
], ids=["defaults", "short_window"])
def test_the_mart_equals_scoring_every_child_on_every_day(params, min_scopes):
    con = _connection(_daily(seed=42))
    fast = con.execute(anomalies_sql("daily", feedback="SELECT * FROM fb", **params)).fetchall()
    full = con.execute(reference_sql("daily", feedback="SELECT * FROM fb", **params)).fetchall()
    assert fast == full  # every value, in the same order
    # the comparison means something: parents anomalous in several scopes, each with a root cause
    (anomalous, scopes, causes, labelled) = con.execute(
        f"SELECT count(*), count(DISTINCT scope), count(root_cause), count(feedback) "
        f"FROM ({anomalies_sql('daily', feedback='SELECT * FROM fb', **params)}) WHERE is_anomaly").fetchall()[0]
    assert anomalous >= 4 and scopes >= min_scopes and causes >= 4 and labelled >= 1


# issue 42's first version of warehouse.anomalies.anomalies_sql (commit 0b12126), the reference
def reference_sql(daily: str, *, adapt_days: int, min_history_days: int, min_impact_usd: float,
                  min_impact_pct: float, feedback: str | None, scopes: tuple[str, ...] = tuple(SCOPES)) -> str:
    """The mart's rows from ``daily`` (a relation with ``day``, one column per scope name, ``cost_usd``,
    ``calls``, ``thinking_tokens``, ``thinking_cost_usd``) and ``feedback`` (a query with ``scope,
    scope_value, from_day, to_day, label``; None: none). The module doc states the method."""
    agg = ("day, sum(cost_usd) AS cost_usd, sum(calls) AS calls, sum(thinking_tokens) AS thinking_tokens, "
           "sum(thinking_cost_usd) AS thinking_cost_usd")
    parts = [f"SELECT 'all' AS scope, '*' AS scope_value, '' AS child_scope, '' AS child_value, {agg} FROM d GROUP BY day"]
    for a in scopes:
        parts.append(f"SELECT '{a}', {_q(a)}, '', '', {agg} FROM d GROUP BY day, {_q(a)}")
        parts.append(f"SELECT 'all', '*', '{a}', {_q(a)}, {agg} FROM d GROUP BY day, {_q(a)}")
        for b in scopes:
            if b != a:
                parts.append(f"SELECT '{a}', {_q(a)}, '{b}', {_q(b)}, {agg} FROM d GROUP BY day, {_q(a)}, {_q(b)}")
    series = "\n        UNION ALL ".join(parts)
    rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(scopes))
    fb = feedback or ("SELECT CAST(NULL AS VARCHAR) AS scope, CAST(NULL AS VARCHAR) AS scope_value, "
                      "CAST(NULL AS DATE) AS from_day, CAST(NULL AS DATE) AS to_day, CAST(NULL AS VARCHAR) AS label "
                      "WHERE false")
    k = BAND_MADS * MAD_TO_SD
    return f"""
WITH d AS (SELECT * FROM {daily}),
s AS (
        {series}
),
last AS (SELECT max(day) AS last_day FROM d),
keys AS (SELECT scope, scope_value, child_scope, child_value, min(day) AS first_day FROM s GROUP BY ALL),
dense AS (
    -- every day from the series' first to the data's last: a day without calls is a day of 0 spend
    SELECT k.*, CAST(unnest(generate_series(k.first_day, l.last_day, INTERVAL 1 DAY)) AS DATE) AS day
    FROM keys k, last l
),
filled AS (
    SELECT n.*, CAST(coalesce(s.cost_usd, 0) AS DOUBLE) AS cost, coalesce(s.calls, 0) AS n_calls,
           CAST(coalesce(s.thinking_tokens, 0) AS DOUBLE) AS tt, CAST(coalesce(s.thinking_cost_usd, 0) AS DOUBLE) AS tc,
           isodow(n.day) >= 6 AS weekend
    FROM dense n LEFT JOIN s USING (scope, scope_value, child_scope, child_value, day)
),
long AS (
    SELECT *, 'cost_usd' AS metric, cost AS x FROM filled
    UNION ALL SELECT *, 'calls', CAST(n_calls AS DOUBLE) FROM filled
    UNION ALL SELECT *, 'reasoning_tokens_per_call', CASE WHEN n_calls > 0 THEN tt / n_calls END FROM filled
),
base AS (
    SELECT *, median(x) OVER w AS expected, mad(x) OVER w AS mad_x, count(x) OVER w AS n_hist
    FROM long
    WINDOW w AS (PARTITION BY metric, scope, scope_value, child_scope, child_value, weekend ORDER BY day
                 RANGE BETWEEN INTERVAL {int(adapt_days)} DAYS PRECEDING AND INTERVAL 1 DAYS PRECEDING)
),
scored AS (
    SELECT *, expected + {k} * mad_x AS upper, greatest(expected - {k} * mad_x, 0) AS lower,
           CASE metric WHEN 'cost_usd' THEN x - expected
                       WHEN 'calls' THEN (x - expected) * CASE WHEN n_calls > 0 THEN cost / n_calls ELSE 0 END
                       ELSE (x - expected) * n_calls * CASE WHEN tt > 0 THEN tc / tt ELSE 0 END END AS impact,
           CASE WHEN expected > 0 THEN 100 * (x - expected) / expected END AS impact_pct
    FROM base
    WHERE x IS NOT NULL AND n_hist >= {MIN_HISTORY_POINTS}
),
parent AS (
    SELECT *, x > upper AND impact > {float(min_impact_usd)}
              AND (impact_pct > {float(min_impact_pct)} OR expected = 0) AS is_anomaly
    FROM scored
    WHERE child_scope = '' AND day - first_day >= {int(min_history_days)}
),
candidates AS (
    -- a child value not reported ('unknown': no key, no user on those calls) names nothing: never a cause
    SELECT c.metric, c.scope, c.scope_value, c.day, c.child_scope, c.child_value, c.impact, c.n_calls,
           c.n_calls >= p.n_calls AS holds_all,
           c.impact / sum(c.impact) OVER (PARTITION BY c.metric, c.scope, c.scope_value, c.day, c.child_scope) AS share,
           max(c.impact) OVER (PARTITION BY c.metric, c.scope, c.scope_value, c.day) AS top_impact
    FROM scored c JOIN parent p USING (metric, scope, scope_value, day)
    WHERE c.child_scope <> '' AND p.is_anomaly AND c.impact > 0 AND c.child_value <> 'unknown'
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
