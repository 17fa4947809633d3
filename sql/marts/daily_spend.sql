-- Spend per day by where it comes from.
-- reasoning_cost_usd is the thinking tokens' part of cost_usd. day and team are each call's own
-- (its task's are in marts.task_cost_breakdown: task_day, task_team).
-- api_bill rows: counted billed amounts per day x provider x model (model NULL for billed lines that
-- name no model); bills carry no team, so team is 'unknown'; reasoning_cost_usd and calls are NULL
-- (a bill does not split out thinking tokens or count calls). api_bill bills the same usage that
-- api_usage prices: do not add the two (checks and the report exclude api_bill).
-- @kind: incremental_by_day
-- @grain: day x source ('api_usage' = API calls at list price, 'self_hosted' = node cost allocated
--   to calls, plus team 'idle' for node-days without calls; 'api_bill' = what the providers billed,
--   from core.billed_costs) x provider x model x team.
WITH usage AS (
    SELECT day,
           CASE serving WHEN 'api' THEN 'api_usage' ELSE 'self_hosted' END AS source,
           provider, model, team,
           sum(cost_usd) AS cost_usd, sum(thinking_cost_usd) AS reasoning_cost_usd, count(*) AS calls,
           sum(audio_cost_usd) AS audio_cost_usd, sum(image_cost_usd) AS image_cost_usd, sum(video_cost_usd) AS video_cost_usd
    FROM core.call_costs
    WHERE core.in_build_days(day)
    GROUP BY ALL
),
idle AS (
    SELECT a.day, 'self_hosted' AS source, n.provider, n.model_key AS model, 'idle' AS team,
           sum(CAST(a.allocated_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6))) AS cost_usd,
           CAST(0 AS DECIMAL(38,6)) AS reasoning_cost_usd, 0 AS calls
    FROM core.self_hosted_allocation a JOIN core.dim_nodes n USING (node_id)
    WHERE a.pool = 'idle' AND core.in_build_days(a.day)
    GROUP BY ALL
),
bills AS (
    SELECT day, 'api_bill' AS source, provider, model, 'unknown' AS team,
           sum(billed_usd) AS cost_usd, CAST(NULL AS DECIMAL(38,6)) AS reasoning_cost_usd, CAST(NULL AS BIGINT) AS calls
    FROM core.billed_costs
    WHERE is_counted AND core.in_build_days(day)
    GROUP BY ALL
),
final AS (
    SELECT day, source, provider, model, team,
           core.usd6(cost_usd) AS cost_usd, core.usd6(reasoning_cost_usd) AS reasoning_cost_usd, calls,
           -- issue 44: the parts of cost_usd priced at audio / image / video rates (api_usage rows;
           -- NULL for self-hosted, idle and bill rows)
           core.usd6(audio_cost_usd) AS audio_cost_usd, core.usd6(image_cost_usd) AS image_cost_usd,
           core.usd6(video_cost_usd) AS video_cost_usd
    FROM (SELECT * FROM usage UNION ALL BY NAME SELECT * FROM idle UNION ALL BY NAME SELECT * FROM bills)
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
