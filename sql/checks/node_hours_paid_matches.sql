-- Nothing is lost on the usage basis either: per node, marts.node_hours' cost_usd, and its
-- usage_cost_usd + idle_cost_usd, and core.self_hosted_usage_cost's call + idle micro-USD all equal
-- what the node was paid (core.node_hours_cost, priced hours). Returns the nodes where they differ.
-- asset: marts.node_hours
WITH paid AS (
    SELECT node_id, sum(cost_micro_usd) AS paid_micro_usd
    FROM core.node_hours_cost WHERE cost_micro_usd IS NOT NULL GROUP BY node_id
),
usage_basis AS (
    SELECT node_id, sum(coalesce(usage_micro_usd, 0) + coalesce(idle_micro_usd, 0)) AS usage_basis_micro_usd
    FROM core.self_hosted_usage_cost GROUP BY node_id
),
mart AS (
    SELECT node_id, sum(cost_usd) AS cost_usd, sum(usage_cost_usd) + sum(idle_cost_usd) AS usage_plus_idle_usd
    FROM marts.node_hours GROUP BY node_id
)
SELECT p.node_id, p.paid_micro_usd, u.usage_basis_micro_usd, m.cost_usd, m.usage_plus_idle_usd
FROM paid p
LEFT JOIN usage_basis u USING (node_id)
LEFT JOIN mart m USING (node_id)
WHERE u.usage_basis_micro_usd IS DISTINCT FROM p.paid_micro_usd
   OR m.cost_usd IS DISTINCT FROM CAST(p.paid_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6))
   OR m.usage_plus_idle_usd IS DISTINCT FROM m.cost_usd
