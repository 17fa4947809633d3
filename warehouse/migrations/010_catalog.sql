-- Catalog snapshots (catalog/*.csv). The newest file of each kind is the catalog in force.
CREATE TABLE IF NOT EXISTS stg.models (
    file_id                  INTEGER NOT NULL,
    line                     BIGINT NOT NULL,
    model                    VARCHAR NOT NULL,
    family                   VARCHAR,
    reasoning                BOOLEAN,
    params_total_b           DOUBLE,   -- billions of parameters
    params_active_b          DOUBLE,   -- billions active per token (MoE)
    config_json              VARCHAR,  -- path relative to catalog/
    weights_gb_fp8           DOUBLE,   -- GB (10^9 bytes) at fp8
    kv_bytes_per_token_bf16  BIGINT    -- bytes/token at bf16 for models without config
);

CREATE TABLE IF NOT EXISTS stg.model_configs (
    file_id     INTEGER NOT NULL,
    line        BIGINT NOT NULL,
    path        VARCHAR NOT NULL,       -- path relative to catalog/, as models.csv names it
    config_json VARCHAR NOT NULL        -- the Hugging Face config.json text
);

CREATE TABLE IF NOT EXISTS stg.nodes (
    file_id          INTEGER NOT NULL,
    line             BIGINT NOT NULL,
    node_id          VARCHAR NOT NULL,
    provider         VARCHAR,
    gpu_type         VARCHAR NOT NULL,
    gpus             INTEGER NOT NULL,
    model            VARCHAR,
    precision        VARCHAR,
    usd_per_gpu_hour DECIMAL(18,6),     -- NULL: take the GPU price sheet in force
    active_from      TIMESTAMP NOT NULL,
    active_to        TIMESTAMP          -- exclusive; NULL: until the end of the latest day with data
);

CREATE TABLE IF NOT EXISTS stg.deployments (
    file_id          INTEGER NOT NULL,
    line             BIGINT NOT NULL,
    deployment       VARCHAR NOT NULL,
    model            VARCHAR NOT NULL,
    provider         VARCHAR,
    gpu_type         VARCHAR NOT NULL,
    gpus             INTEGER NOT NULL,
    precision        VARCHAR,
    gpu_mem_gb       DOUBLE,            -- per GPU, GB; NULL: from the GPU spec table
    calls_per_minute DOUBLE,            -- NULL: estimated (models/throughput)
    usd_per_gpu_hour DECIMAL(18,6)      -- NULL: newest on-demand GPU sheet price
);
