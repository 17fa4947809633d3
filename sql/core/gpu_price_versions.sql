-- GPU rental prices as history: a new version only where the price changes.
-- effective_to exclusive, NULL = still in force.
-- @kind: full
-- @grain: one row per (provider, gpu_type, gpus_per_node, pricing, region, instance_type, version);
WITH sheets AS (
    SELECT *
    FROM stg.gpu_prices
    QUALIFY row_number() OVER (
        PARTITION BY provider, gpu_type, gpus_per_node, pricing, region, instance_type, effective_from
        ORDER BY file_id DESC, line DESC) = 1
),
changes AS (
    SELECT *,
           usd_per_gpu_hour IS DISTINCT FROM lag(usd_per_gpu_hour) OVER w AS is_new_version
    FROM sheets
    WINDOW w AS (PARTITION BY provider, gpu_type, gpus_per_node, pricing, region, instance_type ORDER BY effective_from)
),
versions AS (
    SELECT * FROM changes WHERE is_new_version
),
final AS (
    SELECT provider, upper(gpu_type) AS gpu_type, gpus_per_node, pricing, region, instance_type,
           effective_from,
           lead(effective_from) OVER (
               PARTITION BY provider, gpu_type, gpus_per_node, pricing, region, instance_type
               ORDER BY effective_from) AS effective_to,
           usd_per_gpu_hour, source_format, file_id AS source_file_id
    FROM versions
)
SELECT * FROM final
