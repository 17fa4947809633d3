-- Every cost thinktax knows, as FOCUS 1.2 cost and usage rows (https://focus.finops.org/focus-specification/v1-2/),
-- so a FinOps tool can load thinktax's figures next to its cloud bills.
-- Charges are of three kinds (x_Source, the matching marts.daily_spend source):
-- * 'api_usage': API calls at the list price in force (core.call_costs, serving = 'api', priced
--   calls only), one row per day x provider x model x price version x token type ('input' =
--   uncached input, 'cached-input', 'cache-write' (5-minute), 'cache-write-1h', 'reasoning-output',
--   'output', and 'web-search' for per-query fees; issue 44: 'audio', 'image' and 'video' for the
--   non-text parts -- in Tokens (audio input + cached audio input + audio output; image / video input +
--   output), or in Images / Seconds when those calls report no image / video tokens; the text types
--   count only the text tokens; types with no usage that day are left out) x
--   price basis (core.call_costs.price_basis: standard, batch, flex, long context, regional ...).
--   Computed by thinktax, not invoiced: BilledCost = EffectiveCost = ListCost = ContractedCost = the
--   type's cost at the rate the calls were priced at; ListUnitPrice = ContractedUnitPrice = that
--   cost / PricingQuantity (the rate: USD per 1M tokens, or per search); PricingQuantity in
--   '1000000 Tokens' (the FOCUS unit format's '<quantity> <units>') or 'Searches', ConsumedQuantity
--   in 'Tokens' or 'Searches'; SkuId = price provider/price model/token type (one SKU per model x
--   token type); SkuPriceId = price_version_id|price basis|token type (one per SKU x price version
--   x basis, so exactly one parent SkuId); ResourceId = the model of the calls (thinktax's key).
-- * 'self_hosted': self-hosted node time (core.node_hours_cost, priced hours only), one row per
--   node x day; cost = its node-hours' cost (gpus x USD per GPU-hour x hours active, or the cloud invoice's
--   figure where its compute lines priced the hour); PricingQuantity = ConsumedQuantity
--   in GPU-Hours; ListUnitPrice = the day's USD per GPU-hour when it had one price; ResourceId =
--   node_id; SkuId = the GPU type.
-- * 'api_bill': billed lines (core.billed_lines, counted lines only: a FOCUS line that repeats a
--   provider's cost API is left out), one row per line. FOCUS export lines keep their own columns
--   (amounts converted to USD); EffectiveCost / ListCost / ContractedCost missing from an export
--   take BilledCost. OpenAI / Anthropic cost lines: ChargeDescription = line_item / description,
--   SubAccountId = project_id / workspace_id, SkuId = line_item / token_type (else cost_type),
--   ResourceId = the model read from the line (NULL when it names none); no quantities (the cost
--   APIs report none).
-- Conventions: money DECIMAL(18,6) USD, rounded to the micro-dollar per row (so sums per x_Source
-- match marts.daily_spend to within half a micro-dollar per row); BillingCurrency = PricingCurrency
-- = 'USD' (foreign-currency bills are converted in staging); ProviderName = thinktax's provider key
-- (lower case: 'openai', 'anthropic', the node's cloud); ChargePeriod = the UTC day [start, end);
-- BillingPeriod = the calendar month of the charge for computed rows and API cost lines (an
-- export's own billing period otherwise); BillingAccountId = the provider key when the source has
-- no account id. InvoiceId: the bill line's invoice id where the bill has one, NULL for computed
-- rows (no invoice is issued for them; FOCUS 1.2: MUST be null when the charge is not associated
-- with an invoice). x_Source is a FOCUS custom column (x_ prefix).
-- @kind: full
-- @grain: one row per charge, of three kinds (x_Source, the matching marts.daily_spend source:
--   'api_usage' one per day x model x price version x price basis x token type, 'self_hosted', 'api_bill')
WITH api_days AS (
    -- from core.daily_call_totals (the calls summed per day, price version and basis), not every call
    SELECT day, provider, model, price_version_id, coalesce(price_basis, 'standard') AS price_basis,
           CAST(sum(calls) AS BIGINT) AS calls,
           sum(uncached_input_tokens) AS uncached_input, sum(uncached_input_cost_usd) AS uncached_input_cost,
           sum(cached_input_tokens) AS cached_input, sum(cached_input_cost_usd) AS cached_input_cost,
           sum(cache_write_5m_tokens) AS cache_write, sum(cache_write_5m_cost_usd) AS cache_write_cost,
           sum(cache_write_1h_tokens) AS cache_write_1h, sum(cache_write_1h_cost_usd) AS cache_write_1h_cost,
           sum(thinking_tokens) AS thinking, sum(thinking_cost_usd) AS thinking_cost,
           sum(output_tokens) AS output, sum(output_cost_usd) AS output_cost,
           sum(web_search_requests) AS searches, sum(request_fees_usd) AS fees,
           -- issue 44: the non-text parts (the text types above count only the text tokens)
           sum(audio_input_tokens) AS audio_in, sum(cached_audio_input_tokens) AS cached_audio,
           sum(audio_output_tokens) AS audio_out, sum(image_input_tokens) AS image_in, sum(image_output_tokens) AS image_out,
           sum(video_input_tokens) AS video_in, sum(video_output_tokens) AS video_out,
           sum(output_images) AS images, sum(output_video_seconds) AS video_seconds,
           sum(audio_cost_usd) AS audio_cost, sum(image_cost_usd) AS image_cost, sum(video_cost_usd) AS video_cost
    FROM core.daily_call_totals
    WHERE serving = 'api' AND priced
    GROUP BY ALL
),
api_types AS (
    -- one row per day x price x token type (and per-query fee): a constant table of token types
    -- and CASE, not a lateral VALUES over api_days' columns, so that the same SQL runs on Spark
    SELECT d.day, d.provider, d.model, d.calls, d.price_version_id, d.price_basis,
           tt.token_type,
           -- issue 44: an image / video charge is in tokens when the calls report them, else in images / seconds
           CASE WHEN tt.token_type = 'image' AND d.image_in + d.image_out = 0 THEN 'Images'
                WHEN tt.token_type = 'video' AND d.video_in + d.video_out = 0 THEN 'Seconds' ELSE tt.pricing_unit END AS pricing_unit,
           CASE WHEN tt.token_type = 'image' AND d.image_in + d.image_out = 0 THEN 'Images'
                WHEN tt.token_type = 'video' AND d.video_in + d.video_out = 0 THEN 'Seconds' ELSE tt.consumed_unit END AS consumed_unit,
           CASE tt.token_type WHEN 'input' THEN d.uncached_input - d.audio_in - d.image_in - d.video_in
                WHEN 'cached-input' THEN d.cached_input - d.cached_audio
                WHEN 'cache-write' THEN d.cache_write WHEN 'cache-write-1h' THEN d.cache_write_1h
                WHEN 'reasoning-output' THEN d.thinking WHEN 'output' THEN d.output - d.audio_out - d.image_out - d.video_out
                WHEN 'audio' THEN d.audio_in + d.cached_audio + d.audio_out
                WHEN 'image' THEN CASE WHEN d.image_in + d.image_out > 0 THEN d.image_in + d.image_out ELSE d.images END
                WHEN 'video' THEN CASE WHEN d.video_in + d.video_out > 0 THEN d.video_in + d.video_out ELSE d.video_seconds END
                ELSE d.searches END AS quantity,
           CASE tt.token_type WHEN 'input' THEN d.uncached_input_cost WHEN 'cached-input' THEN d.cached_input_cost
                WHEN 'cache-write' THEN d.cache_write_cost WHEN 'cache-write-1h' THEN d.cache_write_1h_cost
                WHEN 'reasoning-output' THEN d.thinking_cost WHEN 'output' THEN d.output_cost
                WHEN 'audio' THEN d.audio_cost WHEN 'image' THEN d.image_cost WHEN 'video' THEN d.video_cost
                ELSE d.fees END AS cost_usd
    FROM api_days d
    CROSS JOIN (VALUES
        ('input', '1000000 Tokens', 'Tokens'), ('cached-input', '1000000 Tokens', 'Tokens'),
        ('cache-write', '1000000 Tokens', 'Tokens'), ('cache-write-1h', '1000000 Tokens', 'Tokens'),
        ('reasoning-output', '1000000 Tokens', 'Tokens'), ('output', '1000000 Tokens', 'Tokens'),
        ('web-search', 'Searches', 'Searches'),
        ('audio', '1000000 Tokens', 'Tokens'), ('image', '1000000 Tokens', 'Tokens'), ('video', '1000000 Tokens', 'Tokens')
    ) AS tt(token_type, pricing_unit, consumed_unit)
),
api_usage AS (
    -- one row per token type (and per-query fee) with usage that day, at the rate the calls were
    -- priced at: ListUnitPrice = cost / PricingQuantity, one rate per price version x basis x type
    SELECT t.day, t.provider, t.model, t.calls, t.price_version_id, t.price_basis,
           p.provider AS price_provider, p.model AS price_model,
           t.token_type, t.quantity, t.cost_usd, t.pricing_unit, t.consumed_unit,
           CASE WHEN t.pricing_unit = '1000000 Tokens' THEN CAST(t.quantity AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6))
                ELSE CAST(t.quantity AS DECIMAL(38,6)) END AS pricing_quantity
    FROM api_types t
    JOIN core.llm_price_versions p USING (price_version_id)
    -- (a non-text type whose usage has no price at all is no charge: marts.unpriced_usage names it)
    WHERE t.quantity > 0 AND (t.cost_usd IS NOT NULL OR t.token_type NOT IN ('audio', 'image', 'video'))
),
api_usage_rows AS (
    SELECT 'api_usage' AS x_Source,
           core.usd6(cost_usd) AS BilledCost, core.usd6(cost_usd) AS EffectiveCost,
           core.usd6(cost_usd) AS ListCost, core.usd6(cost_usd) AS ContractedCost,
           coalesce(provider, 'unknown') AS BillingAccountId, CAST(NULL AS VARCHAR) AS BillingAccountName,
           CAST(NULL AS VARCHAR) AS SubAccountId, CAST(NULL AS VARCHAR) AS SubAccountName,
           CAST(date_trunc('month', day) AS TIMESTAMP) AS BillingPeriodStart,
           CAST(date_trunc('month', day) + INTERVAL 1 MONTH AS TIMESTAMP) AS BillingPeriodEnd,
           CAST(day AS TIMESTAMP) AS ChargePeriodStart, CAST(day + 1 AS TIMESTAMP) AS ChargePeriodEnd,
           'Usage' AS ChargeCategory, CAST(NULL AS VARCHAR) AS ChargeClass, 'Usage-Based' AS ChargeFrequency,
           'API usage of ' || model || ', ' || token_type || ': ' || quantity || ' ' || lower(consumed_unit) || ' in ' || calls
               || ' calls at the ' || replace(price_basis, '_', ' ') || ' list price in force (computed by thinktax)' AS ChargeDescription,
           'Standard' AS PricingCategory,
           core.usd6(cost_usd / pricing_quantity) AS ListUnitPrice, core.usd6(cost_usd / pricing_quantity) AS ContractedUnitPrice,
           CAST(pricing_quantity AS DECIMAL(38,10)) AS PricingQuantity, pricing_unit AS PricingUnit,
           CAST(quantity AS DECIMAL(38,10)) AS ConsumedQuantity, consumed_unit AS ConsumedUnit,
           provider AS ProviderName, provider AS PublisherName, provider AS InvoiceIssuerName,
           CAST(NULL AS VARCHAR) AS InvoiceId,
           provider || ' API' AS ServiceName, 'AI and Machine Learning' AS ServiceCategory,
           'Generative AI' AS ServiceSubcategory,
           price_provider || '/' || price_model || '/' || token_type AS SkuId,
           price_version_id || '|' || price_basis || '|' || token_type AS SkuPriceId,
           model AS ResourceId, model AS ResourceName, 'Model' AS ResourceType,
           CAST(NULL AS VARCHAR) AS RegionId, CAST(NULL AS VARCHAR) AS RegionName,
           CAST(NULL AS VARCHAR) AS Tags
    FROM api_usage
),
node_days AS (
    SELECT node_id, day, provider, gpu_type, gpus, model,
           sum(cost_micro_usd) AS cost_micro_usd,
           sum(gpu_hours) AS gpu_hours,
           CASE WHEN min(usd_per_gpu_hour) = max(usd_per_gpu_hour) THEN min(usd_per_gpu_hour) END AS usd_per_gpu_hour
    FROM core.node_hours_cost
    WHERE cost_micro_usd IS NOT NULL
    GROUP BY node_id, day, provider, gpu_type, gpus, model
),
self_hosted_rows AS (
    SELECT 'self_hosted' AS x_Source,
           CAST(CAST(cost_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS BilledCost,
           CAST(CAST(cost_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS EffectiveCost,
           CAST(CAST(cost_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ListCost,
           CAST(CAST(cost_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ContractedCost,
           coalesce(provider, 'unknown') AS BillingAccountId, CAST(NULL AS VARCHAR) AS BillingAccountName,
           CAST(NULL AS VARCHAR) AS SubAccountId, CAST(NULL AS VARCHAR) AS SubAccountName,
           CAST(date_trunc('month', day) AS TIMESTAMP) AS BillingPeriodStart,
           CAST(date_trunc('month', day) + INTERVAL 1 MONTH AS TIMESTAMP) AS BillingPeriodEnd,
           CAST(day AS TIMESTAMP) AS ChargePeriodStart, CAST(day + 1 AS TIMESTAMP) AS ChargePeriodEnd,
           'Usage' AS ChargeCategory, CAST(NULL AS VARCHAR) AS ChargeClass, 'Usage-Based' AS ChargeFrequency,
           'Self-hosted node ' || node_id || ': ' || gpus || ' x ' || gpu_type || ' serving ' || coalesce(model, 'unknown model')
               AS ChargeDescription,
           'Standard' AS PricingCategory,
           core.usd6(usd_per_gpu_hour) AS ListUnitPrice, core.usd6(usd_per_gpu_hour) AS ContractedUnitPrice,
           CAST(round(gpu_hours, 6) AS DECIMAL(38,10)) AS PricingQuantity, 'GPU-Hours' AS PricingUnit,
           CAST(round(gpu_hours, 6) AS DECIMAL(38,10)) AS ConsumedQuantity, 'GPU-Hours' AS ConsumedUnit,
           provider AS ProviderName, provider AS PublisherName, provider AS InvoiceIssuerName,
           CAST(NULL AS VARCHAR) AS InvoiceId,
           'GPU compute' AS ServiceName, 'Compute' AS ServiceCategory, 'Virtual Machines' AS ServiceSubcategory,
           gpu_type AS SkuId, CAST(NULL AS VARCHAR) AS SkuPriceId,
           node_id AS ResourceId, node_id AS ResourceName, 'GPU node' AS ResourceType,
           CAST(NULL AS VARCHAR) AS RegionId, CAST(NULL AS VARCHAR) AS RegionName,
           CAST(NULL AS VARCHAR) AS Tags
    FROM node_days
),
bill_rows AS (
    SELECT 'api_bill' AS x_Source,
           core.usd6(billed_usd) AS BilledCost,
           core.usd6(coalesce(effective_cost_usd, billed_usd)) AS EffectiveCost,
           core.usd6(coalesce(list_cost_usd, billed_usd)) AS ListCost,
           core.usd6(coalesce(contracted_cost_usd, billed_usd)) AS ContractedCost,
           coalesce(billing_account_id, provider) AS BillingAccountId, billing_account_name AS BillingAccountName,
           sub_account_id AS SubAccountId, sub_account_name AS SubAccountName,
           coalesce(billing_period_start, CAST(date_trunc('month', day) AS TIMESTAMP)) AS BillingPeriodStart,
           coalesce(billing_period_end, CAST(date_trunc('month', day) + INTERVAL 1 MONTH AS TIMESTAMP)) AS BillingPeriodEnd,
           charge_period_start AS ChargePeriodStart, charge_period_end AS ChargePeriodEnd,
           coalesce(charge_category, 'Usage') AS ChargeCategory, charge_class AS ChargeClass,
           CASE WHEN source_table = 'stg.focus_costs' THEN charge_frequency ELSE 'Usage-Based' END AS ChargeFrequency,
           description AS ChargeDescription,
           CASE WHEN source_table = 'stg.focus_costs' THEN pricing_category ELSE 'Standard' END AS PricingCategory,
           core.usd6(list_unit_price_usd) AS ListUnitPrice, core.usd6(contracted_unit_price_usd) AS ContractedUnitPrice,
           CAST(pricing_quantity AS DECIMAL(38,10)) AS PricingQuantity, pricing_unit AS PricingUnit,
           CAST(consumed_quantity AS DECIMAL(38,10)) AS ConsumedQuantity, consumed_unit AS ConsumedUnit,
           provider AS ProviderName,
           coalesce(publisher_name, provider) AS PublisherName,
           coalesce(invoice_issuer_name, provider) AS InvoiceIssuerName,
           invoice_id AS InvoiceId,
           CASE source_table WHEN 'stg.openai_costs' THEN 'OpenAI API'
                             WHEN 'stg.anthropic_costs' THEN 'Claude API'
                             ELSE service_name END AS ServiceName,
           CASE WHEN source_table = 'stg.focus_costs' THEN service_category ELSE 'AI and Machine Learning' END AS ServiceCategory,
           CASE WHEN source_table = 'stg.focus_costs' THEN service_subcategory ELSE 'Generative AI' END AS ServiceSubcategory,
           sku_id AS SkuId, sku_price_id AS SkuPriceId,
           CASE WHEN source_table = 'stg.focus_costs' THEN resource_id ELSE model END AS ResourceId,
           CASE WHEN source_table = 'stg.focus_costs' THEN resource_name ELSE model END AS ResourceName,
           CASE WHEN source_table = 'stg.focus_costs' THEN resource_type WHEN model IS NOT NULL THEN 'Model' END AS ResourceType,
           region_id AS RegionId, region_name AS RegionName,
           tags_json AS Tags
    FROM core.billed_lines
    WHERE counted
),
final AS (
    SELECT * FROM api_usage_rows
    UNION ALL BY NAME SELECT * FROM self_hosted_rows
    UNION ALL BY NAME SELECT * FROM bill_rows
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, 'USD' AS BillingCurrency, 'USD' AS PricingCurrency, (SELECT build_id FROM ops.settings) AS build_id
FROM final
