-- Every call with its cost in USD: API calls at the price in force, self-hosted calls at their
-- share of the node's paid GPU-hours (core.self_hosted_allocation). thinking_cost_usd is the part
-- due to thinking tokens (API: at the reasoning price; self-hosted: the call's cost x thinking share
-- of its tokens). cost_usd is NULL where no price is known (see marts.unpriced_usage), never 0.
-- grain: one row per call (request_id)
-- reads: core.calls, core.self_hosted_allocation
-- incremental: day (a nightly run replaces the rows of the days it touched; warehouse/incremental.py)
WITH allocated AS (
    SELECT request_id, sum(allocated_micro_usd) AS allocated_micro_usd
    FROM core.self_hosted_allocation
    WHERE request_id IS NOT NULL AND core.in_build_days(day)
    GROUP BY request_id
),
final AS (
    SELECT c.* EXCLUDE (api_cost_usd, api_thinking_cost_usd),
           -- every branch cast to DECIMAL(38,15): a CASE over (38,15) and (38,6) is typed (38,6) and
           -- would round each API call's cost to the micro-dollar before the marts sum it
           CASE WHEN c.serving = 'api' THEN CAST(c.api_cost_usd AS DECIMAL(38,15))
                ELSE CAST(CAST(a.allocated_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS cost_usd,
           CASE WHEN c.serving = 'api' THEN CAST(c.api_thinking_cost_usd AS DECIMAL(38,15))
                WHEN c.total_tokens = 0 THEN CAST(0 AS DECIMAL(38,15))
                ELSE CAST(CAST(CAST(a.allocated_micro_usd AS HUGEINT) * c.thinking_tokens // c.total_tokens AS DECIMAL(38,0))
                          * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS thinking_cost_usd,
           a.allocated_micro_usd,
           CASE WHEN c.serving = 'api' THEN c.api_cost_usd IS NULL ELSE a.allocated_micro_usd IS NULL END AS unpriced
    FROM core.calls c
    LEFT JOIN allocated a USING (request_id)
    WHERE core.in_build_days(c.day)
)
SELECT * FROM final
