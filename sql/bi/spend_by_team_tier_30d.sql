-- Spend by team and tier over the last 30 days.
-- grain: one row per (team, tier); team 'idle' / tier 'idle' is self-hosted node time no call used.
-- The window is the 30 days ending with the latest day in the warehouse (not today: a warehouse
-- refreshed nightly, or a demo from last year, still shows a full window). For "the 30 days up to
-- today" replace the `last_day` CTE with `SELECT current_date AS day`.
-- tier is the task's tier (the highest tier of its calls); share_of_spend is within the window.
-- reads: marts.cost_per_task
WITH last_day AS (
    SELECT max(day) AS day FROM marts.cost_per_task
),
window_rows AS (
    SELECT c.*
    FROM marts.cost_per_task c, last_day
    WHERE c.day > last_day.day - INTERVAL 30 DAY AND c.day <= last_day.day
),
final AS (
    SELECT team,
           tier,
           sum(calls) AS calls,
           sum(cost_usd) AS cost_usd,
           sum(thinking_cost_usd) AS thinking_cost_usd,
           CAST(sum(cost_usd) AS DOUBLE) / sum(sum(cost_usd)) OVER () AS share_of_spend
    FROM window_rows
    GROUP BY team, tier
)
SELECT * FROM final
ORDER BY cost_usd DESC, team, tier
