-- Azure Cost Management exports come as two datasets (issue 25 item 3): "actual" cost (the invoice:
-- a reservation or savings plan is a Purchase line in the month it is bought, the usage it covers
-- costs 0) and "amortized" cost (no Purchase line; the usage it covers carries its prorated cost and
-- the unused part is an UnusedReservation / UnusedSavingsPlan line). A user may land both. The lines
-- whose amount depends on the dataset carry it here, and it is part of their natural key, so the two
-- datasets' versions of a line are not duplicates of each other; every other line is the same in
-- both and is deduplicated as before. NULL in rows loaded before this migration.
ALTER TABLE stg.cloud_bill_lines ADD COLUMN IF NOT EXISTS cost_basis VARCHAR;  -- 'actual' or 'amortized': the Azure dataset of a line whose amount depends on it (ChargeType Purchase / UnusedReservation / UnusedSavingsPlan, PricingModel Reservation / SavingsPlan); NULL for every other line (the same in both datasets)
-- the rows a re-issued export replaced keep it too (warehouse/ingest.py moves them by column name)
ALTER TABLE ops.replaced_cloud_bill_lines ADD COLUMN IF NOT EXISTS cost_basis VARCHAR;  -- as stg.cloud_bill_lines.cost_basis
