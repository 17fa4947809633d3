-- Break-even status per reasoning model, latest month: the best self-host deployment for each
-- model against what its API traffic cost, and how far the volume is from break-even.
-- grain: one row per model (its best deployment: feasible first, then the largest savings).
-- share_of_breakeven = api_calls / breakeven_calls_per_month (1.0 = at break-even for one
-- deployment); self_host_usd_at_volume is the step function: deployments_needed x the monthly cost.
-- reads: marts.self_host_breakeven
WITH latest AS (
    SELECT max(month) AS month FROM marts.self_host_breakeven
),
ranked AS (
    SELECT b.*,
           row_number() OVER (
               PARTITION BY b.model
               ORDER BY (b.verdict = 'infeasible'), b.savings_usd DESC NULLS LAST, b.deployment
           ) AS preference
    FROM marts.self_host_breakeven b JOIN latest USING (month)
),
final AS (
    SELECT month,
           model,
           deployment AS best_deployment,
           verdict,
           api_calls,
           api_spend_usd,
           api_cost_per_call_usd,
           self_host_usd_per_month,
           capacity_calls_per_month,
           deployments_needed,
           self_host_usd_per_month * deployments_needed AS self_host_usd_at_volume,
           breakeven_calls_per_month,
           breakeven_api_spend_usd,
           savings_usd,
           CAST(api_calls AS DOUBLE) / nullif(CAST(breakeven_calls_per_month AS DOUBLE), 0) AS share_of_breakeven
    FROM ranked
    WHERE preference = 1
)
SELECT * FROM final
ORDER BY savings_usd DESC NULLS LAST, model
