-- What providers billed, per UTC day, provider, model and the staging table it was read from.
--
-- Where the figures come from (line by line in core.billed_lines):
-- * stg.openai_costs (OpenAI Costs API): day = the bucket's UTC date; provider 'openai';
--   billed_usd = amount_usd. The Costs API has no model field: the model is read from line_item
--   when it has the form '<model>, <token kind>' and the token kind names input or output
--   ('o3, input', 'o3-2025-04-16, cached input', 'gpt-4.1-mini-2025-04-14, output'), as
--   core.model_key(<model>) (lower case, no provider/ prefix, no date suffix: 'o3'). Other line
--   items (tools, fine-tuning without a token kind, ungrouped exports) get model NULL.
-- * stg.anthropic_costs (Anthropic cost_report): day = the bucket's UTC date; provider
--   'anthropic'; billed_usd = amount_usd (the report's cents / 100, exact); model =
--   core.model_key(model), NULL for web search, code execution and reports not grouped by
--   description.
-- * stg.focus_costs (FOCUS exports): day = ChargePeriodStart's date; provider = ProviderName
--   (else InvoiceIssuerName, PublisherName, 'unknown') in lower case, 'OpenAI...' and
--   'Anthropic...' mapped to 'openai' / 'anthropic'; billed_usd = BilledCost in USD; model =
--   core.model_key of the SkuId without a trailing token kind ('o3-2025-04-16-input' -> 'o3'),
--   NULL for SKUs that name no token kind (cloud services: ServiceName says what they are).
-- is_counted: false for FOCUS lines of a (day, provider) that the provider's own cost API also
-- bills (the same charges twice); marts.daily_spend and marts.bill_reconciliation add up counted
-- rows only. effective_usd and list_usd are FOCUS's EffectiveCost / ListCost (NULL for API lines).
-- @kind: full
-- @grain: one row per day x provider x model x source_table (model NULL: billed lines that name no
--   model, e.g. web search, code execution, cloud services)
WITH lines AS (
    SELECT * FROM core.billed_lines
),
final AS (
    SELECT day, provider, model, source_table,
           sum(billed_usd) AS billed_usd,
           sum(effective_cost_usd) AS effective_usd,
           sum(list_cost_usd) AS list_usd,
           count(*) AS lines,
           bool_and(counted) AS is_counted
    FROM lines
    GROUP BY day, provider, model, source_table
)
SELECT * FROM final
