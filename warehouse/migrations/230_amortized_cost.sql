-- Issue 25 items 3 and 4: a GPU node bought as a reserved instance or under a savings plan. Its hours
-- are DiscountedUsage / SavingsPlanCoveredUsage lines of the CUR, whose unblended cost is 0 or the
-- on-demand cost; the export's amortized cost of the hour (reservation_effective_cost,
-- savings_plan_savings_plan_effective_cost) is what the hour cost. NULL on every other line and in
-- rows loaded before this migration.
ALTER TABLE stg.cloud_bill_lines ADD COLUMN IF NOT EXISTS amortized_cost_usd DECIMAL(38,10);  -- AWS: the amortized cost of an hour a reserved instance or savings plan covers (reservation_effective_cost on DiscountedUsage lines, savings_plan_savings_plan_effective_cost on SavingsPlanCoveredUsage lines), in USD; NULL on every other line
-- the rows a re-issued export replaced keep it too (warehouse/ingest.py moves them by column name)
ALTER TABLE ops.replaced_cloud_bill_lines ADD COLUMN IF NOT EXISTS amortized_cost_usd DECIMAL(38,10);  -- as stg.cloud_bill_lines.amortized_cost_usd
