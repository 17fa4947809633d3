-- Prometheus counters turned into per-interval increases, one row per scrape of each series.
-- Counters: canonical (mapped) samples of kind counter, histogram_sum or histogram_count
-- (tokens, requests, mJ, seconds), e.g. prompt_tokens_total, generation_tokens_total, energy_mj_total.
-- Rules:
--   * duplicate scrapes (same node, metric, series and scrape_ts, from any number of files) count
--     once, and files landed out of order are put in time order: the window orders by scrape_ts.
--   * delta = value - previous value. A drop means the exporter restarted and its counter began
--     again from 0, so delta = the new value (never negative), is_reset = true.
--     Worked example: 1000, 1600, 250, 900 -> deltas NULL, 600, 250 (reset), 650.
--   * the first scrape of a series has no previous value: delta NULL (its value includes an
--     unknown history), so sums over delta count only what happened between two scrapes.
--   * is_gap: the interval since the previous scrape is longer than 2x the median interval
--     between the scrapes of that node and engine (the scrape cadence). The delta still holds
--     every increase over the gap, but when to place it inside the gap is unknown, and increases
--     made before a restart inside a gap are lost.
-- @kind: full
-- @grain: one row per node_id x metric (counter) x series x scrape_ts
WITH counters AS (
    SELECT node_id, engine, metric, series, scrape_ts,
           max(value) AS value,               -- same-key duplicates have equal values (ingest checks it)
           max(model_name) AS model_name,
           max(gpu) AS gpu
    FROM stg.metric_samples
    WHERE mapped AND kind IN ('counter', 'histogram_sum', 'histogram_count')
    GROUP BY node_id, engine, metric, series, scrape_ts
),
scrapes AS (
    SELECT DISTINCT node_id, engine, scrape_ts FROM counters
),
scrape_intervals AS (
    SELECT node_id, engine,
           date_diff('millisecond', lag(scrape_ts) OVER (PARTITION BY node_id, engine ORDER BY scrape_ts), scrape_ts) / 1000.0 AS interval_s
    FROM scrapes
),
cadence AS (
    SELECT node_id, engine, median(interval_s) AS median_interval_s
    FROM scrape_intervals
    WHERE interval_s IS NOT NULL
    GROUP BY node_id, engine
),
ordered AS (
    SELECT *,
           lag(scrape_ts) OVER w AS prev_scrape_ts,
           lag(value) OVER w AS prev_value
    FROM counters
    WINDOW w AS (PARTITION BY node_id, engine, metric, series ORDER BY scrape_ts)
),
final AS (
    SELECT o.node_id, o.engine, o.metric, o.series, o.model_name, o.gpu,
           o.prev_scrape_ts, o.scrape_ts,
           date_diff('millisecond', o.prev_scrape_ts, o.scrape_ts) / 1000.0 AS interval_s,
           o.prev_value, o.value,
           CASE WHEN o.prev_value IS NULL THEN NULL
                WHEN o.value < o.prev_value THEN o.value
                ELSE o.value - o.prev_value END AS delta,
           coalesce(o.value < o.prev_value, false) AS is_reset,
           coalesce(date_diff('millisecond', o.prev_scrape_ts, o.scrape_ts) / 1000.0 > 2 * c.median_interval_s, false) AS is_gap,
           c.median_interval_s
    FROM ordered o
    LEFT JOIN cadence c ON c.node_id = o.node_id AND c.engine = o.engine
)
SELECT * FROM final
