-- The cloud invoice's unexplained difference per provider and month (issue 25): the sum over
-- marts.invoice_reconciliation of unexplained_usd, against the month's invoice usage (usage and
-- commitment lines, gross of credits and discounts). The invoice_mismatch alert
-- ([alert] invoice_mismatch_usd and invoice_mismatch_pct, services/alert.py) fires once per
-- provider-month when abs(unexplained_usd) exceeds both.
-- unexplained_pct = 100 x unexplained_usd / invoice_usage_usd (DOUBLE), NULL when nothing was billed.
-- @kind: full
-- @grain: one row per provider x month (first day of the UTC month of the usage)
WITH rows_ AS (
    SELECT provider, CAST(date_trunc('month', day) AS DATE) AS month, bucket, invoice_usd, logs_usd,
           difference_usd, explained_usd, unexplained_usd
    FROM marts.invoice_reconciliation
),
final AS (
    SELECT provider, month,
           CAST(sum(invoice_usd) FILTER (WHERE bucket NOT IN ('credit', 'discount', 'tax', 'refund', 'rounding', 'fee', 'other'))
                AS DECIMAL(18,6)) AS invoice_usage_usd,
           CAST(sum(invoice_usd) AS DECIMAL(18,6)) AS invoice_net_usd,
           CAST(sum(logs_usd) AS DECIMAL(18,6)) AS logs_usd,
           CAST(sum(difference_usd) AS DECIMAL(18,6)) AS difference_usd,
           CAST(sum(explained_usd) AS DECIMAL(18,6)) AS explained_usd,
           CAST(sum(unexplained_usd) AS DECIMAL(18,6)) AS unexplained_usd
    FROM rows_
    GROUP BY ALL
)
SELECT final.*,
       CASE WHEN invoice_usage_usd <> 0 THEN 100 * CAST(unexplained_usd AS DOUBLE) / CAST(invoice_usage_usd AS DOUBLE) END
           AS unexplained_pct,
       (SELECT build_id FROM ops.settings) AS build_id
FROM final
