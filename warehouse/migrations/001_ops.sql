-- Schemas and the bookkeeping tables every ingest writes.
-- All timestamps in the warehouse are naive TIMESTAMP in UTC.
CREATE SCHEMA IF NOT EXISTS ops;
CREATE SCHEMA IF NOT EXISTS stg;
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS marts;

-- grain: one row per landed file (by content: sha256). rows_in = rows_loaded + rows_duplicate + rows_quarantined.
CREATE TABLE IF NOT EXISTS ops.ingested_files (
    file_id          INTEGER PRIMARY KEY,
    file             VARCHAR NOT NULL,      -- path relative to the landing folder, as first seen
    sha256           VARCHAR NOT NULL UNIQUE,
    folder           VARCHAR NOT NULL,      -- landing sub-folder, e.g. 'prices/llm'
    format           VARCHAR,               -- detected format, e.g. 'litellm_json'; NULL if unreadable
    target_table     VARCHAR,               -- staging table the rows went to
    status           VARCHAR NOT NULL,      -- 'loaded' or 'unreadable' (whole file quarantined)
    rows_in          BIGINT NOT NULL,
    rows_loaded      BIGINT NOT NULL,
    rows_duplicate   BIGINT NOT NULL,
    rows_quarantined BIGINT NOT NULL,
    effective_from   DATE,                  -- price sheets: the date their prices take effect
    bytes            BIGINT NOT NULL,
    ingested_at      TIMESTAMP NOT NULL
);

-- grain: one row per rejected record (or per unreadable file, line NULL).
CREATE TABLE IF NOT EXISTS ops.quarantine (
    file_id        INTEGER NOT NULL,
    file           VARCHAR NOT NULL,
    line           BIGINT,
    field          VARCHAR,
    reason         VARCHAR NOT NULL,
    raw            VARCHAR,
    quarantined_at TIMESTAMP NOT NULL
);

-- grain: one row per thinktax run that reached publication.
CREATE TABLE IF NOT EXISTS ops.runs (
    build_id     VARCHAR PRIMARY KEY,
    started_at   TIMESTAMP NOT NULL,
    published_at TIMESTAMP,
    files_new    INTEGER,
    landing      VARCHAR
);

-- grain: one row per alert sent (or attempted).
CREATE TABLE IF NOT EXISTS ops.alerts (
    alert            VARCHAR NOT NULL,
    model            VARCHAR,
    fired_at         TIMESTAMP NOT NULL,
    window_spend_usd DECIMAL(18,6),
    threshold_usd    DECIMAL(18,6),
    delivered        BOOLEAN NOT NULL,
    message          VARCHAR
);
