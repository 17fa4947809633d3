-- What each self-hosted node costs, hour by hour: gpus x USD per GPU-hour for the seconds it was
-- active in that UTC hour. The price is the node's own (nodes.csv) or else the cheapest on-demand
-- price in force for its provider and GPU type in the GPU price sheets (any region).
-- Cost is integer micro-USD, rounded half up per node-hour; the node's cost is the sum of these.
-- An empty active_to means: until the end of the latest day with call data.
-- @kind: full
-- @grain: one row per node x UTC hour in which it was active
WITH data_end AS (
    SELECT CAST(CAST(max(ts) AS DATE) + 1 AS TIMESTAMP) AS end_ts FROM stg.requests
),
spans AS (
    SELECT n.node_id, n.provider, n.gpu_type, n.gpus, n.model, n.model_key, n.usd_per_gpu_hour AS node_usd_per_gpu_hour,
           n.active_from, coalesce(n.active_to, d.end_ts) AS active_until
    FROM core.dim_nodes n CROSS JOIN data_end d
),
hours AS (
    SELECT s.*, unnest(generate_series(date_trunc('hour', active_from), active_until - INTERVAL 1 MICROSECOND, INTERVAL 1 HOUR)) AS hour
    FROM spans s
    WHERE active_until > active_from
),
covered AS (
    SELECT *,
           epoch_us(least(hour + INTERVAL 1 HOUR, active_until)) - epoch_us(greatest(hour, active_from)) AS active_us
    FROM hours
),
sheet_price AS (
    SELECT h.node_id, h.hour, min(g.usd_per_gpu_hour) AS sheet_usd_per_gpu_hour
    FROM covered h
    JOIN core.gpu_price_versions g
      ON g.provider = h.provider AND g.gpu_type = upper(h.gpu_type) AND g.pricing = 'on_demand'
     AND h.hour >= g.effective_from AND (g.effective_to IS NULL OR h.hour < g.effective_to)
    WHERE h.node_usd_per_gpu_hour IS NULL
    GROUP BY ALL
),
priced AS (
    SELECT h.*, coalesce(h.node_usd_per_gpu_hour, p.sheet_usd_per_gpu_hour) AS usd_per_gpu_hour,
           CASE WHEN h.node_usd_per_gpu_hour IS NOT NULL THEN 'nodes_csv'
                WHEN p.sheet_usd_per_gpu_hour IS NOT NULL THEN 'gpu_price_sheet' END AS price_source
    FROM covered h LEFT JOIN sheet_price p USING (node_id, hour)
),
final AS (
    SELECT node_id, provider, gpu_type, model, model_key, gpus, hour, CAST(hour AS DATE) AS day,
           active_us / 1e6 AS active_seconds,
           gpus * active_us / 3.6e9 AS gpu_hours,
           usd_per_gpu_hour, price_source,
           (CAST(gpus AS HUGEINT) * CAST(usd_per_gpu_hour * 1000000 AS HUGEINT) * active_us + 1800000000) // 3600000000
               AS cost_micro_usd
    FROM priced
)
SELECT * FROM final
