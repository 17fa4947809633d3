-- The calls summed per UTC day and the dimensions the day-grained marts group by, so that marts
-- which must be recomputed whole each run (marts.tier_mix: its fallback cost per call is an
-- average over all days; marts.focus_costs) read a few rows per day instead of every call.
-- cost_usd is the exact sum of core.call_costs.cost_usd (NULL costs left out, as sum() does);
-- priced = the calls' cost_usd is known.
-- @kind: incremental_by_day
-- @grain: day x team x tier x serving x provider x model x price_version_id x priced
WITH calls AS (
    SELECT day, team, tier, serving, provider, model, price_version_id, cost_usd IS NOT NULL AS priced,
           total_tokens, cost_usd
    FROM core.call_costs
    WHERE core.in_build_days(day)
),
final AS (
    SELECT day, team, tier, serving, provider, model, price_version_id, priced,
           count(*) AS calls,
           sum(total_tokens) AS total_tokens,
           sum(cost_usd) AS cost_usd
    FROM calls
    GROUP BY ALL
)
SELECT * FROM final
