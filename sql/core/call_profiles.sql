-- Observed call profiles: the median (p50) and 95th-percentile (p95) prompt, thinking and output
-- tokens of a model's calls in a calendar month (UTC), API and self-hosted calls alike (the
-- workload a self-hosted deployment would have to hold). Each token count is its own percentile
-- (nearest rank, as quantile_disc: always a value some call had), so the p95 row is a conservative
-- envelope: p95 prompt + p95 thinking + p95 output. prompt_tokens = uncached + cached + cache write.
-- Sizing (marts.gpu_sizing) and break-even (marts.self_host_breakeven) read these rows.
-- @kind: incremental_by_month
-- @grain: one row per model x month x profile ('p50', 'p95')
WITH calls AS (
    SELECT model, CAST(date_trunc('month', day) AS DATE) AS month, serving,
           prompt_tokens, thinking_tokens, output_tokens
    FROM core.calls
    WHERE core.in_build_months(CAST(date_trunc('month', day) AS DATE))
),
counts AS (
    -- how many calls had each exact token count: a hash aggregate, which DuckDB can spill to disk
    -- (quantile_disc keeps every value of a group in memory: a month of a busy model did not fit
    -- in the build's memory limit at 50M calls)
    SELECT model, month, 'prompt' AS measure, prompt_tokens AS tokens, count(*) AS calls FROM calls GROUP BY ALL
    UNION ALL
    SELECT model, month, 'thinking', thinking_tokens, count(*) FROM calls GROUP BY ALL
    UNION ALL
    SELECT model, month, 'output', output_tokens, count(*) FROM calls GROUP BY ALL
),
ranked AS (
    -- nearest rank: the p-th percentile of n calls is the smallest count whose cumulative number of
    -- calls reaches ceil(n x p), which is what quantile_disc returns
    SELECT *,
           sum(calls) OVER (PARTITION BY model, month, measure ORDER BY tokens ROWS UNBOUNDED PRECEDING) AS cumulative,
           sum(calls) OVER (PARTITION BY model, month, measure) AS n
    FROM counts
),
percentiles AS (
    SELECT model, month,
           min(tokens) FILTER (WHERE measure = 'prompt' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.5), 1)) AS p50_prompt_tokens,
           min(tokens) FILTER (WHERE measure = 'thinking' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.5), 1)) AS p50_thinking_tokens,
           min(tokens) FILTER (WHERE measure = 'output' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.5), 1)) AS p50_output_tokens,
           min(tokens) FILTER (WHERE measure = 'prompt' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.95), 1)) AS p95_prompt_tokens,
           min(tokens) FILTER (WHERE measure = 'thinking' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.95), 1)) AS p95_thinking_tokens,
           min(tokens) FILTER (WHERE measure = 'output' AND cumulative >= greatest(ceil(CAST(n AS DOUBLE) * 0.95), 1)) AS p95_output_tokens
    FROM ranked
    GROUP BY model, month
),
volumes AS (
    SELECT model, month, count(*) AS calls, count(*) FILTER (WHERE serving = 'api') AS api_calls
    FROM calls
    GROUP BY model, month
),
by_month AS (
    SELECT v.model, v.month, v.calls, v.api_calls, p.* EXCLUDE (model, month)
    FROM volumes v JOIN percentiles p USING (model, month)
),
final AS (
    SELECT model, month, 'p50' AS profile, calls, api_calls,
           p50_prompt_tokens AS prompt_tokens, p50_thinking_tokens AS thinking_tokens,
           p50_output_tokens AS output_tokens
    FROM by_month
    UNION ALL
    SELECT model, month, 'p95' AS profile, calls, api_calls,
           p95_prompt_tokens AS prompt_tokens, p95_thinking_tokens AS thinking_tokens,
           p95_output_tokens AS output_tokens
    FROM by_month
)
SELECT * FROM final
