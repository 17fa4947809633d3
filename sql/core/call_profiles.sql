-- Observed call profiles: the median (p50) and 95th-percentile (p95) prompt, thinking and output
-- tokens of a model's calls in a calendar month (UTC), API and self-hosted calls alike (the
-- workload a self-hosted deployment would have to hold). Each token count is its own percentile
-- (nearest rank, quantile_disc: always a value some call had), so the p95 row is a conservative
-- envelope: p95 prompt + p95 thinking + p95 output. prompt_tokens = uncached + cached + cache write.
-- Sizing (marts.gpu_sizing) and break-even (marts.self_host_breakeven) read these rows.
-- grain: one row per model x month x profile ('p50', 'p95')
-- reads: core.call_costs
-- incremental: month (a nightly run recomputes the months of the days it touched; warehouse/incremental.py)
WITH calls AS (
    SELECT model,
           CAST(date_trunc('month', day) AS DATE) AS month,
           serving,
           prompt_tokens,
           thinking_tokens,
           output_tokens
    FROM core.call_costs
    WHERE core.in_build_months(CAST(date_trunc('month', day) AS DATE))
),
by_month AS (
    SELECT model, month,
           count(*) AS calls,
           count(*) FILTER (WHERE serving = 'api') AS api_calls,
           quantile_disc(prompt_tokens, 0.5) AS p50_prompt_tokens,
           quantile_disc(thinking_tokens, 0.5) AS p50_thinking_tokens,
           quantile_disc(output_tokens, 0.5) AS p50_output_tokens,
           quantile_disc(prompt_tokens, 0.95) AS p95_prompt_tokens,
           quantile_disc(thinking_tokens, 0.95) AS p95_thinking_tokens,
           quantile_disc(output_tokens, 0.95) AS p95_output_tokens
    FROM calls
    GROUP BY model, month
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
