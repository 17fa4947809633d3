-- Who made each call (issue 41): the principals every source carries, NULL where not reported.
-- A value that looks like a secret key is never stored (sources/contract.py SECRET_KEY_REGEX).
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS api_key VARCHAR;         -- the key's id, hash or alias, never the secret
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS user_id VARCHAR;         -- the caller's user
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS end_user_id VARCHAR;     -- the caller's own customer
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS project_id VARCHAR;      -- provider project or metadata.project_id
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS workspace_id VARCHAR;    -- provider workspace or metadata.workspace_id
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS session_id VARCHAR;      -- the conversation
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS trace_id VARCHAR;        -- OpenTelemetry trace id
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS span_id VARCHAR;         -- OpenTelemetry span id of the call
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS parent_span_id VARCHAR;  -- its parent span
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS agent_name VARCHAR;      -- nearest invoke_agent ancestor's gen_ai.agent.name
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS tags VARCHAR;            -- JSON object text {key: value}
