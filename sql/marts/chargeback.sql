-- Who spent it (issue 41): the month's spend by cost center (core.call_costs.cost_center, from
-- catalog/cost_centers.csv, else the call's team, else 'unallocated'), and within each cost center by
-- principal: principal_kind 'team', 'api_key', 'user', 'end_user', 'project', 'workspace', 'agent'
-- (principal_value NULL: the calls that do not report it), plus one row per cost center with
-- principal_kind = principal_value = '*' for its total.
-- usage_cost_usd: its calls' cost_usd (API calls at list price, self-hosted calls at their share of
-- their node's paid hours); thinking_cost_usd the thinking tokens' part; cache_savings_usd what
-- prompt caching saved them (net of cache writes, can be negative); list_cost_usd the same calls
-- on demand (a provisioned call at its on-demand rates, any other as usage_cost_usd).
-- commitment_cost_usd (the '*' rows only; 0 on principal rows): the consumed part of the
-- provisioned-throughput and commitment fees of the cloud invoices (marts.commitments source
-- 'invoice'; their calls cost 0 per token), charged to the cost centers of the calls that consumed
-- it. Per commitment row (provider x model x month) the consumed part is least(paid_usd,
-- used_on_demand_usd): what its provisioned calls (core.call_costs serving 'api', billing
-- 'provisioned', same provider and model family as marts.commitments matches them; a commitment
-- naming no model takes the provider's provisioned calls whose model has no invoice commitment of
-- its own) would have cost on demand, capped at what was paid; it is split over those calls' cost
-- centers in proportion to their on-demand cost, in integer micro-dollars by largest remainder.
-- shared_cost_usd (the '*' rows only; 0 on principal rows): the month's costs no call carries --
-- idle self-hosted node-days (core.self_hosted_allocation pool 'idle'), the unconsumed part of the
-- invoiced commitments (paid minus commitment_cost_usd), and invoice AI lines no rule explains
-- (marts.unattributed_invoice_lines; credits are not among them and are not allocated:
-- marts.invoice_reconciliation shows them) -- spread by [chargeback] shared
-- (ops.settings.chargeback_shared): 'proportional' to the cost centers' usage_cost_usd +
-- commitment_cost_usd, 'even', or all to the cost center named. In integer micro-dollars with
-- largest remainder, so that per month the cost centers' total_cost_usd add up exactly to the
-- month's calls + idle nodes (marts.daily_spend api_usage + self_hosted) + commitment fees +
-- unexplained invoice lines. A month with shared costs and no usage weight (no calls, or all at 0)
-- spreads them evenly; a month with no calls at all puts them on 'unallocated'.
-- total_cost_usd = usage_cost_usd + commitment_cost_usd + shared_cost_usd.
-- Every figure is month-local, so an incremental build rewrites the months of its days, each whole
-- (every input read for those months only).
-- @kind: incremental_by_month
-- @grain: month x cost_center x principal_kind x principal_value
WITH settings AS (
    SELECT chargeback_shared AS rule FROM ops.settings
),
by_principal AS (
    -- one scan of the calls: every principal at once, re-aggregated per kind below
    SELECT CAST(date_trunc('month', day) AS DATE) AS month, cost_center, team, api_key, user_id, end_user_id,
           project_id, workspace_id, agent_name,
           count(*) AS calls,
           sum(cost_usd) AS usage_cost_usd, sum(thinking_cost_usd) AS thinking_cost_usd,
           sum(cache_savings_usd) AS cache_savings_usd, sum(coalesce(on_demand_cost_usd, cost_usd)) AS list_cost_usd
    FROM core.call_costs
    WHERE core.in_build_months(CAST(date_trunc('month', day) AS DATE))
    GROUP BY ALL
),
kinds AS (
    SELECT month, cost_center, 'team' AS principal_kind, team AS principal_value, calls, usage_cost_usd,
           thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'api_key', api_key, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'user', user_id, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'end_user', end_user_id, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'project', project_id, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'workspace', workspace_id, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
    UNION ALL SELECT month, cost_center, 'agent', agent_name, calls, usage_cost_usd, thinking_cost_usd, cache_savings_usd, list_cost_usd FROM by_principal
),
principal_rows AS (
    SELECT month, cost_center, principal_kind, principal_value, sum(calls) AS calls,
           sum(usage_cost_usd) AS usage_cost_usd, sum(thinking_cost_usd) AS thinking_cost_usd,
           sum(cache_savings_usd) AS cache_savings_usd, sum(list_cost_usd) AS list_cost_usd
    FROM kinds
    GROUP BY month, cost_center, principal_kind, principal_value
),
cc_month AS (
    SELECT month, cost_center, sum(calls) AS calls, sum(usage_cost_usd) AS usage_cost_usd,
           sum(thinking_cost_usd) AS thinking_cost_usd, sum(cache_savings_usd) AS cache_savings_usd,
           sum(list_cost_usd) AS list_cost_usd
    FROM by_principal
    GROUP BY month, cost_center
),
invoiced AS (
    -- the invoiced commitments, in integer micro-dollars: paid, and consumed = least(paid, used on demand)
    SELECT provider, model, month, CAST(round(paid_usd * 1000000) AS BIGINT) AS paid_micro,
           CAST(round(greatest(least(paid_usd, used_on_demand_usd), 0) * 1000000) AS BIGINT) AS consumed_micro
    FROM marts.commitments
    WHERE source = 'invoice' AND core.in_build_months(month)
),
provisioned AS (
    -- the provisioned calls by cost center, keyed as marts.commitments reads them
    SELECT CAST(date_trunc('month', day) AS DATE) AS month, core.provider_key(provider) AS provider,
           core.cloud_model_key(model) AS model, cost_center,
           CAST(round(sum(on_demand_cost_usd) * 1000000) AS BIGINT) AS w
    FROM core.call_costs
    WHERE serving = 'api' AND billing = 'provisioned' AND on_demand_cost_usd IS NOT NULL
      AND core.in_build_months(CAST(date_trunc('month', day) AS DATE))
    GROUP BY ALL
),
consumers AS (
    -- each commitment's calls: the model's own, or (a commitment naming no model) the provider's
    -- provisioned calls of models without an invoice commitment of their own
    SELECT i.provider, i.model, i.month, i.consumed_micro, p.cost_center, sum(p.w) AS w
    FROM invoiced i
    JOIN provisioned p ON p.provider = i.provider AND p.month = i.month
    LEFT JOIN (SELECT DISTINCT provider, model, month FROM invoiced WHERE model IS NOT NULL) n
      ON i.model IS NULL AND n.provider = p.provider AND n.model = p.model AND n.month = p.month
    WHERE (i.model IS NOT NULL AND p.model = i.model) OR (i.model IS NULL AND n.model IS NULL)
    GROUP BY ALL
    HAVING sum(p.w) > 0
),
consumed_floor AS (
    SELECT *,
           CAST(consumed_micro AS HUGEINT) * w // sum(w) OVER (PARTITION BY provider, model, month) AS floor_micro,
           CAST(consumed_micro AS HUGEINT) * w % sum(w) OVER (PARTITION BY provider, model, month) AS remainder
    FROM consumers
),
consumed_ranked AS (
    SELECT *,
           consumed_micro - sum(floor_micro) OVER (PARTITION BY provider, model, month) AS left_micro,
           row_number() OVER (PARTITION BY provider, model, month ORDER BY remainder DESC, cost_center) AS rnk
    FROM consumed_floor
),
commitment_cc AS (
    -- the consumed commitments charged to cost centers, per month
    SELECT month, cost_center, sum(floor_micro + CASE WHEN rnk <= left_micro THEN 1 ELSE 0 END) AS commitment_micro
    FROM consumed_ranked
    GROUP BY month, cost_center
),
shared_parts AS (
    -- each part in integer micro-dollars
    SELECT CAST(date_trunc('month', day) AS DATE) AS month, CAST(sum(allocated_micro_usd) AS BIGINT) AS micro
    FROM core.self_hosted_allocation
    WHERE pool = 'idle' AND core.in_build_months(CAST(date_trunc('month', day) AS DATE))
    GROUP BY 1
    UNION ALL
    SELECT month, CAST(sum(paid_micro) AS BIGINT) FROM invoiced GROUP BY month
    UNION ALL
    SELECT month, -CAST(sum(commitment_micro) AS BIGINT) FROM commitment_cc GROUP BY month
    UNION ALL
    SELECT CAST(date_trunc('month', day) AS DATE), CAST(round(sum(amount_usd) * 1000000) AS BIGINT)
    FROM marts.unattributed_invoice_lines
    WHERE core.in_build_months(CAST(date_trunc('month', day) AS DATE))
    GROUP BY 1
),
shared AS (
    SELECT month, sum(micro) AS shared_micro FROM shared_parts GROUP BY month
),
extra AS (
    -- a cost center the shared costs go to that has no calls in the month
    SELECT s.month, CASE WHEN st.rule IN ('proportional', 'even') THEN 'unallocated' ELSE st.rule END AS cost_center
    FROM shared s CROSS JOIN settings st
    WHERE st.rule NOT IN ('proportional', 'even')
       OR NOT EXISTS (SELECT 1 FROM cc_month c WHERE c.month = s.month)
),
members AS (
    SELECT month, cost_center FROM cc_month
    UNION
    SELECT month, cost_center FROM extra
),
weighted AS (
    SELECT m.month, m.cost_center, coalesce(s.shared_micro, 0) AS shared_micro,
           CASE WHEN st.rule = 'proportional'
                THEN greatest(CAST(round(coalesce(c.usage_cost_usd, 0) * 1000000) AS BIGINT)
                              + CAST(coalesce(k.commitment_micro, 0) AS BIGINT), 0)
                WHEN st.rule = 'even' THEN 1
                WHEN m.cost_center = st.rule THEN 1 ELSE 0 END AS w
    FROM members m
    CROSS JOIN settings st
    LEFT JOIN cc_month c ON c.month = m.month AND c.cost_center = m.cost_center
    LEFT JOIN commitment_cc k ON k.month = m.month AND k.cost_center = m.cost_center
    LEFT JOIN shared s ON s.month = m.month
),
weights AS (
    -- no weight in the month (no usage cost): evenly
    SELECT month, cost_center, shared_micro,
           CASE WHEN sum(w) OVER (PARTITION BY month) = 0 THEN 1 ELSE w END AS w
    FROM weighted
),
floored AS (
    SELECT month, cost_center, shared_micro, w,
           CAST(shared_micro AS HUGEINT) * w // sum(w) OVER (PARTITION BY month) AS floor_micro,
           CAST(shared_micro AS HUGEINT) * w % sum(w) OVER (PARTITION BY month) AS remainder
    FROM weights
),
ranked AS (
    SELECT *,
           shared_micro - sum(floor_micro) OVER (PARTITION BY month) AS left_micro,
           row_number() OVER (PARTITION BY month ORDER BY remainder DESC, cost_center) AS rnk
    FROM floored
),
allocated AS (
    SELECT month, cost_center,
           CAST(floor_micro + CASE WHEN rnk <= left_micro THEN 1 ELSE 0 END AS DECIMAL(38,0)) AS shared_micro
    FROM ranked
),
totals AS (
    SELECT a.month, a.cost_center, '*' AS principal_kind, '*' AS principal_value, coalesce(c.calls, 0) AS calls,
           coalesce(c.usage_cost_usd, 0) AS usage_cost_usd, coalesce(c.thinking_cost_usd, 0) AS thinking_cost_usd,
           coalesce(c.cache_savings_usd, 0) AS cache_savings_usd,
           a.shared_micro * CAST(0.000001 AS DECIMAL(38,6)) AS shared_cost_usd,
           CAST(coalesce(k.commitment_micro, 0) AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS commitment_cost_usd,
           coalesce(c.list_cost_usd, 0) AS list_cost_usd
    FROM allocated a
    LEFT JOIN cc_month c ON c.month = a.month AND c.cost_center = a.cost_center
    LEFT JOIN commitment_cc k ON k.month = a.month AND k.cost_center = a.cost_center
),
final AS (
    SELECT month, cost_center, principal_kind, principal_value, calls,
           core.usd6(usage_cost_usd) AS usage_cost_usd, core.usd6(thinking_cost_usd) AS thinking_cost_usd,
           core.usd6(cache_savings_usd) AS cache_savings_usd, core.usd6(shared_cost_usd) AS shared_cost_usd,
           core.usd6(usage_cost_usd + commitment_cost_usd + shared_cost_usd) AS total_cost_usd,
           core.usd6(list_cost_usd) AS list_cost_usd, core.usd6(commitment_cost_usd) AS commitment_cost_usd
    FROM totals
    UNION ALL
    SELECT month, cost_center, principal_kind, principal_value, calls,
           core.usd6(usage_cost_usd), core.usd6(thinking_cost_usd), core.usd6(cache_savings_usd),
           core.usd6(0), core.usd6(usage_cost_usd), core.usd6(list_cost_usd), core.usd6(0)
    FROM principal_rows
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
