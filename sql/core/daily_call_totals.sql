-- The calls summed per UTC day and the dimensions the day-grained marts group by, so that marts
-- which must be recomputed whole each run (marts.tier_mix: its fallback cost per call is an
-- average over all days; marts.focus_costs) read a few rows per day instead of every call.
-- cost_usd is the exact sum of core.call_costs.cost_usd (NULL costs left out, as sum() does);
-- priced = the calls' cost_usd is known. For marts.focus_costs (one row per token type and price)
-- the token buckets are summed with, for priced API calls, each bucket's cost at the rate the call
-- was priced at (core.call_costs rate_* columns: tier, long context, uplift applied): *_cost_usd;
-- cache writes are split into 5-minute (cache_write_tokens - cache_write_1h_tokens) and 1-hour;
-- request_fees_usd = per-query fees. For a priced API call the bucket costs (of the text tokens) plus
-- its fees plus audio_cost_usd, image_cost_usd and video_cost_usd (issue 44) are its
-- cost_usd (tests/commands/test_focus_validator.py checks it on every call of the demo); a call paid
-- by provisioned throughput (price_basis 'provisioned') costs 0 per token, so its buckets cost 0
-- (core.call_costs.on_demand_cost_usd keeps what they would have cost on demand).
-- on_demand_cost_usd: the exact sum of core.call_costs.on_demand_cost_usd (API calls at the per-token
-- price of their basis, provisioned ones at what they would have cost on demand; NULL for
-- self-hosted calls), so that marts.commitments reads this table, not every call of its months.
-- cost_center (issue 41): core.call_costs.cost_center, so that `thinktax export focus` (1.3) can
-- write the API usage rows per cost center (x_CostCenter) from this table.
-- @kind: incremental_by_day
-- @grain: day x team x cost_center x tier x serving x provider x model x price_version_id x price_basis x priced
WITH calls AS (
    SELECT day, team, cost_center, tier, serving, provider, model, price_version_id, price_basis,
           cost_usd IS NOT NULL AS priced, total_tokens, cost_usd, on_demand_cost_usd,
           uncached_input_tokens, cached_input_tokens, cache_write_tokens - coalesce(cache_write_1h_tokens, 0) AS cache_write_5m_tokens,
           coalesce(cache_write_1h_tokens, 0) AS cache_write_1h_tokens, thinking_tokens, output_tokens,
           coalesce(web_search_requests, 0) AS web_search_requests,
           audio_input_tokens, cached_audio_input_tokens, audio_output_tokens, image_input_tokens, image_output_tokens,
           video_input_tokens, video_output_tokens, output_images, output_video_seconds,
           audio_cost_usd, image_cost_usd, video_cost_usd,
           -- issue 44: the text parts of the buckets are priced at the text rates; the non-text parts are
           -- audio_cost_usd / image_cost_usd / video_cost_usd. A rate the sheet does not give (a model
           -- priced per image or second) is NULL: for a priced call its tokens are 0, so the term is 0
           CASE WHEN serving = 'api' AND cost_usd IS NOT NULL THEN struct_pack(
               i := core.usd_for_tokens(uncached_input_tokens - audio_input_tokens - image_input_tokens - video_input_tokens,
                                        coalesce(rate_input_usd_per_mtok, 0)),
               c := core.usd_for_tokens(cached_input_tokens - cached_audio_input_tokens, coalesce(rate_cached_input_usd_per_mtok, 0)),
               w := core.usd_for_tokens(cache_write_tokens - coalesce(cache_write_1h_tokens, 0), coalesce(rate_cache_write_usd_per_mtok, 0)),
               w1 := CASE WHEN coalesce(cache_write_1h_tokens, 0) > 0
                          THEN core.usd_for_tokens(cache_write_1h_tokens, rate_cache_write_1h_usd_per_mtok) ELSE 0 END,
               r := core.usd_for_tokens(thinking_tokens, coalesce(rate_reasoning_usd_per_mtok, 0)),
               o := core.usd_for_tokens(output_tokens - audio_output_tokens - image_output_tokens - video_output_tokens,
                                        coalesce(rate_output_usd_per_mtok, 0)),
               f := coalesce(request_fees_usd, 0)) END AS bucket_cost
    FROM core.call_costs
    WHERE core.in_build_days(day)
),
final AS (
    SELECT day, team, cost_center, tier, serving, provider, model, price_version_id, price_basis, priced,
           count(*) AS calls,
           sum(total_tokens) AS total_tokens,
           sum(cost_usd) AS cost_usd,
           sum(uncached_input_tokens) AS uncached_input_tokens,
           sum(cached_input_tokens) AS cached_input_tokens,
           sum(cache_write_5m_tokens) AS cache_write_5m_tokens,
           sum(cache_write_1h_tokens) AS cache_write_1h_tokens,
           sum(thinking_tokens) AS thinking_tokens,
           sum(output_tokens) AS output_tokens,
           sum(web_search_requests) AS web_search_requests,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.i END) AS uncached_input_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.c END) AS cached_input_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.w END) AS cache_write_5m_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.w1 END) AS cache_write_1h_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.r END) AS thinking_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.o END) AS output_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE bucket_cost.f END) AS request_fees_usd,
           sum(on_demand_cost_usd) AS on_demand_cost_usd,
           -- issue 44: the non-text parts of the buckets above (tokens of uncached input, cached input and
           -- output), the units that are not tokens, and their cost (0 for provisioned calls)
           sum(audio_input_tokens) AS audio_input_tokens, sum(cached_audio_input_tokens) AS cached_audio_input_tokens,
           sum(audio_output_tokens) AS audio_output_tokens, sum(image_input_tokens) AS image_input_tokens,
           sum(image_output_tokens) AS image_output_tokens, sum(video_input_tokens) AS video_input_tokens,
           sum(video_output_tokens) AS video_output_tokens, sum(output_images) AS output_images,
           sum(output_video_seconds) AS output_video_seconds,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE audio_cost_usd END) AS audio_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE image_cost_usd END) AS image_cost_usd,
           sum(CASE WHEN price_basis = 'provisioned' THEN 0 ELSE video_cost_usd END) AS video_cost_usd
    FROM calls
    GROUP BY ALL
)
SELECT * FROM final
