"""The demo's thinking drift and spend spike (issue 42, synthetic.demo.add_anomalies) are what
marts.spend_anomalies finds, and nothing else of the demo's teams' spend is.

The demo here is 45 days (2026-06-15 .. 07-29: before the harness's "now", tests.conftest.NOW) at a
quarter of `thinktax demo`'s traffic (425 tasks a day), so the dollar floor is a quarter too ($25; the
percent floor stays 25 %). What is injected, counted back from the last day 07-29:
  * drift: every team's code_agent thinks 8x on 07-23, 07-24, 07-25;
  * spike: team support's calls of 07-27 ten times over (request ids '-rerun1..9').
The figures asserted are the generator's own: the spike day's cost is 10 x the team's cost of that day
without the copies (a copy is priced as the call it copies), worked from core.call_costs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse
from services.config import Anomaly, Config
from synthetic.demo import DemoSpec, write_landing
from warehouse.anomalies import build_spend_anomalies

pytestmark = pytest.mark.slow

SPEC = DemoSpec(days=45, tasks_per_day=425)
DRIFT = [dt.date(2026, 7, 23), dt.date(2026, 7, 24), dt.date(2026, 7, 25)]
SPIKE = dt.date(2026, 7, 27)


@pytest.fixture(scope="module")
def con(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = Path(tmp_path_factory.mktemp("demo_anomalies"))
    write_landing(root / "landing", SPEC)
    c, _ = build_warehouse(root / "landing", root / "w.duckdb", Config(anomaly=Anomaly(min_impact_usd=25.0)))
    build_spend_anomalies(c)
    yield c
    c.close()


def _episodes(con, where: str) -> list[tuple]:
    return con.execute(f"""SELECT episode_id, min(day), max(day), arg_max(root_cause, impact_usd)
                           FROM marts.spend_anomalies WHERE is_anomaly AND {where} GROUP BY episode_id ORDER BY 1""").fetchall()


def test_the_drift_is_one_episode_of_code_agent(con):
    assert [e[:3] for e in _episodes(con, "metric = 'reasoning_tokens_per_call' AND scope = 'task_type'")] == [
        ("reasoning_tokens_per_call:task_type=code_agent:2026-07-23", DRIFT[0], DRIFT[-1])]
    # the factor: code_agent's thinking per call against the median of the days before, about 8
    # (the median is of other calls: not exactly the factor)
    ratio = con.execute("SELECT actual / expected FROM marts.spend_anomalies WHERE metric = 'reasoning_tokens_per_call' "
                        "AND scope = 'task_type' AND scope_value = 'code_agent' AND day = ?", [DRIFT[1]]).fetchone()[0]
    assert 6 < ratio < 10
    # for the whole, the root cause of the drift is the task type
    causes = {c for *_, c in _episodes(con, "metric = 'reasoning_tokens_per_call' AND scope = 'all'")}
    assert causes == {"task_type=code_agent"}


def test_the_spike_is_one_episode_of_team_support_worth_ten_runs(con):
    eps = _episodes(con, "metric = 'cost_usd' AND scope = 'team'")
    assert [e[:3] for e in eps if e[1] == SPIKE] == [("cost_usd:team=support:2026-07-27", SPIKE, SPIKE)]
    # a team's cost may also jump with the drift (its code_agent thought 8x): then the drift is its cause
    assert all(e[1] in DRIFT and e[2] in DRIFT and e[3] == "task_type=code_agent" for e in eps if e[1] != SPIKE)
    actual, expected, impact = con.execute(
        "SELECT actual, expected, impact_usd FROM marts.spend_anomalies WHERE metric = 'cost_usd' AND scope = 'team' "
        "AND scope_value = 'support' AND day = ?", [SPIKE]).fetchone()
    original = con.execute("SELECT sum(cost_usd) FROM core.call_costs WHERE serving = 'api' AND team = 'support' "
                           "AND day = ? AND request_id NOT LIKE '%-rerun%'", [SPIKE]).fetchone()[0]
    assert actual == pytest.approx(10 * float(original), rel=1e-9)
    assert float(impact) == pytest.approx(actual - expected, abs=1e-6)
    assert float(impact) > 25 and actual / expected > 1.25


def test_nothing_else_in_the_demo_is_an_anomaly(con):
    """Every anomalous day of every series is a drift day or the spike day."""
    days = {d for (d,) in con.execute("SELECT DISTINCT day FROM marts.spend_anomalies WHERE is_anomaly").fetchall()}
    assert days <= {*DRIFT, SPIKE}
