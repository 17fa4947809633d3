-- The cost of every traced run (issue 41): one row per trace id of the calls (core.call_costs.trace_id:
-- OpenTelemetry spans, or metadata.trace_id of a request log). session_id: the run's conversation (the
-- smallest of its calls' session ids); root_agent: the gen_ai.agent.name of its earliest top-level
-- invoke_agent span (stg.agent_spans depth 1), NULL without one; started_at: its earliest agent span
-- start, else its first call. Each call counted once. day: the UTC day of its first call -- a run
-- past midnight is one row on the day its first call was made; the incremental plan closes its
-- days over traces and their agent spans (warehouse/incremental.py), so a night that adds a call
-- or a span to a trace rebuilds every day the trace touches.
-- @kind: incremental_by_day
-- @grain: one row per trace_id
-- @closure: trace_id
WITH calls AS (
    SELECT trace_id, min(session_id) AS session_id, count(*) AS calls, sum(cost_usd) AS cost_usd,
           sum(thinking_cost_usd) AS thinking_cost_usd, min(ts) AS first_call_at, min(day) AS day
    FROM core.call_costs
    WHERE trace_id IS NOT NULL AND core.in_build_days(day)
    GROUP BY trace_id
),
first_top AS (
    SELECT trace_id, min(started_at) AS started_at
    FROM stg.agent_spans
    WHERE depth = 1 AND core.in_build_days(CAST(started_at AS DATE))
    GROUP BY trace_id
),
roots AS (
    -- the earliest top-level agent; of two started at the same instant, the first name (so both engines agree)
    SELECT f.trace_id, min(a.agent_name) AS root_agent, f.started_at
    FROM first_top f
    LEFT JOIN stg.agent_spans a ON a.trace_id = f.trace_id AND a.depth = 1 AND a.started_at = f.started_at
    GROUP BY f.trace_id, f.started_at
),
final AS (
    SELECT c.trace_id, c.session_id, r.root_agent, c.calls, core.usd6(c.cost_usd) AS cost_usd,
           core.usd6(c.thinking_cost_usd) AS thinking_cost_usd,
           coalesce(least(r.started_at, c.first_call_at), c.first_call_at) AS started_at, c.day
    FROM calls c
    LEFT JOIN roots r ON r.trace_id = c.trace_id
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
