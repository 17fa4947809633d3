-- API calls paid by a reservation, not per token (issue 24): Vertex AI / Gemini calls whose
-- usageMetadata.trafficType is PROVISIONED_THROUGHPUT, and calls to an endpoint that
-- catalog/endpoints.csv marks billing = provisioned (Bedrock provisioned models, Azure PTU
-- deployments). They cost 0 per token in core.call_costs (price_basis 'provisioned') and are
-- never in marts.unpriced_usage; here are their volumes by token bucket and what the same calls
-- would have cost on demand at the price sheet in force (on_demand_usd, NULL where no sheet
-- prices the model: on_demand_unpriced_calls counts those calls).
-- @kind: incremental_by_day
-- @grain: day x provider x model (provisioned API calls only)
WITH calls AS (
    SELECT day, provider, model,
           count(*) AS calls,
           sum(uncached_input_tokens) AS uncached_input_tokens,
           sum(cached_input_tokens) AS cached_input_tokens,
           sum(cache_write_tokens) AS cache_write_tokens,
           sum(thinking_tokens) AS thinking_tokens,
           sum(output_tokens) AS output_tokens,
           sum(on_demand_cost_usd) AS on_demand_usd,
           count(*) FILTER (WHERE on_demand_cost_usd IS NULL) AS on_demand_unpriced_calls
    FROM core.call_costs
    WHERE serving = 'api' AND billing = 'provisioned' AND core.in_build_days(day)
    GROUP BY ALL
),
final AS (
    SELECT day, provider, model, calls, uncached_input_tokens, cached_input_tokens, cache_write_tokens,
           thinking_tokens, output_tokens, core.usd6(on_demand_usd) AS on_demand_usd, on_demand_unpriced_calls
    FROM calls
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
