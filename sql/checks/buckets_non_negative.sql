-- Token buckets are non-overlapping counts: none may be negative. Returns offending calls.
-- asset: core.call_costs
-- One branch per bucket, each a single comparison, so that the scan skips every Parquet row group
-- (and DuckDB zone) whose minimum is not negative: the check reads the files' statistics, not every
-- call of the history, each night. UNION: a call with several negative buckets is returned once.
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs WHERE uncached_input_tokens < 0
UNION
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs WHERE cached_input_tokens < 0
UNION
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs WHERE cache_write_tokens < 0
UNION
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs WHERE thinking_tokens < 0
UNION
SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens
FROM core.call_costs WHERE output_tokens < 0
