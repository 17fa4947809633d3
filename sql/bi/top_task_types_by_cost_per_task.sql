-- The 20 task types whose tasks cost the most per task, over the last 30 days.
-- grain: one row per task_type (at most 20 rows).
-- A task is all its calls (API and self-hosted, any model); its day and task type are those of
-- its first call. Ties are broken by task_type so the list is stable.
-- The window is the 30 days ending with the latest day in the warehouse (see spend_by_team_tier_30d.sql).
-- reads: marts.task_costs
WITH last_day AS (
    SELECT max(day) AS day FROM marts.task_costs
),
window_tasks AS (
    SELECT t.*
    FROM marts.task_costs t, last_day
    WHERE t.day > last_day.day - INTERVAL 30 DAY AND t.day <= last_day.day
),
final AS (
    SELECT task_type,
           count(*) AS tasks,
           sum(calls) AS calls,
           sum(cost_usd) AS cost_usd,
           CAST(sum(cost_usd) / count(*) AS DECIMAL(18,6)) AS cost_per_task_usd,
           CAST(sum(thinking_cost_usd) AS DOUBLE) / nullif(CAST(sum(cost_usd) AS DOUBLE), 0) AS thinking_share,
           count(*) FILTER (WHERE tier = 'full') AS full_tier_tasks
    FROM window_tasks
    GROUP BY task_type
)
SELECT * FROM final
ORDER BY cost_per_task_usd DESC, task_type
LIMIT 20
