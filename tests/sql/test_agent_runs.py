"""marts.agent_runs, marts.run_costs, marts.session_costs (issue 41): a trace with three levels of
sub-agents and a tool span, worked by hand.

Prices (USD per 1M tokens): o3 input 2.50, output 12; claude-x input 3, output 15.

Trace T (conversation conv-A, set on the top agent only):

    run                                   (root, no gen_ai attributes)
    └─ A1 invoke_agent orchestrator       self-reported usage 900,000 in / 90,000 out (ignored)
       ├─ c1 chat o3        1,000 in, 100 out: 0.0025 + 0.0012 = 0.0037
       └─ A2 invoke_agent researcher      self-reported usage 500,000 in (ignored)
          ├─ execute_tool search
          │  └─ c2 chat o3  2,000 in, 500 out: 0.005 + 0.006 = 0.011 (nearest agent: A2, through the tool)
          └─ A3 invoke_agent summarizer
             └─ c3 chat claude-x  1,000 in, 200 out: 0.003 + 0.003 = 0.006

Trace T2 (conv-A too): A4 invoke_agent orchestrator -> c4 chat o3 4,000 in, 100 out: 0.01 + 0.0012 = 0.0112.

* A1: depth 1, own 1 call 0.0037; total 3 calls 0.0037 + 0.011 + 0.006 = 0.0207.
* A2: depth 2 (parent A1), own 1 call 0.011; total 2 calls 0.011 + 0.006 = 0.017.
* A3: depth 3 (parent A2), own 1 call 0.006; total 1 call 0.006.
* A4: depth 1, own = total = 1 call 0.0112.
  Had the agents' own usage been counted, A1 alone would add 900,000 x 2.5 + 90,000 x 12 = $3.33.
* run_costs: T 3 calls 0.0207, root agent orchestrator, session conv-A; T2 1 call 0.0112.
* session_costs: conv-A 2 traces, 4 calls, 0.0207 + 0.0112 = 0.0319.
Every span lasts 2 s (start = end - 2 s); the agents end at 10:00:00, call c<n> at 10:00:0<n>.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

from tests.conftest import build_warehouse, write_files
from tests.sources.test_otel import END, PRICES, span, traces

# trace ids of their own: the Spark parity (tests/warehouse/spark/test_parity_cases.py) lands these traces
# beside the corpus, whose OTel case uses tests/sources/test_otel.py's ids (a task is its trace)
T = "7e3f5a1c2b4d4e6f8a9b0c1d2e3f4a5b"
T2 = "8f4a6b2d3c5e4f708b1c2d3e4f5a6b7c"
A1, A2, A3, A4 = "a1a1a1a1a1a1a1a1", "a2a2a2a2a2a2a2a2", "a3a3a3a3a3a3a3a3", "a4a4a4a4a4a4a4a4"


def _chat(trace, sid, parent, model, provider, i, o, rid):
    # each call ends a second apart (c1 at END + 1 s, ...): a task's first call is then one call on
    # both engines (core.tasks takes the task's model from its first call)
    return span(trace, sid, parent, f"chat {model}", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model,
        "gen_ai.response.id": rid, "gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": o},
        end=END + int(rid[1:]) * 1_000_000_000)


def _agent(trace, sid, parent, name, **usage):
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.conversation.id": "conv-A"}
    attrs.update({f"gen_ai.usage.{k}": v for k, v in usage.items()})
    return span(trace, sid, parent, f"invoke_agent {name}", attrs)


OTLP = traces({"service.name": "agents"}, [
    span(T, "0000000000000001", "", "run", {}),
    _agent(T, A1, "0000000000000001", "orchestrator", input_tokens=900_000, output_tokens=90_000),
    _chat(T, "c100000000000001", A1, "o3", "openai", 1000, 100, "c1"),
    _agent(T, A2, A1, "researcher", input_tokens=500_000),
    span(T, "7000000000000001", A2, "execute_tool search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}),
    _chat(T, "c200000000000001", "7000000000000001", "o3", "openai", 2000, 500, "c2"),
    _agent(T, A3, A2, "summarizer"),
    _chat(T, "c300000000000001", A3, "claude-x", "anthropic", 1000, 200, "c3"),
]) + "\n" + traces({"service.name": "agents"}, [
    _agent(T2, A4, "", "orchestrator"),
    _chat(T2, "c400000000000001", A4, "o3", "openai", 4000, 100, "c4"),
]) + "\n"
START = dt.datetime(2026, 6, 30, 9, 59, 58)  # END - 2 s


def _build(tmp_path):
    landing = write_files(tmp_path / "landing", {**PRICES, "telemetry/otel/traces.jsonl": OTLP})
    con, summary = build_warehouse(landing, tmp_path / "w.duckdb")
    assert summary.total("rows_quarantined") == 0
    return con


def test_agent_tree_own_and_total(tmp_path):
    con = _build(tmp_path)
    got = {r[0]: r[1:] for r in con.execute(
        "SELECT span_id, trace_id, parent_agent_span_id, agent_name, depth, calls, own_cost_usd, total_calls, "
        "total_cost_usd, started_at, duration_s FROM marts.agent_runs").fetchall()}
    assert got == {
        A1: (T, None, "orchestrator", 1, 1, D("0.0037"), 3, D("0.0207"), START, 2.0),
        A2: (T, A1, "researcher", 2, 1, D("0.011"), 2, D("0.017"), START, 2.0),
        A3: (T, A2, "summarizer", 3, 1, D("0.006"), 1, D("0.006"), START, 2.0),
        A4: (T2, None, "orchestrator", 1, 1, D("0.0112"), 1, D("0.0112"), START, 2.0),
    }
    # the calls' own total: the agents' self-reported usage is not a call
    assert con.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchone() == (4, D("0.0319"))


def test_run_and_session_costs(tmp_path):
    con = _build(tmp_path)
    runs = {r[0]: r[1:] for r in con.execute(
        "SELECT trace_id, session_id, root_agent, calls, cost_usd, started_at FROM marts.run_costs").fetchall()}
    assert runs == {T: ("conv-A", "orchestrator", 3, D("0.0207"), START),
                    T2: ("conv-A", "orchestrator", 1, D("0.0112"), START)}
    sessions = con.execute("SELECT session_id, traces, calls, cost_usd FROM marts.session_costs").fetchall()
    assert sessions == [("conv-A", 2, 4, D("0.0319"))]


def test_relanding_the_trace_in_another_file_counts_nothing_twice(tmp_path):
    landing = write_files(tmp_path / "landing", {**PRICES, "telemetry/otel/traces.jsonl": OTLP,
                                                 "telemetry/otel/again.jsonl": OTLP.replace("\n", "\n\n")})
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    assert con.execute("SELECT count(*) FROM stg.agent_spans").fetchone()[0] == 4
    assert con.execute("SELECT total_calls, total_cost_usd FROM marts.agent_runs WHERE span_id = ?", [A1]).fetchone() \
        == (3, D("0.0207"))


def test_the_report_shows_the_costliest_run_with_its_agent_tree(tmp_path):
    from services.report import build_html

    con = _build(tmp_path)
    html = build_html(con)
    section = html[html.index("Most expensive agent runs"):html.index("Alert state")]
    # T first (0.0207), then T2 (0.0112); the tree under T: orchestrator > researcher > summarizer
    assert section.index(T[:12]) < section.index(T2[:12])
    tree = section[section.index(T[:12]):section.index(T2[:12])]
    assert tree.index("orchestrator") < tree.index("researcher") < tree.index("summarizer")
    assert "$0.0207" in tree or "0.0207" in tree
