-- Prometheus scrapes (telemetry/metrics/*.prom) from vLLM, SGLang and the NVIDIA DCGM exporter,
-- in long form: one row per sample. Parser: sources/prometheus.py (canonical names: CANONICAL there).
-- Natural key (de-duplication): node_id, scrape_ts, source_metric, labels.
-- Counters are cumulative here; sql/core/metric_deltas.sql turns them into per-interval deltas.
-- grain: one row per node x scrape time x exposed series (source_metric + labels)
CREATE TABLE IF NOT EXISTS stg.metric_samples (
    file_id       INTEGER NOT NULL,
    line          BIGINT NOT NULL,      -- line of the sample in the scrape file
    node_id       VARCHAR NOT NULL,     -- file-name prefix before '__' (else a node/instance label)
    scrape_ts     TIMESTAMP NOT NULL,   -- UTC: the sample's own timestamp, else the time in the file name
    engine        VARCHAR NOT NULL,     -- 'vllm', 'sglang', 'dcgm' (by name prefix) or 'other'
    metric        VARCHAR NOT NULL,     -- canonical name with its unit (e.g. 'prompt_tokens_total', 'kv_cache_usage' 0-1, 'gpu_util' 0-1, 'fb_used_mib', 'power_w', 'energy_mj_total'); = source_metric when not mapped
    mapped        BOOLEAN NOT NULL,     -- metric is a canonical name
    source_metric VARCHAR NOT NULL,     -- sample name as exposed, e.g. 'vllm:gpu_cache_usage_perc', 'DCGM_FI_DEV_GPU_UTIL'
    kind          VARCHAR NOT NULL,     -- 'counter', 'gauge', 'histogram_bucket', 'histogram_sum', 'histogram_count', 'summary_quantile', 'summary_sum', 'summary_count', 'untyped', ...
    labels        VARCHAR NOT NULL,     -- all labels as a JSON object, keys sorted, e.g. '{"engine":"0","model_name":"Qwen/Qwen3-32B"}'
    series        VARCHAR NOT NULL,     -- labels identifying the series over time (DCGM: gpu/UUID/MIG ids only; others: = labels)
    gpu           VARCHAR,              -- DCGM 'gpu' label (GPU index on the node)
    model_name    VARCHAR,              -- vLLM/SGLang 'model_name' label (served model)
    value         DOUBLE NOT NULL       -- in the unit of `metric` (DCGM % are scaled to 0-1)
);
