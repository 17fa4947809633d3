-- Cost per task, by day, team, task type, model, serving and tier.
-- marts.task_cost_breakdown under its earlier column names, kept so that queries written against
-- it keep working (docs/contract.md): day, team and tier are the task's (task_day, task_team,
-- task_tier there), not each call's.
-- @kind: view
-- @grain: day x team x task_type x model x serving ('api' / 'self_hosted') x tier.
SELECT task_day AS day, task_team AS team, task_type, model, serving, task_tier AS tier, tasks, calls,
       input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens,
       cost_usd, thinking_cost_usd, cost_per_task_usd, unpriced_calls, build_id,
       audio_cost_usd, image_cost_usd, video_cost_usd, modality_unpriced_calls
FROM marts.task_cost_breakdown
