-- How calls and spend split between the fast / medium / full tiers, against the target mix.
-- day, team and tier are each call's own (its task's are in marts.task_cost_breakdown: task_day,
-- task_team, task_tier). share_of_calls / share_of_cost are within (day, team). cost_at_target_mix_usd is what that
-- tier would cost if the (day, team)'s calls followed the target mix at this tier's cost per call
-- (the (day, team, tier)'s own average, or the tier's average over all data when it has no calls).
-- @kind: full
-- @grain: day x team x tier (team '*' = all teams); every tier has a row, with 0 calls if none.
WITH calls AS (
    -- per day x team x tier (core.daily_call_totals: a few rows per day, not one per call)
    SELECT day, team, tier, sum(calls) AS calls, sum(cost_usd) AS cost_usd FROM core.daily_call_totals GROUP BY ALL
),
settings AS (
    SELECT * FROM ops.settings
),
by_team AS (
    SELECT day, team, tier, CAST(calls AS BIGINT) AS calls, cost_usd FROM calls
    UNION ALL
    SELECT day, '*' AS team, tier, CAST(sum(calls) AS BIGINT), sum(cost_usd) FROM calls GROUP BY ALL
),
tiers AS (
    SELECT * FROM (VALUES ('fast'), ('medium'), ('full')) t(tier)
),
grid AS (
    SELECT DISTINCT b.day, b.team, t.tier FROM by_team b CROSS JOIN tiers t
),
tier_avg AS (
    SELECT tier, CAST(sum(cost_usd) / CAST(sum(calls) AS BIGINT) AS DOUBLE) AS avg_cost_per_call_usd FROM calls GROUP BY tier
),
filled AS (
    SELECT g.day, g.team, g.tier, coalesce(b.calls, 0) AS calls, coalesce(b.cost_usd, 0) AS cost_usd,
           CASE g.tier WHEN 'fast' THEN s.target_fast WHEN 'medium' THEN s.target_medium ELSE s.target_full END AS target_share,
           CASE WHEN b.calls > 0 THEN CAST(b.cost_usd / b.calls AS DOUBLE) ELSE a.avg_cost_per_call_usd END AS cost_per_call_usd
    FROM grid g
    CROSS JOIN settings s
    LEFT JOIN by_team b USING (day, team, tier)
    LEFT JOIN tier_avg a ON a.tier = g.tier
),
final AS (
    SELECT day, team, tier, calls,
           CAST(calls AS DOUBLE) / nullif(sum(calls) OVER dt, 0) AS share_of_calls,
           core.usd6(cost_usd) AS cost_usd,
           CAST(cost_usd AS DOUBLE) / nullif(CAST(sum(cost_usd) OVER dt AS DOUBLE), 0) AS share_of_cost,
           target_share,
           core.usd6(CAST(sum(calls) OVER dt * target_share * cost_per_call_usd AS DECIMAL(38,9))) AS cost_at_target_mix_usd
    FROM filled
    WINDOW dt AS (PARTITION BY day, team)
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
