-- Every billed line thinktax has read (OpenAI Costs API, Anthropic cost_report, FOCUS exports),
-- normalised to one shape: the UTC day it bills, provider and model keys, the amount in USD, and
-- the FOCUS attributes it carries. core.billed_costs sums these lines; marts.focus_costs lists them.
--
-- Mappings (the same as in the header of sql/core/billed_costs.sql):
-- * stg.openai_costs: day = bucket_start's date (the Costs API buckets are UTC days);
--   provider 'openai'; billed_usd = amount_usd. model: a line_item of the form
--   '<model>, <token kind>' whose token kind names input or output ('o3, input',
--   'o3-2025-04-16, cached input', 'gpt-4.1-mini, output') gives core.model_key(<model>); any
--   other line item ('web search tool calls', a line_item NULL because the export was not grouped
--   by line_item) has model NULL. sub_account_id = project_id, description = line_item.
-- * stg.anthropic_costs: day = bucket_start's date; provider 'anthropic'; billed_usd = amount_usd
--   (cents / 100, exact); model = core.model_key(model) (NULL for web search, code execution, and
--   when the report was not grouped by description); sub_account_id = workspace_id,
--   sku_id = token_type, else cost_type.
-- * stg.focus_costs: day = ChargePeriodStart's date (a line covering several days is billed on its
--   first day); provider = ProviderName (else InvoiceIssuerName, else PublisherName, else
--   'unknown') in lower case, with names starting 'OpenAI' / 'Anthropic' (e.g. 'OpenAI, Inc.')
--   mapped to 'openai' / 'anthropic'; billed_usd = BilledCost in USD. model: a SkuId of the form
--   '<model>-<token kind>' (token kind input, output, cached-input, cache-read, cache-write,
--   cache-creation or reasoning, optionally followed by '-tokens'; '-', '_', ':' or ' ' as
--   separator) gives core.model_key(<model>); other SKUs (cloud services) have model NULL.
--   AI lines of the clouds' own FOCUS exports (AWS FOCUS 1.2, Azure and Google Cloud FOCUS
--   exports) get the provider of their service, as core.provider_key names it: ServiceName
--   naming Bedrock ('Amazon Bedrock', 'Amazon Bedrock Service', '... (Amazon Bedrock Edition)')
--   -> 'bedrock'; naming Vertex AI -> 'vertex_ai'; a Microsoft / Azure line whose ServiceName
--   names OpenAI or Foundry (or Cognitive Services, when the meter names a model) -> 'azure'.
--   Their model, when their SKU id names none, is the first model name in SkuMeter, else in
--   ChargeDescription, else in ServiceName (Bedrock Marketplace: 'Claude 3.7 Sonnet (Amazon
--   Bedrock Edition)') (Claude / Gemini / GPT names with their version and size words, and
--   o1..o9 with -mini / -pro: 'Claude 3.5 Sonnet', 'gpt 4o 0513 Inp glbl Tokens', 'o3 0416 Inp
--   glbl', 'Gemini 2.5 Pro Text Input - Predictions'), in lower case with '-' for spaces (and
--   for the dots of Claude versions, as Anthropic writes them): claude-3-5-sonnet, gpt-4o, o3,
--   gemini-2.5-pro; a line naming no model has model NULL, its money still billed.
--   ServiceName, ServiceCategory and the other FOCUS columns are passed through.
-- counted: a provider's own cost API and a FOCUS export may bill the same usage. A FOCUS line is
-- counted only when no stg.openai_costs (for 'openai') or stg.anthropic_costs (for 'anthropic')
-- line bills the same provider on the same day; API lines are always counted. Sums of spend
-- (marts.daily_spend 'api_bill', marts.bill_reconciliation, marts.focus_costs) use counted lines.
-- @kind: full
-- @grain: one row per billed line (source_table x file_id x line)
WITH openai AS (
    SELECT 'stg.openai_costs' AS source_table, file_id, line,
           CAST(bucket_start AS DATE) AS day, bucket_start AS charge_period_start, bucket_end AS charge_period_end,
           'openai' AS provider,
           CASE WHEN regexp_matches(line_item, '^[^,]+,[^,]*\b(input|output)\b[^,]*$', 'i')
                THEN core.model_key(regexp_extract(line_item, '^([^,]+),', 1)) END AS model,
           amount_usd AS billed_usd,
           line_item AS description, line_item AS sku_id, project_id AS sub_account_id,
           currency AS original_currency
    FROM stg.openai_costs
),
anthropic AS (
    SELECT 'stg.anthropic_costs' AS source_table, file_id, line,
           CAST(bucket_start AS DATE) AS day, bucket_start AS charge_period_start, bucket_end AS charge_period_end,
           'anthropic' AS provider,
           core.model_key(model) AS model,
           amount_usd AS billed_usd,
           description, coalesce(token_type, cost_type) AS sku_id, workspace_id AS sub_account_id,
           service_tier, context_window, inference_geo AS region_id,
           currency AS original_currency
    FROM stg.anthropic_costs
),
api_days AS (
    SELECT DISTINCT day, provider FROM openai
    UNION
    SELECT DISTINCT day, provider FROM anthropic
),
focus_raw AS (
    SELECT f.*,
           coalesce(nullif(trim(f.provider_name), ''), nullif(trim(f.invoice_issuer_name), ''),
                    nullif(trim(f.publisher_name), '')) AS named_provider,
           regexp_extract(f.sku_id,
               '^(.+?)[-_: ]+(cached[-_ ]?input|cache[-_ ]?(read|write|creation)|input|output|reasoning)([-_ ]?tokens?)?$',
               1, 'i') AS sku_model
    FROM stg.focus_costs f
),
focus_cloud AS (
    -- the AI lines of the clouds' FOCUS exports: the provider of the service, the model named
    SELECT *,
           CASE WHEN service_name ILIKE '%bedrock%' THEN 'bedrock'
                WHEN service_name ILIKE '%vertex ai%' THEN 'vertex_ai'
                WHEN (named_provider ILIKE 'microsoft%' OR named_provider ILIKE 'azure%')
                     AND (service_name ILIKE '%openai%' OR service_name ILIKE '%foundry%'
                          OR (service_name ILIKE '%cognitive services%' AND meter_model <> ''))
                THEN 'azure' END AS cloud_ai_provider
    FROM (
        SELECT *,
               regexp_extract(coalesce(sku_meter, ''), '(\b(claude|gemini|gpt)[ -]?[0-9a-z.]*([ -](sonnet|opus|haiku|pro|flash|mini|nano|lite))*([ -]([0-9][.][0-9]+|[0-9]))?|\bo[1-9]([ -](mini|pro))?)\b', 1, 'i') AS meter_model,
               regexp_extract(coalesce(charge_description, ''), '(\b(claude|gemini|gpt)[ -]?[0-9a-z.]*([ -](sonnet|opus|haiku|pro|flash|mini|nano|lite))*([ -]([0-9][.][0-9]+|[0-9]))?|\bo[1-9]([ -](mini|pro))?)\b', 1, 'i') AS description_model,
               regexp_extract(coalesce(service_name, ''), '(\b(claude|gemini|gpt)[ -]?[0-9a-z.]*([ -](sonnet|opus|haiku|pro|flash|mini|nano|lite))*([ -]([0-9][.][0-9]+|[0-9]))?|\bo[1-9]([ -](mini|pro))?)\b', 1, 'i') AS service_model
        FROM focus_raw
    ) named
),
focus AS (
    SELECT 'stg.focus_costs' AS source_table, file_id, line,
           CAST(charge_period_start AS DATE) AS day, charge_period_start, charge_period_end,
           CASE WHEN cloud_ai_provider IS NOT NULL THEN cloud_ai_provider
                WHEN lower(named_provider) LIKE 'openai%' THEN 'openai'
                WHEN lower(named_provider) LIKE 'anthropic%' THEN 'anthropic'
                ELSE coalesce(lower(named_provider), 'unknown') END AS provider,
           CASE WHEN sku_model <> '' THEN core.model_key(sku_model)
                WHEN cloud_ai_provider IS NOT NULL AND coalesce(nullif(meter_model, ''), nullif(description_model, ''), service_model) <> ''
                THEN core.model_key(CASE WHEN lower(coalesce(nullif(meter_model, ''), nullif(description_model, ''), service_model)) LIKE 'claude%'
                                         THEN replace(replace(lower(coalesce(nullif(meter_model, ''), nullif(description_model, ''), service_model)), ' ', '-'), '.', '-')
                                         ELSE replace(lower(coalesce(nullif(meter_model, ''), nullif(description_model, ''), service_model)), ' ', '-') END)
           END AS model,
           billed_cost_usd AS billed_usd,
           charge_description AS description,
           billing_currency AS original_currency,
           * EXCLUDE (file_id, line, charge_period_start, charge_period_end, billed_cost_usd, charge_description,
                      billing_currency, named_provider, sku_model, fx_usd_per_unit, key_occurrence,
                      meter_model, description_model, service_model, cloud_ai_provider)
    FROM focus_cloud
),
lines AS (
    SELECT *, true AS counted FROM openai
    UNION ALL BY NAME
    SELECT *, true AS counted FROM anthropic
    UNION ALL BY NAME
    SELECT f.*, a.day IS NULL AS counted
    FROM focus f
    LEFT JOIN api_days a ON a.day = f.day AND a.provider = f.provider
),
final AS (
    SELECT source_table, file_id, line, day, provider, model, billed_usd, counted,
           * EXCLUDE (source_table, file_id, line, day, provider, model, billed_usd, counted)
    FROM lines
)
SELECT * FROM final
