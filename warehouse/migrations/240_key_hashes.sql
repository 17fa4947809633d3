-- Issue 26 item 4: each Parquet file of stg.requests carries the hash of its rows' natural key
-- (column _key_hash, not shown by the view), so that a night's de-duplication reads one 8-byte
-- column of the history instead of hashing every stored request id (2.0 s -> 0.2 s at 32M calls).
-- DuckDB's hash() may change between versions: a file's hashes are used only when this names the
-- running DuckDB's; any other file's keys are hashed again from the key column (warehouse/parts.py).
ALTER TABLE ops.part_files ADD COLUMN IF NOT EXISTS key_hash VARCHAR;  -- a file of stg.requests: the function its _key_hash column holds ('hash(request_id) duckdb <version>'); NULL: no such column (files of per-call tables, or written before this migration)
