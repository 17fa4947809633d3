-- What providers billed against what thinktax computes from usage x the price in force.
-- billed_usd: counted billed amounts (core.billed_costs; a FOCUS line that repeats a provider's
-- own cost API is not counted twice), NULL when nothing was billed for the day/provider/model.
-- computed_usd: the sum of core.call_costs.cost_usd of API calls (serving = 'api'), NULL when there
-- was no such call (or none had a price: see marts.unpriced_usage).
-- A full outer join, so unbilled usage (billed_usd NULL) and bills without matching usage
-- (computed_usd NULL; model NULL for billed lines that name no model) both show.
-- difference_usd = billed_usd - computed_usd (a missing side counts as 0), on the rounded figures;
-- difference_pct = 100 x difference_usd / billed_usd (percent, DOUBLE), NULL when billed is 0 or NULL.
-- Providers are matched in lower case.
-- Cloud invoices (issue 25): the usage and commitment lines of core.cloud_bill_lines (Bedrock in
-- AWS CUR 2.0, Azure OpenAI / Foundry, Vertex AI / Gemini API), gross of credits and discounts as
-- for the other providers, are billed_usd of the providers 'bedrock', 'azure', 'vertex_ai',
-- 'gemini'; for these providers the model on both sides is the family key core.cloud_model_key
-- (core.model_key without the Bedrock profile, vendor and version: 'claude-sonnet-4-5'), as the
-- invoice names no version. Lines no rule read are model NULL. marts.invoice_reconciliation goes
-- down to the token bucket and says what explains a difference.
-- @kind: incremental_by_day
-- @grain: one row per day x provider x model (UTC day; model = core.model_key on both sides,
--   core.cloud_model_key for the cloud providers).
WITH cloud_providers AS (
    SELECT DISTINCT provider FROM core.cloud_bill_lines
),
billed_lines AS (
    SELECT day, lower(provider) AS provider, core.model_key(model) AS model, billed_usd
    FROM core.billed_costs
    WHERE is_counted AND core.in_build_days(day)
    UNION ALL
    SELECT day, provider, model, amount_usd AS billed_usd
    FROM core.cloud_bill_lines
    WHERE charge_kind IN ('usage', 'commitment') AND NOT is_line_credit AND in_invoice AND core.in_build_days(day)
),
billed AS (
    SELECT day, provider, model, sum(billed_usd) AS billed_usd
    FROM billed_lines
    GROUP BY ALL
),
computed_calls AS (
    -- a join, not an IN (subquery) inside the grouped expression: Spark cannot group by a subquery
    SELECT c.day, lower(c.provider) AS provider,
           CASE WHEN p.provider IS NOT NULL THEN core.cloud_model_key(c.model)
                ELSE core.model_key(c.model) END AS model,
           c.cost_usd
    FROM core.call_costs c
    LEFT JOIN cloud_providers p ON p.provider = lower(c.provider)
    WHERE c.serving = 'api' AND core.in_build_days(c.day)
),
computed AS (
    SELECT day, provider, model, sum(cost_usd) AS computed_usd
    FROM computed_calls
    GROUP BY ALL
),
joined AS (
    SELECT coalesce(b.day, c.day) AS day,
           coalesce(b.provider, c.provider) AS provider,
           coalesce(b.model, c.model) AS model,
           core.usd6(b.billed_usd) AS billed_usd,
           core.usd6(c.computed_usd) AS computed_usd
    FROM billed b
    FULL JOIN computed c
      ON c.day = b.day AND c.provider IS NOT DISTINCT FROM b.provider AND c.model IS NOT DISTINCT FROM b.model
),
final AS (
    SELECT day, provider, model, billed_usd, computed_usd,
           CAST(coalesce(billed_usd, 0) - coalesce(computed_usd, 0) AS DECIMAL(18,6)) AS difference_usd,
           CASE WHEN billed_usd <> 0
                THEN 100 * CAST(coalesce(billed_usd, 0) - coalesce(computed_usd, 0) AS DOUBLE) / CAST(billed_usd AS DOUBLE)
           END AS difference_pct
    FROM joined
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
