-- Pricing modifiers of a call (issue 14): what the provider reports about how a call was served,
-- beyond its token buckets. Every column is nullable, so a parser that does not know a modifier
-- leaves it NULL and the call is priced as before (standard tier, no uplift, no fee).
--   service_tier            the processing tier the provider REPORTS (not the one requested),
--                           normalised: 'standard' (from default/auto/standard), 'flex', 'priority',
--                           'scale', 'batch'; NULL = not reported (priced as standard)
--   is_batch                made through a batch API (request line "batch": true, an OpenAI Batch
--                           output file, an Anthropic Message Batches results file); NULL = false
--   cache_write_1h_tokens   OF cache_write_tokens, the ones written with a 1-hour TTL (Anthropic
--                           usage.cache_creation.ephemeral_1h_input_tokens); a part of the
--                           cache-write bucket, not a sixth bucket; NULL = 0
--   processing_region       lower-case region the call was processed in (usage.inference_geo,
--                           top-level region / data_residency), e.g. 'us', 'eu'; NULL = not reported
--   web_search_requests     web searches billed per query (Anthropic usage.server_tool_use.
--                           web_search_requests, OpenAI web_search_call output items); NULL = 0
--   web_search_context_size OpenAI search_context_size of the web-search tool: 'low', 'medium',
--                           'high'; NULL = medium (OpenAI's default)
-- usage_shape gains the value 'gemini' (Gemini usageMetadata).
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS service_tier VARCHAR;
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS is_batch BOOLEAN;
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS cache_write_1h_tokens BIGINT;
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS processing_region VARCHAR;
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS web_search_requests BIGINT;
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS web_search_context_size VARCHAR;

-- Price sheets: the 1-hour cache-write price and a per-request fee (USD per request, e.g. one web
-- search query) as columns of a price kind. NULL: not given (1-hour write = 2 x the input price,
-- Anthropic's published multiplier; no fee).
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS cache_write_1h_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS usd_per_request_fee DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS web_search_usd_per_query_low DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS web_search_usd_per_query_high DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS regional_uplift_eu DECIMAL(9,6);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS regional_uplift_us DECIMAL(9,6);
