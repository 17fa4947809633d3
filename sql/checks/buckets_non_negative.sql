-- Token buckets are non-overlapping counts: none may be negative. Returns offending calls.
-- asset: core.call_costs
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs
WHERE uncached_input_tokens < 0 OR cached_input_tokens < 0 OR cache_write_tokens < 0
   OR thinking_tokens < 0 OR output_tokens < 0
