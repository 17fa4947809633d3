-- Every model call, split into non-overlapping token buckets, tiered, and costed in USD: API calls
-- at the price version in force at the call's time, self-hosted calls at their share of the node's
-- paid GPU-hours (core.self_hosted_allocation). thinking_cost_usd is the part due to thinking
-- tokens (API: at the reasoning price; self-hosted: the call's cost x thinking share of its
-- tokens). cost_usd is NULL where no price is known (see marts.unpriced_usage), never 0.
-- Speed: the one per-call table (core.calls is a view of it). What depends only on (provider,
-- model, node, UTC day) -- the model key, the node, the price version in force (versions start
-- and end at dates) -- is looked up once per distinct key and joined back to the calls by
-- equality; no per-call window, range join or regex.
-- @kind: incremental_by_day
-- @grain: one row per call (request_id)
-- @closure: task_id
WITH requests AS (
    SELECT * FROM stg.requests WHERE core.in_build_days(CAST(ts AS DATE))
),
settings AS (
    SELECT * FROM ops.settings
),
nodes AS (
    SELECT node_id, provider AS node_provider FROM core.dim_nodes
),
prices AS (
    SELECT * FROM core.llm_price_versions WHERE price_kind = 'standard'
),
task_defaults AS (
    -- a call without team / task_type inherits its task's (first call that has one), else 'unknown';
    -- only tasks with such a call are looked at
    SELECT task_id,
           arg_min(team, ts) FILTER (WHERE team IS NOT NULL) AS task_team,
           arg_min(task_type, ts) FILTER (WHERE task_type IS NOT NULL) AS task_task_type
    FROM requests
    WHERE task_id IN (SELECT task_id FROM requests WHERE team IS NULL OR task_type IS NULL)
    GROUP BY task_id
),
usage_keys AS (
    SELECT DISTINCT provider AS reported_provider, model AS reported_model, node_id, CAST(ts AS DATE) AS day
    FROM requests
),
candidates AS (
    -- every candidate sheet model's version in force on the day; the best-ranked priced one wins
    SELECT k.*, m.price_provider, m.price_model, p.price_version_id,
           p.input_usd_per_mtok, p.cached_input_usd_per_mtok, p.cache_write_usd_per_mtok,
           p.output_usd_per_mtok, p.reasoning_usd_per_mtok,
           row_number() OVER (PARTITION BY k.reported_provider, k.reported_model, k.node_id, k.day
                              ORDER BY p.price_version_id IS NULL, m.preference NULLS LAST) AS pick
    FROM usage_keys k
    LEFT JOIN core.model_map m
           ON k.node_id IS NULL AND m.reported_provider IS NOT DISTINCT FROM k.reported_provider
          AND m.reported_model = k.reported_model
    LEFT JOIN prices p
           ON p.provider = m.price_provider AND p.model = m.price_model
          AND k.day >= p.effective_from AND (p.effective_to IS NULL OR k.day < p.effective_to)
),
key_facts AS (
    SELECT c.* EXCLUDE (pick), core.model_key(c.reported_model) AS model,
           n.node_provider, n.node_id IS NOT NULL AS node_known
    FROM candidates c
    LEFT JOIN nodes n ON n.node_id = c.node_id
    WHERE c.pick = 1
),
calls AS (
    SELECT r.request_id, r.ts, CAST(r.ts AS DATE) AS day, date_trunc('hour', r.ts) AS hour,
           r.task_id,
           coalesce(r.team, t.task_team, 'unknown') AS team,
           coalesce(r.task_type, t.task_task_type, 'unknown') AS task_type,
           r.model AS reported_model, f.model,
           CASE WHEN r.node_id IS NULL THEN 'api' ELSE 'self_hosted' END AS serving,
           r.node_id, r.usage_shape, r.latency_ms, r.ttft_ms,
           r.uncached_input_tokens, r.cached_input_tokens, r.cache_write_tokens, r.thinking_tokens, r.output_tokens,
           r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens AS prompt_tokens,
           r.uncached_input_tokens + r.cached_input_tokens + r.cache_write_tokens
               + r.thinking_tokens + r.output_tokens AS total_tokens,
           core.tier_of(r.thinking_tokens, s.medium_min_thinking_tokens, s.full_min_thinking_tokens) AS tier,
           f.node_known,
           r.provider AS reported_provider, r.file_id AS source_file_id,
           f.price_provider, f.price_model, f.price_version_id,
           coalesce(CASE WHEN r.node_id IS NULL THEN r.provider ELSE f.node_provider END, f.price_provider) AS provider,
           f.input_usd_per_mtok, f.cached_input_usd_per_mtok, f.cache_write_usd_per_mtok,
           f.output_usd_per_mtok, f.reasoning_usd_per_mtok
    FROM requests r
    CROSS JOIN settings s
    JOIN key_facts f
      ON f.reported_provider IS NOT DISTINCT FROM r.provider AND f.reported_model = r.model
     AND f.node_id IS NOT DISTINCT FROM r.node_id AND f.day = CAST(r.ts AS DATE)
    LEFT JOIN task_defaults t ON t.task_id = r.task_id
),
costed AS (
    SELECT c.* EXCLUDE (input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
                        output_usd_per_mtok, reasoning_usd_per_mtok),
           core.usd_for_tokens(c.uncached_input_tokens, c.input_usd_per_mtok)
             + core.usd_for_tokens(c.cached_input_tokens, c.cached_input_usd_per_mtok)
             + core.usd_for_tokens(c.cache_write_tokens, c.cache_write_usd_per_mtok)
             + core.usd_for_tokens(c.thinking_tokens, c.reasoning_usd_per_mtok)
             + core.usd_for_tokens(c.output_tokens, c.output_usd_per_mtok) AS api_cost_usd,
           core.usd_for_tokens(c.thinking_tokens, c.reasoning_usd_per_mtok) AS api_thinking_cost_usd
    FROM calls c
),
allocated AS (
    SELECT request_id, sum(allocated_micro_usd) AS allocated_micro_usd
    FROM core.self_hosted_allocation
    WHERE request_id IS NOT NULL AND core.in_build_days(day)
    GROUP BY request_id
),
final AS (
    SELECT c.* EXCLUDE (api_cost_usd, api_thinking_cost_usd),
           -- every branch cast to DECIMAL(38,15): a CASE over (38,15) and (38,6) is typed (38,6) and
           -- would round each API call's cost to the micro-dollar before the marts sum it
           CASE WHEN c.serving = 'api' THEN CAST(c.api_cost_usd AS DECIMAL(38,15))
                ELSE CAST(CAST(a.allocated_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS cost_usd,
           CASE WHEN c.serving = 'api' THEN CAST(c.api_thinking_cost_usd AS DECIMAL(38,15))
                WHEN c.total_tokens = 0 THEN CAST(0 AS DECIMAL(38,15))
                ELSE CAST(CAST(CAST(a.allocated_micro_usd AS HUGEINT) * c.thinking_tokens // c.total_tokens AS DECIMAL(38,0))
                          * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS thinking_cost_usd,
           a.allocated_micro_usd,
           CASE WHEN c.serving = 'api' THEN c.api_cost_usd IS NULL ELSE a.allocated_micro_usd IS NULL END AS unpriced
    FROM costed c
    LEFT JOIN allocated a USING (request_id)
)
SELECT * FROM final
