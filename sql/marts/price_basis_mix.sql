-- What each pricing basis cost: the API calls of a day by provider, model and price_basis
-- ('standard', 'batch', 'flex', 'priority', 'above_200k_tokens', 'above_200k_tokens+priority',
-- 'batch+regional_eu', ...; see core.call_costs). cost_at_standard_usd is the same calls at the
-- standard rates (no tier, no long context, no uplift; same fees); premium_usd = cost_usd -
-- cost_at_standard_usd: negative where a tier saved money (flex, batch), positive where a basis
-- cost extra (priority, long context, regional processing). Answers "what did flex save us, what
-- did long context cost extra". Unpriced API calls (no price on any sheet) are left out (see
-- marts.unpriced_usage); calls_priced_as_standard counts calls whose reported tier had no rate
-- on the sheet.
-- @kind: incremental_by_day
-- @grain: day x provider x model x price_basis (API calls only)
WITH api AS (
    SELECT day, provider, model, price_basis,
           count(*) AS calls,
           count(*) FILTER (WHERE tier_priced_as_standard) AS calls_priced_as_standard,
           sum(web_search_requests) AS web_search_requests,
           sum(cost_usd) AS cost_usd,
           sum(cost_at_standard_usd) AS cost_at_standard_usd,
           sum(request_fees_usd) AS request_fees_usd
    FROM core.call_costs
    WHERE serving = 'api' AND NOT unpriced AND core.in_build_days(day)
    GROUP BY ALL
),
final AS (
    SELECT day, provider, model, price_basis, calls, calls_priced_as_standard, web_search_requests,
           core.usd6(cost_usd) AS cost_usd, core.usd6(cost_at_standard_usd) AS cost_at_standard_usd,
           core.usd6(cost_usd - cost_at_standard_usd) AS premium_usd,
           core.usd6(request_fees_usd) AS request_fees_usd
    FROM api
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
