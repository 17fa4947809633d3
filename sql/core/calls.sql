-- Every model call with its token buckets, tier, model and price version: core.call_costs without
-- the cost columns (kept as a view so that queries written against core.calls keep working; one
-- per-call table is written, not two).
-- grain: one row per call (request_id)
-- reads: core.call_costs
-- materialized: view
SELECT * EXCLUDE (cost_usd, thinking_cost_usd, allocated_micro_usd, unpriced) FROM core.call_costs
