-- Self-hosted cost on the *usage* basis: a call pays only for the time the node was busy; the rest
-- of each paid node-hour is idle cost, kept on the node-hour. (The contract's *allocation* basis,
-- core.self_hosted_allocation, puts every paid GPU-hour on some call, idle time included.)
--   * A call occupies [ts - latency_ms, ts] (ts is when the call ended). A call without latency_ms
--     (or 0) occupies no time: it is a point at ts.
--   * busy seconds of a node-hour = length of the union of its calls' intervals inside that hour,
--     capped at the seconds the node was active in it. Busy means "at least one call running",
--     however many ran at once: a node running one call is as busy as one running fifty.
--   * usage micro-USD of the hour = cost_micro_usd x busy / active (rounded half up);
--     idle micro-USD = cost_micro_usd - usage micro-USD.
--   * the hour's usage cost goes to the calls running in it, by weight = the call's tokens x the
--     part of its interval inside the hour (tokens x overlap / latency; a point call weighs its
--     tokens in the hour of ts). A call that spans two hours pays from both. Largest-remainder
--     integer micro-USD, so per node-hour the calls' shares add up to the usage micro-USD exactly.
--   Worked: 1 GPU at 3.60 USD/h, calls a [10:00:00-10:15:00] 1,000 tokens and b [10:10:00-10:30:00]
--   3,000 tokens: busy = union 10:00-10:30 = 1,800 s -> usage 1.80, idle 1.80; weights 1,000 and
--   3,000 (both inside the hour) -> a 0.45, b 1.35.
-- Nothing is lost: per node, sum(usage_micro_usd) + sum(idle_micro_usd) = sum(core.node_hours_cost
-- .cost_micro_usd) over its priced hours. Hours without a known price are left out.
-- Halo: a call's interval can reach into the day before, so its rows depend on neighbouring days:
-- the days touched +- the halo are replaced, reading one halo more around them.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per self-hosted call (kind 'call', request_id; hour = the call's hour) plus one
--   row per priced node-hour (kind 'idle', request_id NULL) carrying that hour's busy and idle
--   figures
-- @halo: true
WITH calls AS (
    SELECT request_id, node_id, ts, hour, day, total_tokens, thinking_tokens, allocated_micro_usd,
           epoch_us(ts) AS end_us,
           epoch_us(ts) - CAST(round(greatest(coalesce(latency_ms, 0), 0) * 1000) AS BIGINT) AS start_us
    FROM core.call_costs
    WHERE serving = 'self_hosted' AND core.in_build_context(day)
),
paid AS (
    SELECT node_id, hour, day, cost_micro_usd,
           CAST(round(active_seconds * 1000000) AS BIGINT) AS active_us
    FROM core.node_hours_cost
    WHERE cost_micro_usd IS NOT NULL AND core.in_build_context(day)
),
-- the busy time: union of the call intervals per node, then cut at hour boundaries
intervals AS (
    SELECT node_id, start_us, end_us FROM calls WHERE end_us > start_us
),
ordered AS (
    SELECT *,
           max(end_us) OVER (PARTITION BY node_id ORDER BY start_us, end_us
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max_end_us
    FROM intervals
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_max_end_us IS NULL OR start_us > prev_max_end_us THEN 1 ELSE 0 END)
               OVER (PARTITION BY node_id ORDER BY start_us, end_us ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
),
segments AS (
    SELECT node_id, island, min(start_us) AS start_us, max(end_us) AS end_us FROM islands GROUP BY ALL
),
segment_hours AS (
    SELECT node_id, start_us, end_us,
           unnest(generate_series(date_trunc('hour', make_timestamp(start_us)),
                                  date_trunc('hour', make_timestamp(end_us - 1)), INTERVAL 1 HOUR)) AS hour
    FROM segments
),
busy AS (
    SELECT node_id, hour,
           sum(least(end_us, epoch_us(hour) + 3600000000) - greatest(start_us, epoch_us(hour))) AS busy_us
    FROM segment_hours
    GROUP BY ALL
),
hours AS (
    SELECT p.*, least(coalesce(b.busy_us, 0), p.active_us) AS busy_us,
           (CAST(p.cost_micro_usd AS HUGEINT) * least(coalesce(b.busy_us, 0), p.active_us) * 2 + p.active_us)
               // (2 * CAST(p.active_us AS HUGEINT)) AS usage_micro_usd
    FROM paid p LEFT JOIN busy b USING (node_id, hour)
),
-- each call's pieces: the hours its interval touches (a point call: its own hour)
pieces AS (
    SELECT request_id, node_id, total_tokens, start_us, end_us,
           unnest(generate_series(date_trunc('hour', make_timestamp(start_us)),
                                  date_trunc('hour', make_timestamp(end_us - 1)), INTERVAL 1 HOUR)) AS hour
    FROM calls WHERE end_us > start_us
    UNION ALL
    SELECT request_id, node_id, total_tokens, start_us, end_us, hour
    FROM calls WHERE end_us <= start_us
),
weighted AS (
    SELECT pc.request_id, h.node_id, h.hour, h.usage_micro_usd,
           CASE WHEN pc.end_us <= pc.start_us THEN CAST(pc.total_tokens AS HUGEINT) * 1000000
                ELSE CAST(pc.total_tokens AS HUGEINT) * 1000000
                     * (least(pc.end_us, epoch_us(h.hour) + 3600000000) - greatest(pc.start_us, epoch_us(h.hour)))
                     // (pc.end_us - pc.start_us) END AS token_weight,
           CASE WHEN pc.end_us <= pc.start_us THEN 1
                ELSE least(pc.end_us, epoch_us(h.hour) + 3600000000) - greatest(pc.start_us, epoch_us(h.hour)) END AS time_weight
    FROM pieces pc JOIN hours h ON h.node_id = pc.node_id AND h.hour = pc.hour
),
weights AS (
    -- an hour whose calls report no tokens is shared by time
    SELECT *,
           CASE WHEN sum(token_weight) OVER hour_w = 0 THEN time_weight ELSE token_weight END AS weight
    FROM weighted
    WINDOW hour_w AS (PARTITION BY node_id, hour)
),
floored AS (
    SELECT *,
           usage_micro_usd * weight // sum(weight) OVER hour_w AS floor_micro,
           usage_micro_usd * weight % sum(weight) OVER hour_w AS remainder
    FROM weights
    WINDOW hour_w AS (PARTITION BY node_id, hour)
),
ranked AS (
    SELECT *,
           usage_micro_usd - sum(floor_micro) OVER hour_w AS leftover,
           row_number() OVER (PARTITION BY node_id, hour ORDER BY remainder DESC, request_id) AS rnk
    FROM floored
    WINDOW hour_w AS (PARTITION BY node_id, hour)
),
call_usage AS (
    SELECT request_id, sum(floor_micro + CASE WHEN rnk <= leftover THEN 1 ELSE 0 END) AS usage_micro_usd
    FROM ranked
    GROUP BY request_id
),
-- an hour with busy time but no call piece in it cannot happen (busy time comes from the pieces);
-- an hour with usage but only zero-weight pieces is shared by time above
call_rows AS (
    SELECT 'call' AS kind, c.node_id, c.day, c.hour, c.request_id,
           CAST(NULL AS DOUBLE) AS busy_seconds, CAST(NULL AS DOUBLE) AS active_seconds,
           CAST(u.usage_micro_usd AS BIGINT) AS usage_micro_usd,
           CAST(CASE WHEN u.usage_micro_usd IS NULL THEN NULL ELSE 0 END AS BIGINT) AS idle_micro_usd,
           CASE WHEN c.total_tokens = 0 OR u.usage_micro_usd IS NULL THEN CAST(0 AS HUGEINT)
                ELSE CAST(u.usage_micro_usd AS HUGEINT) * c.thinking_tokens // c.total_tokens END AS thinking_usage_micro_usd,
           c.allocated_micro_usd
    FROM calls c
    LEFT JOIN call_usage u USING (request_id)
),
idle_rows AS (
    SELECT 'idle' AS kind, node_id, day, hour, CAST(NULL AS VARCHAR) AS request_id,
           busy_us / 1e6 AS busy_seconds, active_us / 1e6 AS active_seconds,
           CAST(0 AS BIGINT) AS usage_micro_usd,
           CAST(cost_micro_usd - usage_micro_usd AS BIGINT) AS idle_micro_usd,
           CAST(0 AS HUGEINT) AS thinking_usage_micro_usd,
           CAST(NULL AS BIGINT) AS allocated_micro_usd
    FROM hours
),
final AS (
    SELECT kind, node_id, day, hour, request_id, busy_seconds, active_seconds,
           usage_micro_usd, idle_micro_usd,
           core.usd6(usage_micro_usd * 0.000001) AS usage_cost_usd,
           core.usd6(thinking_usage_micro_usd * 0.000001) AS thinking_usage_cost_usd,
           core.usd6(idle_micro_usd * 0.000001) AS idle_cost_usd,
           core.usd6(allocated_micro_usd * 0.000001) AS allocation_cost_usd
    FROM (SELECT * FROM call_rows UNION ALL BY NAME SELECT * FROM idle_rows)
)
SELECT * FROM final
