-- How much KV-cache the thinking tokens hold, next to the prompt and the visible output: the sum of
-- the calls' KV byte-seconds (core.call_kv, its time model is documented there) per day and model,
-- in GB-seconds (1 GB = 10^9 bytes, at bf16 KV) and as shares of the total. Thinking tokens are
-- generated before the visible output and then stay resident until the call ends, so their share
-- of KV-time is above their share of tokens (thinking_token_share, for comparison).
-- Calls without latency_ms have no byte-seconds; they are counted in calls_without_latency.
-- @kind: incremental_by_day
-- @grain: one row per day (UTC date of the call) x model (model key)
WITH calls AS (
    SELECT * FROM core.call_kv WHERE core.in_build_days(day)
),
daily AS (
    SELECT day, model,
           count(*) AS calls,
           count(*) FILTER (WHERE kv_byte_s IS NULL) AS calls_without_latency,
           count(*) FILTER (WHERE serving = 'self_hosted') AS self_hosted_calls,
           max(kv_bytes_per_token_bf16) AS kv_bytes_per_token_bf16,
           sum(prompt_tokens) FILTER (WHERE kv_byte_s IS NOT NULL) AS prompt_tokens,
           sum(thinking_tokens) FILTER (WHERE kv_byte_s IS NOT NULL) AS thinking_tokens,
           sum(output_tokens) FILTER (WHERE kv_byte_s IS NOT NULL) AS output_tokens,
           sum(prompt_kv_byte_s) / 1e9 AS prompt_kv_gb_s,
           sum(thinking_kv_byte_s) / 1e9 AS thinking_kv_gb_s,
           sum(output_kv_byte_s) / 1e9 AS output_kv_gb_s,
           sum(kv_byte_s) / 1e9 AS kv_gb_s,
           max(kv_peak_bytes) / 1e9 AS kv_peak_gb_max
    FROM calls
    GROUP BY ALL
),
final AS (
    SELECT *,
           prompt_kv_gb_s / nullif(kv_gb_s, 0) AS prompt_share,
           thinking_kv_gb_s / nullif(kv_gb_s, 0) AS thinking_share,
           output_kv_gb_s / nullif(kv_gb_s, 0) AS output_share,
           thinking_tokens / nullif(prompt_tokens + thinking_tokens + output_tokens, 0) AS thinking_token_share
    FROM daily
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
