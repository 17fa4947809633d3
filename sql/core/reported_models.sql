-- What each model name API calls report stands for (issue 24): the name as logged, resolved
-- through catalog/endpoints.csv (a Bedrock application-inference-profile or provisioned-model ARN,
-- an Azure deployment name, a Vertex AI endpoint, a proxy alias), else through the name itself (a
-- Bedrock foundation-model / inference-profile ARN is its model id: core.logged_model). The
-- provider is reduced to its canonical name (core.provider_key: aws.bedrock -> bedrock,
-- gcp.vertex_ai -> vertex_ai, azure.ai.openai -> azure). An endpoint row matches a call by its exact
-- endpoint text and the call's provider (any provider when the call reports none).
-- zone: the deployment's data zone or Bedrock cross-region profile ('eu', 'us', 'global', 'apac',
-- ...) from endpoints.csv, which picks the sheet entry of that zone (azure/eu/..., us.anthropic...).
-- billing: 'provisioned' when endpoints.csv says so, else 'on_demand'.
-- unresolved_reason: why the name can name no price (an ARN that endpoints.csv does not name).
-- @kind: full
-- @grain: one row per distinct (provider, model) reported by API calls
WITH reported AS (
    SELECT DISTINCT provider, model
    FROM stg.requests
    WHERE node_id IS NULL
),
endpoints AS (
    -- the catalog in force: the newest endpoints.csv, its last row per (provider, endpoint)
    SELECT e.provider, e.endpoint, e.model, e.sheet_provider, e.deployment_type, e.region, e.billing, e.line,
           core.provider_key(e.provider) AS provider_key
    FROM stg.endpoints e
    WHERE e.file_id = (SELECT max(file_id) FROM stg.endpoints)
    QUALIFY row_number() OVER (PARTITION BY core.provider_key(e.provider), e.endpoint ORDER BY e.line DESC) = 1
),
matched AS (
    SELECT r.provider AS reported_provider, r.model AS reported_model,
           core.provider_key(r.provider) AS provider_key,
           e.endpoint IS NOT NULL AS via_endpoint,
           e.provider_key AS endpoint_provider_key, e.model AS endpoint_model, e.sheet_provider, e.deployment_type,
           e.region, e.billing
    FROM reported r
    LEFT JOIN endpoints e
           ON e.endpoint = r.model AND (r.provider IS NULL OR e.provider_key = core.provider_key(r.provider))
    QUALIFY row_number() OVER (PARTITION BY r.provider, r.model ORDER BY e.provider_key, e.line) = 1
),
resolved AS (
    SELECT *,
           coalesce(provider_key, endpoint_provider_key) AS family,
           CASE deployment_type WHEN 'data_zone_eu' THEN 'eu' WHEN 'data_zone_us' THEN 'us'
                WHEN 'regional' THEN NULL ELSE deployment_type END AS zone,
           coalesce(endpoint_model, core.logged_model(reported_model)) AS named_model
    FROM matched
),
final AS (
    SELECT reported_provider, reported_model, family AS provider_key,
           -- a Bedrock model behind a cross-region profile: the profile's id (us.anthropic...)
           CASE WHEN family = 'bedrock' AND zone IS NOT NULL AND zone <> 'regional'
                     AND core.bedrock_base_model(named_model) = named_model
                THEN zone || '.' || named_model ELSE named_model END AS resolved_model,
           via_endpoint, sheet_provider, zone, region, coalesce(billing, 'on_demand') AS billing,
           CASE WHEN NOT via_endpoint AND starts_with(lower(reported_model), 'arn:') AND named_model = reported_model
                THEN 'an ARN that catalog/endpoints.csv does not name' END AS unresolved_reason
    FROM resolved
)
SELECT *, core.model_key(resolved_model) AS model_key FROM final
