-- The cloud invoice against the usage logs, down to the token bucket (issue 25): per provider x
-- model x UTC day x bucket, what the invoice bills (core.cloud_bill_lines) and what the logged calls
-- of the same provider and model family cost in that bucket (core.call_costs: each bucket's tokens x
-- the rate the call was priced at, rate_*_usd_per_mtok; the buckets of a call add up to its
-- cost_usd), the difference, and the part of it that is explained:
-- * credit, discount, tax, refund, rounding, fee rows (the invoice's own lines, and GCP credits
--   inside a line): explained whole, explained_by = the kind;
-- * 'unattributed' rows (AI lines no rule read): explained whole;
-- * 'provisioned' rows (Bedrock Provisioned Throughput, Azure PTU, Vertex AI provisioned
--   throughput): paid by the hour, the calls cost 0 per token: explained whole;
-- * token buckets: calls missing from the logs (or logged but not billed): (invoice_tokens -
--   log_tokens) x the invoice's own unit price (invoice_usd / invoice_tokens; the logs' unit price
--   when the invoice has no tokens); then a remainder under half a cent is rounding.
-- unexplained_usd = difference_usd - explained_usd: a price the sheet does not have (price drift,
-- a negotiated rate, a tier or region the logs do not report). Model keys on both sides are
-- core.cloud_model_key ('claude-sonnet-4-5'); the call side's output bucket includes thinking
-- tokens (billed as output). Logs' buckets: input = uncached input, cache_read = cached input,
-- cache_write = 5-minute cache writes, cache_write_1h = 1-hour writes, output = output + thinking.
-- @kind: full
-- @grain: one row per provider x model x day x bucket (model NULL: invoice lines that name no model)
WITH invoice AS (
    SELECT provider, model, day, bucket,
           sum(amount_usd) AS invoice_usd,
           sum(tokens) AS invoice_tokens,
           count(*) AS invoice_lines
    FROM core.cloud_bill_lines
    WHERE in_invoice
    GROUP BY ALL
),
cloud_calls AS (
    SELECT day, provider, core.cloud_model_key(model) AS model, cost_usd,
           uncached_input_tokens, cached_input_tokens, cache_write_tokens - coalesce(cache_write_1h_tokens, 0) AS cw5,
           coalesce(cache_write_1h_tokens, 0) AS cw1h, output_tokens, thinking_tokens,
           rate_input_usd_per_mtok AS ri, rate_cached_input_usd_per_mtok AS rc, rate_cache_write_usd_per_mtok AS rw,
           rate_cache_write_1h_usd_per_mtok AS rw1, rate_output_usd_per_mtok AS ro, rate_reasoning_usd_per_mtok AS rr,
           billing
    FROM core.call_costs
    WHERE serving = 'api' AND provider IN (SELECT DISTINCT provider FROM core.cloud_bill_lines)
),
call_buckets AS (
    -- one row per call x bucket: a constant bucket list crossed with the calls (Spark has no
    -- LATERAL VALUES over the outer row)
    SELECT day, provider, model, bucket, tokens, usd
    FROM (
        SELECT c.day, c.provider, c.model, b.bucket, c.billing,
               CASE b.bucket WHEN 'input' THEN c.uncached_input_tokens
                             WHEN 'cache_read' THEN c.cached_input_tokens
                             WHEN 'cache_write' THEN c.cw5
                             WHEN 'cache_write_1h' THEN c.cw1h
                             ELSE c.output_tokens + c.thinking_tokens END AS tokens,
               CASE b.bucket WHEN 'input' THEN core.usd_for_tokens(c.uncached_input_tokens, c.ri)
                             WHEN 'cache_read' THEN core.usd_for_tokens(c.cached_input_tokens, c.rc)
                             WHEN 'cache_write' THEN core.usd_for_tokens(c.cw5, c.rw)
                             WHEN 'cache_write_1h' THEN core.usd_for_tokens(c.cw1h, c.rw1)
                             ELSE core.usd_for_tokens(c.output_tokens, c.ro) + core.usd_for_tokens(c.thinking_tokens, c.rr)
               END AS usd
        FROM cloud_calls c
        CROSS JOIN (SELECT unnest(['input', 'cache_read', 'cache_write', 'cache_write_1h', 'output']) AS bucket) b
    ) x
    WHERE billing IS DISTINCT FROM 'provisioned' AND tokens > 0
),
logs AS (
    SELECT day, provider, model, bucket, sum(tokens) AS log_tokens, sum(coalesce(usd, 0)) AS logs_usd
    FROM call_buckets
    GROUP BY ALL
),
joined AS (
    SELECT coalesce(i.provider, l.provider) AS provider, coalesce(i.model, l.model) AS model,
           coalesce(i.day, l.day) AS day, coalesce(i.bucket, l.bucket) AS bucket,
           i.invoice_lines, i.invoice_tokens, l.log_tokens,
           core.usd6(coalesce(i.invoice_usd, 0)) AS invoice_usd,
           core.usd6(coalesce(l.logs_usd, 0)) AS logs_usd,
           i.invoice_usd AS invoice_exact, l.logs_usd AS logs_exact
    FROM invoice i
    FULL JOIN logs l
      ON l.provider = i.provider AND l.model IS NOT DISTINCT FROM i.model AND l.day = i.day AND l.bucket = i.bucket
),
explained AS (
    SELECT *,
           CAST(invoice_usd - logs_usd AS DECIMAL(18,6)) AS difference_usd,
           CASE WHEN bucket IN ('credit', 'discount', 'tax', 'refund', 'rounding', 'fee', 'other', 'unattributed',
                                'provisioned', 'cache_storage')
                THEN bucket
                WHEN coalesce(invoice_tokens, 0) <> coalesce(log_tokens, 0) THEN 'missing_calls'
           END AS explained_kind,
           CASE WHEN bucket IN ('credit', 'discount', 'tax', 'refund', 'rounding', 'fee', 'other', 'unattributed',
                                'provisioned', 'cache_storage')
                THEN CAST(invoice_usd - logs_usd AS DECIMAL(18,6))
                WHEN coalesce(invoice_tokens, 0) <> coalesce(log_tokens, 0)
                THEN core.usd6((coalesce(invoice_tokens, 0) - coalesce(log_tokens, 0))
                               * CASE WHEN coalesce(invoice_tokens, 0) > 0 THEN invoice_exact / invoice_tokens
                                      WHEN coalesce(log_tokens, 0) > 0 THEN logs_exact / log_tokens ELSE 0 END)
                ELSE CAST(0 AS DECIMAL(18,6))
           END AS explained_main
    FROM joined
),
final AS (
    SELECT provider, model, day, bucket, invoice_lines, invoice_tokens, log_tokens, invoice_usd, logs_usd,
           difference_usd,
           CAST(explained_main + CASE WHEN abs(difference_usd - explained_main) < 0.005
                                      THEN difference_usd - explained_main ELSE 0 END AS DECIMAL(18,6)) AS explained_usd,
           nullif(concat_ws(' + ', explained_kind,
                            CASE WHEN difference_usd <> explained_main AND abs(difference_usd - explained_main) < 0.005
                                 THEN 'rounding' END), '') AS explained_by,
           CAST(CASE WHEN abs(difference_usd - explained_main) < 0.005 THEN 0
                     ELSE difference_usd - explained_main END AS DECIMAL(18,6)) AS unexplained_usd
    FROM explained
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
