-- Every model call of core.calls priced in USD (pricing only: which call, task, team, tier and
-- buckets is decided in core.calls): API calls at the price version in force at the call's time,
-- self-hosted calls at their share of the node's paid GPU-hours (core.self_hosted_allocation).
-- thinking_cost_usd is the part due to thinking tokens (API: at the reasoning price; self-hosted:
-- the call's cost x thinking share of its tokens). cost_usd is NULL where no price is known (see
-- marts.unpriced_usage), never 0.
-- API calls are priced on the basis the provider reports (docs/economics.md "Exact API cost"):
-- service tier (flex / priority / batch, else standard), long context (a prompt over a sheet's
-- above_<N>k_tokens threshold prices the whole call at that kind), 1-hour cache writes, regional
-- uplift, and per-query web-search fees (request_fees_usd, part of cost_usd). price_basis names
-- the basis, the rate_* columns the rates used (after uplift), cost_at_standard_usd the same call
-- at standard rates. A call with no modifier costs exactly what it cost before.
-- provider: the node's provider for a self-hosted call, else the reported one, else the provider
-- of the price sheet the call is priced from, as its canonical name (core.provider_key: aws.bedrock
-- and bedrock_converse are 'bedrock', gcp.vertex_ai is 'vertex_ai', azure.ai.openai is 'azure').
-- A call paid by a reservation (billing = 'provisioned': Vertex AI provisioned throughput, an
-- endpoints.csv row) costs 0 per token (price_basis 'provisioned', never unpriced);
-- on_demand_cost_usd is what any API call costs per token on its basis (for a provisioned call:
-- what it would have cost on demand; marts.provisioned_usage).
-- Speed: what depends only on (provider, model, node, UTC day) -- the sheet model, the node's
-- provider, the price version in force (versions start and end at dates) -- is looked up once per
-- distinct key and joined back to the calls by equality; no per-call window, range join or regex.
-- cost_center (issue 41): the first rule of catalog/cost_centers.csv (file order) whose field matches
-- the call (team, api_key, user, end_user, project, workspace, agent, service = provider, tag:<key>;
-- 'principal' is a cloud bill line's and matches no call), else the call's team, else 'unallocated'.
-- @kind: incremental_by_day
-- @storage: parquet
-- @grain: one row per call (request_id)
-- @closure: task_id
WITH allocated AS (
    -- a self-hosted call's share of its node's cost (micro-USD; NULL for API calls)
    SELECT request_id, sum(allocated_micro_usd) AS allocated_micro_usd
    FROM core.self_hosted_allocation
    WHERE request_id IS NOT NULL AND core.in_build_days(day)
    GROUP BY request_id
),
requests AS (
    -- joined here, where the calls are a plain scan: DuckDB then hashes the (smaller) allocation side.
    -- Joined after the pricing joins, the calls' estimate fell below the allocation's as history grew,
    -- and the 150,000 wide calls of a night were hashed instead (0.46 s against 0.34 s at 4x history)
    SELECT c.*, a.allocated_micro_usd
    FROM core.calls c
    LEFT JOIN allocated a USING (request_id)
    WHERE core.in_build_days(c.day)
),
nodes AS (
    SELECT node_id, provider AS node_provider FROM core.dim_nodes
),
prices AS (
    SELECT * FROM core.llm_price_versions WHERE price_kind = 'standard'
),
usage_keys AS (
    SELECT DISTINCT reported_provider, reported_model, node_id, day
    FROM requests
),
candidates AS (
    -- every candidate sheet model's version in force on the day; the best-ranked priced one wins
    SELECT k.*, m.price_provider, m.price_model, p.price_version_id,
           p.input_usd_per_mtok, p.cached_input_usd_per_mtok, p.cache_write_usd_per_mtok,
           p.output_usd_per_mtok, p.reasoning_usd_per_mtok,
           row_number() OVER (PARTITION BY k.reported_provider, k.reported_model, k.node_id, k.day
                              ORDER BY p.price_version_id IS NULL, m.preference NULLS LAST) AS pick
    FROM usage_keys k
    LEFT JOIN core.model_map m
           ON k.node_id IS NULL AND m.reported_provider IS NOT DISTINCT FROM k.reported_provider
          AND m.reported_model = k.reported_model
    LEFT JOIN prices p
           ON p.provider = m.price_provider AND p.model = m.price_model
          AND k.day >= p.effective_from AND (p.effective_to IS NULL OR k.day < p.effective_to)
),
key_facts AS (
    -- provider: the node's for a self-hosted call, else the reported one, else the sheet's; made
    -- canonical here, once per key (core.provider_key is string work: per call it cost ~0.5 s per 1.35M calls)
    SELECT c.* EXCLUDE (pick), n.node_provider,
           core.provider_key(coalesce(CASE WHEN c.node_id IS NULL THEN c.reported_provider ELSE n.node_provider END,
                                      c.price_provider)) AS provider
    FROM candidates c
    LEFT JOIN nodes n ON n.node_id = c.node_id
    WHERE c.pick = 1
),
-- ---- pricing modifiers: every price kind of the sheet model in force on the day, as the sheet
-- gives it (NULL = not given), so that a field a kind lacks falls back field by field ----
sheet AS (
    -- every price kind's versions from the one versioned price table (issue 27: not the raw sheet,
    -- so that the incremental plan, which diffs that table, sees every rate read here)
    SELECT provider, model, price_kind, effective_from, effective_to,
           input_usd_per_mtok AS i, given_cached_input_usd_per_mtok AS c, given_cache_write_usd_per_mtok AS w,
           cache_write_1h_usd_per_mtok AS w1, output_usd_per_mtok AS o, given_reasoning_usd_per_mtok AS r,
           usd_per_request_fee AS fee, web_search_usd_per_query_low AS fee_low,
           web_search_usd_per_query_high AS fee_high, regional_uplift_eu AS up_eu, regional_uplift_us AS up_us,
           -- issue 44: prices by modality (per million tokens) and unit (per image, per second of video)
           audio_input_usd_per_mtok AS ai, cached_audio_input_usd_per_mtok AS aci, image_input_usd_per_mtok AS ii, video_input_usd_per_mtok AS vi,
           audio_output_usd_per_mtok AS ao, image_output_usd_per_mtok AS io, video_output_usd_per_mtok AS vo, usd_per_output_image AS upi, usd_per_output_video_second AS ups
    FROM core.llm_price_versions
),
rate_keys AS (
    SELECT DISTINCT price_provider, price_model, day FROM key_facts WHERE price_version_id IS NOT NULL
),
kinds_in_force AS (
    SELECT k.price_provider, k.price_model, k.day, s.*,
           -- LiteLLM's cache_creation_input_token_cost_above_1hr[_above_200k_tokens] rows ('cache_1hr'
           -- kinds) carry the 1-hour write price of their base kind
           contains(s.price_kind, 'cache_1hr') AS is_1h,
           coalesce(nullif(trim(regexp_replace(s.price_kind, '_?cache_1hr_?', '_'), '_'), ''), 'standard') AS kind
    FROM rate_keys k
    -- the version of each kind in force on the day (versions of a kind do not overlap)
    JOIN sheet s ON s.provider = k.price_provider AND s.model = k.price_model
                AND k.day >= s.effective_from AND (s.effective_to IS NULL OR k.day < s.effective_to)
),
kind_rates AS (
    SELECT price_provider, price_model, day, kind,
           max(i) FILTER (WHERE NOT is_1h) AS i, max(c) FILTER (WHERE NOT is_1h) AS c,
           max(w) FILTER (WHERE NOT is_1h) AS w,
           coalesce(max(w1) FILTER (WHERE NOT is_1h), max(w) FILTER (WHERE is_1h)) AS w1,
           max(o) FILTER (WHERE NOT is_1h) AS o, max(r) FILTER (WHERE NOT is_1h) AS r,
           max(fee) AS fee, max(fee_low) AS fee_low, max(fee_high) AS fee_high,
           max(up_eu) AS up_eu, max(up_us) AS up_us,
           max(ai) FILTER (WHERE NOT is_1h) AS ai, max(aci) FILTER (WHERE NOT is_1h) AS aci, max(ii) FILTER (WHERE NOT is_1h) AS ii, max(vi) FILTER (WHERE NOT is_1h) AS vi, max(ao) FILTER (WHERE NOT is_1h) AS ao,
           max(io) FILTER (WHERE NOT is_1h) AS io, max(vo) FILTER (WHERE NOT is_1h) AS vo, max(upi) FILTER (WHERE NOT is_1h) AS upi, max(ups) FILTER (WHERE NOT is_1h) AS ups,
           bool_or(NOT is_1h) AS has_row
    FROM kinds_in_force
    GROUP BY ALL
),
key_lcs AS (
    -- the long-context kinds of a sheet model: above_<N>k_tokens with an input price, largest first
    SELECT price_provider, price_model, day,
           list(struct_pack(n := CAST(regexp_extract(kind, '^above_([0-9]+)k_tokens$', 1) AS BIGINT) * 1000, kind := kind)
                ORDER BY CAST(regexp_extract(kind, '^above_([0-9]+)k_tokens$', 1) AS BIGINT) DESC) AS thresholds
    FROM kind_rates
    WHERE regexp_full_match(kind, 'above_[0-9]+k_tokens') AND i IS NOT NULL
    GROUP BY ALL
),
unit_kinds AS (
    -- issue 44: per-image prices by quality and size ('image_<quality>_<W>x<H>', 'image_<W>x<H>') and
    -- per-second prices by resolution ('video_<res>'), looked up by the call's own image or video
    SELECT price_provider, price_model, day, kind, upi, ups
    FROM kind_rates
    WHERE (starts_with(kind, 'image_') OR starts_with(kind, 'video_')) AND (upi IS NOT NULL OR ups IS NOT NULL)
),
combos AS (
    -- every (sheet model, day) x requested tier x long-context kind (NULL = none): the rows consulted,
    -- most specific first: lc_tier (lt), lc (lk), tier (tk), standard (sk)
    SELECT k.price_provider, k.price_model, k.day, t.tier, l.lc,
           lt.has_row AS lt_row, tk.has_row AS tk_row,
           lt.i AS lt_i, lt.c AS lt_c, lt.w AS lt_w, lt.w1 AS lt_w1, lt.o AS lt_o, lt.r AS lt_r,
           lk.i AS lk_i, lk.c AS lk_c, lk.w AS lk_w, lk.w1 AS lk_w1, lk.o AS lk_o, lk.r AS lk_r,
           tk.i AS tk_i, tk.c AS tk_c, tk.w AS tk_w, tk.w1 AS tk_w1, tk.o AS tk_o, tk.r AS tk_r,
           sk.i AS sk_i, sk.c AS sk_c, sk.w AS sk_w, sk.w1 AS sk_w1, sk.o AS sk_o, sk.r AS sk_r,
           sk.fee, sk.fee_low, sk.fee_high, sk.up_eu, sk.up_us,
           -- issue 44: modality and unit prices of the requested tier's row, else the standard row's
           tk.ai AS tk_ai, tk.aci AS tk_aci, tk.ii AS tk_ii, tk.vi AS tk_vi, tk.ao AS tk_ao, tk.io AS tk_io, tk.vo AS tk_vo, tk.upi AS tk_upi, tk.ups AS tk_ups,
           sk.ai AS sk_ai, sk.aci AS sk_aci, sk.ii AS sk_ii, sk.vi AS sk_vi, sk.ao AS sk_ao, sk.io AS sk_io, sk.vo AS sk_vo, sk.upi AS sk_upi, sk.ups AS sk_ups
    FROM rate_keys k
    CROSS JOIN (SELECT unnest(['standard', 'flex', 'priority', 'scale', 'batch']) AS tier) t
    JOIN (SELECT price_provider, price_model, day, CAST(NULL AS VARCHAR) AS lc FROM rate_keys
          UNION ALL
          SELECT price_provider, price_model, day, kind FROM kind_rates
          WHERE regexp_full_match(kind, 'above_[0-9]+k_tokens') AND i IS NOT NULL) l
      ON l.price_provider = k.price_provider AND l.price_model = k.price_model AND l.day = k.day
    LEFT JOIN kind_rates sk ON sk.price_provider = k.price_provider AND sk.price_model = k.price_model AND sk.day = k.day
          AND sk.kind = 'standard'
    LEFT JOIN kind_rates tk ON tk.price_provider = k.price_provider AND tk.price_model = k.price_model AND tk.day = k.day
          AND tk.kind = t.tier AND t.tier <> 'standard'
    LEFT JOIN kind_rates lk ON lk.price_provider = k.price_provider AND lk.price_model = k.price_model AND lk.day = k.day
          AND lk.kind = l.lc
    LEFT JOIN kind_rates lt ON lt.price_provider = k.price_provider AND lt.price_model = k.price_model AND lt.day = k.day
          AND lt.kind = l.lc || '_' || t.tier AND t.tier <> 'standard'
),
combo_std AS (
    -- not batch: a field the most specific row lacks comes from the next one (LiteLLM's
    -- fallback); cached and cache-write default to the input price, reasoning to the output
    -- price of the same row; a 1-hour write without a price is 2 x the input price (Anthropic);
    -- a tier without any row on the sheet is priced at standard (and flagged)
    SELECT *,
           tier IN ('flex', 'priority', 'scale') AND lt_row IS NULL AND tk_row IS NULL AS tier_missing,
           coalesce(lk_i, sk_i) AS nb_i, coalesce(lk_o, sk_o) AS nb_o
    FROM combos
),
combo_rates AS (
    SELECT price_provider, price_model, day, tier, lc, tier_missing,
           CASE WHEN tier = 'batch' THEN 'batch' WHEN tier_missing THEN 'standard' ELSE tier END AS priced_tier,
           -- standard tier at this context size (also the base of the batch discount)
           CAST(nb_i AS DECIMAL(38,18)) AS n_i,
           CAST(coalesce(lk_c, sk_c, nb_i) AS DECIMAL(38,18)) AS n_c,
           CAST(coalesce(lk_w, sk_w, nb_i) AS DECIMAL(38,18)) AS n_w,
           -- under long context only the long-context 1-hour price or 2 x its input (not the small-context one)
           CAST(coalesce(lk_w1, CASE WHEN lc IS NULL THEN sk_w1 END, 2 * nb_i) AS DECIMAL(38,18)) AS n_w1,
           CAST(nb_o AS DECIMAL(38,18)) AS n_o,
           CAST(coalesce(coalesce(lk_r, lk_o), coalesce(sk_r, sk_o)) AS DECIMAL(38,18)) AS n_r,
           -- the requested tier where the sheet has it
           CAST(coalesce(lt_i, lk_i, tk_i, sk_i) AS DECIMAL(38,18)) AS t_i,
           CAST(coalesce(lt_c, lk_c, tk_c, sk_c, lt_i, lk_i, tk_i, sk_i) AS DECIMAL(38,18)) AS t_c,
           CAST(coalesce(lt_w, lk_w, tk_w, sk_w, lt_i, lk_i, tk_i, sk_i) AS DECIMAL(38,18)) AS t_w,
           CAST(coalesce(lt_w1, lk_w1, CASE WHEN lc IS NULL THEN coalesce(tk_w1, sk_w1) END,
                         2 * coalesce(lt_i, lk_i, tk_i, sk_i)) AS DECIMAL(38,18)) AS t_w1,
           CAST(coalesce(lt_o, lk_o, tk_o, sk_o) AS DECIMAL(38,18)) AS t_o,
           CAST(coalesce(coalesce(lt_r, lt_o), coalesce(lk_r, lk_o), coalesce(tk_r, tk_o), coalesce(sk_r, sk_o)) AS DECIMAL(38,18)) AS t_r,
           -- batch: the sheet's batch rate at this context size, else 50% of the standard rate
           -- (OpenAI, Anthropic and Google publish batch as half price)
           lt_row IS NULL AND (lc IS NOT NULL OR tk_row IS NULL) AS batch_derived,
           lt_i, lt_c, lt_w, lt_w1, lt_o, lt_r,
           CASE WHEN lc IS NULL THEN tk_i END AS b_i, CASE WHEN lc IS NULL THEN tk_c END AS b_c,
           CASE WHEN lc IS NULL THEN tk_w END AS b_w, CASE WHEN lc IS NULL THEN tk_w1 END AS b_w1,
           CASE WHEN lc IS NULL THEN tk_o END AS b_o, CASE WHEN lc IS NULL THEN tk_r END AS b_r,
           fee, fee_low, fee_high, up_eu, up_us,
           -- issue 44: a modality price of the requested tier's row, else (batch) 50% of the standard
           -- one, else the standard one: m_fallback says a non-standard tier or long context fell back
           CAST(coalesce(tk_ai, CASE WHEN tier = 'batch' THEN 0.5 * sk_ai ELSE sk_ai END) AS DECIMAL(38,18)) AS m_ai,
           CAST(coalesce(tk_aci, CASE WHEN tier = 'batch' THEN 0.5 * sk_aci ELSE sk_aci END) AS DECIMAL(38,18)) AS m_aci,
           CAST(coalesce(tk_ii, CASE WHEN tier = 'batch' THEN 0.5 * sk_ii ELSE sk_ii END) AS DECIMAL(38,18)) AS m_ii,
           CAST(coalesce(tk_vi, CASE WHEN tier = 'batch' THEN 0.5 * sk_vi ELSE sk_vi END) AS DECIMAL(38,18)) AS m_vi,
           CAST(coalesce(tk_ao, CASE WHEN tier = 'batch' THEN 0.5 * sk_ao ELSE sk_ao END) AS DECIMAL(38,18)) AS m_ao,
           CAST(coalesce(tk_io, CASE WHEN tier = 'batch' THEN 0.5 * sk_io ELSE sk_io END) AS DECIMAL(38,18)) AS m_io,
           CAST(coalesce(tk_vo, CASE WHEN tier = 'batch' THEN 0.5 * sk_vo ELSE sk_vo END) AS DECIMAL(38,18)) AS m_vo,
           CAST(coalesce(tk_upi, CASE WHEN tier = 'batch' THEN 0.5 * sk_upi ELSE sk_upi END) AS DECIMAL(38,18)) AS m_upi,
           CAST(coalesce(tk_ups, CASE WHEN tier = 'batch' THEN 0.5 * sk_ups ELSE sk_ups END) AS DECIMAL(38,18)) AS m_ups,
           (lc IS NOT NULL OR (tier IN ('flex', 'priority', 'scale') AND NOT tier_missing))
               AND tk_ai IS NULL AND tk_aci IS NULL AND tk_ii IS NULL AND tk_vi IS NULL AND tk_ao IS NULL AND tk_io IS NULL AND tk_vo IS NULL AND tk_upi IS NULL AND tk_ups IS NULL AS m_fallback
    FROM combo_std
),
resolved AS (
    SELECT price_provider, price_model, day, tier, lc, tier_missing, priced_tier,
           tier = 'batch' AND batch_derived AS batch_derived,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_i, b_i, 0.5 * n_i) AS DECIMAL(38,18)) ELSE t_i END AS rate_i,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_c, b_c, 0.5 * n_c) AS DECIMAL(38,18)) ELSE t_c END AS rate_c,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_w, b_w, 0.5 * n_w) AS DECIMAL(38,18)) ELSE t_w END AS rate_w,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_w1, b_w1, 0.5 * n_w1) AS DECIMAL(38,18)) ELSE t_w1 END AS rate_w1,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_o, b_o, 0.5 * n_o) AS DECIMAL(38,18)) ELSE t_o END AS rate_o,
           CASE WHEN tier = 'batch' THEN CAST(coalesce(lt_r, b_r, 0.5 * n_r) AS DECIMAL(38,18)) ELSE t_r END AS rate_r,
           fee, fee_low, fee_high, up_eu, up_us,
           m_ai, m_aci, m_ii, m_vi, m_ao, m_io, m_vo, m_upi, m_ups, m_fallback
    FROM combo_rates
),
rate_table AS (
    -- per (sheet model, day, requested tier, long-context kind, region): the rates of the call after
    -- the regional uplift (every token rate x the sheet's multiplier for the region), its basis,
    -- and the standard 1-hour write price (for cost_at_standard_usd); calls join it by equality
    SELECT r.price_provider, r.price_model, r.day, r.tier, r.lc, g.region, r.tier_missing,
           u.uplift IS NOT NULL OR r.lc IS NOT NULL OR r.priced_tier <> 'standard' AS modified,
           coalesce(nullif(concat_ws('+', r.lc, nullif(r.priced_tier, 'standard'),
                                     CASE WHEN u.uplift IS NOT NULL THEN 'regional_' || g.region END), ''),
                    'standard') AS price_basis,
           nullif(concat_ws('; ',
               CASE WHEN r.tier_missing THEN 'service tier ' || r.tier || ' has no rate on the sheet: priced at standard' END,
               CASE WHEN r.batch_derived AND r.lc IS NULL THEN 'no batch rate on the sheet: 50% of the standard rates'
                    WHEN r.batch_derived THEN 'no long-context batch rate on the sheet: 50% of the ' || r.lc || ' rates' END), '') AS rate_note,
           CAST(r.rate_i * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_input_usd_per_mtok,
           CAST(r.rate_c * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_cached_input_usd_per_mtok,
           CAST(r.rate_w * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_cache_write_usd_per_mtok,
           CAST(r.rate_w1 * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_cache_write_1h_usd_per_mtok,
           CAST(r.rate_o * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_output_usd_per_mtok,
           CAST(r.rate_r * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS rate_reasoning_usd_per_mtok,
           CAST(u.uplift AS DECIMAL(9,6)) AS regional_uplift,
           r.fee, r.fee_low, r.fee_high, s.rate_w1 AS std_w1,
           -- issue 44: the modality token rates after the uplift; per-unit prices as the sheet gives them
           CAST(r.m_ai * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_ai,
           CAST(r.m_aci * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_aci,
           CAST(r.m_ii * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_ii,
           CAST(r.m_vi * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_vi,
           CAST(r.m_ao * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_ao,
           CAST(r.m_io * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_io,
           CAST(r.m_vo * coalesce(u.uplift, 1) AS DECIMAL(38,18)) AS m_vo,
           r.m_upi, r.m_ups, r.m_fallback,
           s.m_ai AS std_m_ai, s.m_aci AS std_m_aci, s.m_ii AS std_m_ii, s.m_vi AS std_m_vi, s.m_ao AS std_m_ao, s.m_io AS std_m_io, s.m_vo AS std_m_vo, s.m_upi AS std_m_upi, s.m_ups AS std_m_ups
    FROM resolved r
    CROSS JOIN (SELECT unnest([NULL, 'eu', 'us']) AS region) g
    CROSS JOIN LATERAL (SELECT CASE g.region WHEN 'eu' THEN r.up_eu WHEN 'us' THEN r.up_us END AS uplift) u
    JOIN resolved s ON s.price_provider = r.price_provider AND s.price_model = r.price_model AND s.day = r.day
                   AND s.tier = 'standard' AND s.lc IS NULL
),
calls AS (
    -- the call as core.calls has it, then its sheet model, price version and provider
    SELECT r.*,
           CASE WHEN coalesce(r.is_batch, false) OR r.service_tier = 'batch' THEN 'batch'
                ELSE coalesce(r.service_tier, 'standard') END AS requested_tier,
           -- the largest long-context threshold the prompt exceeds (xAI bills from the threshold on)
           CASE WHEN klc.thresholds IS NOT NULL
                THEN list_filter(klc.thresholds, lambda x: r.prompt_tokens > x.n
                       OR (f.price_provider = 'xai' AND r.prompt_tokens = x.n))[1].kind
           END AS lc,
           f.price_provider, f.price_model, f.price_version_id, f.provider,
           f.input_usd_per_mtok, f.cached_input_usd_per_mtok, f.cache_write_usd_per_mtok,
           f.output_usd_per_mtok, f.reasoning_usd_per_mtok,
           -- issue 44: the text part of each bucket (the non-text parts are priced at their own rates)
           r.uncached_input_tokens - r.audio_input_tokens - r.image_input_tokens - r.video_input_tokens AS t_uncached,
           r.cached_input_tokens - r.cached_audio_input_tokens AS t_cached,
           r.output_tokens - r.audio_output_tokens - r.image_output_tokens - r.video_output_tokens AS t_output,
           r.audio_input_tokens + r.image_input_tokens + r.video_input_tokens + r.cached_audio_input_tokens
             + r.audio_output_tokens + r.image_output_tokens + r.video_output_tokens + r.output_images > 0
             OR r.output_video_seconds > 0 AS has_modality
    FROM requests r
    JOIN key_facts f
      ON f.reported_provider IS NOT DISTINCT FROM r.reported_provider AND f.reported_model = r.reported_model
     AND f.node_id IS NOT DISTINCT FROM r.node_id AND f.day = r.day
    LEFT JOIN key_lcs klc ON klc.price_provider = f.price_provider AND klc.price_model = f.price_model AND klc.day = f.day
),
priced AS (
    SELECT c.* EXCLUDE (requested_tier, lc),
           p.price_basis, coalesce(p.tier_missing, false) AS tier_priced_as_standard,
           -- (a call without non-text usage: the note of before, with no string work added per call)
           CASE WHEN NOT c.has_modality THEN CASE WHEN c.web_search_requests > 0 AND p.price_basis IS NOT NULL
                    AND CASE c.web_search_context_size WHEN 'low' THEN coalesce(p.fee_low, p.fee)
                             WHEN 'high' THEN coalesce(p.fee_high, p.fee) ELSE p.fee END IS NULL
               THEN concat_ws('; ', p.rate_note, 'web search fee not on the sheet') ELSE p.rate_note END
           ELSE nullif(concat_ws('; ',
               CASE WHEN c.web_search_requests > 0 AND p.price_basis IS NOT NULL
                         AND CASE c.web_search_context_size WHEN 'low' THEN coalesce(p.fee_low, p.fee)
                                  WHEN 'high' THEN coalesce(p.fee_high, p.fee) ELSE p.fee END IS NULL
                    THEN concat_ws('; ', p.rate_note, 'web search fee not on the sheet') ELSE p.rate_note END,
               -- issue 44: a non-standard basis whose row gives no audio / image / video price
               CASE WHEN c.has_modality AND p.m_fallback
                    THEN 'no ' || p.price_basis || ' price for audio / image / video on the sheet: '
                         || CASE WHEN c.requested_tier = 'batch' THEN '50% of the standard ones' ELSE 'the standard ones' END END,
               -- issue 44: images / video of a size or resolution the sheet has no price of its own for
               CASE WHEN c.has_modality AND p.price_basis IS NOT NULL AND uk.kind IS NULL
                         AND ((c.output_images > 0 AND c.image_output_tokens = 0 AND c.image_size IS NOT NULL)
                              OR (c.output_video_seconds > 0 AND c.video_output_tokens = 0 AND c.video_resolution IS NOT NULL))
                    THEN 'no price for ' || CASE WHEN c.output_images > 0 THEN concat_ws(' ', c.image_quality, c.image_size) || ' images'
                                                 ELSE c.video_resolution || ' video' END
                         || ' on the sheet: the model''s own per-' || CASE WHEN c.output_images > 0 THEN 'image' ELSE 'second' END
                         || ' price' END), '') END AS price_note,
           p.rate_input_usd_per_mtok, p.rate_cached_input_usd_per_mtok, p.rate_cache_write_usd_per_mtok,
           p.rate_cache_write_1h_usd_per_mtok, p.rate_output_usd_per_mtok, p.rate_reasoning_usd_per_mtok,
           p.regional_uplift,
           CASE c.web_search_context_size WHEN 'low' THEN coalesce(p.fee_low, p.fee)
                WHEN 'high' THEN coalesce(p.fee_high, p.fee) ELSE p.fee END AS usd_per_web_search,
           coalesce(p.modified, false) AS modified, p.std_w1,
           p.m_ai, p.m_aci, p.m_ii, p.m_vi, p.m_ao, p.m_io, p.m_vo,
           coalesce(uk.upi, p.m_upi) AS m_upi, coalesce(uk.ups, p.m_ups) AS m_ups,
           p.std_m_ai, p.std_m_aci, p.std_m_ii, p.std_m_vi, p.std_m_ao, p.std_m_io, p.std_m_vo,
           coalesce(uk.upi, p.std_m_upi) AS std_m_upi, coalesce(uk.ups, p.std_m_ups) AS std_m_ups,
           c.has_modality AND coalesce(p.m_fallback, false) AS m_fallback
    FROM calls c
    LEFT JOIN unit_kinds uk
           ON c.has_modality AND c.node_id IS NULL AND uk.price_provider = c.price_provider AND uk.price_model = c.price_model
          AND uk.day = c.day
          AND uk.kind = CASE WHEN c.output_images > 0 THEN 'image_' || coalesce(c.image_quality || '_', '') || c.image_size
                             WHEN c.output_video_seconds > 0 THEN 'video_' || c.video_resolution END
    LEFT JOIN rate_table p
           ON c.node_id IS NULL AND p.price_provider = c.price_provider AND p.price_model = c.price_model
          AND p.day = c.day AND p.tier = c.requested_tier AND p.lc IS NOT DISTINCT FROM c.lc
          AND p.region IS NOT DISTINCT FROM CASE WHEN c.processing_region IN ('eu', 'us') THEN c.processing_region END
),
costed AS (
    -- (a rate the sheet does not give is NULL; with no tokens at it the term is 0 for a call with a
    -- price version, so that a call of a model priced only per image or per second is priced -- issue 44)
    SELECT c.* EXCLUDE (input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
                        output_usd_per_mtok, reasoning_usd_per_mtok, modified, std_w1,
                        t_uncached, t_cached, t_output, m_ai, m_aci, m_ii, m_vi, m_ao, m_io, m_vo, m_upi, m_ups,
                        std_m_ai, std_m_aci, std_m_ii, std_m_vi, std_m_ao, std_m_io, std_m_vo, std_m_upi, std_m_ups),
           -- issue 44: each modality's cost on the call's basis: the sum of its priced parts (input,
           -- cached input, output tokens; images or seconds where the output is not counted in tokens),
           -- 0 without such usage, NULL when none of its parts has a price. A part without a price is
           -- left out (named in m_unpriced), never priced at the text rate. m_std: the same at standard
           -- rates, where the basis is not standard.
           CASE WHEN c.has_modality THEN CASE WHEN (c.audio_input_tokens > 0 AND c.m_ai IS NOT NULL OR c.cached_audio_input_tokens > 0 AND c.m_aci IS NOT NULL OR c.audio_output_tokens > 0 AND c.m_ao IS NOT NULL) OR NOT (c.audio_input_tokens > 0 OR c.cached_audio_input_tokens > 0 OR c.audio_output_tokens > 0) THEN CAST(CASE WHEN c.audio_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.audio_input_tokens, c.m_ai), 0) ELSE 0 END
                 + CASE WHEN c.cached_audio_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.cached_audio_input_tokens, c.m_aci), 0) ELSE 0 END
                 + CASE WHEN c.audio_output_tokens > 0 THEN coalesce(core.usd_for_tokens(c.audio_output_tokens, c.m_ao), 0) ELSE 0 END AS DECIMAL(38,15)) END ELSE 0 END AS m_audio,
           CASE WHEN c.has_modality THEN CASE WHEN (c.image_input_tokens > 0 AND c.m_ii IS NOT NULL OR ((c.image_output_tokens > 0 AND c.m_io IS NOT NULL) OR (c.output_images > 0 AND c.m_upi IS NOT NULL))) OR NOT (c.image_input_tokens > 0 OR (c.image_output_tokens > 0 OR c.output_images > 0)) THEN CAST(CASE WHEN c.image_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.image_input_tokens, c.m_ii), 0) ELSE 0 END
                 + CASE WHEN c.image_output_tokens > 0 AND c.m_io IS NOT NULL THEN core.usd_for_tokens(c.image_output_tokens, c.m_io)
                            WHEN c.output_images > 0 AND c.m_upi IS NOT NULL THEN c.output_images * c.m_upi ELSE 0 END AS DECIMAL(38,15)) END ELSE 0 END AS m_image,
           CASE WHEN c.has_modality THEN CASE WHEN (c.video_input_tokens > 0 AND c.m_vi IS NOT NULL OR ((c.video_output_tokens > 0 AND c.m_vo IS NOT NULL) OR (c.output_video_seconds > 0 AND c.m_ups IS NOT NULL))) OR NOT (c.video_input_tokens > 0 OR (c.video_output_tokens > 0 OR c.output_video_seconds > 0)) THEN CAST(CASE WHEN c.video_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.video_input_tokens, c.m_vi), 0) ELSE 0 END
                 + CASE WHEN c.video_output_tokens > 0 AND c.m_vo IS NOT NULL THEN core.usd_for_tokens(c.video_output_tokens, c.m_vo)
                            WHEN c.output_video_seconds > 0 AND c.m_ups IS NOT NULL THEN c.output_video_seconds * c.m_ups ELSE 0 END AS DECIMAL(38,15)) END ELSE 0 END AS m_video,
           CASE WHEN c.has_modality AND c.modified THEN CAST(CASE WHEN c.audio_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.audio_input_tokens, c.std_m_ai), 0) ELSE 0 END
                 + CASE WHEN c.cached_audio_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.cached_audio_input_tokens, c.std_m_aci), 0) ELSE 0 END
                 + CASE WHEN c.audio_output_tokens > 0 THEN coalesce(core.usd_for_tokens(c.audio_output_tokens, c.std_m_ao), 0) ELSE 0 END
                 + CASE WHEN c.image_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.image_input_tokens, c.std_m_ii), 0) ELSE 0 END
                 + CASE WHEN c.image_output_tokens > 0 AND c.std_m_io IS NOT NULL THEN core.usd_for_tokens(c.image_output_tokens, c.std_m_io)
                            WHEN c.output_images > 0 AND c.std_m_upi IS NOT NULL THEN c.output_images * c.std_m_upi ELSE 0 END
                 + CASE WHEN c.video_input_tokens > 0 THEN coalesce(core.usd_for_tokens(c.video_input_tokens, c.std_m_vi), 0) ELSE 0 END
                 + CASE WHEN c.video_output_tokens > 0 AND c.std_m_vo IS NOT NULL THEN core.usd_for_tokens(c.video_output_tokens, c.std_m_vo)
                            WHEN c.output_video_seconds > 0 AND c.std_m_ups IS NOT NULL THEN c.output_video_seconds * c.std_m_ups ELSE 0 END AS DECIMAL(38,15)) END AS m_std,
           CASE WHEN c.has_modality THEN nullif(concat_ws(', ',
               CASE WHEN c.audio_input_tokens > 0 AND c.m_ai IS NULL THEN 'audio_input_tokens' END,
               CASE WHEN c.cached_audio_input_tokens > 0 AND c.m_aci IS NULL THEN 'cached_audio_input_tokens' END,
               CASE WHEN c.audio_output_tokens > 0 AND c.m_ao IS NULL THEN 'audio_output_tokens' END,
               CASE WHEN c.image_input_tokens > 0 AND c.m_ii IS NULL THEN 'image_input_tokens' END,
               CASE WHEN (c.image_output_tokens > 0 OR c.output_images > 0) AND c.m_io IS NULL AND c.m_upi IS NULL
                    THEN CASE WHEN c.image_output_tokens > 0 THEN 'image_output_tokens' ELSE 'output_images' END END,
               CASE WHEN c.video_input_tokens > 0 AND c.m_vi IS NULL THEN 'video_input_tokens' END,
               CASE WHEN (c.video_output_tokens > 0 OR c.output_video_seconds > 0) AND c.m_vo IS NULL AND c.m_ups IS NULL
                    THEN CASE WHEN c.video_output_tokens > 0 THEN 'video_output_tokens' ELSE 'output_video_seconds' END END), '') END
               AS m_unpriced,
           -- at standard rates: exactly the formula of before, plus 1-hour writes at the 1-hour price.
           -- Each sum is rounded to DECIMAL(38,15) once, here: the exact products are DECIMAL(38,24),
           -- and every rescale of a 128-bit decimal is a 128-bit division (~0.3 s per 1.35M calls);
           -- the fees and the published columns below are (38,15) already, so they add no more.
           -- (Rounding before adding the fees gives the same digits: the fees are on the grid.)
           CAST(core.usd_for_tokens(c.t_uncached, coalesce(c.input_usd_per_mtok, CASE WHEN c.t_uncached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.t_cached, coalesce(c.cached_input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.cache_write_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + CASE WHEN c.cache_write_1h_tokens > 0 THEN core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.std_w1, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) ELSE 0 END
             + core.usd_for_tokens(c.thinking_tokens, coalesce(c.reasoning_usd_per_mtok, CASE WHEN c.thinking_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.t_output, coalesce(c.output_usd_per_mtok, CASE WHEN c.t_output = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) AS DECIMAL(38,15)) AS std_token_cost_usd,
           -- on the call's basis (only where it is not standard)
           CASE WHEN c.modified THEN CAST(
               core.usd_for_tokens(c.t_uncached, coalesce(c.rate_input_usd_per_mtok, CASE WHEN c.t_uncached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.t_cached, coalesce(c.rate_cached_input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.rate_cache_write_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + CASE WHEN c.cache_write_1h_tokens > 0 THEN core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.rate_cache_write_1h_usd_per_mtok, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) ELSE 0 END
             + core.usd_for_tokens(c.thinking_tokens, coalesce(c.rate_reasoning_usd_per_mtok, CASE WHEN c.thinking_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
             + core.usd_for_tokens(c.t_output, coalesce(c.rate_output_usd_per_mtok, CASE WHEN c.t_output = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) AS DECIMAL(38,15)) END AS modified_token_cost_usd,
           CAST(CASE WHEN c.modified THEN core.usd_for_tokens(c.thinking_tokens, coalesce(c.rate_reasoning_usd_per_mtok, CASE WHEN c.thinking_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                     ELSE core.usd_for_tokens(c.thinking_tokens, coalesce(c.reasoning_usd_per_mtok, CASE WHEN c.thinking_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) END AS DECIMAL(38,15)) AS api_thinking_cost_usd,
           -- issue 41: what the provider's prompt caching saved the call, on its basis: the cached
           -- tokens at the input rate minus at the cached rate, less the cache writes' premium over
           -- the input rate (5-minute and 1-hour writes at their own rates). Negative when the writes
           -- cost more than the reads saved, and kept so.
           CAST(CASE WHEN c.modified THEN
                     core.usd_for_tokens(c.t_cached, coalesce(c.rate_input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - core.usd_for_tokens(c.t_cached, coalesce(c.rate_cached_input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.rate_cache_write_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   + core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.rate_input_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - CASE WHEN c.cache_write_1h_tokens > 0 THEN core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.rate_cache_write_1h_usd_per_mtok, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                            - core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.rate_input_usd_per_mtok, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) ELSE 0 END
                ELSE
                     core.usd_for_tokens(c.t_cached, coalesce(c.input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - core.usd_for_tokens(c.t_cached, coalesce(c.cached_input_usd_per_mtok, CASE WHEN c.t_cached = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.cache_write_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   + core.usd_for_tokens(c.cache_write_tokens - c.cache_write_1h_tokens, coalesce(c.input_usd_per_mtok, CASE WHEN c.cache_write_tokens - c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                   - CASE WHEN c.cache_write_1h_tokens > 0 THEN core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.std_w1, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END))
                            - core.usd_for_tokens(c.cache_write_1h_tokens, coalesce(c.input_usd_per_mtok, CASE WHEN c.cache_write_1h_tokens = 0 AND c.price_version_id IS NOT NULL THEN 0 END)) ELSE 0 END
                END AS DECIMAL(38,15)) AS api_cache_savings_usd,
           c.modified,
           -- per-query fees (USD): 0 without searches; NULL when searches have no price on the sheet
           CASE WHEN c.serving <> 'api' THEN NULL
                WHEN c.web_search_requests = 0 THEN CAST(0 AS DECIMAL(38,15))
                ELSE CAST(c.web_search_requests * c.usd_per_web_search AS DECIMAL(38,15)) END AS request_fees_usd
    FROM priced c
),
costed2 AS (
    SELECT c.* EXCLUDE (std_token_cost_usd, modified_token_cost_usd, modified, m_std),
           CASE WHEN c.modified THEN c.modified_token_cost_usd ELSE c.std_token_cost_usd END
             + CASE WHEN c.web_search_requests > 0 THEN coalesce(c.request_fees_usd, 0) ELSE 0 END
             -- issue 44: the priced modality parts (an unpriced part is named in m_unpriced)
             + CASE WHEN c.has_modality THEN coalesce(c.m_audio, 0) + coalesce(c.m_image, 0) + coalesce(c.m_video, 0) ELSE 0 END AS api_cost_usd,
           CAST(c.std_token_cost_usd + CASE WHEN c.web_search_requests > 0 THEN coalesce(c.request_fees_usd, 0) ELSE 0 END
                + CASE WHEN NOT c.has_modality THEN 0 WHEN c.modified THEN c.m_std
                       ELSE coalesce(c.m_audio, 0) + coalesce(c.m_image, 0) + coalesce(c.m_video, 0) END
                AS DECIMAL(38,15)) AS api_cost_at_standard_usd
    FROM costed c
),
final AS (
    SELECT c.* EXCLUDE (api_cost_usd, api_thinking_cost_usd, api_cost_at_standard_usd, price_basis, allocated_micro_usd,
                        api_cache_savings_usd, m_audio, m_image, m_video, m_unpriced, has_modality, m_fallback),
           -- every branch cast to DECIMAL(38,15): a CASE over (38,15) and (38,6) is typed (38,6) and
           -- would round each API call's cost to the micro-dollar before the marts sum it
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN CAST(c.api_cost_usd AS DECIMAL(38,15))
                ELSE CAST(CAST(c.allocated_micro_usd AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS cost_usd,
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN CAST(c.api_thinking_cost_usd AS DECIMAL(38,15))
                WHEN c.total_tokens = 0 THEN CAST(0 AS DECIMAL(38,15))
                ELSE CAST(CAST(CAST(c.allocated_micro_usd AS HUGEINT) * c.thinking_tokens // c.total_tokens AS DECIMAL(38,0))
                          * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,15))
           END AS thinking_cost_usd,
           c.allocated_micro_usd,
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN false
                WHEN c.serving = 'api' THEN c.api_cost_usd IS NULL ELSE c.allocated_micro_usd IS NULL END AS unpriced,
           CASE WHEN c.serving = 'api' THEN c.api_cost_at_standard_usd END AS cost_at_standard_usd,
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN 'provisioned' ELSE c.price_basis END AS price_basis,
           CASE WHEN c.serving = 'api' THEN CAST(c.api_cost_usd AS DECIMAL(38,15)) END AS on_demand_cost_usd,
           -- a provisioned call pays no token (0 saved); a self-hosted call's cache is the node's: NULL
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN c.api_cache_savings_usd END AS cache_savings_usd,
           -- issue 44: the cost by modality (of cost_usd; text = the rest): 0 without such usage, NULL
           -- where a part has no price (unpriced_modalities names it) and for a self-hosted call
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN CAST(c.m_audio AS DECIMAL(38,15)) END AS audio_cost_usd,
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN CAST(c.m_image AS DECIMAL(38,15)) END AS image_cost_usd,
           CASE WHEN c.serving = 'api' AND c.billing = 'provisioned' THEN CAST(0 AS DECIMAL(38,15))
                WHEN c.serving = 'api' THEN CAST(c.m_video AS DECIMAL(38,15)) END AS video_cost_usd,
           CASE WHEN c.serving = 'api' AND coalesce(c.billing, '') <> 'provisioned' AND c.price_version_id IS NOT NULL
                THEN c.m_unpriced END AS unpriced_modalities
    FROM costed2 c
),
cc_rules AS (
    -- catalog/cost_centers.csv in force (the newest file): the first rule in file order that matches wins
    SELECT line, cost_center, field, pattern_regex
    FROM stg.cost_centers
    WHERE file_id = (SELECT max(file_id) FROM stg.cost_centers)
),
cc_keys AS (
    -- the distinct principals the rules can look at (none read when there is no rule)
    SELECT DISTINCT team, api_key, user_id, end_user_id, project_id, workspace_id, agent_name, provider, tags
    FROM final
    WHERE EXISTS (SELECT 1 FROM cc_rules)
),
cc_match AS (
    SELECT k.team, k.api_key, k.user_id, k.end_user_id, k.project_id, k.workspace_id, k.agent_name, k.provider, k.tags,
           arg_min(r.cost_center, r.line) AS rule_cost_center
    FROM cc_keys k
    JOIN cc_rules r
      ON coalesce(regexp_matches(CASE r.field WHEN 'team' THEN k.team WHEN 'api_key' THEN k.api_key
                                              WHEN 'user' THEN k.user_id WHEN 'end_user' THEN k.end_user_id
                                              WHEN 'project' THEN k.project_id WHEN 'workspace' THEN k.workspace_id
                                              WHEN 'agent' THEN k.agent_name WHEN 'service' THEN k.provider
                                              -- tag:<key> (a key of [A-Za-z0-9_-], checked at ingest)
                                              WHEN 'principal' THEN NULL
                                              ELSE json_extract_string(k.tags, '$.' || substr(r.field, 5)) END,
                                 r.pattern_regex), false)
    GROUP BY k.team, k.api_key, k.user_id, k.end_user_id, k.project_id, k.workspace_id, k.agent_name, k.provider, k.tags
),
allocated_cc AS (
    -- issue 41: the call's cost center: its first matching rule, else its team, else 'unallocated'
    SELECT f.*,
           coalesce(m.rule_cost_center, CASE WHEN f.team = 'unknown' THEN 'unallocated' ELSE f.team END) AS cost_center
    FROM final f
    LEFT JOIN cc_match m
           ON m.team = f.team AND m.api_key IS NOT DISTINCT FROM f.api_key AND m.user_id IS NOT DISTINCT FROM f.user_id
          AND m.end_user_id IS NOT DISTINCT FROM f.end_user_id AND m.project_id IS NOT DISTINCT FROM f.project_id
          AND m.workspace_id IS NOT DISTINCT FROM f.workspace_id AND m.agent_name IS NOT DISTINCT FROM f.agent_name
          AND m.provider IS NOT DISTINCT FROM f.provider AND m.tags IS NOT DISTINCT FROM f.tags
)
-- the columns of before in their order, then the pricing-modifier columns (issue 14)
SELECT * EXCLUDE (service_tier, is_batch, cache_write_1h_tokens, processing_region, web_search_requests,
                  web_search_context_size, price_basis, tier_priced_as_standard, price_note,
                  rate_input_usd_per_mtok, rate_cached_input_usd_per_mtok, rate_cache_write_usd_per_mtok,
                  rate_cache_write_1h_usd_per_mtok, rate_output_usd_per_mtok, rate_reasoning_usd_per_mtok,
                  regional_uplift, usd_per_web_search, request_fees_usd, cost_at_standard_usd, billing, on_demand_cost_usd,
                  api_key, user_id, end_user_id, project_id, workspace_id, session_id, trace_id, span_id,
                  parent_span_id, agent_name, tags, cache_savings_usd, cost_center, agent_span_id,
                  audio_input_tokens, image_input_tokens, video_input_tokens, cached_audio_input_tokens, audio_output_tokens,
                  image_output_tokens, video_output_tokens, output_images, output_video_seconds, image_size, image_quality,
                  video_resolution, audio_cost_usd, image_cost_usd, video_cost_usd, unpriced_modalities),
       service_tier, is_batch, cache_write_1h_tokens, processing_region, web_search_requests,
       web_search_context_size, price_basis, tier_priced_as_standard, price_note,
       rate_input_usd_per_mtok, rate_cached_input_usd_per_mtok, rate_cache_write_usd_per_mtok,
       rate_cache_write_1h_usd_per_mtok, rate_output_usd_per_mtok, rate_reasoning_usd_per_mtok,
       regional_uplift, usd_per_web_search, request_fees_usd, cost_at_standard_usd,
       -- issue 24: how the call is paid, and its per-token cost on its basis
       billing, on_demand_cost_usd,
       -- issue 41: who made the call (core.calls) and what caching saved it
       api_key, user_id, end_user_id, project_id, workspace_id, session_id, trace_id, span_id,
       parent_span_id, agent_name, tags, cache_savings_usd, cost_center, agent_span_id,
       -- issue 44: usage by modality (core.calls) and the cost by modality
       audio_input_tokens, image_input_tokens, video_input_tokens, cached_audio_input_tokens, audio_output_tokens,
       image_output_tokens, video_output_tokens, output_images, output_video_seconds, image_size, image_quality,
       video_resolution, audio_cost_usd, image_cost_usd, video_cost_usd, unpriced_modalities
FROM allocated_cc
