-- Scalar macros shared by the SQL models (kept in the warehouse so BI users can use them too).

-- The name a model is matched by: lower case, no 'provider/' prefix, no trailing date suffix.
-- 'openai/o3-2025-04-16' -> 'o3'; 'claude-3-7-sonnet-20250219' -> 'claude-3-7-sonnet'.
CREATE OR REPLACE MACRO core.model_key(m) AS
    regexp_replace(regexp_replace(lower(trim(m)), '^.*/', ''), '(-[0-9]{4}-[0-9]{2}-[0-9]{2}|-[0-9]{8}|@[0-9]{8})$', '');

-- Exact USD for a token count at a price per million tokens: DECIMAL(38,15), no float.
CREATE OR REPLACE MACRO core.usd_for_tokens(tokens, usd_per_mtok) AS
    CAST(tokens AS DECIMAL(38,0)) * usd_per_mtok * CAST(0.000001 AS DECIMAL(38,6));

-- A call's tier from its thinking tokens and the thresholds in ops.settings.
CREATE OR REPLACE MACRO core.tier_of(thinking, medium_min, full_min) AS
    CASE WHEN thinking >= full_min THEN 'full' WHEN thinking >= medium_min THEN 'medium' ELSE 'fast' END;

-- Money as published: USD rounded to the micro-dollar.
CREATE OR REPLACE MACRO core.usd6(x) AS CAST(round(x, 6) AS DECIMAL(18,6));
