-- Provisioned throughput as a third way to buy (issue 25 item 5): catalog/commitments.csv, the offers
-- (bought or not) priced per unit-hour, read by sources/catalog.py; marts.commitments and
-- marts.buying_options are built from it, the invoices' provisioned lines and the calls.

-- Catalog snapshot (catalog/commitments.csv): provisioned-throughput offers (Bedrock Provisioned Throughput model units, Azure PTU, Vertex AI provisioned throughput) priced per unit-hour, bought or not yet bought. grain: one row per offer (file line).
CREATE TABLE IF NOT EXISTS stg.commitments (
    file_id           INTEGER NOT NULL,  -- ops.ingested_files.file_id of the file the row came from
    line              BIGINT NOT NULL,  -- 1-based line of the record in its file (record number for JSON documents)
    provider          VARCHAR NOT NULL,  -- the provider as written, lower case (normalised by core.provider_key in marts.commitments: aws.bedrock -> bedrock, azure_openai -> azure, vertex -> vertex_ai)
    model             VARCHAR NOT NULL,  -- the model the units serve, as the price sheet or the invoice names it (marts.commitments keys it by core.cloud_model_key: 'claude-sonnet-4-5')
    units             DECIMAL(18,6) NOT NULL,  -- model units / PTUs committed (> 0)
    usd_per_unit_hour DECIMAL(18,6) NOT NULL,  -- USD per unit per hour (> 0)
    commit_months     INTEGER,  -- the term in months (0 or empty: hourly, no term)
    commit_start      TIMESTAMP NOT NULL,  -- CSV column `start`: naive UTC, inclusive (a bare date: 00:00 UTC)
    commit_end        TIMESTAMP NOT NULL,  -- CSV column `end`: naive UTC, exclusive; empty: start + commit_months months
    note              VARCHAR  -- free text
);
