-- Which price-sheet models each reported API model may be costed at, best first.
-- Rule (deterministic): the reported name is first resolved (core.reported_models: endpoints.csv,
-- Bedrock ARNs, the canonical provider). A sheet entry is a candidate when it has the same
-- model_key (lower case, no provider/ prefix, no date suffix) and the same canonical provider
-- (core.provider_key: a Bedrock call is priced from the sheet's 'bedrock' and 'bedrock_converse'
-- entries, a Vertex AI call from 'vertex_ai-*', an Azure call from 'azure' and 'azure_ai'; Vertex
-- AI and the Gemini API price a Gemini model each from the other's entries when their own has
-- none); a call without a provider takes the prefix of its model name (openai/o3), else any
-- provider. A Bedrock id with a cross-region profile prefix (us., eu., global., ...) is priced at
-- that exact id when the sheet has it (the us. profile costs more than global.), else at the id
-- without the prefix (a name without its vendor, 'claude-sonnet-4-5-20250929-v1:0' as OpenLLMetry's
-- Bedrock spans report it, at the in-region entry of that model); the sheet's region-path entries (bedrock/us-gov-east-1/...) only for a call
-- whose endpoints.csv region is that region. Candidates are ranked: the sheet provider endpoints.csv
-- names, the call's own provider before the Gemini/Vertex fallback, the exact name, the same
-- model key before a Bedrock id without its profile prefix, then (Azure) the entry of the deployment's data zone
-- (azure/eu/...) before the zone-less one before other zones, a sheet name without prefix, the
-- undated name (o3-2025-04-16 on Azure: azure/o3), the shortest. A call takes the best-ranked candidate with a price in force at its
-- time (core.call_costs).
-- @kind: full
-- @grain: one row per distinct (provider, model) reported by API calls x candidate sheet model (one
--   row with NULL price_model where nothing matches).
WITH reported AS (
    SELECT reported_provider, reported_model, provider_key, resolved_model, model_key, sheet_provider, zone, region,
           CASE WHEN provider_key IS NULL AND reported_model LIKE '%/%'
                THEN core.provider_key(split_part(reported_model, '/', 1)) ELSE provider_key END AS family
    FROM core.reported_models
),
sheet AS (
    SELECT DISTINCT provider, model, model_key, core.provider_key(provider) AS family,
           regexp_extract(model, '^bedrock/([a-z]{2}(-gov)?-[a-z]+-[0-9]+)/', 1) AS sheet_region,
           regexp_extract(model, '^azure/(eu|us)/', 1) AS sheet_zone
    FROM core.llm_price_versions
    WHERE price_kind = 'standard'
),
candidates AS (
    SELECT r.reported_provider, r.reported_model,
           s.provider AS price_provider, s.model AS price_model,
           row_number() OVER (
               PARTITION BY r.reported_provider, r.reported_model
               ORDER BY (r.sheet_provider IS NOT NULL AND s.provider <> r.sheet_provider),
                        (r.family IS NOT NULL AND s.family <> r.family),
                        (s.model = r.resolved_model) DESC, (lower(s.model) = lower(r.resolved_model)) DESC,
                        (s.model_key = r.model_key) DESC,
                        (s.model_key = core.bedrock_base_model(r.model_key)) DESC,
                        -- a Bedrock name without its vendor (OpenLLMetry's spans): the in-region entry
                        (core.bedrock_base_model(s.model_key) = s.model_key) DESC,
                        (s.model LIKE '%/%'),
                        CASE WHEN s.sheet_zone = '' THEN 1 WHEN s.sheet_zone = r.zone THEN 0 ELSE 2 END,
                        (s.model = s.model_key) DESC, length(s.model), s.provider, s.model
           ) AS preference
    FROM reported r
    JOIN sheet s
      ON (s.model_key = r.model_key
          OR (r.family = 'bedrock' AND s.model_key = core.bedrock_base_model(r.model_key))
          OR (r.family = 'bedrock' AND core.bedrock_base_model(r.model_key) = core.bedrock_model_name(r.model_key)
              AND core.bedrock_model_name(s.model_key) = r.model_key))
     AND (r.family IS NULL OR s.family = r.family
          OR (r.family IN ('vertex_ai', 'gemini') AND s.family IN ('vertex_ai', 'gemini')))
     AND (s.sheet_region = '' OR s.sheet_region = r.region)
),
final AS (
    SELECT r.reported_provider, r.reported_model,
           c.price_provider, c.price_model, c.preference
    FROM reported r
    LEFT JOIN candidates c
      ON c.reported_provider IS NOT DISTINCT FROM r.reported_provider AND c.reported_model = r.reported_model
)
SELECT * FROM final
