-- Calls as providers really send them (issue 24): Amazon Bedrock, Vertex AI / Gemini, Azure OpenAI.

-- How a call is paid when the provider reports it: 'provisioned' (Gemini / Vertex AI
-- usageMetadata.trafficType = PROVISIONED_THROUGHPUT: the reservation pays, not the tokens);
-- NULL = on demand or not reported (so that a call loaded before this column existed and the
-- same call re-exported now are one row).
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS billing VARCHAR;

-- catalog/endpoints.csv: what a log names instead of a model -> the model and price entry.
CREATE TABLE IF NOT EXISTS stg.endpoints (
    file_id         INTEGER NOT NULL,
    line            BIGINT NOT NULL,
    provider        VARCHAR NOT NULL,  -- as logged, lower case
    endpoint        VARCHAR NOT NULL,  -- exactly what the log's model field holds
    model           VARCHAR NOT NULL,  -- the model served, as the price sheet names it
    sheet_provider  VARCHAR,           -- the sheet provider to price it from; NULL = any of the provider's
    deployment_type VARCHAR,           -- global, data_zone_eu, data_zone_us, regional; Bedrock profile prefix
    region          VARCHAR,           -- cloud region, lower case
    billing         VARCHAR NOT NULL   -- on_demand or provisioned
);

-- The canonical provider a name stands for: the aliases SDKs, proxies, the OpenTelemetry GenAI
-- conventions (gen_ai.provider.name) and LiteLLM's sheet (litellm_provider) use for one cloud
-- service. 'bedrock_converse' (LiteLLM's Converse entries) and 'aws.bedrock' are Bedrock;
-- 'vertex_ai-language-models', 'vertex_ai-anthropic_models', ... are Vertex AI; 'azure_ai'
-- (Foundry models) and 'azure.ai.openai' are Azure. Any other name: lower case, trimmed.
CREATE OR REPLACE MACRO core.provider_key(p) AS
    CASE
        WHEN lower(trim(p)) IN ('bedrock', 'aws.bedrock', 'amazon-bedrock', 'amazon_bedrock', 'aws_bedrock',
                                'bedrock_converse', 'amazon bedrock') THEN 'bedrock'
        WHEN lower(trim(p)) IN ('vertex_ai', 'vertex', 'vertexai', 'google_vertex', 'google-vertex', 'gcp.vertex_ai',
                                'gcp.gemini', 'google', 'vertex ai')
             OR starts_with(lower(trim(p)), 'vertex_ai-') THEN 'vertex_ai'
        WHEN lower(trim(p)) IN ('gemini', 'google-gla', 'google_ai_studio', 'gcp.gen_ai') THEN 'gemini'
        WHEN lower(trim(p)) IN ('azure', 'azure_openai', 'azure-openai', 'azure.ai.openai', 'azure_ai',
                                'azure.ai.inference', 'azure openai') THEN 'azure'
        ELSE nullif(lower(trim(p)), '')
    END;

-- The model a logged name stands for before any catalog lookup: a Bedrock foundation-model or
-- (system-defined) inference-profile ARN is its model / profile id
-- ('arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0'
-- -> 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'); any other name as logged. Other ARNs
-- (application inference profiles, provisioned models, custom models) name no model: only
-- catalog/endpoints.csv resolves them.
CREATE OR REPLACE MACRO core.logged_model(m) AS
    CASE WHEN regexp_matches(m, '^arn:aws[a-z-]*:bedrock:[^:]*:[^:]*:(foundation-model|inference-profile)/.+$')
         THEN regexp_extract(m, '/([^/]+)$', 1)
         ELSE m END;

-- A Bedrock model id without its cross-region inference-profile prefix ('us.', 'eu.', 'apac.',
-- 'jp.', 'au.', 'global.', 'us-gov.', 'ca.'): 'us.anthropic.claude-...' -> 'anthropic.claude-...'.
CREATE OR REPLACE MACRO core.bedrock_base_model(m) AS
    regexp_replace(m, '^(us|eu|apac|jp|au|global|us-gov|ca|sa|me|mx)[.]', '');

-- A Bedrock model name without profile prefix and vendor: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
-- -> 'claude-sonnet-4-5-20250929-v1:0' (the name OpenLLMetry's Bedrock spans report).
-- (The Spark renderer inlines macros called inside a macro too: warehouse/spark/render.py.)
CREATE OR REPLACE MACRO core.bedrock_model_name(m) AS
    regexp_replace(m, '^((us|eu|apac|jp|au|global|us-gov|ca|sa|me|mx)[.])?'
                      || '(anthropic|amazon|meta|mistral|cohere|ai21|deepseek|openai|qwen|writer|twelvelabs|stability|luma|moonshot|minimax|google|nvidia)[.]', '');
