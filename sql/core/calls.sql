-- Every model call, split into non-overlapping token buckets, tiered, and (for API calls) costed
-- at the price version in force at the call's time.
-- grain: one row per call (request_id)
-- reads: stg.requests, core.model_map, core.llm_price_versions, core.dim_nodes, ops.settings
WITH requests AS (
    SELECT * FROM stg.requests
),
settings AS (
    SELECT * FROM ops.settings
),
nodes AS (
    SELECT node_id, provider AS node_provider, model_key AS node_model_key FROM core.dim_nodes
),
prices AS (
    SELECT * FROM core.llm_price_versions WHERE price_kind = 'standard'
),
calls AS (
    SELECT r.request_id, r.ts, CAST(r.ts AS DATE) AS day, date_trunc('hour', r.ts) AS hour,
           r.task_id,
           -- a call without team / task_type inherits its task's (first call that has one), else 'unknown'
           coalesce(r.team, first_value(r.team IGNORE NULLS) OVER task_w, 'unknown') AS team,
           coalesce(r.task_type, first_value(r.task_type IGNORE NULLS) OVER task_w, 'unknown') AS task_type,
           r.model AS reported_model, core.model_key(r.model) AS model,
           CASE WHEN r.node_id IS NULL THEN 'api' ELSE 'self_hosted' END AS serving,
           CASE WHEN r.node_id IS NULL THEN r.provider ELSE n.node_provider END AS provider,
           r.node_id, r.usage_shape, r.latency_ms, r.ttft_ms,
           r.uncached_input_tokens, r.cached_input_tokens, r.cache_write_tokens, r.thinking_tokens, r.output_tokens,
           r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens AS prompt_tokens,
           r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens
               + r.thinking_tokens + r.output_tokens AS total_tokens,
           core.tier_of(r.thinking_tokens, s.medium_min_thinking_tokens, s.full_min_thinking_tokens) AS tier,
           n.node_id IS NOT NULL AS node_known,
           r.provider AS reported_provider, r.file_id AS source_file_id
    FROM requests r
    CROSS JOIN settings s
    LEFT JOIN nodes n ON n.node_id = r.node_id
    WINDOW task_w AS (PARTITION BY r.task_id ORDER BY r.ts ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
),
candidates AS (
    -- every candidate sheet model's version in force at the call's time; the best-ranked priced one wins
    SELECT c.*, m.price_provider, m.price_model, p.price_version_id,
           p.input_usd_per_mtok, p.cached_input_usd_per_mtok, p.cache_write_usd_per_mtok,
           p.output_usd_per_mtok, p.reasoning_usd_per_mtok,
           row_number() OVER (PARTITION BY c.request_id
                              ORDER BY p.price_version_id IS NULL, m.preference NULLS LAST) AS pick
    FROM calls c
    LEFT JOIN core.model_map m
           ON c.serving = 'api' AND m.reported_provider IS NOT DISTINCT FROM c.reported_provider
          AND m.reported_model = c.reported_model
    LEFT JOIN prices p
           ON p.provider = m.price_provider AND p.model = m.price_model
          AND c.ts >= p.effective_from AND (p.effective_to IS NULL OR c.ts < p.effective_to)
),
costed AS (
    SELECT c.* EXCLUDE (pick, provider, input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
                        output_usd_per_mtok, reasoning_usd_per_mtok),
           coalesce(c.provider, c.price_provider) AS provider,
           core.usd_for_tokens(c.uncached_input_tokens, c.input_usd_per_mtok)
             + core.usd_for_tokens(c.cached_input_tokens, c.cached_input_usd_per_mtok)
             + core.usd_for_tokens(c.cache_write_tokens, c.cache_write_usd_per_mtok)
             + core.usd_for_tokens(c.thinking_tokens, c.reasoning_usd_per_mtok)
             + core.usd_for_tokens(c.output_tokens, c.output_usd_per_mtok) AS api_cost_usd,
           core.usd_for_tokens(c.thinking_tokens, c.reasoning_usd_per_mtok) AS api_thinking_cost_usd
    FROM candidates c
    WHERE c.pick = 1
)
SELECT * FROM costed
