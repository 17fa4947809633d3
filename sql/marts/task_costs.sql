-- What each task cost: all its calls, API and self-hosted.
-- The task's attributes, calls and tokens are core.tasks' (day = task_day, team = task_team, tier =
-- task_tier: the task's, not each call's); the money is the sum of its calls' core.call_costs.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per task (task_id). A task's day, team and task_type are those of its first call;
--   its tier is the highest tier of its calls (fast < medium < full).
-- @closure: task_id
WITH tasks AS (
    SELECT * FROM core.tasks WHERE core.in_build_days(task_day)
),
money AS (
    SELECT task_id,
           core.usd6(sum(cost_usd)) AS cost_usd,
           core.usd6(sum(thinking_cost_usd)) AS thinking_cost_usd,
           count(*) FILTER (WHERE unpriced) AS unpriced_calls,
           -- issue 44: the parts of cost_usd priced at audio / image / video rates
           core.usd6(sum(audio_cost_usd)) AS audio_cost_usd, core.usd6(sum(image_cost_usd)) AS image_cost_usd,
           core.usd6(sum(video_cost_usd)) AS video_cost_usd,
           count(*) FILTER (WHERE unpriced_modalities IS NOT NULL) AS modality_unpriced_calls
    FROM core.call_costs
    WHERE core.in_build_days(day)
    GROUP BY task_id
),
final AS (
    SELECT t.task_id, t.task_day AS day, t.task_team AS team, t.task_type, t.calls, t.models, t.serving,
           t.input_tokens, t.cached_input_tokens, t.cache_write_tokens, t.thinking_tokens, t.output_tokens,
           m.cost_usd, m.thinking_cost_usd, t.task_tier AS tier, m.unpriced_calls,
           t.first_call_at, t.last_call_at,
           m.audio_cost_usd, m.image_cost_usd, m.video_cost_usd, m.modality_unpriced_calls
    FROM tasks t
    JOIN money m USING (task_id)
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
