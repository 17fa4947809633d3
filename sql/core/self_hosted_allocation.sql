-- Spreads every paid node-hour over the calls that node served, so that nothing is lost:
--   * an hour with calls: its cost goes to those calls, by each call's share of the hour's tokens;
--   * hours without calls: their cost goes to the calls of the same node and UTC day, by token share;
--   * a day without any calls: its cost stays on the node as an 'idle' row (request_id NULL).
-- Shares are integer micro-USD by largest remainder, so per node the allocated micro-dollars add
-- up exactly to the node's cost (core.node_hours_cost). Hours without a known price are left out
-- (they show in marts.unpriced_usage).
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per (self-hosted call, pool) plus one row per idle node-day
WITH calls AS (
    -- the self-hosted calls (a node_id) of core.calls; core.call_costs prices them from this table
    SELECT request_id, node_id, hour, day, total_tokens
    FROM core.calls
    WHERE node_id IS NOT NULL AND core.in_build_days(day)
),
node_hours AS (
    SELECT node_id, hour, day, cost_micro_usd FROM core.node_hours_cost WHERE cost_micro_usd IS NOT NULL AND core.in_build_days(day)
),
busy_hours AS (
    SELECT DISTINCT node_id, hour FROM calls
),
busy_days AS (
    SELECT DISTINCT node_id, day FROM calls
),
hour_pools AS (
    SELECT 'hour' AS pool, nh.node_id, nh.hour, nh.day, nh.cost_micro_usd
    FROM node_hours nh SEMI JOIN busy_hours b ON b.node_id = nh.node_id AND b.hour = nh.hour
),
idle_hours AS (
    SELECT nh.* FROM node_hours nh ANTI JOIN busy_hours b ON b.node_id = nh.node_id AND b.hour = nh.hour
),
day_pools AS (
    SELECT 'day' AS pool, i.node_id, NULL::TIMESTAMP AS hour, i.day, sum(i.cost_micro_usd) AS cost_micro_usd
    FROM idle_hours i SEMI JOIN busy_days b ON b.node_id = i.node_id AND b.day = i.day
    GROUP BY ALL
),
idle_days AS (
    SELECT 'idle' AS pool, i.node_id, NULL::TIMESTAMP AS hour, i.day, sum(i.cost_micro_usd) AS cost_micro_usd
    FROM idle_hours i ANTI JOIN busy_days b ON b.node_id = i.node_id AND b.day = i.day
    GROUP BY ALL
),
members AS (
    SELECT p.pool, p.node_id, p.hour, p.day, p.cost_micro_usd, c.request_id, c.total_tokens
    FROM hour_pools p JOIN calls c ON c.node_id = p.node_id AND c.hour = p.hour
    UNION ALL
    SELECT p.pool, p.node_id, p.hour, p.day, p.cost_micro_usd, c.request_id, c.total_tokens
    FROM day_pools p JOIN calls c ON c.node_id = p.node_id AND c.day = p.day
),
weighted AS (
    -- a pool whose calls report no tokens at all is split evenly
    SELECT *,
           CASE WHEN sum(total_tokens) OVER pool_w = 0 THEN 1 ELSE total_tokens END AS weight
    FROM members
    WINDOW pool_w AS (PARTITION BY pool, node_id, hour, day)
),
floored AS (
    SELECT *,
           CAST(cost_micro_usd AS HUGEINT) * weight // sum(weight) OVER pool_w AS floor_micro,
           CAST(cost_micro_usd AS HUGEINT) * weight % sum(weight) OVER pool_w AS remainder
    FROM weighted
    WINDOW pool_w AS (PARTITION BY pool, node_id, hour, day)
),
ranked AS (
    SELECT *,
           cost_micro_usd - sum(floor_micro) OVER pool_w AS leftover,
           row_number() OVER (PARTITION BY pool, node_id, hour, day ORDER BY remainder DESC, request_id) AS rnk
    FROM floored
    WINDOW pool_w AS (PARTITION BY pool, node_id, hour, day)
),
final AS (
    SELECT pool, node_id, day, hour, request_id,
           CAST(floor_micro + CASE WHEN rnk <= leftover THEN 1 ELSE 0 END AS BIGINT) AS allocated_micro_usd
    FROM ranked
    UNION ALL
    SELECT pool, node_id, day, hour, NULL AS request_id, CAST(cost_micro_usd AS BIGINT) FROM idle_days
)
SELECT * FROM final
