-- Candidate self-host set-ups in force: rows of the newest deployments.csv.
-- @kind: full
-- @grain: one row per deployment
WITH latest_file AS (
    SELECT max(file_id) AS file_id FROM stg.deployments
),
final AS (
    SELECT d.* EXCLUDE (file_id, line), core.model_key(d.model) AS model_key
    FROM stg.deployments d JOIN latest_file USING (file_id)
    QUALIFY row_number() OVER (PARTITION BY d.deployment ORDER BY d.line DESC) = 1
)
SELECT * FROM final
