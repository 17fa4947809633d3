-- Usage thinktax could not price, so it is never silently costed at $0.
-- @kind: full
-- @grain: one row per (serving, provider, reported model, node, reason).
WITH calls AS (
    SELECT serving, provider, reported_model, node_id, ts,
           CASE
               WHEN serving = 'api' AND price_model IS NULL THEN 'no price sheet names this model'
               WHEN serving = 'api' THEN 'no price in force at the call time'
               WHEN NOT node_known THEN 'node not in nodes.csv'
               ELSE 'node has no GPU price for this hour (or the call is outside its active period)'
           END AS reason
    FROM core.call_costs
    WHERE unpriced
),
node_hours AS (
    SELECT 'self_hosted' AS serving, provider, model AS reported_model, node_id, hour AS ts,
           'node-hour without a GPU price (nodes.csv or GPU sheet)' AS reason
    FROM core.node_hours_cost
    WHERE cost_micro_usd IS NULL
),
final AS (
    SELECT serving, provider, reported_model, node_id, reason,
           count(*) AS calls_or_hours, min(ts) AS first_seen, max(ts) AS last_seen
    FROM (SELECT * FROM calls UNION ALL SELECT * FROM node_hours)
    GROUP BY ALL
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
