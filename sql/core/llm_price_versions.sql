-- LLM token prices as history: a new version only where a price changes.
-- Defaults of the contract applied: cached and cache-write default to the input price,
-- reasoning to the output price. Sheets with the same effective date: the last ingested wins.
-- @kind: full
-- @grain: one row per (provider, model, price_kind, version); effective_to is exclusive, NULL =
--   still in force.
WITH sheets AS (
    SELECT *
    FROM stg.llm_prices
    QUALIFY row_number() OVER (
        PARTITION BY provider, model, price_kind, effective_from ORDER BY file_id DESC, line DESC) = 1
),
priced AS (
    SELECT provider, model, price_kind, effective_from, file_id, supports_reasoning,
           input_usd_per_mtok,
           coalesce(cached_input_usd_per_mtok, input_usd_per_mtok) AS cached_input_usd_per_mtok,
           coalesce(cache_write_usd_per_mtok, input_usd_per_mtok) AS cache_write_usd_per_mtok,
           output_usd_per_mtok,
           coalesce(reasoning_usd_per_mtok, output_usd_per_mtok) AS reasoning_usd_per_mtok
    FROM sheets
),
changes AS (
    SELECT *,
           struct_pack(input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
                       output_usd_per_mtok, reasoning_usd_per_mtok) IS DISTINCT FROM
           lag(struct_pack(input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
                           output_usd_per_mtok, reasoning_usd_per_mtok))
               OVER (PARTITION BY provider, model, price_kind ORDER BY effective_from) AS is_new_version
    FROM priced
),
versions AS (
    SELECT * EXCLUDE (is_new_version) FROM changes WHERE is_new_version
),
final AS (
    SELECT provider || '|' || model || '|' || price_kind || '|' || strftime(effective_from, '%Y-%m-%d') AS price_version_id,
           provider, model, core.model_key(model) AS model_key, price_kind,
           effective_from,
           lead(effective_from) OVER (PARTITION BY provider, model, price_kind ORDER BY effective_from) AS effective_to,
           input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
           output_usd_per_mtok, reasoning_usd_per_mtok, supports_reasoning,
           file_id AS source_file_id
    FROM versions
)
SELECT * FROM final
