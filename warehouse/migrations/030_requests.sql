-- Per-request telemetry (telemetry/requests/*.jsonl), split into non-overlapping token buckets:
--   prompt side:  uncached_input_tokens + cached_input_tokens + cache_write_tokens
--   output side:  thinking_tokens + output_tokens (visible)
-- grain: one row per model call (request_id).
CREATE TABLE IF NOT EXISTS stg.requests (
    file_id               INTEGER NOT NULL,
    line                  BIGINT NOT NULL,
    ts                    TIMESTAMP NOT NULL,   -- UTC
    request_id            VARCHAR NOT NULL,
    model                 VARCHAR NOT NULL,     -- as reported
    provider              VARCHAR,              -- API provider (lower-case); NULL for self-hosted
    node_id               VARCHAR,              -- self-hosted node (nodes.csv); NULL for API
    task_id               VARCHAR NOT NULL,     -- defaults to request_id
    task_type             VARCHAR,
    team                  VARCHAR,
    latency_ms            DOUBLE,
    ttft_ms               DOUBLE,
    usage_shape           VARCHAR NOT NULL,     -- 'openai_chat', 'openai_responses', 'anthropic'
    uncached_input_tokens BIGINT NOT NULL,
    cached_input_tokens   BIGINT NOT NULL,
    cache_write_tokens    BIGINT NOT NULL,
    thinking_tokens       BIGINT NOT NULL,
    output_tokens         BIGINT NOT NULL       -- visible output only
);
