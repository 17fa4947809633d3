-- The AI lines of cloud invoices (issue 25): AWS CUR 2.0 Bedrock lines, Azure OpenAI / Foundry
-- meters, Vertex AI / Gemini API SKUs (stg.cloud_bill_lines, read by sources/bills_cloud.py), with
-- the UTC day they bill (usage_start's date; a line covering several days is billed on its first
-- day) and the bucket the reconciliation groups them in:
-- * usage and commitment lines (charge_kind 'usage' / 'commitment') that a rule read: their token
--   bucket (input, output, cache_read, cache_write, cache_write_1h, cache_storage, provisioned);
-- * usage lines no rule read: 'unattributed' (model NULL; unattributed_reason says why);
-- * credits, discounts, tax, refunds, rounding, fees: the charge kind ('credit', 'discount', ...),
--   with the model the SKU names when it names one;
-- * GCP credits carried inside a usage line (credits_usd) appear as their own 'credit' row
--   (is_line_credit), so that the usage row stays gross of them as on the other invoices.
-- model is the family key (core.cloud_model_key, as the rules spell it: 'claude-sonnet-4-5').
-- team: the line's [cloud] team_tag tag / label, else the team catalog/cloud_principals.csv (the
-- newest file) gives its principal (line_item_iam_principal), else NULL.
-- Azure's two datasets (issue 25 item 3; cost_basis, migration 190): a line whose amount depends on
-- the dataset (Purchase, UnusedReservation / UnusedSavingsPlan, PricingModel Reservation /
-- SavingsPlan) says which it came from; every other line is the same in both (NULL). When a user
-- lands both exports of a billing month:
-- * in_invoice: the actual-cost lines (what the invoice bills: the Purchase in the month it is
--   bought, covered usage at 0): read by the reconciliations (marts.bill_reconciliation,
--   marts.invoice_reconciliation, marts.unattributed_invoice_lines);
-- * in_amortized: the amortized-cost lines (the benefit spread over the months it covers, unused
--   hours included): read by marts.effective_rates and marts.commitments, which ask what a month
--   really cost.
-- A month with one dataset only has both flags true on all its lines, as before the column.
-- commitment_id (provisioned usage and commitment lines only; FOCUS 1.3 ContractCommitmentId in
-- `thinktax export focus`): the reservation the line belongs to (Azure ReservationId), else the
-- resource it bills (the Bedrock provisioned model's ARN, the Azure OpenAI account of a PTU
-- deployment, the GCP resource), else one made by thinktax for the provider, account and model:
-- 'thinktax:<provider>/<account>/<model or pool>/provisioned-throughput'.
-- The compute lines kept to price self-hosted nodes (bucket 'instance_hours': EC2, Azure VM, Compute
-- Engine; core.node_hours_cost reads them) are not AI lines and are not here.
-- @kind: full
-- @grain: one row per invoice line (file_id x line), plus one per GCP line with credits
WITH principals AS (
    SELECT principal, team
    FROM stg.cloud_principals
    WHERE file_id = (SELECT max(file_id) FROM stg.cloud_principals)
    QUALIFY row_number() OVER (PARTITION BY principal ORDER BY line DESC) = 1
),
lines AS (
    SELECT l.* REPLACE (coalesce(l.team, p.team) AS team)
    FROM stg.cloud_bill_lines l
    LEFT JOIN principals p ON p.principal = l.principal
    WHERE l.bucket IS DISTINCT FROM 'instance_hours'
),
shaped AS (
    SELECT file_id, line, false AS is_line_credit, cloud, provider, CAST(usage_start AS DATE) AS day,
           billing_period, invoice_id, account_id, usage_start, usage_end, charge_type, charge_kind,
           service, sku, region, resource_id, principal, team, model, tier, deployment_type, long_context,
           rule, unattributed_reason, unit, quantity, tokens, cost_usd AS amount_usd, net_cost_usd,
           CASE WHEN charge_kind IN ('usage', 'commitment') THEN coalesce(bucket, 'unattributed')
                ELSE charge_kind END AS bucket,
           cost_basis, reservation_id,
           CASE WHEN bucket = 'provisioned' AND charge_kind IN ('usage', 'commitment')
                THEN coalesce(reservation_id, resource_id,
                              'thinktax:' || provider || '/' || coalesce(account_id, '') || '/'
                                || coalesce(model, 'pool') || '/provisioned-throughput') END AS commitment_id
    FROM lines
    UNION ALL
    SELECT file_id, line, true, cloud, provider, CAST(usage_start AS DATE), billing_period, invoice_id, account_id,
           usage_start, usage_end, 'credits', 'credit', service, sku, region, resource_id, principal, team, model,
           tier, deployment_type, long_context, rule, unattributed_reason, NULL, NULL, NULL, credits_usd, NULL, 'credit',
           cost_basis, reservation_id, NULL
    FROM lines
    WHERE credits_usd IS NOT NULL AND credits_usd <> 0
),
datasets AS (
    SELECT cloud, billing_period, bool_or(cost_basis = 'actual') AS has_actual,
           bool_or(cost_basis = 'amortized') AS has_amortized
    FROM shaped GROUP BY ALL
),
final AS (
    SELECT s.*,
           s.cost_basis IS NULL OR s.cost_basis = 'actual' OR NOT d.has_actual AS in_invoice,
           s.cost_basis IS NULL OR s.cost_basis = 'amortized' OR NOT d.has_amortized AS in_amortized
    FROM shaped s JOIN datasets d ON d.cloud = s.cloud AND d.billing_period IS NOT DISTINCT FROM s.billing_period
)
SELECT * FROM final
