-- Every model call with its token buckets, tier, model and price version: core.call_costs under
-- its earlier name (a view, so that queries written against core.calls keep working; one per-call
-- table is written, not two). api_cost_usd / api_thinking_cost_usd: the API list-price cost (NULL
-- for self-hosted calls and unpriced API calls).
-- @kind: view
-- @grain: one row per call (request_id)
SELECT * EXCLUDE (cost_usd, thinking_cost_usd, allocated_micro_usd, unpriced),
       CASE WHEN serving = 'api' THEN cost_usd END AS api_cost_usd,
       CASE WHEN serving = 'api' THEN thinking_cost_usd END AS api_thinking_cost_usd
FROM core.call_costs
