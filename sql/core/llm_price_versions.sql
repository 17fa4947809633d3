-- LLM prices as history: a new version only where a price changes. This is the one table every
-- price input of core.call_costs comes from (issue 27): the token rates of each price kind, and
-- the kind's modifiers -- the 1-hour cache-write price, per-request / web-search fees, regional
-- uplifts; long-context thresholds are the above_<N>k_tokens kinds. A sheet that changes any of
-- them is a new version, so the incremental plan (warehouse/incremental.py price_change_from),
-- which diffs this table, rebuilds the days from its effective date.
-- Defaults of the contract applied: cached and cache-write default to the input price,
-- reasoning to the output price; the given_* columns hold the same three as the sheet gives them
-- (NULL = not given), since call_costs falls back field by field between kinds (LiteLLM's rule).
-- Sheets with the same effective date: the last ingested wins.
-- Issue 44: the prices by modality and unit are price inputs too (a change is a new version). A
-- per-image kind 'image_<quality>_<W>x<H>' and a per-second kind 'video_<resolution>' carry only
-- their unit price.
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
           coalesce(reasoning_usd_per_mtok, output_usd_per_mtok) AS reasoning_usd_per_mtok,
           cached_input_usd_per_mtok AS given_cached_input_usd_per_mtok,
           cache_write_usd_per_mtok AS given_cache_write_usd_per_mtok,
           reasoning_usd_per_mtok AS given_reasoning_usd_per_mtok,
           cache_write_1h_usd_per_mtok, usd_per_request_fee, web_search_usd_per_query_low,
           web_search_usd_per_query_high, regional_uplift_eu, regional_uplift_us,
           -- issue 44: prices by modality and unit
           audio_input_usd_per_mtok, cached_audio_input_usd_per_mtok, image_input_usd_per_mtok, video_input_usd_per_mtok,
           audio_output_usd_per_mtok, image_output_usd_per_mtok, video_output_usd_per_mtok, usd_per_output_image,
           usd_per_output_video_second
    FROM sheets
),
changes AS (
    SELECT *,
           -- every price input as given (the defaulted rates follow from these)
           struct_pack(input_usd_per_mtok, given_cached_input_usd_per_mtok, given_cache_write_usd_per_mtok,
                       output_usd_per_mtok, given_reasoning_usd_per_mtok, cache_write_1h_usd_per_mtok,
                       usd_per_request_fee, web_search_usd_per_query_low, web_search_usd_per_query_high,
                       regional_uplift_eu, regional_uplift_us,
                       audio_input_usd_per_mtok, cached_audio_input_usd_per_mtok, image_input_usd_per_mtok,
                       video_input_usd_per_mtok, audio_output_usd_per_mtok, image_output_usd_per_mtok,
                       video_output_usd_per_mtok, usd_per_output_image, usd_per_output_video_second) IS DISTINCT FROM
           lag(struct_pack(input_usd_per_mtok, given_cached_input_usd_per_mtok, given_cache_write_usd_per_mtok,
                           output_usd_per_mtok, given_reasoning_usd_per_mtok, cache_write_1h_usd_per_mtok,
                           usd_per_request_fee, web_search_usd_per_query_low, web_search_usd_per_query_high,
                           regional_uplift_eu, regional_uplift_us,
                           audio_input_usd_per_mtok, cached_audio_input_usd_per_mtok, image_input_usd_per_mtok,
                           video_input_usd_per_mtok, audio_output_usd_per_mtok, image_output_usd_per_mtok,
                           video_output_usd_per_mtok, usd_per_output_image, usd_per_output_video_second))
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
           file_id AS source_file_id,
           -- issue 27: the rest of the price inputs (after the columns of before)
           given_cached_input_usd_per_mtok, given_cache_write_usd_per_mtok, given_reasoning_usd_per_mtok,
           cache_write_1h_usd_per_mtok, usd_per_request_fee, web_search_usd_per_query_low,
           web_search_usd_per_query_high, regional_uplift_eu, regional_uplift_us,
           -- issue 44: prices by modality (per million tokens) and per unit (NULL = not given: unpriced)
           audio_input_usd_per_mtok, cached_audio_input_usd_per_mtok, image_input_usd_per_mtok, video_input_usd_per_mtok,
           audio_output_usd_per_mtok, image_output_usd_per_mtok, video_output_usd_per_mtok, usd_per_output_image,
           usd_per_output_video_second
    FROM versions
)
SELECT * FROM final
