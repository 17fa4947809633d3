-- The model catalog in force: rows of the newest models.csv, with the config.json it names.
-- @kind: full
-- @grain: one row per model
WITH latest_file AS (
    SELECT max(file_id) AS file_id FROM stg.models
),
models AS (
    SELECT m.* EXCLUDE (file_id, line)
    FROM stg.models m JOIN latest_file USING (file_id)
    QUALIFY row_number() OVER (PARTITION BY m.model ORDER BY m.line DESC) = 1
),
configs AS (
    SELECT path, config_json
    FROM stg.model_configs
    QUALIFY row_number() OVER (PARTITION BY path ORDER BY file_id DESC) = 1
),
final AS (
    SELECT models.*, core.model_key(models.model) AS model_key, configs.config_json AS config_text
    FROM models LEFT JOIN configs ON configs.path = models.config_json
)
SELECT * FROM final
