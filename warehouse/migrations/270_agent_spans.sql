-- OpenTelemetry invoke_agent spans and each call's nearest agent (issue 41): marts.agent_runs, run_costs, session_costs.
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS agent_span_id VARCHAR;  -- OTel: the span id of the call's nearest invoke_agent ancestor
-- OpenTelemetry GenAI invoke_agent spans (telemetry/otel/), kept beside the model calls of their document line (a side table of stg.requests). grain: one row per agent span (trace_id, span_id) and file.
CREATE TABLE IF NOT EXISTS stg.agent_spans (
    file_id              INTEGER NOT NULL,  -- ops.ingested_files.file_id of the file the row came from
    line                 BIGINT NOT NULL,  -- 1-based line of the record in its file (record number for JSON documents)
    trace_id             VARCHAR NOT NULL,  -- traceId, lower-case hex
    span_id              VARCHAR NOT NULL,  -- spanId of the invoke_agent span, lower-case hex
    parent_agent_span_id VARCHAR,  -- the nearest invoke_agent ancestor's span id; NULL for a top agent
    agent_name           VARCHAR,  -- gen_ai.agent.name
    depth                INTEGER NOT NULL,  -- 1 for a top agent, 2 for its sub-agent, ...
    agent_path           VARCHAR NOT NULL,  -- the span ids of its invoke_agent ancestors and itself, root first, '/'-separated
    started_at           TIMESTAMP,  -- startTimeUnixNano, naive UTC
    ended_at             TIMESTAMP  -- endTimeUnixNano, naive UTC
);
