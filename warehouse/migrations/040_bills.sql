-- What providers bill, as landed (landing/bills/**). Parsers: sources/bills_openai.py,
-- sources/bills_anthropic.py, sources/bills_focus.py. One staging table per export kind.
-- Timestamps are naive UTC. Money is parsed from the text with decimal.Decimal (never float):
-- API amounts are kept to 1e-12 USD (sub-micro precision; OpenAI values arrive as long floats,
-- Anthropic's in fractional cents), FOCUS amounts to 1e-10 of the billing currency.
-- Group-by columns of the API reports are NULL when the export was not grouped by them, so
-- natural-key comparisons must be NULL-safe (IS NOT DISTINCT FROM).

-- OpenAI Usage API, /v1/organization/usage/completions.
-- grain: one row per (bucket, project_id, user_id, api_key_id, model, batch, service_tier, api_source) result.
-- key: bucket_start, bucket_end + every group-by column.
CREATE TABLE IF NOT EXISTS stg.openai_usage (
    file_id              INTEGER NOT NULL,
    line                 BIGINT NOT NULL,      -- result number in the file (1-based)
    bucket_start         TIMESTAMP NOT NULL,   -- UTC, inclusive
    bucket_end           TIMESTAMP NOT NULL,   -- UTC, exclusive
    project_id           VARCHAR,
    user_id              VARCHAR,
    api_key_id           VARCHAR,
    model                VARCHAR,
    batch                BOOLEAN,
    service_tier         VARCHAR,
    api_source           VARCHAR,
    input_tokens         BIGINT NOT NULL,      -- includes input_cached_tokens
    input_cached_tokens  BIGINT NOT NULL,
    input_audio_tokens   BIGINT,               -- NULL: not reported
    output_tokens        BIGINT NOT NULL,      -- includes reasoning tokens
    output_audio_tokens  BIGINT,
    num_model_requests   BIGINT NOT NULL
);

-- OpenAI Costs API, /v1/organization/costs (amount.value as number or string).
-- grain: one row per (bucket, project_id, line_item) result.   key: bucket_start, bucket_end, project_id, line_item.
CREATE TABLE IF NOT EXISTS stg.openai_costs (
    file_id          INTEGER NOT NULL,
    line             BIGINT NOT NULL,
    bucket_start     TIMESTAMP NOT NULL,
    bucket_end       TIMESTAMP NOT NULL,
    project_id       VARCHAR,
    line_item        VARCHAR,              -- e.g. 'o3, input'
    amount           DECIMAL(38,12) NOT NULL,  -- in `currency`, major units
    currency         VARCHAR NOT NULL,     -- upper-case ISO 4217, e.g. 'USD'
    fx_usd_per_unit  DECIMAL(18,9) NOT NULL,   -- 1 for USD
    amount_usd       DECIMAL(38,12) NOT NULL
);

-- Anthropic Admin API, /v1/organizations/usage_report/messages.
-- grain: one row per (bucket, group-by values) result.   key: bucket_start, bucket_end + every group-by column.
CREATE TABLE IF NOT EXISTS stg.anthropic_usage (
    file_id                         INTEGER NOT NULL,
    line                            BIGINT NOT NULL,
    bucket_start                    TIMESTAMP NOT NULL,   -- starting_at, UTC
    bucket_end                      TIMESTAMP NOT NULL,   -- ending_at, UTC, exclusive
    workspace_id                    VARCHAR,
    api_key_id                      VARCHAR,
    model                           VARCHAR,
    service_tier                    VARCHAR,              -- 'standard', 'batch', 'priority', ...
    context_window                  VARCHAR,              -- '0-200k', '200k-1M'
    inference_geo                   VARCHAR,
    account_id                      VARCHAR,
    service_account_id              VARCHAR,
    speed                           VARCHAR,
    uncached_input_tokens           BIGINT NOT NULL,      -- excludes cache reads and writes
    cache_read_input_tokens         BIGINT NOT NULL,
    cache_creation_5m_tokens        BIGINT NOT NULL,      -- cache_creation.ephemeral_5m_input_tokens
    cache_creation_1h_tokens        BIGINT NOT NULL,      -- cache_creation.ephemeral_1h_input_tokens
    output_tokens                   BIGINT NOT NULL,      -- includes thinking
    web_search_requests             BIGINT NOT NULL       -- server_tool_use.web_search_requests
);

-- Anthropic Admin API, /v1/organizations/cost_report (amount: decimal string in CENTS).
-- grain: one row per (bucket, workspace_id, description, ...) result.
-- key: bucket_start, bucket_end, workspace_id, description, cost_type, token_type, model,
--      service_tier, context_window, inference_geo.
CREATE TABLE IF NOT EXISTS stg.anthropic_costs (
    file_id          INTEGER NOT NULL,
    line             BIGINT NOT NULL,
    bucket_start     TIMESTAMP NOT NULL,
    bucket_end       TIMESTAMP NOT NULL,
    workspace_id     VARCHAR,
    description      VARCHAR,
    cost_type        VARCHAR,              -- 'tokens', 'web_search', 'code_execution', ...
    token_type       VARCHAR,              -- 'uncached_input_tokens', 'output_tokens', 'cache_read_input_tokens', ...
    model            VARCHAR,
    service_tier     VARCHAR,
    context_window   VARCHAR,
    inference_geo    VARCHAR,
    amount           DECIMAL(38,12) NOT NULL,  -- in `currency`, major units (= cents / 100, exact)
    currency         VARCHAR NOT NULL,
    fx_usd_per_unit  DECIMAL(18,9) NOT NULL,
    amount_usd       DECIMAL(38,12) NOT NULL
);

-- FOCUS 1.x cost and usage exports (CSV), columns found by header name, snake_case here.
-- Money columns are converted to USD (BillingCurrency x fx_usd_per_unit; a file without a
-- BillingCurrency column is taken as USD). FOCUS has no line-item id: the key is the columns
-- that identify a charge, plus key_occurrence (1, 2, ... for lines of one file that share them).
-- grain: one row per FOCUS line.
-- key: billing_account_id, sub_account_id, billing_period_start, charge_period_start,
--      charge_period_end, charge_category, charge_class, charge_frequency, charge_description,
--      pricing_category, provider_name, service_name, sku_id, sku_price_id, sku_meter,
--      resource_id, region_id, availability_zone, commitment_discount_id,
--      commitment_discount_status, capacity_reservation_id, pricing_unit, consumed_unit,
--      key_occurrence.
CREATE TABLE IF NOT EXISTS stg.focus_costs (
    file_id                       INTEGER NOT NULL,
    line                          BIGINT NOT NULL,      -- physical line where the record starts
    billing_account_id            VARCHAR,
    billing_account_name          VARCHAR,
    sub_account_id                VARCHAR,
    sub_account_name              VARCHAR,
    billing_currency              VARCHAR NOT NULL,     -- as billed, upper-case
    fx_usd_per_unit               DECIMAL(18,9) NOT NULL,
    billing_period_start          TIMESTAMP,
    billing_period_end            TIMESTAMP,
    charge_period_start           TIMESTAMP NOT NULL,
    charge_period_end             TIMESTAMP NOT NULL,   -- exclusive
    charge_category               VARCHAR,              -- 'Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment' (ChargeType before 1.0)
    charge_class                  VARCHAR,              -- 'Correction' or NULL
    charge_frequency              VARCHAR,
    charge_description            VARCHAR,
    pricing_category              VARCHAR,
    billed_cost_usd               DECIMAL(38,10) NOT NULL,
    effective_cost_usd            DECIMAL(38,10),
    list_cost_usd                 DECIMAL(38,10),
    contracted_cost_usd           DECIMAL(38,10),
    list_unit_price_usd           DECIMAL(38,10),
    contracted_unit_price_usd     DECIMAL(38,10),
    pricing_quantity              DECIMAL(38,10),       -- in pricing_unit
    pricing_unit                  VARCHAR,              -- e.g. 'Hour', 'Token', '1M Tokens'
    consumed_quantity             DECIMAL(38,10),       -- in consumed_unit
    consumed_unit                 VARCHAR,
    provider_name                 VARCHAR,              -- ProviderName (ServiceProviderName in 1.3)
    publisher_name                VARCHAR,
    invoice_issuer_name           VARCHAR,
    invoice_id                    VARCHAR,
    service_name                  VARCHAR,
    service_category              VARCHAR,
    service_subcategory           VARCHAR,
    sku_id                        VARCHAR,
    sku_price_id                  VARCHAR,
    sku_meter                     VARCHAR,
    resource_id                   VARCHAR,
    resource_name                 VARCHAR,
    resource_type                 VARCHAR,
    region_id                     VARCHAR,
    region_name                   VARCHAR,
    availability_zone             VARCHAR,
    commitment_discount_id        VARCHAR,
    commitment_discount_name      VARCHAR,
    commitment_discount_category  VARCHAR,
    commitment_discount_type      VARCHAR,
    commitment_discount_status    VARCHAR,              -- 'Used', 'Unused'
    commitment_discount_quantity  DECIMAL(38,10),
    commitment_discount_unit      VARCHAR,
    capacity_reservation_id       VARCHAR,
    capacity_reservation_status   VARCHAR,
    tags_json                     VARCHAR,              -- the Tags column (a JSON object), as given
    key_occurrence                INTEGER NOT NULL
);
