-- Issue 26: stg.requests (the calls as ingested, the largest table) lives as Parquet files too. A
-- staging table's rows are appended by each build and never rewritten, so its files have no day key:
-- the file holds a view over its files (and, while a build ingests, over the physical table
-- '<table>__pending' it appends to, written out as one more file and dropped: warehouse/parts.py).
ALTER TABLE ops.part_tables ADD COLUMN IF NOT EXISTS kind VARCHAR DEFAULT 'table';  -- 'table' (a SQL table's day-partitioned files) or 'staging' (appended files)
ALTER TABLE ops.part_tables ALTER COLUMN key_column DROP NOT NULL;                 -- NULL for a staging table
ALTER TABLE ops.part_tables ADD COLUMN IF NOT EXISTS ddl VARCHAR;  -- a staging table: the CREATE TABLE of its pending table (made again by each build)
