-- The marts agree with each other: per day, cost_per_task, daily_spend and task_costs (plus idle)
-- add up to the same spend (to the cent; each mart rounds its own rows to the micro-dollar).
-- asset: marts.cost_per_task
WITH a AS (SELECT day, sum(cost_usd) AS usd FROM marts.cost_per_task GROUP BY day),
     b AS (SELECT day, sum(cost_usd) AS usd FROM marts.daily_spend WHERE source <> 'api_bill' GROUP BY day)
SELECT coalesce(a.day, b.day) AS day, a.usd AS cost_per_task_usd, b.usd AS daily_spend_usd
FROM a FULL JOIN b USING (day)
WHERE abs(coalesce(a.usd, 0) - coalesce(b.usd, 0)) > 0.01
