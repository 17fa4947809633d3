-- Cloud invoice AI lines that no rule of sources/bills_cloud.py read (issue 25): their money stays
-- in every total (marts.invoice_reconciliation bucket 'unattributed', marts.bill_reconciliation model
-- NULL) and is listed here with the reason, never dropped and never guessed to a model.
-- @kind: full
-- @grain: one row per unattributed invoice line (file_id x line)
WITH final AS (
    SELECT l.day, l.cloud, l.provider, l.service, l.sku, l.charge_type, l.quantity, l.unit,
           core.usd6(l.amount_usd) AS amount_usd, l.unattributed_reason, f.file, l.line
    FROM core.cloud_bill_lines l
    JOIN ops.ingested_files f USING (file_id)
    WHERE l.rule = 'unattributed' AND NOT l.is_line_credit AND l.in_invoice
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
