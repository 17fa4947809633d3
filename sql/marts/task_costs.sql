-- What each task cost: all its calls, API and self-hosted.
-- @kind: incremental_by_day
-- @grain: one row per task (task_id). A task's day, team and task_type are those of its first call;
--   its tier is the highest tier of its calls (fast < medium < full).
-- @closure: task_id
WITH calls AS (
    SELECT * FROM core.call_costs WHERE core.in_build_days(day)
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
           core.usd6(sum(cost_usd)) AS cost_usd,
           core.usd6(sum(thinking_cost_usd)) AS thinking_cost_usd,
           CASE max(CASE tier WHEN 'full' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
                WHEN 3 THEN 'full' WHEN 2 THEN 'medium' ELSE 'fast' END AS tier,
           count(*) FILTER (WHERE unpriced) AS unpriced_calls,
           min(ts) AS first_call_at,
           max(ts) AS last_call_at
    FROM calls
    GROUP BY task_id
),
final AS (
    SELECT task_id, first_call.day AS day, first_call.team AS team, first_call.task_type AS task_type,
           * EXCLUDE (task_id, first_call)
    FROM per_task
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
