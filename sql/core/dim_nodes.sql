-- Self-hosted nodes in force: rows of the newest nodes.csv.
-- @kind: full
-- @grain: one row per node_id
WITH latest_file AS (
    SELECT max(file_id) AS file_id FROM stg.nodes
),
final AS (
    SELECT n.* EXCLUDE (file_id, line), core.model_key(n.model) AS model_key
    FROM stg.nodes n JOIN latest_file USING (file_id)
    QUALIFY row_number() OVER (PARTITION BY n.node_id ORDER BY n.line DESC) = 1
)
SELECT * FROM final
