-- Every model call, before any money: its token buckets, its task, team, task type and tier, the
-- model key it is priced and sized under, its node and the pricing modifiers it reports. The
-- first table of the per-call chain core.calls -> core.tasks -> core.self_hosted_allocation ->
-- core.call_costs (pricing only) -> marts: nothing here depends on a price sheet, so a new price
-- sheet does not rebuild it. A call without team / task_type inherits its task's (the first call
-- of the task that has one), else 'unknown'; tier is the call's own (fast / medium / full by its
-- thinking tokens, ops.settings); the task's own day, team and tier are in core.tasks.
-- service_tier: as reported; an API call that reports none is on the standard tier.
-- billing (issue 24): 'provisioned' or 'on_demand' for an API call (core.reported_models).
-- Until issue 17 core.calls was a view of core.call_costs with the API money columns; they are
-- in core.call_costs (api_cost_usd = cost_usd of an API call; see CHANGELOG.md).
-- Principals (issue 41): api_key, user_id, end_user_id, project_id, workspace_id, session_id, trace_id,
-- span_id, parent_span_id, agent_name, tags as stg.requests holds them.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per call (request_id)
-- @closure: task_id
WITH requests AS (
    SELECT * FROM stg.requests WHERE core.in_build_days(CAST(ts AS DATE))
),
settings AS (
    SELECT * FROM ops.settings
),
task_defaults AS (
    -- only tasks with a call that lacks team or task_type are looked at
    SELECT task_id,
           arg_min(team, ts) FILTER (WHERE team IS NOT NULL) AS task_team,
           arg_min(task_type, ts) FILTER (WHERE task_type IS NOT NULL) AS task_task_type
    FROM requests
    WHERE task_id IN (SELECT task_id FROM requests WHERE team IS NULL OR task_type IS NULL)
    GROUP BY task_id
),
model_keys AS (
    -- the model key is looked up once per reported model, not once per call: an API call's from
    -- core.reported_models (endpoints.csv, Bedrock ARNs), a self-hosted call's from its name
    SELECT k.reported_provider, k.reported_model, k.self_hosted,
           CASE WHEN k.self_hosted THEN core.model_key(k.reported_model) ELSE m.model_key END AS model,
           m.billing AS endpoint_billing
    FROM (SELECT DISTINCT provider AS reported_provider, model AS reported_model, node_id IS NOT NULL AS self_hosted
          FROM requests) k
    LEFT JOIN core.reported_models m
           ON NOT k.self_hosted AND m.reported_provider IS NOT DISTINCT FROM k.reported_provider
          AND m.reported_model = k.reported_model
),
nodes AS (
    SELECT node_id FROM core.dim_nodes
)
SELECT r.request_id, r.ts, CAST(r.ts AS DATE) AS day, date_trunc('hour', r.ts) AS hour,
       r.task_id,
       coalesce(r.team, t.task_team, 'unknown') AS team,
       coalesce(r.task_type, t.task_task_type, 'unknown') AS task_type,
       r.model AS reported_model, k.model,
       CASE WHEN r.node_id IS NULL THEN 'api' ELSE 'self_hosted' END AS serving,
       r.node_id, r.usage_shape, r.latency_ms, r.ttft_ms,
       r.uncached_input_tokens, r.cached_input_tokens, r.cache_write_tokens, r.thinking_tokens, r.output_tokens,
       r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens AS prompt_tokens,
       r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens
           + r.thinking_tokens + r.output_tokens AS total_tokens,
       core.tier_of(r.thinking_tokens, s.medium_min_thinking_tokens, s.full_min_thinking_tokens) AS tier,
       r.node_id IS NOT NULL AND n.node_id IS NOT NULL AS node_known,
       r.provider AS reported_provider, r.file_id AS source_file_id,
       CASE WHEN r.node_id IS NULL THEN coalesce(r.service_tier, 'standard') ELSE r.service_tier END AS service_tier,
       coalesce(r.is_batch, false) AS is_batch, coalesce(r.cache_write_1h_tokens, 0) AS cache_write_1h_tokens,
       r.processing_region, coalesce(r.web_search_requests, 0) AS web_search_requests, r.web_search_context_size,
       -- how an API call is paid (issue 24): 'provisioned' (reported by the call, e.g. Vertex AI
       -- trafficType, or its endpoints.csv row) or 'on_demand'; NULL for a self-hosted call
       CASE WHEN r.node_id IS NULL THEN coalesce(r.billing, k.endpoint_billing, 'on_demand') END AS billing,
       -- issue 41: who made the call, as its source reported it (NULL = not reported; docs/contract.md "Principals")
       r.api_key, r.user_id, r.end_user_id, r.project_id, r.workspace_id, r.session_id,
       r.trace_id, r.span_id, r.parent_span_id, r.agent_name, r.tags,
       -- OTel: the call's nearest invoke_agent ancestor (stg.agent_spans; marts.agent_runs)
       r.agent_span_id,
       -- issue 44: the non-text parts of the buckets and the units that are not tokens (0 = none)
       coalesce(r.audio_input_tokens, 0) AS audio_input_tokens, coalesce(r.image_input_tokens, 0) AS image_input_tokens,
       coalesce(r.video_input_tokens, 0) AS video_input_tokens,
       coalesce(r.cached_audio_input_tokens, 0) AS cached_audio_input_tokens,
       coalesce(r.audio_output_tokens, 0) AS audio_output_tokens, coalesce(r.image_output_tokens, 0) AS image_output_tokens,
       coalesce(r.video_output_tokens, 0) AS video_output_tokens, coalesce(r.output_images, 0) AS output_images,
       coalesce(r.output_video_seconds, 0) AS output_video_seconds, r.image_size, r.image_quality, r.video_resolution
FROM requests r
CROSS JOIN settings s
-- a LEFT join, though every call has its key (model_keys is made from these calls, model is NOT NULL):
-- as an inner join DuckDB estimated the calls at a few percent of their number and built the
-- task_defaults join's hash table on them instead (5M calls: 6.9 s spilling 2.8 GB, against 1.5 s)
LEFT JOIN model_keys k ON k.reported_model = r.model AND k.reported_provider IS NOT DISTINCT FROM r.provider
                 AND k.self_hosted = (r.node_id IS NOT NULL)
LEFT JOIN task_defaults t ON t.task_id = r.task_id
LEFT JOIN nodes n ON n.node_id = r.node_id
