"""Issue 41's marts are incremental like the other per-call tables: marts.chargeback by month,
marts.agent_runs / run_costs / session_costs by the day of the run's (session's) first call, the
plan's days closed over traces (and their agent spans) and sessions (warehouse/incremental.py).

History: a request-log call in May (2026-05-20), an OTel trace TA that starts before midnight --
its agent A starts 2026-06-30 23:59:57, its first call c1 ends 23:59:59, conversation conv-M --
and a request-log call on 2026-07-03. The night lands TA again with a second call c2 under A that
ends 2026-07-01 00:00:05, past midnight (an exporter sending the whole trace once more).

* The plan: c2's day 07-01, closed over trace TA (c1 and A on 06-30) -> days 06-30 and 07-01;
  nothing else (07-03 was already the last day of data, so no gap days).
* marts.chargeback rewrites June and July only: a marker put in May's rows of the published
  history (calls + 1000) is still there after the night.
* TA's row stays on its first call's day, 06-30, with both calls: o3 at 2.50 / 12 per 1M tokens,
  c1 1,000 in + 100 out = 0.0025 + 0.0012 = 0.0037; c2 2,000 in + 500 out = 0.005 + 0.006 = 0.011;
  together 0.0147.
* With the marker taken out, every table equals a full rebuild of the same staging tables.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D
from pathlib import Path

from tests.conftest import write_files
from tests.sources.test_otel import END, PRICES, span, traces
from tests.warehouse.test_incremental import _run, _same_as_full
from warehouse.db import connect, read_only

TA = "9a5b7c3d4e6f40718293a4b5c6d7e8f9"
A = "aaaa0000aaaa0000"
S = 1_000_000_000  # a second in ns
MIDNIGHT = END + 14 * 3600 * S  # END = 2026-06-30T10:00:00Z


def _agent():
    # started 23:59:57 (its span ends at midnight + 5 s after c2; start = end - 2 s in span(), so it
    # is given its own start)
    sp = span(TA, A, "", "invoke_agent planner", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
                                                 "gen_ai.conversation.id": "conv-M"}, end=MIDNIGHT + 6 * S)
    sp["startTimeUnixNano"] = str(MIDNIGHT - 3 * S)
    return sp


def _chat(sid, rid, i, o, end):
    return span(TA, sid, A, "chat o3", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                        "gen_ai.request.model": "o3", "gen_ai.response.id": rid,
                                        "gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": o}, end=end)


C1 = _chat("c1c1c1c1c1c1c1c1", "c1", 1000, 100, MIDNIGHT - 1 * S)
C2 = _chat("c2c2c2c2c2c2c2c2", "c2", 2000, 500, MIDNIGHT + 5 * S)


def _log(ts, rid, team):
    return json.dumps({"ts": ts, "request_id": rid, "provider": "openai", "model": "o3", "team": team,
                       "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})


HISTORY = {
    **PRICES,
    "telemetry/requests/calls.jsonl": _log("2026-05-20T12:00:00Z", "may-1", "alpha") + "\n"
                                      + _log("2026-07-03T12:00:00Z", "jul-3", "beta") + "\n",
    "telemetry/otel/ta-1.jsonl": traces({"service.name": "agents"}, [_agent(), C1]) + "\n",
}
NIGHT = {"telemetry/otel/ta-2.jsonl": traces({"service.name": "agents"}, [_agent(), C1, C2]) + "\n"}
MAY = "month = DATE '2026-05-01'"


def test_a_night_rebuilds_only_the_touched_days_and_months_and_equals_a_full_rebuild(tmp_path: Path):
    landing = write_files(tmp_path / "landing", HISTORY)
    nightly = tmp_path / "nightly" / "wh.duckdb"
    assert _run(nightly, landing, "history").full
    with connect(nightly) as con:
        assert con.execute(f"SELECT count(*) FROM marts.chargeback WHERE {MAY}").fetchone()[0] > 0
        con.execute(f"UPDATE marts.chargeback SET calls = calls + 1000 WHERE {MAY}")

    write_files(landing, NIGHT)
    scope = _run(nightly, landing, "night")
    assert not scope.full, scope.reason
    assert list(scope.days) == [dt.date(2026, 6, 30), dt.date(2026, 7, 1)]
    with read_only(nightly) as con:
        modes = dict(con.execute("SELECT table_name, mode FROM ops.model_builds").fetchall())
        assert {t: modes[t] for t in ("marts.chargeback", "marts.agent_runs", "marts.run_costs", "marts.session_costs")} \
            == dict.fromkeys(("marts.chargeback", "marts.agent_runs", "marts.run_costs", "marts.session_costs"), "incremental")
        # May was not rewritten: its marker is still there
        assert con.execute(f"SELECT min(calls) FROM marts.chargeback WHERE {MAY} AND principal_kind = '*'").fetchone()[0] > 1000
        assert con.execute("SELECT day, calls, cost_usd FROM marts.run_costs WHERE trace_id = ?", [TA]).fetchone() \
            == (dt.date(2026, 6, 30), 2, D("0.0147"))
        assert con.execute("SELECT day, total_calls, total_cost_usd FROM marts.agent_runs WHERE span_id = ?", [A]).fetchone() \
            == (dt.date(2026, 6, 30), 2, D("0.0147"))
        assert con.execute("SELECT day, calls, cost_usd FROM marts.session_costs WHERE session_id = 'conv-M'").fetchone() \
            == (dt.date(2026, 6, 30), 2, D("0.0147"))
    with connect(nightly) as con:
        con.execute(f"UPDATE marts.chargeback SET calls = calls - 1000 WHERE {MAY}")

    # the same staging rebuilt whole (a copy of this warehouse: the same files, the same file ids)
    _same_as_full(nightly, landing, tmp_path)
