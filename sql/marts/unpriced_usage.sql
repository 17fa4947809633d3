-- Usage thinktax could not price, so it is never silently costed at $0. field names what in the
-- record could not be priced ('model' for an API call, 'node_id' for a self-hosted one, the usage
-- column of a non-text part without a price, e.g. 'audio_input_tokens' -- issue 44);
-- first_file_id / first_line point at the first such record (ops.ingested_files names the file;
-- NULL for node-hours, which come from nodes.csv and the GPU sheets). reason 'partially_priced': the
-- calls were priced, but their record carries a token count (field: its path) that no price covers.
-- @kind: full
-- @grain: one row per (serving, provider, reported model, node, reason, field).
WITH resolution AS (
    SELECT reported_provider, reported_model, unresolved_reason, provider_key FROM core.reported_models
),
calls AS (
    SELECT c.serving, c.provider, c.reported_model, c.node_id, c.ts, c.request_id,
           CASE WHEN c.serving = 'api' THEN 'model' ELSE 'node_id' END AS field,
           CASE
               WHEN c.serving = 'api' AND c.price_model IS NULL AND m.unresolved_reason IS NOT NULL THEN m.unresolved_reason
               WHEN c.serving = 'api' AND c.price_model IS NULL AND m.provider_key = 'azure'
                   THEN 'no price sheet names this model (an Azure deployment name? map it to its model in catalog/endpoints.csv)'
               WHEN c.serving = 'api' AND c.price_model IS NULL THEN 'no price sheet names this model'
               WHEN c.serving = 'api' THEN 'no price in force at the call time'
               WHEN NOT c.node_known THEN 'node not in nodes.csv'
               ELSE 'node has no GPU price for this hour (or the call is outside its active period)'
           END AS reason
    FROM core.call_costs c
    LEFT JOIN resolution m
           ON c.serving = 'api' AND m.reported_provider IS NOT DISTINCT FROM c.reported_provider
          AND m.reported_model = c.reported_model
    WHERE c.unpriced
),
modalities AS (
    -- issue 44: a priced call whose non-text part has no price on the sheet: one row per part, field =
    -- the stg.requests column of the unpriced usage (that part is left out of cost_usd, never priced at
    -- the text rate)
    SELECT serving, provider, reported_model, node_id, ts, request_id, field,
           CASE field WHEN 'output_images' THEN 'no per-image price on the sheet'
                      WHEN 'output_video_seconds' THEN 'no per-second video price on the sheet'
                      ELSE 'no ' || replace(replace(field, '_tokens', ''), '_', ' ') || ' price on the sheet' END AS reason
    FROM (SELECT c.serving, c.provider, c.reported_model, c.node_id, c.ts, c.request_id,
                 unnest(string_split(c.unpriced_modalities, ', ')) AS field
          FROM core.call_costs c
          WHERE c.unpriced_modalities IS NOT NULL)
),
node_hours AS (
    SELECT 'self_hosted' AS serving, provider, model AS reported_model, node_id, hour AS ts,
           CAST(NULL AS VARCHAR) AS request_id, 'node_id' AS field,
           'node-hour without a GPU price (nodes.csv or GPU sheet)' AS reason
    FROM core.node_hours_cost
    WHERE cost_micro_usd IS NULL
),
-- issue 44, the unknown-field guard: a call whose record carries a token-looking key its parser does
-- not read, with a non-zero value (ops.unknown_field_lines; ops.unknown_fields has the file's paths),
-- is priced without those tokens. reason 'partially_priced', field = the key's path.
partially_priced AS (
    SELECT c.serving, c.provider, c.reported_model, c.node_id, c.ts, c.request_id,
           u.path AS field, 'partially_priced' AS reason
    FROM ops.unknown_field_lines u
    JOIN stg.requests r ON r.file_id = u.file_id AND r.line = u.line
                       AND (u.request_id IS NULL OR r.request_id = u.request_id)
    JOIN core.call_costs c ON c.request_id = r.request_id
),
grouped AS (
    SELECT serving, provider, reported_model, node_id, reason, field,
           count(*) AS calls_or_hours, min(ts) AS first_seen, max(ts) AS last_seen,
           arg_min(request_id, (ts, request_id)) AS first_request_id
    FROM (SELECT * FROM calls UNION ALL SELECT * FROM modalities UNION ALL SELECT * FROM node_hours
          UNION ALL SELECT serving, provider, reported_model, node_id, ts, request_id, field, reason FROM partially_priced)
    GROUP BY ALL
),
final AS (
    SELECT g.serving, g.provider, g.reported_model, g.node_id, g.reason,
           g.calls_or_hours, g.first_seen, g.last_seen, g.field,
           r.file_id AS first_file_id, r.line AS first_line
    FROM grouped g
    LEFT JOIN stg.requests r ON r.request_id = g.first_request_id
)
-- build_id: the run that built this table (ops.settings), the same in every mart of one snapshot.
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
