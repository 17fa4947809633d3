-- ops.ingested_files: the landed file's modification time (st_mtime_ns) when it was ingested.
-- With its size (bytes) and path (file) it lets the next run skip a file it already ingested
-- without reading or hashing it, so a nightly ingest does not grow with the history landed
-- (warehouse/ingest.py). NULL on rows ingested before this column existed (the next run that
-- reads such a file fills it in) and when the file changed while it was read.
ALTER TABLE ops.ingested_files ADD COLUMN IF NOT EXISTS file_mtime_ns BIGINT;
