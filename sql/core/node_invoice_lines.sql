-- The cloud invoice's compute lines (issue 25 item 4: EC2 instance hours of accelerated instances,
-- Azure N-series VM hours, Compute Engine lines; stg.cloud_bill_lines with bucket 'instance_hours')
-- and the self-hosted node each one prices: the node of nodes.csv (the newest file, core.dim_nodes)
-- whose cloud_resource_id equals the line's resource id, case-insensitively, spaces trimmed (Azure
-- writes ResourceId in other case than the portal). usage_hours: the line's usage amount in hours
-- (AWS 'Hrs', Azure '1 Hour' / '10 Hours' / '100 Hours', GCP 'seconds' / 3600; NULL for another
-- unit, e.g. GCP memory in byte-seconds). in_node_hours: the line's usage period overlaps the
-- node's active period, so its whole cost is in core.node_hours_cost (spread over those hours);
-- false: the node was not active then and the money is in no node-hour; node_id NULL: no node
-- names the resource. cost_usd: what the hours cost, amortized: the line's cost, or for an AWS hour a
-- reserved instance or a savings plan covers (DiscountedUsage, SavingsPlanCoveredUsage) its
-- amortized cost (stg.cloud_bill_lines.amortized_cost_usd), not its unblended 0 or on-demand cost.
-- @kind: full
-- @grain: one row per compute line x node naming its resource (one row with node_id NULL when none)
WITH data_end AS (
    -- the end of the latest day with calls, read as core.node_hours_cost reads it (why: there)
    SELECT CAST(max(day) + 1 AS TIMESTAMP) AS end_ts FROM core.calls
),
nodes AS (
    SELECT n.node_id, lower(trim(n.cloud_resource_id)) AS resource_key, n.active_from,
           coalesce(n.active_to, d.end_ts) AS active_until
    FROM core.dim_nodes n CROSS JOIN data_end d
    WHERE nullif(trim(n.cloud_resource_id), '') IS NOT NULL
),
lines AS (
    SELECT file_id, line, cloud, resource_id, usage_start, usage_end, charge_kind, service, sku, quantity, unit,
           coalesce(amortized_cost_usd, cost_usd) AS cost_usd, currency, lower(trim(unit)) AS unit_key
    FROM stg.cloud_bill_lines
    WHERE bucket = 'instance_hours'
),
final AS (
    SELECT l.file_id, l.line, l.cloud, l.resource_id, l.usage_start, l.usage_end, l.charge_kind, l.service, l.sku,
           l.quantity, l.unit,
           CASE WHEN l.unit_key IN ('hrs', 'hr', 'hour', 'hours', 'h', '1 hour', '1 hours') THEN CAST(l.quantity AS DOUBLE)
                WHEN regexp_matches(l.unit_key, '^[0-9]+ hours?$')
                    THEN CAST(l.quantity AS DOUBLE) * CAST(regexp_extract(l.unit_key, '^([0-9]+)', 1) AS DOUBLE)
                WHEN l.unit_key IN ('seconds', 'second', 's', 'sec') THEN CAST(l.quantity AS DOUBLE) / 3600
           END AS usage_hours,
           l.cost_usd, l.currency,
           n.node_id,
           n.node_id IS NOT NULL AND l.usage_start < n.active_until AND l.usage_end > n.active_from
               AND l.usage_end > l.usage_start AS in_node_hours
    FROM lines l
    LEFT JOIN nodes n ON n.resource_key = lower(trim(l.resource_id))
)
SELECT * FROM final
