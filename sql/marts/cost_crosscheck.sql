-- Where thinktax's cost of a call and the cost a proxy reported for it disagree (issue 15).
-- The reported cost is LiteLLM's own `spend` per call (stg.reported_costs, from the proxy's
-- LiteLLM_SpendLogs); thinktax's is core.call_costs.cost_usd (the list price in force for the
-- call's token buckets). Only calls that have a reported cost are here.
-- differing_calls: calls whose two costs differ by more than 1% of thinktax's cost (any
-- difference when thinktax's cost is 0); unpriced_calls: calls thinktax could not price
-- (cost NULL, see marts.unpriced_usage): their reported cost is in reported_cost_usd but not in
-- the difference. Money DECIMAL USD rounded to the micro-dollar per row.
-- @kind: full
-- @grain: day (UTC, of the call) x reporter x provider x model (thinktax's model key)
WITH calls AS (
    SELECT c.day, r.reporter, c.provider, c.model, c.cost_usd, r.reported_cost_usd
    FROM stg.reported_costs r
    JOIN core.call_costs c USING (request_id)
),
final AS (
    SELECT day, reporter, provider, model,
           count(*) AS calls,
           core.usd6(sum(cost_usd)) AS thinktax_cost_usd,
           core.usd6(sum(reported_cost_usd)) AS reported_cost_usd,
           core.usd6(sum(reported_cost_usd - cost_usd)) AS difference_usd,
           count(*) FILTER (WHERE cost_usd IS NOT NULL
                              AND abs(reported_cost_usd - cost_usd) > CAST(0.01 AS DECIMAL(38,2)) * cost_usd) AS differing_calls,
           count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced_calls
    FROM calls
    GROUP BY ALL
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
