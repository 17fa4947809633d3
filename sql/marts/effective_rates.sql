-- What the cloud invoice really charges per model and month (issue 25 item 3): the usage and
-- commitment lines at the cloud's list price (list_usd: line_item_unblended_cost,
-- CostInBillingCurrency, cost: gross of credits and discounts), then what is left after the
-- invoice's credits (AWS Credit lines, GCP credits inside a line: promotions, free trial,
-- committed-use discounts), discounts (EdpDiscount, PrivateRateDiscount, BundledDiscount,
-- SavingsPlanNegation, ...) and refunds of the same provider, model and month (net_usd; tax is
-- not a price and is left out). effective_discount = 1 - net_usd / list_usd (0.10 = 10 % below
-- list). Lines of credits or discounts whose SKU names no model are in the model NULL row.
-- net_usd_per_mtok: net_usd over the month's invoice tokens (USD per 1M tokens; NULL without
-- tokens), the rate a forecast at the invoice's price would use.
-- account_adjust_usd: the model's share of the month's credits, discounts and refunds that name no
-- model (an EDP discount or a promotional credit on the whole account: the model NULL row's
-- net_usd - list_usd), by the model's share of the provider-month's list_usd (NULL on the model NULL
-- row). net_to_list = (net_usd + account_adjust_usd) / list_usd, rounded to 10 decimals: what one
-- list-price dollar of this model really cost that month. The break-even and forecast marts
-- (marts.self_host_breakeven, marts.spend_forecast, ...) multiply the calls' list cost by it
-- (docs/economics.md 12.12).
-- @kind: full
-- @grain: one row per provider x model x month (first day of the UTC month of the usage)
WITH lines AS (
    SELECT provider, model, CAST(date_trunc('month', day) AS DATE) AS month, charge_kind, amount_usd, tokens
    FROM core.cloud_bill_lines
    WHERE in_amortized
),
final AS (
    SELECT provider, model, month,
           core.usd6(coalesce(sum(amount_usd) FILTER (WHERE charge_kind IN ('usage', 'commitment')), 0)) AS list_usd,
           core.usd6(coalesce(sum(amount_usd) FILTER (WHERE charge_kind = 'credit'), 0)) AS credits_usd,
           core.usd6(coalesce(sum(amount_usd) FILTER (WHERE charge_kind IN ('discount', 'refund')), 0)) AS discounts_usd,
           core.usd6(coalesce(sum(amount_usd) FILTER (WHERE charge_kind IN ('usage', 'commitment', 'credit', 'discount',
                                                                             'refund')), 0)) AS net_usd,
           sum(tokens) FILTER (WHERE charge_kind = 'usage') AS tokens
    FROM lines
    GROUP BY ALL
),
provider_months AS (
    SELECT provider, month, sum(list_usd) AS provider_list_usd,
           coalesce(sum(net_usd - list_usd) FILTER (WHERE model IS NULL), 0) AS unassigned_usd
    FROM final
    GROUP BY ALL
),
shared AS (
    SELECT f.*,
           CASE WHEN f.model IS NOT NULL THEN
               CASE WHEN p.provider_list_usd <> 0
                    THEN core.usd6(p.unassigned_usd * f.list_usd / p.provider_list_usd)
                    ELSE CAST(0 AS DECIMAL(18,6)) END
           END AS account_adjust_usd
    FROM final f JOIN provider_months p USING (provider, month)
)
SELECT provider, model, month, list_usd, credits_usd, discounts_usd, net_usd,
       CASE WHEN list_usd <> 0 THEN 1 - CAST(net_usd AS DOUBLE) / CAST(list_usd AS DOUBLE) END AS effective_discount,
       tokens,
       CASE WHEN tokens > 0 THEN CAST(net_usd * 1000000 / tokens AS DECIMAL(18,6)) END AS net_usd_per_mtok,
       account_adjust_usd,
       CASE WHEN model IS NOT NULL AND list_usd > 0
            THEN CAST(round((net_usd + account_adjust_usd) / list_usd, 10) AS DECIMAL(18,10)) END AS net_to_list,
       (SELECT build_id FROM ops.settings) AS build_id
FROM shared
