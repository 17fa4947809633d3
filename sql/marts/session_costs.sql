-- The cost of every conversation (issue 41): one row per session id of the calls
-- (core.call_costs.session_id: gen_ai.conversation.id, LiteLLM session_id, metadata.session_id).
-- traces: distinct trace ids among its calls (0 when none is traced); first_at / last_at: its first
-- and last call. day: the UTC day of its first call -- a session that runs past midnight (or over
-- days) is one row on the day it began; the incremental plan closes its days over sessions
-- (warehouse/incremental.py), so a night that adds a call to a session rebuilds every day the
-- session has calls on, and the session's row comes out as in a full rebuild.
-- @kind: incremental_by_day
-- @grain: one row per session_id
-- @closure: session_id
WITH final AS (
    SELECT session_id, count(DISTINCT trace_id) AS traces, count(*) AS calls, core.usd6(sum(cost_usd)) AS cost_usd,
           min(ts) AS first_at, max(ts) AS last_at, min(day) AS day
    FROM core.call_costs
    WHERE session_id IS NOT NULL AND core.in_build_days(day)
    GROUP BY session_id
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
