-- The cost of every agent run and sub-agent (issue 41): one row per OpenTelemetry GenAI
-- `invoke_agent` span (stg.agent_spans). calls / own_cost_usd: the model calls whose nearest
-- invoke_agent ancestor is this span (core.call_costs.agent_span_id); total_calls / total_cost_usd /
-- thinking_cost_usd: every call below it at any depth -- each call is counted once in each of its
-- agent ancestors (its nearest agent's chain of ancestors, agent_path, exploded: no recursive SQL).
-- The usage an invoke_agent span reports about itself (some frameworks put its children's sum
-- there) is never counted: only chat / text_completion / generate_content spans are calls.
-- A trace landed twice keeps one row per span. depth: 1 = a top agent, 2 = its sub-agent, ...
-- duration_s: the span's end minus its start, in seconds.
-- @kind: full
-- @grain: one row per invoke_agent span (trace_id, span_id)
WITH spans AS (
    SELECT trace_id, span_id, min(parent_agent_span_id) AS parent_agent_span_id, min(agent_name) AS agent_name,
           min(depth) AS depth, min(agent_path) AS agent_path, min(started_at) AS started_at, max(ended_at) AS ended_at
    FROM stg.agent_spans
    GROUP BY trace_id, span_id
),
calls AS (
    SELECT request_id, trace_id, agent_span_id, cost_usd, thinking_cost_usd
    FROM core.call_costs
    WHERE agent_span_id IS NOT NULL
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
           s.started_at, epoch(s.ended_at) - epoch(s.started_at) AS duration_s
    FROM spans s
    LEFT JOIN own o ON o.trace_id = s.trace_id AND o.span_id = s.span_id
    LEFT JOIN below b ON b.trace_id = s.trace_id AND b.span_id = s.span_id
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
