"""marts.spend_anomalies' method on hand-built daily series with known truth (issue 42).

Each test writes a small ``daily`` relation (day x team x model x task_type with cost, calls,
thinking tokens and thinking cost, what warehouse.anomalies.daily_sql makes of core.call_costs) and
scores it with the mart's own SQL (warehouse.anomalies.anomalies_sql) at the defaults: adapt_days 14,
min_history_days 14, floors $100 and 25 %. The expected figures are worked by hand in each docstring
from the method in the module doc: expected = median of the same day type over the 14 days before,
band = expected +/- 3 x 1.4826 x MAD.

2026-06-01 is a Monday; series start there unless said otherwise.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

import duckdb
import pytest

from services.config import Anomaly, Config, ConfigError, _check
from warehouse.anomalies import DEFAULTS, anomalies_sql

MON = dt.date(2026, 6, 1)
USD_PER_THINKING_TOKEN = 1e-5  # $10 per million thinking tokens


def day(i: int) -> dt.date:
    return MON + dt.timedelta(days=i)


def score(rows: list[tuple], feedback: list[tuple] | None = None, **params) -> duckdb.DuckDBPyConnection:
    """rows: (day, team, model, task_type, cost_usd, calls, thinking_tokens); thinking cost = tokens x $1e-5.
    Returns a connection with the scored rows in table ``a``."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA ops; CREATE TABLE ops.settings AS SELECT 'test' AS build_id")
    con.execute("CREATE TABLE rows (day DATE, team VARCHAR, model VARCHAR, task_type VARCHAR, cost_usd DECIMAL(18,6), "
                "calls BIGINT, thinking_tokens BIGINT, thinking_cost_usd DECIMAL(18,6))")
    con.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(*r, round(r[6] * USD_PER_THINKING_TOKEN, 6)) for r in rows])
    # issue 41's scopes as calls without attribution carry them: the team's cost center, no key, no user
    # (a value holding every call of its parent is a root cause only when no other explains as much)
    con.execute("""CREATE TABLE daily AS SELECT day, team, model, task_type, team AS cost_center,
                   'unknown' AS api_key, 'unknown' AS "user", cost_usd, calls, thinking_tokens, thinking_cost_usd FROM rows""")
    fb = None
    if feedback is not None:
        con.execute("CREATE TABLE fb (scope VARCHAR, scope_value VARCHAR, from_day DATE, to_day DATE, label VARCHAR)")
        con.executemany("INSERT INTO fb VALUES (?, ?, ?, ?, ?)", feedback)
        fb = "SELECT * FROM fb"
    p = DEFAULTS | params
    con.execute("CREATE TABLE a AS " + anomalies_sql(
        "daily", adapt_days=p["adapt_days"], min_history_days=p["min_history_days"],
        min_impact_usd=p["min_impact_usd"], min_impact_pct=p["min_impact_pct"], feedback=fb))
    return con


def episodes(con, metric: str | None = None, scope: str | None = None, value: str | None = None) -> list[tuple]:
    """(episode_id, first day, last day, days) of the anomalous rows matching the filters."""
    where = ["is_anomaly"] + [f"{c} = '{v}'" for c, v in (("metric", metric), ("scope", scope), ("scope_value", value)) if v]
    return con.execute(f"SELECT episode_id, min(day), max(day), count(*) FROM a WHERE {' AND '.join(where)} "
                       "GROUP BY episode_id ORDER BY 2, 1").fetchall()


def flat(n_days: int, cost, calls: int = 100, tokens_per_call: int = 1000, team: str = "search",
         model: str = "m1", task_type: str = "qa", start: int = 0) -> list[tuple]:
    return [(day(i), team, model, task_type, cost(i) if callable(cost) else cost, calls, calls * tokens_per_call)
            for i in range(start, n_days)]


def test_weekday_weekend_pattern_raises_nothing():
    """$1,000 on weekdays, $150 at weekends, calls in proportion, for 8 weeks: the weekend drop and the
    Monday jump back are each day type's own level, so no day of any series is anomalous (a baseline
    without day types would see every Monday as +567 %: $850 over an expected $150)."""
    rows = [(day(i), "search", "m1", "qa", 150 if day(i).isoweekday() >= 6 else 1000,
             15 if day(i).isoweekday() >= 6 else 100, 1000 * (15 if day(i).isoweekday() >= 6 else 100))
            for i in range(56)]
    con = score(rows)
    assert con.execute("SELECT count(*) FROM a").fetchone()[0] > 0
    assert episodes(con) == []
    # a Monday's expected is the weekday median: $1,000, not the weekend's $150
    assert con.execute("SELECT expected FROM a WHERE metric = 'cost_usd' AND scope = 'team' AND day = ?",
                       [day(28)]).fetchone()[0] == 1000


def test_one_day_spike_is_one_episode_that_day_with_its_impact():
    """A flat $1,000 a day (100 calls at 1,000 thinking tokens each) and $5,000 on day 30 (Wednesday
    2026-07-01; the same 100 calls: a costlier prompt). Day 30: expected = median of the 10 weekdays
    before = $1,000, MAD 0, so the band is [1000, 1000]; impact = 5000 - 1000 = $4,000 (+400 %), above
    both floors: one episode of that one day for every scope holding it, root cause the child that
    carries it all (share 1). The days after: the spike is 1 of 10 weekdays in their window; the median
    stays $1,000, no anomaly."""
    rows = flat(45, lambda i: 5000 if i == 30 else 1000)
    con = score(rows)
    assert episodes(con, "cost_usd", "team", "search") == [("cost_usd:team=search:2026-07-01", day(30), day(30), 1)]
    row = con.execute("SELECT actual, expected, lower, upper, impact_usd, impact_pct, root_cause, root_cause_share "
                      "FROM a WHERE metric = 'cost_usd' AND scope = 'team' AND day = ?", [day(30)]).fetchone()
    assert row == (5000, 1000, 1000, 1000, D("4000.000000"), 400.0, "model=m1", 1.0)
    # the calls and the thinking per call did not move
    assert episodes(con, "calls") == [] and episodes(con, "reasoning_tokens_per_call") == []
    # every scope sees the same single-day episode
    assert sorted(e[0] for e in episodes(con)) == [
        "cost_usd:all=*:2026-07-01", "cost_usd:api_key=unknown:2026-07-01", "cost_usd:cost_center=search:2026-07-01",
        "cost_usd:model=m1:2026-07-01", "cost_usd:task_type=qa:2026-07-01", "cost_usd:team=search:2026-07-01",
        "cost_usd:user=unknown:2026-07-01"]


def test_band_is_three_robust_standard_deviations():
    """Weekdays cycle $900, $1,000, $1,100 (by calendar day i % 3), weekends $1,000. On day 30
    (Wednesday) the 10 weekdays of days 16..29 are: 16 Tue (i%3=1: 1000), 17 Wed (2: 1100), 18 Thu
    (0: 900), 19 Fri (1: 1000), 22 Mon (1: 1000), 23 Tue (2: 1100), 24 Wed (0: 900), 25 Thu (1: 1000),
    26 Fri (2: 1100), 29 Mon (2: 1100); sorted 900, 900, 1000 x4, 1100 x4: median 1000; absolute
    deviations sorted 0 x4, 100 x6: MAD 100. Band 1000 -/+
    3 x 1.4826 x 100 = 555.22 .. 1444.78. Day 30 at $1,400 (+40 %, $400) stays inside: no anomaly;
    at $1,500 it is out and beats both floors."""
    def cost(spike):
        return lambda i: spike if i == 30 else (1000 if day(i).isoweekday() >= 6 else (900, 1000, 1100)[i % 3])
    inside = score(flat(31, cost(1400)))
    lo, hi = inside.execute("SELECT lower, upper FROM a WHERE metric = 'cost_usd' AND scope = 'team' AND day = ?",
                            [day(30)]).fetchone()
    assert lo == pytest.approx(1000 - 444.78) and hi == pytest.approx(1000 + 444.78)
    assert episodes(inside, "cost_usd") == []
    outside = score(flat(31, cost(1500)))
    assert episodes(outside, "cost_usd", "team") == [("cost_usd:team=search:2026-07-01", day(30), day(30), 1)]


def _blowup_rows(n_days: int = 40, first: int = 30, last: int = 32) -> list[tuple]:
    """Team search: task types qa and summarize, each 5,000 calls a day on m1 and 5,000 on m2, 1,000
    thinking tokens a call ($0.01 of thinking) and $1,000 of other cost per (task type, model) a day.
    summarize thinks 4,000 tokens a call on days first..last."""
    rows = []
    for i in range(n_days):
        for task in ("qa", "summarize"):
            per_call = 4000 if task == "summarize" and first <= i <= last else 1000
            for model in ("m1", "m2"):
                thinking = 5000 * per_call
                rows.append((day(i), "search", model, task, 1000 + thinking * USD_PER_THINKING_TOKEN, 5000, thinking))
    return rows


def test_three_day_thinking_blowup_in_one_task_type_is_one_episode_with_that_root_cause():
    """The team's reasoning tokens per call: (10,000 x 1,000 + 10,000 x 4,000) / 20,000 = 2,500 against
    an expected 1,000 (+150 %) on days 30-32; impact = 1,500 extra tokens x 20,000 calls x $1e-5 = $300
    a day. Children: task_type=summarize 3,000 extra x 10,000 calls x $1e-5 = $300 (share 1.0);
    model=m1 and m2 each (2,500 - 1,000) x 10,000 x $1e-5 = $150 (0.5); task_type=qa $0. Root cause:
    task_type=summarize, share 1. The summarize series itself drifts 1,000 -> 4,000 (+300 %, $300):
    flagged. The team's cost only rises $300 on $4,200 (+7.1 %), under the 25 % floor: the drift is
    seen before the bill shows it."""
    con = score(_blowup_rows())
    assert episodes(con, "reasoning_tokens_per_call", "team", "search") == [
        ("reasoning_tokens_per_call:team=search:2026-07-01", day(30), day(32), 3)]
    got = con.execute("SELECT day, actual, expected, impact_usd, impact_pct, root_cause, root_cause_share FROM a "
                      "WHERE metric = 'reasoning_tokens_per_call' AND scope = 'team' AND is_anomaly ORDER BY day").fetchall()
    assert got == [(day(i), 2500.0, 1000.0, D("300.000000"), 150.0, "task_type=summarize", 1.0) for i in (30, 31, 32)]
    assert episodes(con, "reasoning_tokens_per_call", "task_type", "summarize") == [
        ("reasoning_tokens_per_call:task_type=summarize:2026-07-01", day(30), day(32), 3)]
    assert episodes(con, "reasoning_tokens_per_call", "task_type", "qa") == []
    assert episodes(con, "cost_usd", "team") == []
    pct = con.execute("SELECT impact_pct FROM a WHERE metric = 'cost_usd' AND scope = 'team' AND day = ?",
                      [day(30)]).fetchone()[0]
    assert pct == pytest.approx(100 * 300 / 4200, abs=1e-4)


def test_permanent_step_is_at_most_one_episode_and_none_two_weeks_later():
    """$1,000 a day, then $2,000 a day from Monday day 28 for 5 weeks. Weekdays: the first 5 weekdays
    after the step have at most 4 new values among the 10 in their window: median 1000, MAD 0 ->
    anomalous (+100 %, $1,000); the 6th (Monday day 35) has 5 new, 5 old: median 1,500, MAD 500,
    upper 1,500 + 2,223.9 -> inside. Weekends: day 33 (0 new of 4) and 34 (1 new) anomalous, day 40
    (2 new: median 1,500, MAD 500) inside. So days 28..34, one episode; nothing from day 35 on, and
    so nothing two weeks (day 42) after the step."""
    con = score(flat(63, lambda i: 2000 if i >= 28 else 1000))
    eps = episodes(con, "cost_usd", "team", "search")
    assert eps == [("cost_usd:team=search:2026-06-29", day(28), day(34), 7)]
    assert con.execute("SELECT count(*) FROM a WHERE is_anomaly AND day >= ?", [day(42)]).fetchone()[0] == 0
    # adapted: two weeks after the step the expected value is the new level
    assert con.execute("SELECT expected FROM a WHERE metric = 'cost_usd' AND scope = 'team' AND day = ?",
                       [day(42)]).fetchone()[0] == 2000


def test_tiny_team_under_the_dollar_floor_raises_nothing():
    """Team tiny spends $10 a day and $60 on day 30: +500 %, but the excess is $50, under the $100
    floor: no anomaly for team tiny. Team search beside it ($1,000 flat) has none either; the whole
    ($1,060 against $1,010: +$50, +5 %) neither."""
    rows = flat(40, 1000) + flat(40, lambda i: 60 if i == 30 else 10, team="tiny", calls=10)
    con = score(rows)
    row = con.execute("SELECT impact_usd, impact_pct, is_anomaly FROM a WHERE metric = 'cost_usd' AND scope = 'team' "
                      "AND scope_value = 'tiny' AND day = ?", [day(30)]).fetchone()
    assert row == (D("50.000000"), 500.0, False)
    assert episodes(con) == []


def test_the_percent_floor_alone_also_stops_it():
    """$100,000 a day and $110,000 on day 30: $10,000 over, but +10 %, under the 25 % floor: none."""
    assert episodes(score(flat(40, lambda i: 110_000 if i == 30 else 100_000))) == []


def test_feedback_labels_the_episode_and_is_shown_in_the_mart():
    """The one-day spike of the test above, labelled planned for team search on days 30..30, and a
    not_anomaly label for another team that has no episode: the team's spike rows carry 'planned';
    the all / model / task_type series of the same spike are other series and stay unlabelled."""
    rows = flat(45, lambda i: 5000 if i == 30 else 1000)
    con = score(rows, feedback=[("team", "search", day(30), day(30), "planned"),
                                ("team", "other", day(0), day(44), "not_anomaly")])
    assert con.execute("SELECT episode_id, feedback FROM a WHERE is_anomaly AND scope = 'team'").fetchall() == [
        ("cost_usd:team=search:2026-07-01", "planned")]
    assert con.execute("SELECT count(*) FROM a WHERE is_anomaly AND scope <> 'team' AND feedback IS NOT NULL").fetchone()[0] == 0


def test_a_labelled_day_labels_its_whole_episode():
    """A 3-day step up and back (days 30-32 at $3,000): feedback on day 31 only labels all three days."""
    con = score(flat(40, lambda i: 3000 if 30 <= i <= 32 else 1000),
                feedback=[("team", "search", day(31), day(31), "not_anomaly")])
    assert con.execute("SELECT day, feedback FROM a WHERE is_anomaly AND scope = 'team' AND metric = 'cost_usd' "
                       "ORDER BY day").fetchall() == [(day(i), "not_anomaly") for i in (30, 31, 32)]


def test_one_normal_day_is_bridged_two_are_not():
    """Spikes on days 30 and 32 (one normal day between): one episode. Spikes on 30 and 33: two."""
    bridged = score(flat(40, lambda i: 5000 if i in (30, 32) else 1000))
    assert episodes(bridged, "cost_usd", "team") == [("cost_usd:team=search:2026-07-01", day(30), day(32), 2)]
    split = score(flat(40, lambda i: 5000 if i in (30, 33) else 1000))
    assert [e[0] for e in episodes(split, "cost_usd", "team")] == [
        "cost_usd:team=search:2026-07-01", "cost_usd:team=search:2026-07-04"]


def test_no_row_before_min_history_days():
    """A series starting on day 0 has rows from day 14 on (14 days of history); a spike on day 10 is
    not scored. With min_history_days = 7 it has rows from day 7 and the day-10 spike is found."""
    rows = flat(20, lambda i: 5000 if i == 10 else 1000)
    con = score(rows)
    assert con.execute("SELECT min(day) FROM a WHERE scope = 'team'").fetchone()[0] == day(14)
    assert episodes(con) == []
    early = score(rows, min_history_days=7)
    assert early.execute("SELECT min(day) FROM a WHERE scope = 'team'").fetchone()[0] == day(7)
    assert [e[0] for e in episodes(early, "cost_usd", "team")] == ["cost_usd:team=search:2026-06-11"]


def test_a_day_without_calls_is_zero_spend_and_no_thinking_value():
    """Calls every day but day 20: cost and calls of day 20 are 0 (a row, below the band: no anomaly,
    drops are never flagged); reasoning tokens per call has no row that day."""
    rows = [r for r in flat(30, 1000) if r[0] != day(20)]
    con = score(rows)
    got = dict(con.execute("SELECT metric, actual FROM a WHERE scope = 'team' AND day = ?", [day(20)]).fetchall())
    assert got == {"cost_usd": 0.0, "calls": 0.0}
    assert episodes(con) == []


def test_config_defaults_match_the_mart_and_bad_values_are_named():
    a = Anomaly()
    assert DEFAULTS == {"adapt_days": a.adapt_days, "min_history_days": a.min_history_days,
                        "min_impact_usd": a.min_impact_usd, "min_impact_pct": a.min_impact_pct}
    assert Config().settings_row()["anomaly_min_impact_usd"] == 100.0
    with pytest.raises(ConfigError, match="anomaly.adapt_days"):
        _check(Config(anomaly=Anomaly(adapt_days=0)))
    with pytest.raises(ConfigError, match="anomaly.min_impact_pct"):
        _check(Config(anomaly=Anomaly(min_impact_pct=-1)))
    with pytest.raises(ConfigError, match="'region'"):
        _check(Config(anomaly=Anomaly(alert_scopes=("region",))))
    with pytest.raises(ConfigError, match="'team:tokens'"):
        _check(Config(anomaly=Anomaly(alert_scopes=("team:tokens",))))


def test_anomaly_settings_load_from_toml(tmp_path):
    """thinktax.toml.example's [anomaly] is the defaults; a TOML list of alert_scopes is read; an
    unknown key and a wrong type are errors naming the file or the setting."""
    from pathlib import Path

    from services.config import load_config

    example = Path(__file__).resolve().parents[2] / "thinktax.toml.example"
    assert load_config(example).anomaly == Anomaly()
    p = tmp_path / "t.toml"
    p.write_text('[anomaly]\nmin_impact_usd = 10\nalert_scopes = ["model", "team:calls"]\n')
    got = load_config(p).anomaly
    assert (got.min_impact_usd, got.alert_scopes) == (10, ("model", "team:calls"))
    assert load_config(p).settings_row()["anomaly_min_impact_usd"] == 10.0
    p.write_text("[anomaly]\nfloor = 3\n")
    with pytest.raises(ConfigError, match="floor"):
        load_config(p)
    p.write_text('[anomaly]\nadapt_days = "two weeks"\n')
    with pytest.raises(ConfigError, match=r"\[anomaly\] adapt_days = .two weeks.: expected an integer"):
        load_config(p)
