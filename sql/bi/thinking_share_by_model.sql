-- Thinking share of spend by model over the last 30 days: how much of what each model cost was
-- spent on hidden reasoning tokens.
-- grain: one row per (model, serving source); sources are 'api_usage' (API calls at list price)
-- and 'self_hosted' (node cost allocated to calls, including idle node time, which has no thinking).
-- Billed amounts (source 'api_bill') are left out: they cover the same calls as 'api_usage'.
-- The window is the 30 days ending with the latest day in the warehouse (see spend_by_team_tier_30d.sql).
-- reads: marts.daily_spend
WITH last_day AS (
    SELECT max(day) AS day FROM marts.daily_spend WHERE source <> 'api_bill'
),
window_rows AS (
    SELECT s.*
    FROM marts.daily_spend s, last_day
    WHERE s.source <> 'api_bill'
      AND s.day > last_day.day - INTERVAL 30 DAY AND s.day <= last_day.day
),
final AS (
    SELECT model,
           source,
           sum(calls) AS calls,
           sum(cost_usd) AS cost_usd,
           sum(reasoning_cost_usd) AS thinking_cost_usd,
           CAST(sum(reasoning_cost_usd) AS DOUBLE) / nullif(CAST(sum(cost_usd) AS DOUBLE), 0) AS thinking_share
    FROM window_rows
    GROUP BY model, source
)
SELECT * FROM final
ORDER BY cost_usd DESC, model, source
