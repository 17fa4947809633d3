-- Issue 42: catalog/anomaly_feedback.csv, a known change of a series of marts.spend_anomalies
-- (scope, scope_value, from, to, label); the newest file is the feedback in force.
CREATE TABLE IF NOT EXISTS stg.anomaly_feedback (
    file_id     INTEGER NOT NULL,
    line        BIGINT NOT NULL,
    scope       VARCHAR NOT NULL,   -- all, team, model, task_type
    scope_value VARCHAR NOT NULL,   -- '*' for scope all
    from_day    DATE NOT NULL,      -- the CSV's from: first UTC day covered
    to_day      DATE NOT NULL,      -- the CSV's to: last UTC day covered (inclusive)
    label       VARCHAR NOT NULL    -- planned or not_anomaly
);
