"""Who made the demo's calls (issue 41): principals on the request logs, a catalog/cost_centers.csv and
nested agent traces (OpenTelemetry GenAI spans), kept apart from synthetic/demo.py so that the demo's
other figures do not move: the principals are derived from columns the demo already draws (no new
random draw in its streams), and the agent traces have their own seed.

* Principals, in the shapes real clients send them: LiteLLM's proxy metadata keys
  (``user_api_key_alias``, ``user_api_key_user_id``, ``user_api_key_end_user_id``; its
  StandardLoggingMetadata), plus ``project_id``, ``session_id`` and ``tags`` (a list of
  ``key:value`` strings, as LiteLLM's request tags). A task's user is one of 40 per team, its session
  groups three consecutive tasks of a team, its key is the team's ``prod`` key, or its ``batch``
  key for the bulk task types (classify / extract / translate); support and growth calls carry the
  end customer.
* Agent traces: every day of the last ``AGENT_DAYS`` days a few runs of an ``orchestrator`` agent
  with a ``researcher`` sub-agent (a ``web_search`` tool span, a chat call under it) and a
  ``summarizer`` sub-sub-agent, as OTLP/JSON (the Collector's file exporter), with the agents'
  self-reported usage on the invoke_agent spans (the sum of their children, never counted).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl

BULK_TASK_TYPES = ("classify", "extract", "translate")
CUSTOMER_TEAMS = ("support", "growth")
AGENT_DAYS = 14
RUNS_PER_DAY = 6
# the cost centers: first matching row wins; a call no row matches goes to its team
COST_CENTERS = """cost_center,field,pattern
customer-success,end_user,cust-00?
batch-platform,api_key,*-batch
agents-lab,agent,*
legal-and-compliance,team,legal
research,tag:app,research_agent
"""


def principal_columns() -> list[pl.Expr]:
    """The principals of a demo call, from its task id, team and task type (no random draw)."""
    # the task's number: the digits after "task-" (a re-run of a task, "task-123-rerun1" from the demo's
    # spend spike, synthetic/demo.py add_anomalies, keeps the task's principals: the same job run again)
    n = pl.col("task_id").str.extract(r"^task-(\d+)", 1).cast(pl.Int64)
    key = pl.when(pl.col("task_type").is_in(BULK_TASK_TYPES)).then(pl.lit("-batch")).otherwise(pl.lit("-prod"))
    return [
        (pl.lit("key-") + pl.col("team") + key).alias("user_api_key_alias"),
        (pl.col("team") + pl.lit("-user-") + (n % 40).cast(pl.Utf8)).alias("user_api_key_user_id"),
        pl.when(pl.col("team").is_in(CUSTOMER_TEAMS))
          .then(pl.lit("cust-") + (n % 23).cast(pl.Utf8).str.zfill(3)).alias("user_api_key_end_user_id"),
        (pl.lit("proj-") + pl.col("team")).alias("project_id"),
        (pl.lit("conv-") + pl.col("team") + pl.lit("-") + (n // 3).cast(pl.Utf8)).alias("session_id"),
        pl.concat_list(pl.lit("env:prod"), pl.lit("app:") + pl.col("task_type")).alias("tags"),
    ]


def _kv(key: str, value: object) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, sid: str, parent: str, name: str, start_ns: int, end_ns: int, attrs: dict) -> dict:
    return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": name, "kind": 1,
            "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(end_ns),
            "attributes": [_kv(k, v) for k, v in attrs.items()], "status": {}}


def agent_traces(last_day: dt.date, seed: int, days: int = AGENT_DAYS) -> dict[str, str]:
    """{file name: OTLP/JSON lines} of the agent runs, one file a day of the last ``days`` (at most
    AGENT_DAYS: a shorter demo gets traces on its own days only), on their own random stream."""
    rng = np.random.default_rng(seed + 41)
    files = {}
    days = min(days, AGENT_DAYS)
    for d in range(days):
        day = last_day - dt.timedelta(days=days - 1 - d)
        lines = []
        for r in range(RUNS_PER_DAY):
            trace = f"{rng.integers(1 << 63):016x}{rng.integers(1 << 63):016x}"
            start = int(dt.datetime.combine(day, dt.time(8 + r), dt.UTC).timestamp() * 1e9)
            ids = iter(f"{rng.integers(1 << 62):016x}" for _ in range(16))
            root, orch, res, tool, summ = (next(ids) for _ in range(5))
            conv = f"conv-agents-{day:%m%d}-{r // 2}"
            spans = [_span(trace, root, "", "POST /research", start, start + 60_000_000_000, {})]
            calls = []

            def chat(parent: str, model: str, provider: str, t0: int) -> tuple[int, int]:
                i = int(rng.integers(2_000, 20_000))
                o = int(rng.integers(200, 1_500))
                think = int(o * rng.uniform(3, 12)) if model == "o3" else 0
                sid = next(ids)  # noqa: B023
                spans.append(_span(trace, sid, parent, f"chat {model}", t0, t0 + 4_000_000_000, {  # noqa: B023
                    "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model,
                    "gen_ai.response.model": model, "gen_ai.response.id": f"agt-{trace[:12]}-{sid[:8]}",  # noqa: B023
                    "gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": o + think,
                    "gen_ai.usage.reasoning.output_tokens": think}))
                calls.append((i, o + think))  # noqa: B023
                return i, o + think

            t = start + 1_000_000_000
            o_in = o_out = r_in = r_out = 0
            for _ in range(int(rng.integers(1, 3))):
                a, b = chat(orch, "o3", "openai", t)
                o_in, o_out, t = o_in + a, o_out + b, t + 5_000_000_000
            spans.append(_span(trace, tool, res, "execute_tool web_search", t, t + 2_000_000_000, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "web_search"}))
            a, b = chat(tool, "gpt-4.1-mini", "openai", t + 500_000_000)
            r_in, r_out, t = r_in + a, r_out + b, t + 6_000_000_000
            a, b = chat(summ, "claude-3-7-sonnet-20250219", "anthropic", t)
            s_in, s_out = a, b
            r_in, r_out = r_in + s_in, r_out + s_out
            end = t + 5_000_000_000
            # invoke_agent spans with the usage some frameworks report on them: their children's sum
            spans += [
                _span(trace, orch, root, "invoke_agent orchestrator", start + 500_000_000, end + 1_000_000_000, {
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orchestrator",
                    "gen_ai.conversation.id": conv, "gen_ai.usage.input_tokens": o_in + r_in,
                    "gen_ai.usage.output_tokens": o_out + r_out}),
                _span(trace, res, orch, "invoke_agent researcher", start + 900_000_000, end, {
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher",
                    "gen_ai.usage.input_tokens": r_in, "gen_ai.usage.output_tokens": r_out}),
                _span(trace, summ, res, "invoke_agent summarizer", t - 500_000_000, end, {
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "summarizer",
                    "gen_ai.usage.input_tokens": s_in, "gen_ai.usage.output_tokens": s_out}),
            ]
            lines.append(json.dumps({"resourceSpans": [{
                "resource": {"attributes": [_kv("service.name", "research-agents"), _kv("service.namespace", "search")]},
                "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "spans": spans}]}]}))
        files[f"agents__{day}.jsonl"] = "\n".join(lines) + "\n"
    return files


def write(landing: Path, last_day: dt.date, seed: int, days: int = AGENT_DAYS) -> int:
    """catalog/cost_centers.csv and the agent traces on the last ``days`` days (never before the
    demo's first: ``days`` is the demo's length); returns the number of trace files."""
    (landing / "catalog" / "cost_centers.csv").write_text(COST_CENTERS)
    otel = landing / "telemetry" / "otel"
    otel.mkdir(parents=True, exist_ok=True)
    traces = agent_traces(last_day, seed, days)
    for name, text in traces.items():
        (otel / name).write_text(text)
    return len(traces)
