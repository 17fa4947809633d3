-- Cost per task, by the task's day, team, task type and tier (core.tasks: task_day, task_team,
-- task_type, task_tier, so a task's calls stay together) and by the calls' model and serving; a
-- task that used two models counts once in each model's row. Self-hosted node-days without any
-- call appear as task_team 'idle', task_type 'idle', task_tier 'idle' (tasks 0) so the costs add up
-- to spend. marts.cost_per_task is this table under its earlier column names (day, team, tier).
-- input_tokens are uncached prompt tokens; cached_input_tokens, cache_write_tokens, thinking_tokens
-- and output_tokens (visible) are the other, non-overlapping buckets.
-- audio_cost_usd / image_cost_usd / video_cost_usd (issue 44): the parts of cost_usd priced at audio,
-- image and video rates (text = the rest); modality_unpriced_calls counts the calls with a non-text
-- part the sheet has no price for (marts.unpriced_usage names it).
-- @kind: incremental_by_day
-- @grain: task_day x task_team x task_type x model x serving ('api' / 'self_hosted') x task_tier.
-- @closure: task_id
-- @key: task_day
WITH calls AS (
    SELECT c.task_id, c.model, c.serving, c.uncached_input_tokens, c.cached_input_tokens, c.cache_write_tokens,
           c.thinking_tokens, c.output_tokens, c.cost_usd, c.thinking_cost_usd, c.unpriced,
           c.audio_cost_usd, c.image_cost_usd, c.video_cost_usd, c.unpriced_modalities,
           t.task_day, t.task_team, t.task_type, t.task_tier
    FROM core.call_costs c JOIN core.tasks t USING (task_id)
    WHERE core.in_build_days(c.day) AND core.in_build_days(t.task_day)
),
busy AS (
    SELECT task_day, task_team, task_type, model, serving, task_tier,
           count(DISTINCT task_id) AS tasks,
           count(*) AS calls,
           sum(uncached_input_tokens) AS input_tokens,
           sum(cached_input_tokens) AS cached_input_tokens,
           sum(cache_write_tokens) AS cache_write_tokens,
           sum(thinking_tokens) AS thinking_tokens,
           sum(output_tokens) AS output_tokens,
           sum(cost_usd) AS cost_usd,
           sum(thinking_cost_usd) AS thinking_cost_usd,
           count(*) FILTER (WHERE unpriced) AS unpriced_calls,
           -- issue 44: the cost by modality (of cost_usd; the priced parts)
           sum(audio_cost_usd) AS audio_cost_usd, sum(image_cost_usd) AS image_cost_usd,
           sum(video_cost_usd) AS video_cost_usd,
           count(*) FILTER (WHERE unpriced_modalities IS NOT NULL) AS modality_unpriced_calls
    FROM calls
    GROUP BY ALL
),
idle AS (
    SELECT a.day AS task_day, 'idle' AS task_team, 'idle' AS task_type, n.model_key AS model, 'self_hosted' AS serving,
           'idle' AS task_tier,
           0 AS tasks, 0 AS calls, 0 AS input_tokens, 0 AS cached_input_tokens, 0 AS cache_write_tokens,
           0 AS thinking_tokens, 0 AS output_tokens,
           -- DECIMAL(38,15) as the calls' sums: a union with DECIMAL(38,6) would round them to 6
           -- decimals in DuckDB (not in Spark) before cost_per_task_usd divides them
           CAST(sum(CAST(a.allocated_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6))) AS DECIMAL(38,15)) AS cost_usd,
           CAST(0 AS DECIMAL(38,15)) AS thinking_cost_usd, 0 AS unpriced_calls,
           CAST(NULL AS DECIMAL(38,15)) AS audio_cost_usd, CAST(NULL AS DECIMAL(38,15)) AS image_cost_usd,
           CAST(NULL AS DECIMAL(38,15)) AS video_cost_usd, 0 AS modality_unpriced_calls
    FROM core.self_hosted_allocation a JOIN core.dim_nodes n USING (node_id)
    WHERE a.pool = 'idle' AND core.in_build_days(a.day)
    GROUP BY ALL
),
unioned AS (
    SELECT * FROM busy UNION ALL BY NAME SELECT * FROM idle
),
final AS (
    SELECT task_day, task_team, task_type, model, serving, task_tier, tasks, calls,
           input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens,
           core.usd6(cost_usd) AS cost_usd,
           core.usd6(thinking_cost_usd) AS thinking_cost_usd,
           -- cost / tasks rounded half up to the micro-dollar in exact integer arithmetic (cost_usd has
           -- 15 decimals): DuckDB divides a DECIMAL through DOUBLE, which rounds 0.0073715 down
           CASE WHEN tasks > 0 THEN core.usd6(CAST((CAST(cost_usd * 1000000000000000 AS HUGEINT) * 2 + tasks * 1000000000)
                                             // (2 * CAST(tasks AS HUGEINT) * 1000000000) AS DECIMAL(38,0))
                                        * CAST(0.000001 AS DECIMAL(38,6))) END AS cost_per_task_usd,
           unpriced_calls,
           -- issue 44 (sums over the calls; NULL for self-hosted and idle rows)
           core.usd6(audio_cost_usd) AS audio_cost_usd, core.usd6(image_cost_usd) AS image_cost_usd,
           core.usd6(video_cost_usd) AS video_cost_usd, modality_unpriced_calls
    FROM unioned
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
