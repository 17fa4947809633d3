-- One row per task, decided once from core.calls (no money): the task's day, team and task_type
-- are those of its first call (by ts), its tier the highest tier of its calls (fast < medium <
-- full); calls, models (sorted, comma-separated), serving ('api', 'self_hosted' or 'mixed'), the
-- summed token buckets (input_tokens = uncached prompt tokens) and the first and last call's time.
-- The marts that group by a task's attributes (marts.task_costs, marts.task_cost_breakdown) take
-- them from here, so a task's calls stay together under one day, team and tier.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per task (task_id)
-- @closure: task_id
-- @key: task_day
WITH calls AS (
    SELECT * FROM core.calls WHERE core.in_build_days(day)
),
per_task AS (
    -- one arg_min over a struct (one row's day, team and task_type), a sorted distinct list rather
    -- than an ordered DISTINCT string_agg, min/max rather than count(DISTINCT): same values, cheaper
    SELECT task_id,
           arg_min({'day': day, 'team': team, 'task_type': task_type}, ts) AS first_call,
           count(*) AS calls,
           nullif(array_to_string(list_sort(list_distinct(list(model))), ','), '') AS models,
           CASE WHEN min(serving) <> max(serving) THEN 'mixed' ELSE min(serving) END AS serving,
           sum(uncached_input_tokens) AS input_tokens,
           sum(cached_input_tokens) AS cached_input_tokens,
           sum(cache_write_tokens) AS cache_write_tokens,
           sum(thinking_tokens) AS thinking_tokens,
           sum(output_tokens) AS output_tokens,
           CASE max(CASE tier WHEN 'full' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
                WHEN 3 THEN 'full' WHEN 2 THEN 'medium' ELSE 'fast' END AS task_tier,
           min(ts) AS first_call_at,
           max(ts) AS last_call_at
    FROM calls
    GROUP BY task_id
)
SELECT task_id, first_call.day AS task_day, first_call.team AS task_team, first_call.task_type AS task_type,
       task_tier, * EXCLUDE (task_id, first_call, task_tier)
FROM per_task
