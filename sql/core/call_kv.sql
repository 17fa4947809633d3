-- KV-cache each call held, as byte-seconds (bytes x seconds held), split into what the prompt, the
-- thinking and the visible output tokens held. KV sizes are at bf16 (2 bytes per element); an fp8
-- KV cache halves every figure and leaves the shares unchanged.
--
-- Bytes per token (the marginal bytes of one token while the context is shorter than any window):
--   * kv_bytes_per_token_bf16 from models.csv when it is given (it is the override for models
--     without a config), else computed from the model's config.json (config_text; a multimodal
--     config's text_config is used when the top level has no num_hidden_layers):
--   * MLA (kv_lora_rank and qk_rope_head_dim present, DeepSeek V2/V3/R1): one latent per layer,
--     layers x (kv_lora_rank + qk_rope_head_dim) x 2.       DeepSeek-V3: 61 x (512 + 64) x 2 = 70,272
--   * MHA/GQA: 2 (K and V) x layers x kv_heads x head_dim x 2, kv_heads = num_key_value_heads
--     (else num_attention_heads), head_dim = head_dim (else hidden_size / num_attention_heads).
--     Llama-3.1-70B: 2 x 80 x 8 x 128 x 2 = 327,680;  Qwen3-32B: 2 x 64 x 8 x 128 x 2 = 262,144
--   * sliding-window layers: when the config lists layer_types and has a sliding_window, the
--     sliding layers hold at most `window` tokens, so the byte-seconds below use the full-attention
--     layers' bytes per token only (kv_bytes_per_token_held_bf16; gpt-oss-120b: 18 of 36 layers,
--     36,864 of 73,728 B) and leave out the at most window tokens per sliding layer (gpt-oss-120b:
--     18 x 128 x 1,024 x 2 = 4.7 MB per call). Other sliding patterns count as full (an upper bound).
--
-- Time model of a call (latency L = latency_ms / 1000; ts is when the call ended): the prompt is
-- prefilled at the start and held for all of L; the G = T + O generated tokens (T thinking, then O
-- visible output, in that order) come at an even pace over L and are each held from their
-- generation to the end. Token k of G is generated at k/G x L and held L x (1 - k/G), so with b bytes
-- per token:
--   prompt_kv_byte_s   = b x L x P
--   thinking_kv_byte_s = b x L x T x (1 - T / (2G)) = b x L x T x (T + 2 O) / (2G)
--   output_kv_byte_s   = b x L x O^2 / (2G)
--   kv_byte_s          = b x L x (P + G / 2)      (the three add up to this)
-- Worked: Qwen3-32B, P = 1,000, T = 2,000, O = 1,000, L = 30 s: prompt 7.864e9, thinking
-- 262,144 x 30 x 2,000 x 4,000 / 6,000 = 1.0486e10, output 262,144 x 30 x 1e6 / 6,000 = 1.311e9,
-- total 262,144 x 30 x 2,500 = 1.966e10 B.s; thinking holds 8/15 = 53% of it with 50% of the tokens.
-- A call without latency_ms has NULL byte-seconds (its peak KV is still given). Time to first token
-- is not used: the prefill is taken as instant, which slightly overstates what the prompt holds.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per call (request_id, API or self-hosted) whose model has a known KV size per
--   token
WITH models AS (
    SELECT model_key, kv_bytes_per_token_bf16 AS listed_bytes,
           CASE WHEN json_extract(config_text, '$.num_hidden_layers') IS NULL
                 AND json_extract(config_text, '$.text_config.num_hidden_layers') IS NOT NULL
                THEN json_extract(config_text, '$.text_config')
                ELSE json(config_text) END AS cfg
    FROM core.dim_models
    QUALIFY row_number() OVER (PARTITION BY model_key ORDER BY model) = 1
),
fields AS (
    SELECT model_key, listed_bytes,
           CAST(cfg ->> 'num_hidden_layers' AS BIGINT) AS layers,
           CAST(cfg ->> 'num_attention_heads' AS BIGINT) AS heads,
           CAST(coalesce(cfg ->> 'num_key_value_heads', cfg ->> 'num_attention_heads') AS BIGINT) AS kv_heads,
           coalesce(CAST(cfg ->> 'head_dim' AS BIGINT),
                    CAST(cfg ->> 'hidden_size' AS BIGINT) // CAST(cfg ->> 'num_attention_heads' AS BIGINT)) AS head_dim,
           CAST(cfg ->> 'kv_lora_rank' AS BIGINT) AS kv_lora_rank,
           CAST(cfg ->> 'qk_rope_head_dim' AS BIGINT) AS qk_rope_head_dim,
           CASE WHEN cfg ->> 'sliding_window' IS NOT NULL AND json_type(cfg, '$.layer_types') = 'ARRAY'
                THEN len(list_filter(CAST(json_extract(cfg, '$.layer_types') AS VARCHAR[]),
                                     lambda t: t LIKE '%sliding%'))
                ELSE 0 END AS sliding_layers
    FROM models
),
sized AS (
    SELECT model_key, layers, sliding_layers,
           kv_lora_rank IS NOT NULL AND qk_rope_head_dim IS NOT NULL AS is_mla,
           CASE WHEN kv_lora_rank IS NOT NULL AND qk_rope_head_dim IS NOT NULL THEN kv_lora_rank + qk_rope_head_dim
                ELSE 2 * kv_heads * head_dim END AS kv_elements_per_layer,
           listed_bytes
    FROM fields
),
per_token AS (
    SELECT model_key, is_mla,
           coalesce(listed_bytes, layers * kv_elements_per_layer * 2) AS kv_bytes_per_token_bf16,
           CASE WHEN listed_bytes IS NOT NULL THEN listed_bytes
                ELSE (layers - sliding_layers) * kv_elements_per_layer * 2 END AS kv_bytes_per_token_held_bf16,
           CASE WHEN listed_bytes IS NOT NULL THEN 'models_csv' ELSE 'config_json' END AS kv_bytes_source
    FROM sized
    WHERE coalesce(listed_bytes, layers * kv_elements_per_layer * 2) IS NOT NULL
),
calls AS (
    SELECT request_id, ts, day, hour, model, serving, node_id, team, task_id, latency_ms,
           prompt_tokens, thinking_tokens, output_tokens,
           thinking_tokens + output_tokens AS generated_tokens
    FROM core.calls
    WHERE core.in_build_days(day)
),
joined AS (
    SELECT c.*, p.kv_bytes_per_token_bf16, p.kv_bytes_per_token_held_bf16, p.kv_bytes_source, p.is_mla,
           CAST(p.kv_bytes_per_token_held_bf16 AS DOUBLE) * c.latency_ms / 1000.0 AS bytes_x_seconds
    FROM calls c JOIN per_token p ON p.model_key = c.model
),
final AS (
    SELECT request_id, ts, day, hour, model, serving, node_id, team, task_id, latency_ms,
           prompt_tokens, thinking_tokens, output_tokens, generated_tokens,
           kv_bytes_per_token_bf16, kv_bytes_per_token_held_bf16, kv_bytes_source, is_mla,
           kv_bytes_per_token_held_bf16 * (prompt_tokens + generated_tokens) AS kv_peak_bytes,
           bytes_x_seconds * prompt_tokens AS prompt_kv_byte_s,
           CASE WHEN generated_tokens = 0 THEN bytes_x_seconds * 0
                ELSE bytes_x_seconds * thinking_tokens * (thinking_tokens + 2.0 * output_tokens) / (2.0 * generated_tokens)
           END AS thinking_kv_byte_s,
           CASE WHEN generated_tokens = 0 THEN bytes_x_seconds * 0
                ELSE bytes_x_seconds * output_tokens * output_tokens / (2.0 * generated_tokens)
           END AS output_kv_byte_s,
           bytes_x_seconds * (prompt_tokens + generated_tokens / 2.0) AS kv_byte_s
    FROM joined
)
SELECT * FROM final
