-- The cost of every conversation (issue 41): one row per session id of the calls
-- (core.call_costs.session_id: gen_ai.conversation.id, LiteLLM session_id, metadata.session_id).
-- traces: distinct trace ids among its calls (0 when none is traced); first_at / last_at: its first
-- and last call.
-- @kind: full
-- @grain: one row per session_id
WITH final AS (
    SELECT session_id, count(DISTINCT trace_id) AS traces, count(*) AS calls, core.usd6(sum(cost_usd)) AS cost_usd,
           min(ts) AS first_at, max(ts) AS last_at
    FROM core.call_costs
    WHERE session_id IS NOT NULL
    GROUP BY session_id
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
