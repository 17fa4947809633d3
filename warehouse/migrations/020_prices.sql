-- Price sheets as landed. History (effective_from/effective_to) is built in core.
-- grain: one row per (provider, model, price_kind) per sheet.
CREATE TABLE IF NOT EXISTS stg.llm_prices (
    file_id                    INTEGER NOT NULL,
    line                       BIGINT NOT NULL,
    provider                   VARCHAR NOT NULL,   -- lower-case, e.g. 'openai', 'anthropic', 'deepseek'
    model                      VARCHAR NOT NULL,   -- as the sheet names it, e.g. 'o3', 'deepseek/deepseek-reasoner'
    price_kind                 VARCHAR NOT NULL,   -- 'standard', 'batch', 'priority', 'flex', 'above_200k_tokens', ...
    effective_from             DATE NOT NULL,
    input_usd_per_mtok         DECIMAL(18,9),      -- USD per 1,000,000 tokens
    cached_input_usd_per_mtok  DECIMAL(18,9),      -- NULL: the input price
    cache_write_usd_per_mtok   DECIMAL(18,9),      -- NULL: the input price
    output_usd_per_mtok        DECIMAL(18,9),
    reasoning_usd_per_mtok     DECIMAL(18,9),      -- NULL: the output price
    currency                   VARCHAR NOT NULL,   -- 'USD' (after FX)
    supports_reasoning         BOOLEAN,
    source_format              VARCHAR NOT NULL    -- 'litellm_json', 'openrouter_json', 'thinktax_csv'
);

-- grain: one row per (provider, gpu_type, gpus_per_node, pricing, region, instance_type) per sheet.
CREATE TABLE IF NOT EXISTS stg.gpu_prices (
    file_id          INTEGER NOT NULL,
    line             BIGINT NOT NULL,
    provider         VARCHAR NOT NULL,   -- lower-case cloud, e.g. 'nebius', 'gcp', 'lambda'
    gpu_type         VARCHAR NOT NULL,   -- as the sheet names it, e.g. 'H100', 'A100-80GB'
    gpus_per_node    INTEGER,
    usd_per_gpu_hour DECIMAL(18,6) NOT NULL,
    pricing          VARCHAR NOT NULL,   -- 'on_demand', 'reserved', 'spot'
    region           VARCHAR,
    instance_type    VARCHAR,            -- NULL for attachment-only prices (GCP accelerators)
    effective_from   DATE NOT NULL,
    source_format    VARCHAR NOT NULL    -- 'skypilot_csv', 'thinktax_gpu_csv'
);
