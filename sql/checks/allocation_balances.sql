-- Nothing is lost: per node, the micro-dollars allocated to calls and idle rows equal the node's
-- cost. Returns the nodes where they differ.
-- asset: core.self_hosted_allocation
WITH paid AS (
    SELECT node_id, sum(cost_micro_usd) AS paid_micro_usd FROM core.node_hours_cost GROUP BY node_id
),
allocated AS (
    SELECT node_id, sum(allocated_micro_usd) AS allocated_micro_usd FROM core.self_hosted_allocation GROUP BY node_id
)
SELECT node_id, paid_micro_usd, coalesce(allocated_micro_usd, 0) AS allocated_micro_usd
FROM paid LEFT JOIN allocated USING (node_id)
WHERE paid_micro_usd IS NOT NULL AND paid_micro_usd <> coalesce(allocated_micro_usd, 0)
