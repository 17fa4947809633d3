-- Every paid hour of every self-hosted node, with what its telemetry says and what its request logs
-- say, so the two can be checked against each other. Hours without scrapes are still here
-- (has_metrics false, metric columns NULL); scrapes outside the node's active hours are not.
-- Paid side (core.node_hours_cost): gpu_hours, cost_usd (NULL where no price is known; from the cloud
--   invoice's compute lines of the node's cloud_resource_id where they cover the hour, else from the
--   catalog price: node_cost_source 'invoice' or 'catalog') and its split
--   on the usage basis (core.self_hosted_usage_cost): busy_seconds (union of call intervals),
--   usage_cost_usd = the part paid by busy time, idle_cost_usd = the rest.
-- Scrape side (Prometheus, stg.metric_samples / core.metric_deltas), each delta in the hour of the
--   scrape that ends its interval (an interval crossing an hour boundary counts in the later hour):
--   calls (finished requests: e2e_request_latency_seconds_count deltas, vLLM and SGLang; else
--   vLLM's requests_finished_total), prompt_tokens, generation_tokens (counter deltas; a drop is a
--   restart and counts the new value, never negative), energy_kwh (DCGM energy_mj_total deltas
--   summed over GPUs / 3.6e9 mJ per kWh); gauges: kv_cache_usage_mean / _max (0-1, vLLM
--   kv_cache_usage_perc or SGLang token_usage, over every sample of the hour), gpu_util_mean (0-1,
--   DCGM GPU_UTIL over GPUs and scrapes). Counter columns are NULL when the hour has no delta (e.g.
--   only the first scrape of a series), never a made-up 0. counter_resets / counter_gaps count
--   the counter deltas of the hour flagged is_reset / is_gap.
-- Log side (core.calls, self-hosted calls of the node whose ts is in the hour): calls_logged,
--   prompt_tokens_logged (uncached + cached + cache write), generation_tokens_logged
--   (thinking + output). The scrapes have no reasoning-token counter: thinking exists only in logs.
-- Halo: its usage/idle split comes from core.self_hosted_usage_cost, whose rows depend on
-- neighbouring days, so the days touched +- the halo are replaced.
-- @kind: incremental_by_day
-- @grain: one row per node x UTC hour in which it was active (core.node_hours_cost)
-- @halo: true
WITH paid AS (
    SELECT node_id, hour, day, provider, gpu_type, gpus, model, gpu_hours, active_seconds, cost_micro_usd,
           node_cost_source
    FROM core.node_hours_cost
    WHERE core.in_build_days(day)
),
counters AS (
    SELECT node_id, date_trunc('hour', scrape_ts) AS hour,
           sum(delta) FILTER (WHERE metric = 'prompt_tokens_total') AS prompt_tokens,
           sum(delta) FILTER (WHERE metric = 'generation_tokens_total') AS generation_tokens,
           sum(delta) FILTER (WHERE metric = 'e2e_request_latency_seconds_count') AS e2e_requests,
           sum(delta) FILTER (WHERE metric = 'requests_finished_total') AS finished_requests,
           sum(delta) FILTER (WHERE metric = 'energy_mj_total') AS energy_mj,
           count(*) FILTER (WHERE is_reset) AS counter_resets,
           count(*) FILTER (WHERE is_gap) AS counter_gaps
    FROM core.metric_deltas
    WHERE delta IS NOT NULL
    GROUP BY ALL
),
gauges AS (
    SELECT node_id, date_trunc('hour', scrape_ts) AS hour,
           count(DISTINCT scrape_ts) AS scrapes,
           avg(value) FILTER (WHERE mapped AND metric = 'kv_cache_usage') AS kv_cache_usage_mean,
           max(value) FILTER (WHERE mapped AND metric = 'kv_cache_usage') AS kv_cache_usage_max,
           avg(value) FILTER (WHERE mapped AND metric = 'gpu_util') AS gpu_util_mean
    FROM stg.metric_samples
    GROUP BY ALL
),
logged AS (
    SELECT node_id, hour,
           count(*) AS calls_logged,
           sum(prompt_tokens) AS prompt_tokens_logged,
           sum(thinking_tokens + output_tokens) AS generation_tokens_logged
    FROM core.calls
    WHERE serving = 'self_hosted' AND core.in_build_days(day)
    GROUP BY ALL
),
usage_basis AS (
    SELECT node_id, hour, busy_seconds, idle_micro_usd
    FROM core.self_hosted_usage_cost
    WHERE kind = 'idle'
),
final AS (
    SELECT p.node_id, p.hour, p.day, p.provider, p.gpu_type, p.gpus, p.model,
           p.gpu_hours,
           core.usd6(p.cost_micro_usd * 0.000001) AS cost_usd,
           u.busy_seconds,
           core.usd6((p.cost_micro_usd - u.idle_micro_usd) * 0.000001) AS usage_cost_usd,
           core.usd6(u.idle_micro_usd * 0.000001) AS idle_cost_usd,
           CAST(round(coalesce(c.e2e_requests, c.finished_requests)) AS BIGINT) AS calls,
           CAST(round(c.prompt_tokens) AS BIGINT) AS prompt_tokens,
           CAST(round(c.generation_tokens) AS BIGINT) AS generation_tokens,
           g.kv_cache_usage_mean, g.kv_cache_usage_max, g.gpu_util_mean,
           c.energy_mj / 3.6e9 AS energy_kwh,
           coalesce(l.calls_logged, 0) AS calls_logged,
           CAST(coalesce(l.prompt_tokens_logged, 0) AS BIGINT) AS prompt_tokens_logged,
           CAST(coalesce(l.generation_tokens_logged, 0) AS BIGINT) AS generation_tokens_logged,
           g.scrapes IS NOT NULL AS has_metrics,
           coalesce(g.scrapes, 0) AS scrapes,
           coalesce(c.counter_resets, 0) AS counter_resets,
           coalesce(c.counter_gaps, 0) AS counter_gaps,
           p.node_cost_source
    FROM paid p
    LEFT JOIN counters c USING (node_id, hour)
    LEFT JOIN gauges g USING (node_id, hour)
    LEFT JOIN logged l USING (node_id, hour)
    LEFT JOIN usage_basis u USING (node_id, hour)
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
