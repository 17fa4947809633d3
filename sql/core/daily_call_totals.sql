-- The calls summed per UTC day and the dimensions the day-grained marts group by, so that marts
-- which must be recomputed whole each run (marts.tier_mix: its fallback cost per call is an
-- average over all days; marts.focus_costs) read a few rows per day instead of every call.
-- cost_usd is the exact sum of core.call_costs.cost_usd (NULL costs left out, as sum() does);
-- priced = the calls' cost_usd is known. The token buckets (uncached_input_tokens .. output_tokens)
-- are summed too, so marts.focus_costs can write one row per token type and price.
-- grain: day x team x tier x serving x provider x model x price_version_id x priced
-- reads: core.call_costs
-- incremental: day (a nightly run replaces the rows of the days it touched; warehouse/incremental.py)
WITH calls AS (
    SELECT day, team, tier, serving, provider, model, price_version_id, cost_usd IS NOT NULL AS priced,
           total_tokens, cost_usd,
           uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
    FROM core.call_costs
    WHERE core.in_build_days(day)
),
final AS (
    SELECT day, team, tier, serving, provider, model, price_version_id, priced,
           count(*) AS calls,
           sum(total_tokens) AS total_tokens,
           sum(cost_usd) AS cost_usd,
           sum(uncached_input_tokens) AS uncached_input_tokens,
           sum(cached_input_tokens) AS cached_input_tokens,
           sum(cache_write_tokens) AS cache_write_tokens,
           sum(thinking_tokens) AS thinking_tokens,
           sum(output_tokens) AS output_tokens
    FROM calls
    GROUP BY ALL
)
SELECT * FROM final
