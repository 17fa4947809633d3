-- Issue 26: stg.requests (the calls as ingested, the largest table) lives as Parquet files too. A
-- staging table's rows are appended by each build and never rewritten, so its files have no day key:
-- the file holds a view over its files plus the physical table '<table>__pending' that this build's
-- ingest appends to, written out as one more file before publishing (warehouse/parts.py).
ALTER TABLE ops.part_tables ADD COLUMN IF NOT EXISTS kind VARCHAR DEFAULT 'table';  -- 'table' (a SQL table's day-partitioned files) or 'staging' (appended files)
ALTER TABLE ops.part_tables ALTER COLUMN key_column DROP NOT NULL;                 -- NULL for a staging table
