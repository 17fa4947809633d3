-- What each self-hosted node costs, hour by hour: gpus x USD per GPU-hour for the seconds it was
-- active in that UTC hour. The price is the node's own (nodes.csv) or else the cheapest on-demand
-- price in force for its provider and GPU type in the GPU price sheets (any region).
-- Cost is integer micro-USD, rounded half up per node-hour; the node's cost is the sum of these.
-- An empty active_to means: until the end of the latest day with call data.
-- Invoice-priced hours (issue 25 item 4): a node whose nodes.csv cloud_resource_id matches
-- (case-insensitively, trimmed) the resource id of cloud invoice compute lines (stg.cloud_bill_lines
-- with bucket 'instance_hours': EC2 instance hours, Azure VM hours, Compute Engine lines) is paid
-- what those lines bill. Each line's cost (cost_usd; for an AWS hour a reserved instance or a savings
-- plan covers, its amortized cost, amortized_cost_usd), in integer micro-USD (rounded half away from zero),
-- is spread over the node-hours its usage period covers, in proportion to the microseconds of the
-- period inside each active node-hour, by largest remainder (ties: node, hour), so the shares add
-- up to the line exactly; a node-hour's cost is the sum of its shares (node_cost_source 'invoice',
-- price_source 'invoice', usd_per_gpu_hour the effective rate: cost / GPU-hours, rounded half up to
-- the micro-dollar). An hour no line covers keeps the catalog price (node_cost_source 'catalog').
-- A line's money outside every active hour of its node is in no node-hour.
-- @kind: full
-- @grain: one row per node x UTC hour in which it was active
WITH data_end AS (
    -- the end of the latest day with calls: core.calls has one row per call of stg.requests, and its
    -- day is a one-value dictionary column in each of its Parquet files (~60 bytes a row group), where
    -- max(ts) of stg.requests read every call's timestamp (this model: 0.10 s at 1x, 0.35 s at 4x history of the 32M bench)
    SELECT CAST(max(day) + 1 AS TIMESTAMP) AS end_ts FROM core.calls
),
spans AS (
    SELECT n.node_id, n.provider, n.gpu_type, n.gpus, n.model, n.model_key, n.usd_per_gpu_hour AS node_usd_per_gpu_hour,
           lower(trim(n.cloud_resource_id)) AS resource_key,
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
invoice_lines AS (
    -- the compute lines of a node's resource, in micro-USD
    SELECT l.file_id, l.line, l.usage_start, l.usage_end, s.node_id,
           CAST(round(coalesce(l.amortized_cost_usd, l.cost_usd) * 1000000) AS HUGEINT) AS line_micro_usd
    FROM stg.cloud_bill_lines l
    JOIN spans s ON s.resource_key = lower(trim(l.resource_id))
    WHERE l.bucket = 'instance_hours' AND l.usage_end > l.usage_start
),
line_hours AS (
    -- each line x each active hour of its node that its usage period overlaps
    SELECT i.file_id, i.line, i.line_micro_usd, h.node_id, h.hour,
           epoch_us(least(h.hour + INTERVAL 1 HOUR, h.active_until, i.usage_end))
               - epoch_us(greatest(h.hour, h.active_from, i.usage_start)) AS overlap_us
    FROM invoice_lines i
    JOIN covered h ON h.node_id = i.node_id AND h.hour < i.usage_end AND h.hour + INTERVAL 1 HOUR > i.usage_start
),
line_floored AS (
    SELECT *,
           abs(line_micro_usd) * overlap_us // sum(overlap_us) OVER line_w AS floor_micro,
           abs(line_micro_usd) * overlap_us % sum(overlap_us) OVER line_w AS remainder
    FROM line_hours
    WHERE overlap_us > 0
    WINDOW line_w AS (PARTITION BY file_id, line)
),
line_ranked AS (
    SELECT *,
           abs(line_micro_usd) - sum(floor_micro) OVER line_w AS leftover,
           row_number() OVER (PARTITION BY file_id, line ORDER BY remainder DESC, node_id, hour) AS rnk
    FROM line_floored
    WINDOW line_w AS (PARTITION BY file_id, line)
),
invoice_hours AS (
    SELECT node_id, hour,
           sum(CASE WHEN line_micro_usd < 0 THEN -1 ELSE 1 END
               * (floor_micro + CASE WHEN rnk <= leftover THEN 1 ELSE 0 END)) AS invoice_micro_usd
    FROM line_ranked
    GROUP BY node_id, hour
),
priced AS (
    SELECT h.*, coalesce(h.node_usd_per_gpu_hour, p.sheet_usd_per_gpu_hour) AS catalog_usd_per_gpu_hour,
           CASE WHEN h.node_usd_per_gpu_hour IS NOT NULL THEN 'nodes_csv'
                WHEN p.sheet_usd_per_gpu_hour IS NOT NULL THEN 'gpu_price_sheet' END AS catalog_price_source,
           i.invoice_micro_usd
    FROM covered h
    LEFT JOIN sheet_price p USING (node_id, hour)
    LEFT JOIN invoice_hours i USING (node_id, hour)
),
final AS (
    SELECT node_id, provider, gpu_type, model, model_key, gpus, hour, CAST(hour AS DATE) AS day,
           active_us / 1e6 AS active_seconds,
           gpus * active_us / 3.6e9 AS gpu_hours,
           CASE WHEN invoice_micro_usd IS NULL THEN catalog_usd_per_gpu_hour
                -- micro-USD per GPU-hour = invoice micro-USD x 3.6e9 us / (gpus x active us), half up
                ELSE CAST(CAST((CAST(invoice_micro_usd AS HUGEINT) * 7200000000 + gpus * active_us)
                               // (2 * gpus * active_us) AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6))
                          AS DECIMAL(18,6)) END AS usd_per_gpu_hour,
           CASE WHEN invoice_micro_usd IS NULL THEN catalog_price_source ELSE 'invoice' END AS price_source,
           CASE WHEN invoice_micro_usd IS NULL
                THEN (CAST(gpus AS HUGEINT) * CAST(catalog_usd_per_gpu_hour * 1000000 AS HUGEINT) * active_us + 1800000000)
                     // 3600000000
                ELSE CAST(invoice_micro_usd AS BIGINT) END AS cost_micro_usd,
           CASE WHEN invoice_micro_usd IS NULL THEN 'catalog' ELSE 'invoice' END AS node_cost_source
    FROM priced
)
SELECT * FROM final
