-- What a proxy or gateway itself charged for a call, kept beside thinktax's own cost of it
-- (issue 15). Filled from the LiteLLM proxy's spend logs (telemetry/litellm_spendlogs/, landed by
-- `thinktax fetch-spendlogs`): LiteLLM_SpendLogs.spend. One row per call loaded into stg.requests
-- from the same file (warehouse/ingest.py writes both in one transaction), so a call is never
-- reported twice. marts.cost_crosscheck compares the two.
-- grain: one row per request_id.
CREATE TABLE IF NOT EXISTS stg.reported_costs (
    file_id            INTEGER NOT NULL,
    line               BIGINT NOT NULL,
    request_id         VARCHAR NOT NULL,
    reporter           VARCHAR NOT NULL,        -- who computed it: 'litellm'
    reported_cost_usd  DECIMAL(38,12) NOT NULL  -- USD, as the reporter stored it (LiteLLM: spend)
);
