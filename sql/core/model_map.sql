-- Which price-sheet models each reported API model may be costed at, best first.
-- Rule (deterministic): same model_key (lower case, no provider/ prefix, no date suffix) and the
-- call's provider (or the prefix of its model name) when it has one; candidates are ranked: the
-- exact name, then a sheet name without prefix, then the undated name, then the shortest. A call
-- takes the best-ranked candidate that has a price in force at its time (core.calls).
-- @kind: full
-- @grain: one row per distinct (provider, model) reported by API calls x candidate sheet model (one
--   row with NULL price_model where nothing matches).
WITH reported AS (
    SELECT DISTINCT provider, model
    FROM stg.requests
    WHERE node_id IS NULL
),
sheet AS (
    SELECT DISTINCT provider, model, model_key
    FROM core.llm_price_versions
    WHERE price_kind = 'standard'
),
candidates AS (
    SELECT r.provider AS reported_provider, r.model AS reported_model,
           s.provider AS price_provider, s.model AS price_model,
           row_number() OVER (
               PARTITION BY r.provider, r.model
               ORDER BY (s.model = r.model) DESC, (lower(s.model) = lower(r.model)) DESC,
                        (s.model LIKE '%/%'), (s.model = s.model_key) DESC, length(s.model), s.provider, s.model
           ) AS preference
    FROM reported r
    JOIN sheet s
      ON s.model_key = core.model_key(r.model)
     AND s.provider = coalesce(r.provider,
                               CASE WHEN r.model LIKE '%/%' THEN lower(split_part(r.model, '/', 1)) END,
                               s.provider)
),
final AS (
    SELECT r.provider AS reported_provider, r.model AS reported_model,
           c.price_provider, c.price_model, c.preference
    FROM reported r
    LEFT JOIN candidates c
      ON c.reported_provider IS NOT DISTINCT FROM r.provider AND c.reported_model = r.model
)
SELECT * FROM final
