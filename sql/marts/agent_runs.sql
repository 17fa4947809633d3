-- The cost of every agent run and sub-agent (issue 41): one row per OpenTelemetry GenAI
-- `invoke_agent` span (stg.agent_spans). calls / own_cost_usd: the model calls whose nearest
-- invoke_agent ancestor is this span (core.call_costs.agent_span_id); total_calls / total_cost_usd /
-- thinking_cost_usd: every call below it at any depth -- each call is counted once in each of its
-- agent ancestors (its nearest agent's chain of ancestors, agent_path, exploded: no recursive SQL).
-- The usage an invoke_agent span reports about itself (some frameworks put its children's sum
-- there) is never counted: only chat / text_completion / generate_content spans are calls.
-- A trace landed twice keeps one row per span. depth: 1 = a top agent, 2 = its sub-agent, ...
-- duration_s: the span's end minus its start, in seconds. day: the trace's day, the UTC day of its
-- first model call (core.call_costs, any call of the trace), else (a trace without calls) of its
-- first agent span start: every span of a run is on the day the run began, also past midnight. The
-- incremental plan closes its days over traces and their spans (warehouse/incremental.py), so a
-- night that adds a call or a span to a trace rebuilds every day the trace touches.
-- @kind: incremental_by_day
-- @grain: one row per invoke_agent span (trace_id, span_id)
-- @closure: trace_id
WITH traces AS (
    -- the traces this build rewrites: a span or a call on one of its days (all of them in a full build)
    SELECT trace_id FROM stg.agent_spans WHERE core.in_build_days(CAST(started_at AS DATE))
    UNION
    SELECT trace_id FROM core.call_costs WHERE trace_id IS NOT NULL AND core.in_build_days(day)
),
spans AS (
    SELECT trace_id, span_id, min(parent_agent_span_id) AS parent_agent_span_id, min(agent_name) AS agent_name,
           min(depth) AS depth, min(agent_path) AS agent_path, min(started_at) AS started_at, max(ended_at) AS ended_at
    FROM stg.agent_spans
    WHERE trace_id IN (SELECT trace_id FROM traces)
    GROUP BY trace_id, span_id
),
trace_day AS (
    SELECT s.trace_id, coalesce(c.day, s.day) AS day
    FROM (SELECT trace_id, CAST(min(started_at) AS DATE) AS day FROM spans GROUP BY trace_id) s
    LEFT JOIN (SELECT trace_id, min(day) AS day FROM core.call_costs
               WHERE trace_id IS NOT NULL AND core.in_build_days(day) GROUP BY trace_id) c ON c.trace_id = s.trace_id
),
calls AS (
    SELECT request_id, trace_id, agent_span_id, cost_usd, thinking_cost_usd
    FROM core.call_costs
    WHERE agent_span_id IS NOT NULL AND core.in_build_days(day)
),
own AS (
    SELECT trace_id, agent_span_id AS span_id, count(*) AS calls, sum(cost_usd) AS own_cost_usd
    FROM calls
    GROUP BY trace_id, agent_span_id
),
exploded AS (
    SELECT c.request_id, c.trace_id, unnest(string_split(s.agent_path, '/')) AS span_id, c.cost_usd, c.thinking_cost_usd
    FROM calls c
    JOIN spans s ON s.trace_id = c.trace_id AND s.span_id = c.agent_span_id
),
below AS (
    SELECT trace_id, span_id, count(*) AS total_calls, sum(cost_usd) AS total_cost_usd,
           sum(thinking_cost_usd) AS thinking_cost_usd
    FROM exploded
    GROUP BY trace_id, span_id
),
final AS (
    SELECT s.trace_id, s.span_id, s.parent_agent_span_id, s.agent_name, s.depth,
           coalesce(o.calls, 0) AS calls, core.usd6(coalesce(o.own_cost_usd, 0)) AS own_cost_usd,
           coalesce(b.total_calls, 0) AS total_calls, core.usd6(coalesce(b.total_cost_usd, 0)) AS total_cost_usd,
           core.usd6(coalesce(b.thinking_cost_usd, 0)) AS thinking_cost_usd,
           s.started_at, epoch(s.ended_at) - epoch(s.started_at) AS duration_s, d.day
    FROM spans s
    JOIN trace_day d ON d.trace_id = s.trace_id
    LEFT JOIN own o ON o.trace_id = s.trace_id AND o.span_id = s.span_id
    LEFT JOIN below b ON b.trace_id = s.trace_id AND b.span_id = s.span_id
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
