-- The cloud invoice (issue 25): the AI lines of AWS CUR 2.0, Azure cost details and the GCP billing
-- export, one staging table for the three clouds (sources/bills_cloud.py).

-- AI lines of cloud invoices: AWS Data Exports CUR 2.0 (bills/aws/), Azure Cost Management cost details (bills/azure/), GCP Cloud Billing export (bills/gcp/); non-AI lines are counted (ops.ingested_files.rows_skipped), not kept. grain: one row per invoice line.
CREATE TABLE IF NOT EXISTS stg.cloud_bill_lines (
    file_id             INTEGER NOT NULL,  -- ops.ingested_files.file_id of the file the row came from
    line                BIGINT NOT NULL,  -- 1-based line of the record in its file (record number for JSON documents)
    cloud               VARCHAR NOT NULL,  -- 'aws', 'azure' or 'gcp': the export it came from
    provider            VARCHAR NOT NULL,  -- canonical provider (core.provider_key): 'bedrock', 'azure', 'vertex_ai', 'gemini'
    billing_period      DATE,  -- first day of the billing month (bill_billing_period_start_date, BillingPeriodStartDate, invoice.month), else the usage month
    invoice_id          VARCHAR,  -- bill_invoice_id / InvoiceId / invoice.month
    account_id          VARCHAR,  -- AWS usage account, Azure subscription, GCP project id
    usage_start         TIMESTAMP NOT NULL,  -- naive UTC
    usage_end           TIMESTAMP NOT NULL,  -- naive UTC, exclusive (= usage_start + 1 day for Azure's daily Date)
    charge_type         VARCHAR NOT NULL,  -- as written: line_item_line_item_type, ChargeType, cost_type
    charge_kind         VARCHAR NOT NULL,  -- normalised: usage, commitment, credit, discount, tax, refund, rounding, fee, other
    pricing_model       VARCHAR,  -- Azure PricingModel (OnDemand, Reservation, ...); AWS pricing term
    service             VARCHAR NOT NULL,  -- line_item_product_code, MeterCategory, service.description
    sku                 VARCHAR NOT NULL,  -- line_item_usage_type, MeterName, sku.description: what the rules read
    sku_id              VARCHAR,  -- GCP sku.id, Azure MeterSubCategory / ProductName, AWS line_item_operation
    operation           VARCHAR,  -- line_item_operation
    region              VARCHAR,  -- product_region_code, ResourceLocation, location.region (lower case)
    resource_id         VARCHAR,  -- line_item_resource_id, ResourceId
    principal           VARCHAR,  -- line_item_iam_principal (CUR 2.0, when exported)
    tags_json           VARCHAR,  -- resource_tags / Tags / labels as a JSON object
    quantity            DECIMAL(38,10),  -- as billed, in `unit`
    unit                VARCHAR,  -- pricing_unit, UnitOfMeasure, usage.unit, as written
    tokens              DECIMAL(38,0),  -- tokens the line bills: quantity x the unit (thousands, 1K, 1M, count); NULL when the line bills no tokens
    cost                DECIMAL(38,10) NOT NULL,  -- line_item_unblended_cost, CostInBillingCurrency, cost: in `currency`, gross of credits and discounts
    currency            VARCHAR NOT NULL,  -- upper-case ISO 4217
    fx_usd_per_unit     DECIMAL(18,9) NOT NULL,  -- USD per unit of currency; 1 for USD
    cost_usd            DECIMAL(38,10) NOT NULL,  -- cost in USD
    net_cost_usd        DECIMAL(38,10),  -- line_item_net_unblended_cost (AWS), cost + credits (GCP), in USD
    credits_usd         DECIMAL(38,10),  -- GCP: the line's credits (negative), in USD
    model               VARCHAR,  -- the model family the rule read, as core.cloud_model_key spells it ('claude-sonnet-4-6', 'gpt-4o', 'gemini-2.5-pro'); NULL when unattributed
    bucket              VARCHAR,  -- token bucket: input, output, cache_read, cache_write, cache_write_1h, cache_storage, provisioned; NULL for credits, tax, unattributed
    tier                VARCHAR,  -- standard, batch, priority, flex, provisioned
    deployment_type     VARCHAR,  -- AWS: in_region, cross_region, cross_region_global; Azure: global, data_zone, regional; GCP: NULL
    long_context        BOOLEAN,  -- the SKU is the long-context (>200K) price
    rule                VARCHAR NOT NULL,  -- the rule that read the line (sources/bills_cloud.py RULES), or 'unattributed'
    unattributed_reason VARCHAR,  -- why no rule read an AI line (its money stays in the totals)
    team                VARCHAR,  -- [cloud] team_tag of the line's tags / labels
    key_occurrence      INTEGER NOT NULL  -- 1, 2, ... for lines of one file that share the other key columns
);

-- A cloud export holds millions of lines that are not AI: they are counted, not quarantined.
-- rows_in = rows_loaded + rows_duplicate + rows_quarantined + rows_skipped (NULL before this
-- migration: 0).
ALTER TABLE ops.ingested_files ADD COLUMN IF NOT EXISTS rows_skipped BIGINT DEFAULT 0;
-- The export a file is one part of, for one billing month ('<cloud>|<month>|<path with run ids
-- as *>'): a later file with the same export_key is a re-issue and replaces it as a whole.
ALTER TABLE ops.ingested_files ADD COLUMN IF NOT EXISTS export_key VARCHAR;
-- The file_id of the re-issued export that replaced this file's rows (its rows moved to
-- ops.replaced_cloud_bill_lines); NULL while the file's rows are the ones in force.
ALTER TABLE ops.ingested_files ADD COLUMN IF NOT EXISTS replaced_by_file_id INTEGER;

-- grain: one row per cloud invoice line that a re-issued export replaced: the row as it was in
-- stg.cloud_bill_lines, and the file that replaced it. Nothing is lost; nothing counts twice.
CREATE TABLE IF NOT EXISTS ops.replaced_cloud_bill_lines AS
    SELECT *, CAST(NULL AS INTEGER) AS replaced_by_file_id, CAST(NULL AS TIMESTAMP) AS replaced_at
    FROM stg.cloud_bill_lines WHERE false;

-- A cloud invoice's model name and a call's model as one family key: no profile prefix
-- ('us.', 'global.'), no vendor ('anthropic.', 'openai.', 'google/'), no version or date
-- ('-v1:0', '-20250929', '@20250929', '-001'), lower case. 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
-- -> 'claude-sonnet-4-5'; 'gpt-4o-2024-11-20' -> 'gpt-4o'; 'gemini-2.5-pro-001' -> 'gemini-2.5-pro'.
CREATE OR REPLACE MACRO core.cloud_model_key(m) AS
    regexp_replace(
        regexp_replace(
            regexp_replace(core.model_key(core.bedrock_base_model(lower(trim(m)))), '-v[0-9]+(:[0-9]+)?$', ''),
            '^(anthropic|openai|meta|mistral|amazon|cohere|ai21|deepseek|qwen|google|xai|writer)\.', ''),
        '(-[0-9]{8}|-[0-9]{4}-[0-9]{2}-[0-9]{2}|-00[0-9])$', '');

-- catalog/cloud_principals.csv: the team of a cloud principal (line_item_iam_principal).
-- Catalog snapshot (catalog/cloud_principals.csv): the team of a cloud principal (an AWS IAM role or user ARN as line_item_iam_principal writes it), for cloud invoice lines without a [cloud] team_tag. grain: one row per principal.
CREATE TABLE IF NOT EXISTS stg.cloud_principals (
    file_id   INTEGER NOT NULL,  -- ops.ingested_files.file_id of the file the row came from
    line      BIGINT NOT NULL,  -- 1-based line of the record in its file (record number for JSON documents)
    principal VARCHAR NOT NULL,  -- as the invoice writes it, e.g. 'arn:aws:iam::111122223333:role/search-app'
    team      VARCHAR NOT NULL  -- team
);
