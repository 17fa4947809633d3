-- Issue 26: the per-call tables (the SQL tables whose header says '-- @storage: parquet') live as
-- day-partitioned Parquet files beside the published DuckDB file, written once and never changed;
-- the file holds views over the exact file set of its build (warehouse/parts.py).

-- grain: one row (or none: a connection that no build started keeps every table in the file).
CREATE TABLE IF NOT EXISTS ops.storage (
    parts_dir VARCHAR NOT NULL  -- absolute path of the folder of the Parquet parts (<warehouse stem>.parts)
);

-- grain: one row per Parquet file a published build listed (live) or a recent one still needs (retired).
CREATE TABLE IF NOT EXISTS ops.part_files (
    table_name  VARCHAR NOT NULL,  -- 'core.call_costs'
    day         DATE,              -- the value of the table's day key in every row of the file; NULL for the zero-row schema file
    path        VARCHAR NOT NULL,  -- relative to ops.storage.parts_dir: '<table>/<build id>/<key>=<day>/part_0.parquet'
    row_count   BIGINT NOT NULL,   -- rows in the file (its footer)
    bytes       BIGINT NOT NULL,   -- file size in bytes: a file of another size is damaged (checked at each run's start)
    build_id    VARCHAR NOT NULL,  -- the build that wrote it
    retired_by  VARCHAR,           -- the build whose views no longer list it (NULL: listed by the current build)
    PRIMARY KEY (path)
);

-- grain: one row per Parquet-stored table: its columns and their types as the SQL makes them (the
-- views cast the Parquet columns back to these, e.g. HUGEINT sums stored as DECIMAL(38,0)).
CREATE TABLE IF NOT EXISTS ops.part_tables (
    table_name   VARCHAR PRIMARY KEY,
    key_column   VARCHAR NOT NULL,                  -- the day column the files are partitioned by
    columns      STRUCT(name VARCHAR, type VARCHAR)[] NOT NULL,
    has_build_id BOOLEAN NOT NULL                   -- the view shows ops.settings.build_id in column build_id
);
