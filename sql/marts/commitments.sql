-- Provisioned throughput (issue 25 item 5): what is paid for it per provider x model x month, and
-- how much of it the provisioned calls used. Month = the first day of the UTC month. Sources:
-- * source 'invoice': the provisioned lines of the cloud invoices (core.cloud_bill_lines, bucket
--   'provisioned': Bedrock '...-ProvisionedThroughput-<model>-ModelUnits', Azure PTU meters,
--   Vertex AI '... Provisioned Throughput'; charge_kind usage or commitment, gross of credits):
--   paid_usd = their amount; unit_hours = their quantity where the unit is hours ('ModelUnit-Hrs',
--   '1 Hour', 'hour'; a unit such as '10 Hours' multiplies), else NULL; hours_billed = 24 x the
--   days with an hourly (usage) line. An Azure PTU meter names no model: those rows are model NULL.
-- * source 'catalog_offer': each row of catalog/commitments.csv (the newest file), priced
--   units x usd_per_unit_hour x the hours of the month within [start, end) (hours_billed, to the
--   micro-hour); unit_hours = units x hours_billed.
-- usd_per_month: the commitment's cost for a whole month of hours_per_month hours (ops.settings):
-- units x usd_per_unit_hour x hours_per_month for an offer; for an invoice month the hourly (usage)
-- lines' paid x hours_per_month / hours_billed (their daily rate extended to the whole month) plus
-- the purchase and fee lines (charge_kind 'commitment': Azure Purchase, AWS RIFee) as billed (an
-- upfront purchase is not spread over its term).
-- used_on_demand_usd: what the provisioned calls of the month (marts.provisioned_usage: billing =
-- 'provisioned') would have cost on demand, same provider and model family (core.cloud_model_key);
-- a commitment with model NULL takes the provider's provisioned calls of the month whose model
-- has no commitment row of its own in that source. utilisation = used_on_demand_usd / paid_usd
-- (a ratio, DOUBLE): 1 = the calls would have cost exactly what the commitment cost on demand;
-- below 1 the commitment cost more than paying per token; NULL when paid_usd is 0.
-- model_on_demand_usd: all API calls of the provider and model family in the month at on-demand
-- rates (provisioned or not): what an offer would have to carry.
-- @kind: full
-- @grain: one row per provider x model x month x source ('invoice', 'catalog_offer'); model NULL:
--   invoice lines that name no model (Azure PTU)
WITH invoice_lines AS (
    SELECT provider, model, CAST(date_trunc('month', day) AS DATE) AS month, day, amount_usd,
           charge_kind = 'commitment' AS is_fee,
           CASE WHEN regexp_matches(lower(coalesce(unit, '')), 'hrs?|hours?')
                THEN quantity * coalesce(CAST(nullif(regexp_extract(unit, '^ *([0-9]+) ', 1), '') AS DECIMAL(18,0)), 1)
           END AS unit_hours
    FROM core.cloud_bill_lines
    WHERE bucket = 'provisioned' AND charge_kind IN ('usage', 'commitment') AND NOT is_line_credit AND in_amortized
),
invoice AS (
    SELECT provider, model, month, 'invoice' AS source,
           CAST(NULL AS DECIMAL(18,6)) AS units, CAST(NULL AS DECIMAL(18,6)) AS usd_per_unit_hour,
           CAST(NULL AS INTEGER) AS commit_months,
           sum(amount_usd) AS paid_usd, sum(unit_hours) AS unit_hours,
           sum(CASE WHEN is_fee THEN amount_usd END) AS fee_usd,
           CAST(24 * count(DISTINCT CASE WHEN NOT is_fee THEN day END) AS DECIMAL(18,6)) AS hours_billed,
           count(*) AS lines
    FROM invoice_lines
    GROUP BY ALL
),
offers AS (
    SELECT core.provider_key(provider) AS provider, core.cloud_model_key(model) AS model,
           units, usd_per_unit_hour, commit_months, commit_start, commit_end
    FROM stg.commitments
    WHERE file_id = (SELECT max(file_id) FROM stg.commitments)
),
offer_months AS (
    -- every month the offer is in force, and the seconds of it within [start, end)
    SELECT o.*, CAST(m AS DATE) AS month,
           epoch_us(least(CAST(m AS TIMESTAMP) + INTERVAL 1 MONTH, o.commit_end))
             - epoch_us(greatest(CAST(m AS TIMESTAMP), o.commit_start)) AS in_force_us
    FROM offers o,
         LATERAL (SELECT unnest(generate_series(date_trunc('month', o.commit_start), o.commit_end - INTERVAL 1 MICROSECOND,
                                                INTERVAL 1 MONTH)) AS m)
),
offer AS (
    SELECT provider, model, month, 'catalog_offer' AS source, units, usd_per_unit_hour, commit_months,
           -- hours to the micro-hour in integer arithmetic (exact on both engines)
           CAST(in_force_us // 3600000000 AS DECIMAL(18,6))
             + CAST((in_force_us % 3600000000) // 3600 AS DECIMAL(18,6)) * CAST(0.000001 AS DECIMAL(18,6)) AS hours
    FROM offer_months
    WHERE in_force_us > 0
),
commitments AS (
    SELECT provider, model, month, source, units, usd_per_unit_hour, commit_months, paid_usd, unit_hours,
           hours_billed, lines, fee_usd
    FROM invoice
    UNION ALL
    SELECT provider, model, month, source, units, usd_per_unit_hour, commit_months,
           units * usd_per_unit_hour * hours, units * hours, hours, CAST(NULL AS BIGINT), CAST(NULL AS DECIMAL(38,10))
    FROM offer
),
calls AS (
    -- only the months some commitment row is for, summed per raw provider and model before the keys
    -- are made; from the calls summed per day (core.daily_call_totals.on_demand_cost_usd: the exact
    -- sum of core.call_costs.on_demand_cost_usd), not from every call of those months
    SELECT provider, model, CAST(date_trunc('month', day) AS DATE) AS month, sum(on_demand_cost_usd) AS on_demand_cost_usd
    FROM core.daily_call_totals
    WHERE serving = 'api'
      AND day >= (SELECT min(month) FROM commitments)
      AND day < (SELECT max(month) FROM commitments) + INTERVAL 1 MONTH
    GROUP BY ALL
),
used AS (
    SELECT provider, model, month, sum(on_demand_usd) AS used_on_demand_usd
    FROM (SELECT core.provider_key(provider) AS provider, core.cloud_model_key(model) AS model,
                 CAST(date_trunc('month', day) AS DATE) AS month, on_demand_usd
          FROM marts.provisioned_usage) p
    GROUP BY ALL
),
model_calls AS (
    SELECT core.provider_key(provider) AS provider, core.cloud_model_key(model) AS model, month,
           sum(on_demand_cost_usd) AS model_on_demand_usd
    FROM calls
    GROUP BY ALL
),
named AS (
    -- the models each source has a commitment row for, per provider and month
    SELECT DISTINCT provider, model, month, source FROM commitments WHERE model IS NOT NULL
),
unnamed_use AS (
    -- a commitment without a model (an Azure PTU pool): the provider's provisioned calls of models
    -- without a commitment of their own in that source
    SELECT c.provider, c.month, c.source, sum(u.used_on_demand_usd) AS used_on_demand_usd
    FROM (SELECT DISTINCT provider, month, source FROM commitments WHERE model IS NULL) c
    JOIN used u ON u.provider = c.provider AND u.month = c.month
    LEFT JOIN named n ON n.provider = u.provider AND n.model = u.model AND n.month = u.month AND n.source = c.source
    WHERE n.model IS NULL
    GROUP BY ALL
),
hours AS (
    SELECT CAST(hours_per_month AS DECIMAL(18,6)) AS hours_per_month FROM ops.settings
),
final AS (
    SELECT c.provider, c.model, c.month, c.source, c.units, c.usd_per_unit_hour, c.commit_months,
           CAST(c.hours_billed AS DECIMAL(18,6)) AS hours_billed,
           CAST(c.unit_hours AS DECIMAL(18,6)) AS unit_hours,
           core.usd6(c.paid_usd) AS paid_usd,
           core.usd6(CASE WHEN c.source = 'catalog_offer' THEN c.units * c.usd_per_unit_hour * h.hours_per_month
                          ELSE coalesce(CASE WHEN c.hours_billed > 0
                                             THEN (c.paid_usd - coalesce(c.fee_usd, 0)) * h.hours_per_month / c.hours_billed END, 0)
                               + coalesce(c.fee_usd, 0) END) AS usd_per_month,
           core.usd6(coalesce(u.used_on_demand_usd, x.used_on_demand_usd, 0)) AS used_on_demand_usd,
           CASE WHEN c.paid_usd <> 0
                THEN CAST(coalesce(u.used_on_demand_usd, x.used_on_demand_usd, 0) AS DOUBLE) / CAST(c.paid_usd AS DOUBLE)
           END AS utilisation,
           core.usd6(mc.model_on_demand_usd) AS model_on_demand_usd,
           c.lines AS invoice_lines
    FROM commitments c
    CROSS JOIN hours h
    LEFT JOIN used u ON c.model IS NOT NULL AND u.provider = c.provider AND u.model = c.model AND u.month = c.month
    LEFT JOIN unnamed_use x ON c.model IS NULL AND x.provider = c.provider AND x.month = c.month AND x.source = c.source
    LEFT JOIN model_calls mc ON mc.provider = c.provider AND mc.model = c.model AND mc.month = c.month
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
