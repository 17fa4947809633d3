-- The marts agree with each other: cost_per_task and daily_spend (API usage and self-hosted, idle
-- node time included) add up to the same spend. cost_per_task counts a task on its first call's
-- day (task_day) and daily_spend each call on its own day, so a task whose calls span midnight
-- moves spend between their days: per day they may differ, over the whole history they may not.
-- Each mart rounds its own rows to the micro-dollar, so the sums may differ by half a micro-dollar
-- per row, plus a cent.
-- asset: marts.cost_per_task
WITH a AS (SELECT coalesce(sum(cost_usd), 0) AS usd, count(*) AS n FROM marts.cost_per_task),
     b AS (SELECT coalesce(sum(cost_usd), 0) AS usd, count(*) AS n FROM marts.daily_spend WHERE source <> 'api_bill')
SELECT a.usd AS cost_per_task_usd, b.usd AS daily_spend_usd, a.usd - b.usd AS difference_usd,
       a.n AS cost_per_task_rows, b.n AS daily_spend_rows
FROM a, b
WHERE abs(a.usd - b.usd) > 0.01 + 0.0000005 * (a.n + b.n)
