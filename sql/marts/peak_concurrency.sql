-- Concurrent in-flight calls per model and UTC hour, time-weighted: how many calls were running at
-- once, and for what share of the hour. A call is in flight over [ts - latency_ms, ts) (ts is when
-- the call ended, as in core.call_kv); calls without latency_ms are left out (calls_without_latency
-- counts them, per model and day).
-- Event sweep: +1 at each call's start, -1 at its end, plus a 0 event at every hour boundary of the
-- model's active span, so no segment crosses an hour; the running sum ordered by time (ends before
-- starts at the same instant) is the level held until the next event. Per model x hour the
-- percentiles are time-weighted nearest rank: p = the smallest level whose cumulative seconds reach
-- p x 3,600 (levels sorted ascending); max_concurrent_calls is the highest level held for any time.
-- Worked: calls [10:00:00, 10:00:10), [10:00:05, 10:00:15), [10:00:05, 10:00:08) hold level 1 for
-- 5 + 5 = 10 s, 3 for 3 s, 2 for 2 s and 0 for the other 3,585 s: p50 = p95 = p99 = 0 (3,585 s
-- >= 0.99 x 3,600 = 3,564 s), max 3.
-- KV: kv_gb_p99_at_p95_profile = p99 calls x the month's p95 profile (core.call_profiles: prompt +
-- thinking + output) x the model's KV bytes per token at bf16 (core.call_kv) / 1e9; NULL for models
-- without a KV figure (closed API models). Capacity planning reads the p99 hour (marts.peak_capacity).
-- (halo: an hour's level depends on calls that ended up to a day later: every call in flight on a
-- rewritten day ends within the halo, so the calls of the context days are read whole)
-- @kind: incremental_by_day
-- @grain: one row per model x hour with at least one call in flight
-- @halo: true
WITH calls AS (
    SELECT model, ts - to_microseconds(CAST(round(latency_ms * 1000) AS BIGINT)) AS started, ts AS ended
    FROM core.calls
    WHERE latency_ms IS NOT NULL AND latency_ms >= 0 AND core.in_build_context(day)
),
missing AS (
    SELECT model, day, count(*) AS calls_without_latency
    FROM core.calls WHERE latency_ms IS NULL AND core.in_build_days(day) GROUP BY ALL
),
spans AS (
    SELECT model, date_trunc('hour', min(started)) AS first_hour, date_trunc('hour', max(ended)) AS last_hour
    FROM calls GROUP BY model
),
-- the sweep's window is partitioned by a small integer per model, not by the model's name: sorting
-- on a name longer than DuckDB keeps inline (12 bytes: 'claude-sonnet-4') compares whole strings
-- (14M events: 6.6 s against 2.1 s; at 32M calls this table was 150 s of a 573 s full rebuild)
model_ids AS (
    SELECT model, row_number() OVER (ORDER BY model) AS mid FROM spans
),
keyed AS (
    SELECT i.mid, c.started, c.ended FROM calls c JOIN model_ids i ON i.model = c.model
),
-- events is MATERIALIZED: the sweep's window below then sorts a materialised table, not the
-- pipeline of a union over a join DuckDB estimates at a few hundred rows (1.35M calls: the
-- table's query 1.03 s against 0.57 s, rows identical; Spark's rendering drops the hint)
events AS MATERIALIZED (
    SELECT mid, started AS t, 1 AS delta FROM keyed
    UNION ALL
    SELECT mid, ended, -1 FROM keyed
    UNION ALL
    SELECT i.mid, h.t, 0
    FROM spans s JOIN model_ids i ON i.model = s.model,
         LATERAL (SELECT unnest(generate_series(s.first_hour, s.last_hour + INTERVAL 1 HOUR, INTERVAL 1 HOUR)) AS t) h
),
levels AS (
    SELECT mid, t, delta,
           sum(delta) OVER (PARTITION BY mid ORDER BY t, delta ROWS UNBOUNDED PRECEDING) AS level,
           lead(t) OVER (PARTITION BY mid ORDER BY t, delta) AS next_t
    FROM events
),
segments AS (
    SELECT i.model, date_trunc('hour', l.t) AS hour, l.level,
           epoch(l.next_t) - epoch(l.t) AS seconds
    FROM levels l JOIN model_ids i ON i.mid = l.mid
    WHERE l.next_t IS NOT NULL
),
by_level AS (
    SELECT model, hour, level, sum(seconds) AS seconds FROM segments GROUP BY ALL
),
ranked AS (
    SELECT *,
           sum(seconds) OVER (PARTITION BY model, hour ORDER BY level ROWS UNBOUNDED PRECEDING) AS cumulative,
           sum(seconds) OVER (PARTITION BY model, hour) AS total
    FROM by_level
),
per_hour AS (
    SELECT model, hour,
           min(level) FILTER (WHERE cumulative >= 0.50 * total) AS p50_concurrent_calls,
           min(level) FILTER (WHERE cumulative >= 0.95 * total) AS p95_concurrent_calls,
           min(level) FILTER (WHERE cumulative >= 0.99 * total) AS p99_concurrent_calls,
           max(level) FILTER (WHERE seconds > 0) AS max_concurrent_calls,
           sum(level * seconds) / 3600.0 AS mean_concurrent_calls
    FROM ranked
    GROUP BY model, hour
),
started AS (
    SELECT model, date_trunc('hour', started) AS hour, count(*) AS calls_started FROM calls GROUP BY ALL
),
kv AS (
    SELECT model, any_value(kv_bytes_per_token_bf16) AS kv_bytes_per_token_bf16
    FROM core.call_kv WHERE core.in_build_context(day) GROUP BY model
),
p95 AS (
    SELECT model, month, prompt_tokens + thinking_tokens + output_tokens AS p95_profile_tokens
    FROM core.call_profiles WHERE profile = 'p95'
),
final AS (
    SELECT h.model, h.hour, CAST(h.hour AS DATE) AS day,
           coalesce(s.calls_started, 0) AS calls_started,
           CAST(h.p50_concurrent_calls AS BIGINT) AS p50_concurrent_calls,
           CAST(h.p95_concurrent_calls AS BIGINT) AS p95_concurrent_calls,
           CAST(h.p99_concurrent_calls AS BIGINT) AS p99_concurrent_calls,
           CAST(h.max_concurrent_calls AS BIGINT) AS max_concurrent_calls,
           h.mean_concurrent_calls,
           p.p95_profile_tokens,
           kv.kv_bytes_per_token_bf16,
           h.p99_concurrent_calls * p.p95_profile_tokens * kv.kv_bytes_per_token_bf16 / 1e9 AS kv_gb_p99_at_p95_profile,
           coalesce(m.calls_without_latency, 0) AS calls_without_latency
    FROM per_hour h
    LEFT JOIN started s USING (model, hour)
    LEFT JOIN p95 p ON p.model = h.model AND p.month = CAST(date_trunc('month', h.hour) AS DATE)
    LEFT JOIN kv ON kv.model = h.model
    LEFT JOIN missing m ON m.model = h.model AND m.day = CAST(h.hour AS DATE)
    WHERE h.max_concurrent_calls > 0 AND core.in_build_days(CAST(h.hour AS DATE))
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
