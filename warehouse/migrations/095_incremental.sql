-- Incremental rebuilds (warehouse/incremental.py): what each SQL model was last built from, and
-- the plan of the current build.

-- grain: one row per SQL model (core.* / marts.* table).
CREATE TABLE IF NOT EXISTS ops.model_builds (
    table_name      VARCHAR PRIMARY KEY,
    sql_sha256      VARCHAR NOT NULL,   -- sha256 of the model's SQL file when it was built
    settings_sha256 VARCHAR NOT NULL,   -- sha256 of ops.settings (without build_id) when it was built
    mode            VARCHAR NOT NULL,   -- 'full' (whole table recreated) or 'incremental' (days replaced)
    days            INTEGER,            -- incremental: how many days were replaced
    build_id        VARCHAR,            -- the run that built it
    built_at        TIMESTAMP NOT NULL
);

-- grain: one row, the plan of the build in this file (replaced by each run).
CREATE TABLE IF NOT EXISTS ops.build_scope (
    build_id     VARCHAR,
    full_rebuild BOOLEAN NOT NULL,      -- every model rebuilt whole
    reason       VARCHAR NOT NULL,      -- why full, or 'incremental'
    days         DATE[],                -- incremental: the UTC days every incremental model replaces
    halo_days    INTEGER NOT NULL,      -- days a self-hosted call interval can reach back (latency)
    full_tables  VARCHAR[],             -- models rebuilt whole anyway (SQL changed, table missing, downstream)
    planned_at   TIMESTAMP NOT NULL
);

-- In the warehouse these are always TRUE, so a model's SQL runs as written (e.g. in a DuckDB
-- shell); when thinktax builds a model it replaces them with the days of the build.
CREATE OR REPLACE MACRO core.in_build_days(d) AS TRUE;
CREATE OR REPLACE MACRO core.in_build_context(d) AS TRUE;
CREATE OR REPLACE MACRO core.in_build_months(m) AS TRUE;
