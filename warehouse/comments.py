"""Column documentation for the BI contract: every ``marts.*`` and ``ops.*`` column's meaning and unit.

BI tools (DBeaver, Superset, Metabase, Tableau) show DuckDB comments next to the columns, so the
comments live in the warehouse itself: `apply(con)` writes ``COMMENT ON TABLE`` / ``COMMENT ON
COLUMN`` for every table and column that exists in the connection and is documented here, and
skips the rest (tables another change has not built yet). The marts are rebuilt with ``CREATE OR
REPLACE TABLE`` on every run, which drops their comments, so the pipeline calls `apply` on the
build just before publishing it (`published_warehouse`).

Every column comment reads ``<meaning>. Unit: <unit>.``; `docs/warehouse.md` is generated from
these comments (`make docs`, `tools.docs_gen`). A mart's table comment is the header comment
of its SQL file (what it is, its grain), so it cannot drift from the SQL.

Adding a column to a mart or an ops table: add its line below (tests/warehouse/test_column_docs.py fails
until you do), then run `make docs`.
"""

from __future__ import annotations

import re

import duckdb

SCHEMAS = ("marts", "ops")

# Units, spelled the same everywhere.
USD = "USD"
TOKENS = "tokens"
COUNT = "count"
DAY = "date (UTC day)"
TS = "timestamp (naive UTC)"
LABEL = "none (label)"
# the basis of the API spend the break-even and forecast marts use (issue 25 item 3, warehouse/economics.py)
API_PRICE_BASIS = ("'invoice_net': every provider's calls took the cloud invoice's net rate (marts.effective_rates.net_to_list "
                   "of the month, else of the latest earlier invoice month); 'partly_invoice_net': some did; 'list': none "
                   "(no cloud invoice for the model, or calls before the first invoice month)")
FRACTION = "fraction 0-1"
BOOL = "boolean"


def _d(meaning: str, unit: str) -> str:
    return f"{meaning}. Unit: {unit}."


# Columns every mart carries.
COMMON: dict[str, str] = {
    "build_id": _d("Id of the thinktax run (build) that produced this row; all marts read in one "
                   "connection carry the same build_id, which proves they come from one snapshot", LABEL),
}

_TOKEN_BUCKETS = {
    "input_tokens": _d("Uncached prompt tokens (the prompt minus cache reads and cache writes)", TOKENS),
    "cached_input_tokens": _d("Prompt tokens read from the provider's prompt cache", TOKENS),
    "cache_write_tokens": _d("Prompt tokens written to the prompt cache (Anthropic cache creation)", TOKENS),
    "thinking_tokens": _d("Reasoning (thinking) tokens, counted once: they are inside the completion, never on top of it", TOKENS),
    "output_tokens": _d("Visible output tokens (the completion minus thinking)", TOKENS),
}

TABLES: dict[str, str] = {
    # Table comments for tables that have no SQL file (ops tables come from warehouse/migrations,
    # marts not built yet get a contract description until their SQL file exists).
    "ops.ingested_files": "One row per landed file (by content, sha256): rows_in = rows_loaded + rows_duplicate + rows_quarantined + rows_skipped.",
    "ops.unknown_fields": "The unknown-field guard (issue 44): one row per landed JSON file and key path its parser does not read.",
    "ops.unknown_field_lines": "The calls carrying a token-looking unknown field with a non-zero value (partially priced). grain: file x line x path.",
    "ops.quarantine": "One row per rejected record (or per unreadable file, line NULL), with file, line, field and reason.",
    "ops.runs": "One row per thinktax run (build) that started; published_at is set when it was published.",
    "ops.settings": "The thinktax.toml settings of the run that built this snapshot (one row), as the SQL reads them.",
    "ops.alerts": "One row per break-even alert delivery attempt (delivered = the webhook answered 2xx).",
    "ops.alert_state": "The break-even alert's state per subject (alert x model, model '*' = all reasoning models): armed, fired or pending.",
    "ops.ingested_days": "The UTC days each landed file touched (telemetry and bills), for daily partitions.",
    "ops.model_builds": "How each core/marts table was last built: whole or by days, from which SQL and settings (incremental rebuilds).",
    "ops.build_scope": "The rebuild plan of the build in this file: full, or the UTC days the incremental tables replaced.",
    "marts.bill_reconciliation": "What providers billed against usage x price in force. grain: day x provider x model.",
    "marts.self_host_breakeven": "Self-hosting a reasoning model against buying it through the API. grain: month x model x deployment.",
    "marts.node_hours": "Self-hosted node usage and cost per hour. grain: node x hour (UTC).",
    "marts.kv_thinking_share": "KV-cache time held by prompt, thinking and output tokens. grain: day x model.",
    "marts.gpu_sizing": "Whether and how a model fits on a GPU set-up. grain: model x gpu_type x gpus x precision x profile.",
    "marts.focus_costs": "Every cost thinktax knows (API and self-hosted) as FOCUS 1.2 rows.",
}

# issue 44: the cost by modality (parts of cost_usd; text = the rest)
_MODALITY_COSTS = {
    "audio_cost_usd": _d("The part of cost_usd priced at audio rates (audio input, cached audio input and audio "
                         "output tokens); NULL for self-hosted and idle rows, and where no audio part had a price", USD),
    "image_cost_usd": _d("The part of cost_usd priced at image rates (image input and output tokens, or per "
                         "generated image by size and quality); NULL as audio_cost_usd", USD),
    "video_cost_usd": _d("The part of cost_usd priced at video rates (video tokens, or per second of generated "
                         "video by resolution); NULL as audio_cost_usd", USD),
    "modality_unpriced_calls": _d("Calls with a non-text part the price sheet has no price for: that part is "
                                  "not in cost_usd and never priced at the text rate (marts.unpriced_usage names it)", COUNT),
}

_COST_PER_TASK = {
    "model": _d("Model the calls went to (lower case, no provider/ prefix, no date suffix)", LABEL),
    "serving": _d("'api' (bought per token) or 'self_hosted' (served by a node from nodes.csv)", LABEL),
    "tasks": _d("Distinct tasks in the row (a task that used two models counts once in each model's row)", COUNT),
    "calls": _d("Model calls in the row", COUNT),
    **_TOKEN_BUCKETS,
    "cost_usd": _d("Cost of the calls: API calls at the price in force at each call, self-hosted calls at "
                   "their share of the node's paid GPU-hours; idle rows carry unused node time", USD),
    "thinking_cost_usd": _d("The part of cost_usd due to thinking tokens", USD),
    "cost_per_task_usd": _d("cost_usd / tasks (NULL for idle rows)", USD),
    "unpriced_calls": _d("Calls without a known price (not in cost_usd; see marts.unpriced_usage)", COUNT),
    **_MODALITY_COSTS,
}

COLUMNS: dict[str, dict[str, str]] = {
    "marts.task_cost_breakdown": {
        "task_day": _d("UTC day of the task's first call (core.tasks); node-days without calls: that day", DAY),
        "task_team": _d("Team of the task's first call ('unknown' if not reported; 'idle' for self-hosted node-days "
                        "without calls)", LABEL),
        "task_type": _d("Task type of the task's first call ('unknown' if not reported; 'idle' for idle node-days)", LABEL),
        "task_tier": _d("The task's tier: the highest tier of its calls (fast < medium < full); 'idle' for idle node-days", LABEL),
        **_COST_PER_TASK,
    },
    "marts.cost_per_task": {
        "day": _d("UTC day of the task's first call", DAY),
        "team": _d("Team of the task's first call ('unknown' if not reported; 'idle' for self-hosted node-days without calls)", LABEL),
        "task_type": _d("Task type of the task's first call ('unknown' if not reported; 'idle' for idle node-days)", LABEL),
        "model": _d("Model the calls went to (lower case, no provider/ prefix, no date suffix)", LABEL),
        "serving": _d("'api' (bought per token) or 'self_hosted' (served by a node from nodes.csv)", LABEL),
        "tier": _d("The task's tier: the highest tier of its calls (fast < medium < full); 'idle' for idle node-days", LABEL),
        "tasks": _d("Distinct tasks in the row (a task that used two models counts once in each model's row)", COUNT),
        "calls": _d("Model calls in the row", COUNT),
        **_TOKEN_BUCKETS,
        "cost_usd": _d("Cost of the calls: API calls at the price in force at each call, self-hosted calls at "
                       "their share of the node's paid GPU-hours; idle rows carry unused node time", USD),
        "thinking_cost_usd": _d("The part of cost_usd due to thinking tokens", USD),
        "cost_per_task_usd": _d("cost_usd / tasks (NULL for idle rows)", USD),
        "unpriced_calls": _d("Calls without a known price (not in cost_usd; see marts.unpriced_usage)", COUNT),
        **_MODALITY_COSTS,
    },
    "marts.task_costs": {
        "task_id": _d("Task id (task_id from telemetry; a call without one is its own task)", LABEL),
        "day": _d("UTC day of the task's first call", DAY),
        "team": _d("Team of the task's first call ('unknown' if not reported)", LABEL),
        "task_type": _d("Task type of the task's first call ('unknown' if not reported)", LABEL),
        "calls": _d("Model calls of the task", COUNT),
        "models": _d("Models the task used, comma-separated, sorted", LABEL),
        "serving": _d("'api', 'self_hosted', or 'mixed' when the task used both", LABEL),
        **_TOKEN_BUCKETS,
        "cost_usd": _d("What the task cost: all its calls, API and self-hosted", USD),
        "thinking_cost_usd": _d("The part of cost_usd due to thinking tokens", USD),
        "tier": _d("Highest tier of the task's calls: 'fast' (no thinking), 'medium', 'full' (thresholds in ops.settings)", LABEL),
        "unpriced_calls": _d("Calls of the task without a known price (not in cost_usd)", COUNT),
        "first_call_at": _d("Time of the task's first call", TS),
        "last_call_at": _d("Time of the task's last call", TS),
        **_MODALITY_COSTS,
    },
    "marts.tier_mix": {
        "day": _d("UTC day of the calls (each call's own day, not its task's)", DAY),
        "team": _d("Team of the calls, each call's own; '*' = all teams together", LABEL),
        "tier": _d("Call tier from the call's own thinking tokens: 'fast', 'medium' or 'full' (every tier has a row; "
                   "a task's tier is in marts.task_cost_breakdown.task_tier)", LABEL),
        "calls": _d("Calls of the tier on that day and team", COUNT),
        "share_of_calls": _d("calls / all calls of the (day, team)", FRACTION),
        "cost_usd": _d("Cost of the tier's calls", USD),
        "share_of_cost": _d("cost_usd / all cost of the (day, team)", FRACTION),
        "target_share": _d("The target share of calls for this tier (thinktax.toml tiers.target_mix)", FRACTION),
        "cost_at_target_mix_usd": _d("What this tier would cost if the (day, team)'s calls followed the target mix, "
                                     "at this tier's cost per call", USD),
    },
    "marts.price_basis_mix": {
        "day": _d("UTC day of the calls", DAY),
        "provider": _d("API provider", LABEL),
        "model": _d("Model (lower case, no provider/ prefix, no date suffix)", LABEL),
        "price_basis": _d("How the calls were priced: 'standard', a service tier ('batch', 'flex', 'priority'), a "
                          "long-context kind ('above_200k_tokens'), 'regional_<region>', or a combination joined by '+' "
                          "(e.g. 'above_200k_tokens+priority'); see core.call_costs", LABEL),
        "calls": _d("API calls priced on this basis", COUNT),
        "calls_priced_as_standard": _d("Of calls, those whose reported service tier had no rate on the sheet "
                                       "(priced at standard, price_note on the call)", COUNT),
        "web_search_requests": _d("Web-search queries of the calls (billed per query)", COUNT),
        "cost_usd": _d("What the calls cost on their basis, per-query fees included", USD),
        "cost_at_standard_usd": _d("The same calls at standard rates (no tier, no long context, no uplift; same fees)", USD),
        "premium_usd": _d("cost_usd - cost_at_standard_usd: negative = saved (flex, batch), positive = extra "
                          "(priority, long context, regional processing)", USD),
        "request_fees_usd": _d("The per-query fees in cost_usd (web search)", USD),
    },
    "marts.daily_spend": {
        "day": _d("UTC day of the spend (for calls: each call's own day, not its task's)", DAY),
        "source": _d("'api_usage' (API calls at list price), 'api_bill' (what the provider billed) or "
                     "'self_hosted' (node cost allocated to calls, team 'idle' for node-days without calls)", LABEL),
        "provider": _d("API provider, or the self-hosted node's cloud provider", LABEL),
        "model": _d("Model (lower case, no provider/ prefix, no date suffix)", LABEL),
        "team": _d("Team of the calls, each call's own (inherited from its task when the call reports none; "
                   "'unknown' if neither reports one, 'idle' for unused node time)", LABEL),
        "cost_usd": _d("Spend", USD),
        "reasoning_cost_usd": _d("The part of cost_usd due to thinking tokens", USD),
        "calls": _d("Calls behind the spend (0 for idle rows and bills)", COUNT),
        **{k: v for k, v in _MODALITY_COSTS.items() if k != "modality_unpriced_calls"},
    },
    "marts.provisioned_usage": {
        "day": _d("UTC day of the calls", DAY),
        "provider": _d("API provider (canonical: bedrock, vertex_ai, azure, ...)", LABEL),
        "model": _d("Model (lower case, no provider/ prefix, no date suffix)", LABEL),
        "calls": _d("API calls paid by a reservation (Vertex AI trafficType PROVISIONED_THROUGHPUT, or an "
                    "endpoints.csv row with billing = provisioned); they cost 0 per token in core.call_costs", COUNT),
        "uncached_input_tokens": _d("Prompt tokens neither read from nor written to the cache", TOKENS),
        "cached_input_tokens": _d("Prompt tokens read from the cache", TOKENS),
        "cache_write_tokens": _d("Prompt tokens written to the cache", TOKENS),
        "thinking_tokens": _d("Thinking (reasoning) tokens", TOKENS),
        "output_tokens": _d("Visible output tokens", TOKENS),
        "on_demand_usd": _d("What the same calls would have cost on demand at the price sheet in force "
                            "(NULL where no sheet prices the model)", USD),
        "on_demand_unpriced_calls": _d("Of calls, those no price sheet prices on demand (not in on_demand_usd)", COUNT),
    },
    "marts.unpriced_usage": {
        "serving": _d("'api' or 'self_hosted'", LABEL),
        "provider": _d("API provider or node provider", LABEL),
        "reported_model": _d("Model name as reported by the telemetry", LABEL),
        "node_id": _d("Self-hosted node (NULL for API calls)", LABEL),
        "reason": _d("Why no price was found", LABEL),
        "calls_or_hours": _d("Unpriced calls (or node-hours, for a node without a GPU price)", COUNT),
        "first_seen": _d("First unpriced call or hour", TS),
        "last_seen": _d("Last unpriced call or hour", TS),
        "field": _d("What in the record could not be priced: 'model' (API call), 'node_id' (self-hosted), or the "
                    "usage column of a non-text part without a price on the sheet ('audio_input_tokens', "
                    "'cached_audio_input_tokens', 'audio_output_tokens', 'image_input_tokens', 'image_output_tokens', "
                    "'output_images', 'video_input_tokens', 'video_output_tokens', 'output_video_seconds'; issue 44)", LABEL),
        "first_file_id": _d("File of the first unpriced call (ops.ingested_files.file_id; NULL for node-hours)", LABEL),
        "first_line": _d("Line of that call in its file (NULL for node-hours)", COUNT),
    },
    "marts.bill_reconciliation": {
        "day": _d("UTC day of the billed usage", DAY),
        "provider": _d("API provider", LABEL),
        "model": _d("Model (lower case, no provider/ prefix, no date suffix)", LABEL),
        "billed_usd": _d("What the provider billed (cost export / invoice lines)", USD),
        "computed_usd": _d("Usage x the price in force, as thinktax computes it", USD),
        "difference_usd": _d("billed_usd - computed_usd", USD),
        "difference_pct": _d("difference_usd as a percentage of billed_usd", "percent"),
    },
    "marts.self_host_breakeven": {
        "month": _d("First day of the calendar month (UTC) of the observed API volume", DAY),
        "model": _d("Reasoning model (model key: lower case, no provider/ prefix, no date suffix)", LABEL),
        "deployment": _d("Candidate self-host set-up (deployments.csv)", LABEL),
        "provider": _d("Cloud provider of the deployment's GPUs", LABEL),
        "gpu_type": _d("GPU type of the deployment", LABEL),
        "gpus": _d("GPUs in one deployment", COUNT),
        "precision": _d("Weight precision of the deployment ('bf16', 'fp8', 'int4')", LABEL),
        "api_calls": _d("Priced API calls of the model in the month", COUNT),
        "api_spend_usd": _d("API spend on the model in the month: at the cloud invoice's net rate where one shows it "
                            "(marts.effective_rates.net_to_list, see api_price_basis), else at list", USD),
        "api_cost_per_call_usd": _d("api_spend_usd / api_calls: the observed API cost of one call", "USD per call"),
        "usd_per_gpu_hour": _d("GPU price used (see usd_per_gpu_hour_source)", "USD per GPU-hour"),
        "usd_per_gpu_hour_source": _d("'deployment' (deployments.csv) or 'gpu_price_sheet' (cheapest on-demand price in force)", LABEL),
        "self_host_usd_per_month": _d("Monthly cost of one deployment: gpus x usd_per_gpu_hour x hours_per_month", "USD per month"),
        "calls_per_minute": _d("Calls one deployment serves per minute (see calls_per_minute_source)", "calls per minute"),
        "calls_per_minute_source": _d("'deployment' (deployments.csv) or 'estimated' (memory-bandwidth roofline on the p50 profile)", LABEL),
        "capacity_calls_per_month": _d("floor(calls_per_minute x 60 x hours_per_month): what one deployment can serve (integer)", "calls per month"),
        "deployments_needed": _d("max(1, ceil(api_calls / capacity)): the self-host cost is a step function (NULL if infeasible)", COUNT),
        "breakeven_calls_per_month": _d("ceil(self_host_usd_per_month / api_cost_per_call_usd): the smallest whole monthly volume at "
                                        "which one deployment costs no more than the API (integer)", "calls per month"),
        "breakeven_api_spend_usd": _d("API spend at the break-even volume (= self_host_usd_per_month)", "USD per month"),
        "breakeven_within_capacity": _d("True when one deployment can serve the break-even volume; false: self-hosting "
                                        "never pays at any volume", BOOL),
        "savings_usd": _d("api_spend_usd - deployments_needed x self_host_usd_per_month: what self-hosting would save "
                          "in the month (negative: it would cost more; NULL if infeasible)", USD),
        "fits": _d("True when the weights and the KV cache of at least one p95 call fit the deployment's GPU memory", BOOL),
        "verdict": _d("'self_host' (fits and cheaper at the observed volume), 'stay_on_api', or 'infeasible' (does not fit)", LABEL),
        "api_spend_list_usd": _d("The same calls at list price (core.call_costs.cost_usd)", USD),
        "api_price_basis": _d(API_PRICE_BASIS, LABEL),
    },
    "marts.node_hours": {
        "node_id": _d("Self-hosted node (nodes.csv)", LABEL),
        "hour": _d("Start of the UTC hour", TS),
        "day": _d("UTC day of the hour", DAY),
        "provider": _d("Cloud provider of the node", LABEL),
        "gpu_type": _d("GPU type of the node", LABEL),
        "gpus": _d("GPUs in the node", COUNT),
        "model": _d("Model the node serves (model key)", LABEL),
        "gpu_hours": _d("GPU-hours paid in the hour (GPUs x fraction of the hour active)", "GPU-hours"),
        "cost_usd": _d("Cost of the node in the hour (NULL where no GPU price is known)", USD),
        "busy_seconds": _d("Seconds of the hour in which at least one call was running (union of call intervals)", "seconds"),
        "usage_cost_usd": _d("The part of cost_usd paid by busy time", USD),
        "idle_cost_usd": _d("The part of cost_usd paid by idle time (cost_usd - usage_cost_usd)", USD),
        "calls": _d("Finished requests from the serving engine's counters (NULL when the hour has no counter delta)", COUNT),
        "prompt_tokens": _d("Prompt tokens from the serving engine's counter deltas (a restart counts the new value, never negative)", TOKENS),
        "generation_tokens": _d("Generated tokens (thinking + output) from counter deltas (restarts handled)", TOKENS),
        "kv_cache_usage_mean": _d("Mean KV-cache usage over the hour's samples (vLLM kv_cache_usage_perc, SGLang token_usage)", FRACTION),
        "kv_cache_usage_max": _d("Highest KV-cache usage among the hour's samples", FRACTION),
        "gpu_util_mean": _d("Mean GPU utilisation (DCGM GPU_UTIL) over GPUs and scrapes", FRACTION),
        "energy_kwh": _d("Energy the GPUs used in the hour (DCGM energy counter deltas / 3.6e9 mJ per kWh)", "kWh"),
        "calls_logged": _d("Self-hosted calls of the node in the request logs whose time is in the hour", COUNT),
        "prompt_tokens_logged": _d("Their prompt tokens (uncached + cached + cache write), from the logs", TOKENS),
        "generation_tokens_logged": _d("Their generated tokens (thinking + output), from the logs", TOKENS),
        "has_metrics": _d("True when the hour has at least one Prometheus scrape", BOOL),
        "scrapes": _d("Distinct scrape times in the hour", COUNT),
        "counter_resets": _d("Counter deltas of the hour that were restarts (a drop in a counter)", COUNT),
        "counter_gaps": _d("Counter deltas of the hour flagged as gaps between scrapes", COUNT),
        "node_cost_source": _d("Where cost_usd comes from: 'invoice' (the cloud invoice's compute lines of the node's "
                               "nodes.csv cloud_resource_id cover the hour) or 'catalog' (usd_per_gpu_hour of nodes.csv, "
                               "else the GPU price sheet)", LABEL),
    },
    "marts.kv_thinking_share": {
        "day": _d("UTC day of the calls", DAY),
        "model": _d("Model (model key)", LABEL),
        "calls": _d("Calls of the model on the day", COUNT),
        "calls_without_latency": _d("Calls without latency_ms, so without KV byte-seconds (left out of the sums)", COUNT),
        "self_hosted_calls": _d("Calls served by self-hosted nodes", COUNT),
        "kv_bytes_per_token_bf16": _d("KV-cache bytes one token holds at bf16 (from config.json or models.csv)", "bytes per token"),
        "prompt_tokens": _d("Prompt tokens of the calls with a latency", TOKENS),
        "thinking_tokens": _d("Thinking tokens of the calls with a latency", TOKENS),
        "output_tokens": _d("Visible output tokens of the calls with a latency", TOKENS),
        "prompt_kv_gb_s": _d("KV cache the prompt tokens held, times how long (bf16)", "GB-seconds"),
        "thinking_kv_gb_s": _d("KV cache the thinking tokens held, times how long (bf16)", "GB-seconds"),
        "output_kv_gb_s": _d("KV cache the visible output tokens held, times how long (bf16)", "GB-seconds"),
        "kv_gb_s": _d("KV cache all tokens held, times how long (bf16)", "GB-seconds"),
        "kv_peak_gb_max": _d("Largest KV cache one call held at its end (bf16)", "GB (10^9 bytes)"),
        "prompt_share": _d("prompt_kv_gb_s / kv_gb_s", FRACTION),
        "thinking_share": _d("thinking_kv_gb_s / kv_gb_s: the thinking tokens' share of KV-time", FRACTION),
        "output_share": _d("output_kv_gb_s / kv_gb_s", FRACTION),
        "thinking_token_share": _d("thinking tokens / all tokens, for comparison with thinking_share", FRACTION),
    },
    "marts.gpu_sizing": {
        "model": _d("Model (catalog name, models.csv)", LABEL),
        "gpu_type": _d("GPU type", LABEL),
        "gpus": _d("GPUs in the set-up", COUNT),
        "precision": _d("Weight precision ('bf16', 'fp8', 'int4')", LABEL),
        "profile": _d("Call profile: 'p50' or 'p95' of the model's observed calls", LABEL),
        "month": _d("First day of the month whose calls gave the profile (the newest with calls)", DAY),
        "prompt_tokens": _d("Prompt tokens of the profile's call", TOKENS),
        "thinking_tokens": _d("Thinking tokens of the profile's call", TOKENS),
        "output_tokens": _d("Visible output tokens of the profile's call", TOKENS),
        "kv_dtype": _d("KV-cache dtype at this precision ('bf16' 2 bytes, 'fp8' 1 byte per element)", LABEL),
        "weights_gb": _d("Memory the weights take", "GB (10^9 bytes)"),
        "kv_bytes_per_token": _d("KV-cache bytes one token of context holds at kv_dtype", "bytes per token"),
        "kv_gb_per_call": _d("KV cache one call of this profile holds at its end", "GB (10^9 bytes)"),
        "kv_gb_per_call_allocated": _d("KV cache allocated per call across the GPUs (kv_gb_per_call x copies under tensor parallelism)", "GB (10^9 bytes)"),
        "kv_budget_gb": _d("GPU memory left for KV cache: usable memory - weights - activation reserve", "GB (10^9 bytes)"),
        "max_concurrent_calls": _d("floor(kv_budget_gb / kv_gb_per_call_allocated): calls of this profile that fit at once", COUNT),
        "fits": _d("True when the weights and at least one call fit", BOOL),
    },
    "marts.cost_crosscheck": {
        "day": _d("UTC day of the calls", DAY),
        "reporter": _d("Who reported the cost: 'litellm' (the proxy's LiteLLM_SpendLogs.spend)", LABEL),
        "provider": _d("API provider", LABEL),
        "model": _d("Model (thinktax's model key)", LABEL),
        "calls": _d("Calls with a reported cost", COUNT),
        "thinktax_cost_usd": _d("thinktax's cost of those calls (list price in force; unpriced calls left out)", USD),
        "reported_cost_usd": _d("The cost the reporter stored for the same calls", USD),
        "difference_usd": _d("reported_cost_usd - thinktax_cost_usd over the priced calls", USD),
        "differing_calls": _d("Priced calls whose two costs differ by more than 1% of thinktax's cost", COUNT),
        "unpriced_calls": _d("Calls thinktax could not price (see marts.unpriced_usage)", COUNT),
    },
    "marts.focus_costs": {
        # FOCUS 1.2 column ids; a column matches in PascalCase or snake_case (billed_cost).
        "x_Source": _d("thinktax custom column: 'api_usage' (computed API cost), 'self_hosted' (node time) or "
                       "'api_bill' (a billed line), as in marts.daily_spend", LABEL),
        "InvoiceId": _d("FOCUS InvoiceId: the invoice the charge is on, from the bill; NULL for computed rows (not invoiced)", LABEL),
        "BilledCost": _d("FOCUS BilledCost: the amount charged, as invoiced", USD),
        "EffectiveCost": _d("FOCUS EffectiveCost: amortised cost after discounts and commitments", USD),
        "ListCost": _d("FOCUS ListCost: cost at list price", USD),
        "ContractedCost": _d("FOCUS ContractedCost: cost at the negotiated price", USD),
        "BillingAccountId": _d("FOCUS BillingAccountId: the billing account", LABEL),
        "BillingAccountName": _d("FOCUS BillingAccountName: the billing account's name", LABEL),
        "BillingAccountType": _d("FOCUS BillingAccountType: the kind of billing account", LABEL),
        "BillingCurrency": _d("FOCUS BillingCurrency: currency of the billed amounts (ISO 4217)", LABEL),
        "BillingPeriodStart": _d("FOCUS BillingPeriodStart: start of the billing period (inclusive)", TS),
        "BillingPeriodEnd": _d("FOCUS BillingPeriodEnd: end of the billing period (exclusive)", TS),
        "ChargeCategory": _d("FOCUS ChargeCategory: 'Usage', 'Purchase', 'Tax', 'Credit' or 'Adjustment'", LABEL),
        "ChargeClass": _d("FOCUS ChargeClass: 'Correction' for corrections of an earlier period, else empty", LABEL),
        "ChargeDescription": _d("FOCUS ChargeDescription: what the charge is", LABEL),
        "ChargeFrequency": _d("FOCUS ChargeFrequency: 'One-Time', 'Recurring' or 'Usage-Based'", LABEL),
        "ChargePeriodStart": _d("FOCUS ChargePeriodStart: start of the period the charge covers (inclusive)", TS),
        "ChargePeriodEnd": _d("FOCUS ChargePeriodEnd: end of the period the charge covers (exclusive)", TS),
        "ConsumedQuantity": _d("FOCUS ConsumedQuantity: usage measured in ConsumedUnit", "ConsumedUnit"),
        "ConsumedUnit": _d("FOCUS ConsumedUnit: the unit of ConsumedQuantity (e.g. 'tokens', 'GPU-hours')", LABEL),
        "InvoiceIssuerName": _d("FOCUS InvoiceIssuerName: who issues the invoice", LABEL),
        "ListUnitPrice": _d("FOCUS ListUnitPrice: list price per PricingUnit", "USD per PricingUnit"),
        "ContractedUnitPrice": _d("FOCUS ContractedUnitPrice: negotiated price per PricingUnit", "USD per PricingUnit"),
        "PricingCategory": _d("FOCUS PricingCategory: 'Standard', 'Dynamic', 'Committed' or 'Other'", LABEL),
        "PricingCurrency": _d("FOCUS PricingCurrency: currency of the unit prices (ISO 4217)", LABEL),
        "PricingQuantity": _d("FOCUS PricingQuantity: quantity priced, in PricingUnit", "PricingUnit"),
        "PricingUnit": _d("FOCUS PricingUnit: the unit prices are quoted in, in the FOCUS unit format (e.g. '1000000 Tokens', 'GPU-Hours')", LABEL),
        "ProviderName": _d("FOCUS ProviderName: who provides the service (API provider or cloud)", LABEL),
        "PublisherName": _d("FOCUS PublisherName: who publishes the service (model vendor)", LABEL),
        "RegionId": _d("FOCUS RegionId: provider region id", LABEL),
        "RegionName": _d("FOCUS RegionName: provider region name", LABEL),
        "ResourceId": _d("FOCUS ResourceId: the resource charged (node id, model)", LABEL),
        "ResourceName": _d("FOCUS ResourceName: the resource's display name", LABEL),
        "ResourceType": _d("FOCUS ResourceType: the kind of resource", LABEL),
        "ServiceCategory": _d("FOCUS ServiceCategory: e.g. 'AI and Machine Learning'", LABEL),
        "ServiceName": _d("FOCUS ServiceName: the service charged", LABEL),
        "ServiceSubcategory": _d("FOCUS ServiceSubcategory: finer service class", LABEL),
        "SkuId": _d("FOCUS SkuId: the provider's SKU; computed API rows: price provider/price model/token type", LABEL),
        "SkuPriceId": _d("FOCUS SkuPriceId: the SKU price point; computed API rows: price_version_id|token type", LABEL),
        "SubAccountId": _d("FOCUS SubAccountId: project / workspace / team account", LABEL),
        "SubAccountName": _d("FOCUS SubAccountName: its name", LABEL),
        "Tags": _d("FOCUS Tags: key-value labels, as JSON", LABEL),
    },
    "ops.ingested_files": {
        "file_id": _d("Id of the landed file (by content)", LABEL),
        "file": _d("Path relative to the landing folder, as first seen", LABEL),
        "sha256": _d("SHA-256 of the file's bytes as landed (before gunzip); the same bytes under any name are ingested once", LABEL),
        "folder": _d("Landing sub-folder, e.g. 'prices/llm'", LABEL),
        "format": _d("Detected format, e.g. 'litellm_json' (NULL when unreadable)", LABEL),
        "target_table": _d("Staging table the rows went to", LABEL),
        "status": _d("'loaded', or 'unreadable' (the whole file quarantined)", LABEL),
        "rows_in": _d("Records read: rows_loaded + rows_duplicate + rows_quarantined", COUNT),
        "rows_loaded": _d("Records loaded into staging", COUNT),
        "rows_duplicate": _d("Records already loaded from another file (same key and values)", COUNT),
        "rows_quarantined": _d("Records rejected to ops.quarantine", COUNT),
        "effective_from": _d("Price sheets: the day their prices take effect", DAY),
        "bytes": _d("Size of the file as landed (on disk, before gunzip)", "bytes"),
        "ingested_at": _d("When the file was ingested", TS),
        "file_mtime_ns": _d("Modification time of the file when it was ingested; a later run skips a file whose "
                            "path, bytes and mtime are unchanged without reading it. NULL if the file changed "
                            "while it was read, or was ingested before this column existed",
                            "nanoseconds since 1970-01-01 UTC"),
    },
    "ops.unknown_fields": {
        "file_id": _d("Id of the file (ops.ingested_files)", LABEL),
        "source": _d("The parser's format, e.g. 'requests_jsonl'", LABEL),
        "file": _d("Path relative to the landing folder", LABEL),
        "path": _d("Dotted key path from the record's root that the parser does not read (nor declares harmless), "
                   "e.g. 'usage.output_tokens_details.foo_tokens'", LABEL),
        "first_line": _d("First line of the file that carries the path", "line number"),
        "records": _d("Lines of the file that carry the path", COUNT),
        "token_like": _d("The path looks like a token count: a name ending _tokens, Tokens, TokenCount, _token_count, "
                         "or under a *_tokens_details / *TokensDetails object, or an object holding such a key", BOOL),
        "nonzero_records": _d("Lines where the token-looking value is not 0 or empty: their calls are partially priced "
                              "(marts.unpriced_usage)", COUNT),
        "example": _d("The value on the first line, as JSON text (200 characters at most)", LABEL),
        "found_at": _d("When the file was ingested", TS),
    },
    "ops.unknown_field_lines": {
        "file_id": _d("Id of the file (ops.ingested_files)", LABEL),
        "line": _d("Line of the call in its file (stg.requests.line)", "line number"),
        "path": _d("The token-looking unknown path the line carries with a non-zero value", LABEL),
        "request_id": _d("The call, where one line holds several (an OTLP/JSON document line: the span's request id); "
                         "NULL where the line is the call (per-request JSONL)", LABEL),
    },
    "ops.quarantine": {
        "file_id": _d("Id of the file (ops.ingested_files)", LABEL),
        "file": _d("Path relative to the landing folder", LABEL),
        "line": _d("Line (or record number) in the file; NULL when the whole file was unreadable", "line number"),
        "field": _d("Field that failed", LABEL),
        "reason": _d("Why the record was rejected", LABEL),
        "raw": _d("The rejected record as text", LABEL),
        "quarantined_at": _d("When it was rejected", TS),
    },
    "ops.runs": {
        "build_id": _d("Id of the run's build (the build_id the marts of its snapshot carry)", LABEL),
        "started_at": _d("When the run started its build", TS),
        "published_at": _d("When the run published its build (NULL if it never did)", TS),
        "files_new": _d("Landing files the run ingested for the first time", COUNT),
        "landing": _d("Landing folder the run read", LABEL),
    },
    "ops.settings": {
        "hours_per_month": _d("Hours in a month, for monthly costs", "hours"),
        "medium_min_thinking_tokens": _d("A call with at least this many thinking tokens is 'medium'", TOKENS),
        "full_min_thinking_tokens": _d("A call with at least this many thinking tokens is 'full'", TOKENS),
        "target_fast": _d("Target share of 'fast' calls", FRACTION),
        "target_medium": _d("Target share of 'medium' calls", FRACTION),
        "target_full": _d("Target share of 'full' calls", FRACTION),
        "alert_window_days": _d("Trailing window of reasoning API spend the alert looks at", "days"),
        "alert_threshold_usd_per_month": _d("Alert threshold; 0 = the break-even of the cheapest feasible deployment", "USD per month"),
        "otel_team_attribute": _d("[otel] team_attribute: the resource attribute that names an OpenTelemetry span's team (else service.name)", LABEL),
    },
    "ops.alerts": {
        "alert": _d("Alert name ('breakeven')", LABEL),
        "model": _d("Reasoning model the alert is about ('*' = all reasoning API spend together)", LABEL),
        "fired_at": _d("When the alert fired (the delivery attempt)", TS),
        "window_spend_usd": _d("API spend on the model over the trailing window (not scaled)", USD),
        "threshold_usd": _d("The threshold it crossed: the cheapest feasible deployment's monthly cost, or "
                            "alert.threshold_usd_per_month", "USD per month"),
        "delivered": _d("True once the webhook answered 2xx (a failed POST is retried on the next run; "
                        "log-only alerts stay false)", BOOL),
        "message": _d("The message text", LABEL),
        "window_spend_usd_per_month": _d("window_spend_usd scaled to a month: x hours_per_month / (24 x window_days)", "USD per month"),
        "window_days": _d("Length of the trailing window", "days"),
        "window_end": _d("Last UTC day of the window", DAY),
        "deployment": _d("Cheapest feasible self-host deployment for the model, if known", LABEL),
        "channel": _d("'webhook', or 'log' when no webhook is configured", LABEL),
        "error": _d("Why delivery failed (HTTP status, timeout, refused connection); NULL when delivered", LABEL),
    },
    "ops.alert_state": {
        "alert": _d("Alert name ('breakeven')", LABEL),
        "model": _d("Reasoning model ('*' = all reasoning models together)", LABEL),
        "status": _d("'armed' (below threshold: the next crossing fires), 'fired' (sent for the current crossing), "
                     "'pending' (above, delivery failed: retried next run)", LABEL),
        "window_spend_usd_per_month": _d("Trailing-window API spend scaled to a month, at the last evaluation", "USD per month"),
        "threshold_usd_per_month": _d("The threshold at the last evaluation", "USD per month"),
        "window_end": _d("Last UTC day of the window at the last evaluation", DAY),
        "updated_at": _d("When the state was last evaluated", TS),
    },
    "ops.ingested_days": {
        "file_id": _d("Landed file (ops.ingested_files)", LABEL),
        "day": _d("UTC day the file's rows fall on (telemetry and bills)", DAY),
        "rows": _d("Rows of the file on that day (a row spanning days counts on each)", COUNT),
    },
    "ops.model_builds": {
        "table_name": _d("The core.* or marts.* table (or view)", LABEL),
        "sql_sha256": _d("sha256 of the model's SQL file when it was built; a change rebuilds it (and what it feeds) whole", LABEL),
        "settings_sha256": _d("sha256 of ops.settings (without build_id) when it was built; a change rebuilds everything whole", LABEL),
        "mode": _d("'full' (table recreated), 'incremental' (the planned days replaced) or 'view'", LABEL),
        "days": _d("Incremental: how many UTC days were replaced (0 when full)", COUNT),
        "build_id": _d("The run (ops.runs) that built it", LABEL),
        "built_at": _d("When it was built", TS),
    },
    "ops.build_scope": {
        "build_id": _d("The run (ops.runs) this plan belongs to", LABEL),
        "full_rebuild": _d("True when every table was rebuilt whole", BOOL),
        "reason": _d("Why the rebuild was full (first build, new price sheet or catalog file, settings changed, asked for), or 'incremental'", LABEL),
        "days": _d("Incremental: the UTC days every incremental table replaced (new files' days, requested partitions, gap days, closed over tasks)", DAY),
        "halo_days": _d("Days a self-hosted call's interval can reach back; usage-basis tables replace the days +- this", COUNT),
        "full_tables": _d("Tables rebuilt whole in an incremental run (their SQL changed, or they feed from one that did)", LABEL),
        "planned_at": _d("When the plan was made", TS),
        "tables": _d("The SQL tables this run rebuilt at all (NULL = every one); the others read nothing that changed and were kept as published", LABEL),
    },

}


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def column_comment(table: str, column: str) -> str | None:
    """The documented comment of ``schema.table``.``column``, or None."""
    cols = COLUMNS.get(table, {})
    if column in cols:
        return cols[column]
    if table == "marts.focus_costs":  # FOCUS ids in PascalCase or snake_case
        by_norm = {_norm(k): v for k, v in cols.items()}
        if _norm(column) in by_norm:
            return by_norm[_norm(column)]
    return COMMON.get(column)


def table_comment(table: str) -> str | None:
    """A mart's SQL header (what it is, grain), else the text in TABLES."""
    from warehouse.transform import load_tables  # noqa: PLC0415

    for model in load_tables():
        if model.table == table:
            lines = [ln for ln in model.description.splitlines() if ln and not ln.startswith("reads:")]
            return " ".join(lines)
    return TABLES.get(table)


def split(comment: str) -> tuple[str, str]:
    """('meaning', 'unit') of a comment written by `_d`."""
    m = re.fullmatch(r"(.*)\. Unit: (.*)\.", comment, flags=re.DOTALL)
    return (m[1], m[2]) if m else (comment, "")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def existing_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(schema, table, column) of every marts.* and ops.* column, in table and column order."""
    return [tuple(r) for r in con.execute(
        "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name IN ('marts', 'ops') "
        "ORDER BY schema_name, table_name, column_index"
    ).fetchall()]


def apply(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Write the comments into the warehouse; returns the columns that have none (``schema.table.column``).

    Only comments that differ from the stored ones are written (one ``COMMENT ON`` costs a catalog
    write; a run that replaced a few tables, or none, rewrites only theirs)."""
    relations = {(s, n): (kind, c) for s, n, kind, c in con.execute(
        "SELECT schema_name, table_name, 'TABLE', comment FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name IN ('marts', 'ops') "
        "UNION ALL SELECT schema_name, view_name, 'VIEW', comment FROM duckdb_views() "
        "WHERE database_name = current_database() AND schema_name IN ('marts', 'ops') AND NOT internal"
    ).fetchall()}
    for (schema, name), (kind, stored) in relations.items():
        text = table_comment(f"{schema}.{name}")
        if text and text != stored:
            con.execute(f"COMMENT ON {kind} {_ident(schema)}.{_ident(name)} IS {_literal(text)}")
    stored_columns = {(s, t, c): comment for s, t, c, comment in con.execute(
        "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name IN ('marts', 'ops')"
    ).fetchall()}
    missing = []
    for schema, name, column in existing_columns(con):
        text = column_comment(f"{schema}.{name}", column)
        if text is None:
            missing.append(f"{schema}.{name}.{column}")
            continue
        if text != stored_columns.get((schema, name, column)):
            con.execute(f"COMMENT ON COLUMN {_ident(schema)}.{_ident(name)}.{_ident(column)} IS {_literal(text)}")
    return missing


# -- looking ahead (issue 18): forecast, outlook, substitution, budgets, peak load, offers -----------
# Money columns are DECIMAL(18,6) even where the figure was computed in floats (the forecast and its
# intervals: statsmodels; the budget interval: DOUBLE in SQL), rounded to the micro-dollar.
_FLOAT_MONEY = " (computed in floats, stored as DECIMAL(18,6))"
TABLES.update({
    "marts.spend_forecast": "API and self-hosted spend forecast per month with calibrated 80 % and 95 % intervals, the "
                            "method chosen by a rolling-origin backtest, its error and the runner-up's. grain: month x scope (all/team/model) x scope_value x serving.",
    "marts.deployment_offers": "Every GPU price sheet row in force that can host each deployment, its monthly cost and rank. "
                               "grain: deployment x offer.",
    "marts.peak_capacity": "Deployments needed for the p99 hour of concurrent calls of the last 30 days. grain: deployment x from_model.",
    "marts.substitution_breakeven": "Moving an API model's traffic to a self-hosted deployment of another model, token volumes "
                                    "scaled. grain: month x from_model x to_model x deployment.",
    "marts.breakeven_outlook": "The month forecast API spend first reaches the monthly cost of the deployments the peak or the "
                               "queue needs (the larger). grain: model x to_model x deployment.",
    "marts.budget_outlook": "Each budgeted team's forecast months (marts.spend_forecast, team scope, API + self-hosted) "
                            "against its monthly budget. grain: team x month.",
    "marts.capacity_plan": "Replicas and GPUs that keep the p95 (and p99) queueing delay of the busiest observed hours, "
                           "replayed through the deployment's KV slots, under [capacity] max_queue_seconds; next to the "
                           "peak-concurrency sizing. grain: deployment x from_model.",
})
_MONTHS = "month (DATE, first of the month)"
COLUMNS.update({
    "marts.spend_forecast": {
        "month": _d("Calendar month forecast (the first one may be under way: observed_usd is already in it)", _MONTHS),
        "scope": _d("'all' (every cost), 'team' or 'model'", LABEL),
        "scope_value": _d("'*' for scope all, else the team or the model key", LABEL),
        "serving": _d("'api' (API calls at list price) or 'self_hosted' (node cost allocated to calls, idle included)", LABEL),
        "observed_usd": _d("Spend already observed in the month, up to last_day", USD),
        "forecast_days": _d("Days of the month after last_day that are forecast", COUNT),
        "forecast_usd": _d("observed_usd + the point forecast of the remaining days" + _FLOAT_MONEY, USD),
        "lo80_usd": _d("Lower bound of the 80 % interval: point - 1.2816 x sd x interval_scale80 (log models: "
                       "point x exp(-...)), floored at 0" + _FLOAT_MONEY, USD),
        "hi80_usd": _d("Upper bound of the 80 % interval" + _FLOAT_MONEY, USD),
        "lo95_usd": _d("Lower bound of the 95 % interval (z = 1.96, x interval_scale95)" + _FLOAT_MONEY, USD),
        "hi95_usd": _d("Upper bound of the 95 % interval" + _FLOAT_MONEY, USD),
        "method": _d("The candidate with the lowest backtest MAPE on month totals, e.g. 'monthly linear trend', "
                     "'daily ETS(A,N,N) weekday-adjusted' (models/forecast.py lists them), or a stated fallback: 'fallback_drift' "
                     "(fewer than 3 full months), 'fallback_mean_rate', 'fallback_single_day', 'no_spend_in_history'", LABEL),
        "backtest_mape_pct": _d("Mean absolute percentage error of the method's month totals over every (origin, month "
                                "ahead) of the rolling-origin backtest (NULL: no backtest)", "percent"),
        "backtest_windows": _d("(origin, month ahead) pairs the backtest scored: up to 3 months after each origin", COUNT),
        "backtest_covered80": _d("Backtest windows whose actual month total fell inside the 80 % interval (before widening)", COUNT),
        "backtest_covered95": _d("Backtest windows whose actual month total fell inside the 95 % interval (before widening)", COUNT),
        "history_days": _d("Days of history the series had (its first day with spend to last_day)", COUNT),
        "last_day": _d("The last day with calls in the warehouse: the forecast starts the day after", DAY),
        "grain": _d("'daily' (fitted on the daily series) or 'monthly' (on full calendar-month totals); NULL for a fallback", LABEL),
        "backtest_origins": _d("Rolling origins K: the ends of the last min(3, full months - 2) full months before the "
                               "last one", COUNT),
        "backtest_coverage80": _d("backtest_covered80 / backtest_windows (NULL: no backtest)", FRACTION),
        "backtest_coverage95": _d("backtest_covered95 / backtest_windows (NULL: no backtest)", FRACTION),
        "interval_scale80": _d("Factor the 80 % half-width was widened by: 1 when the backtest coverage reached 80 %, "
                               "else the split-conformal quantile of the backtest scores / 1.2816", "ratio"),
        "interval_scale95": _d("The same for the 95 % interval (at least interval_scale80 x 1.2816 / 1.96)", "ratio"),
        "runner_up_method": _d("The candidate with the second-lowest backtest MAPE (NULL: none)", LABEL),
        "runner_up_mape_pct": _d("Its backtest MAPE", "percent"),
        "api_price_basis": _d(API_PRICE_BASIS + "; NULL for self-hosted spend", LABEL),
    },
    "marts.deployment_offers": {
        "deployment": _d("Candidate self-host set-up (deployments.csv)", LABEL),
        "model": _d("Model key of the deployment", LABEL),
        "gpu_type": _d("GPU type (GPU table name)", LABEL),
        "gpus": _d("GPUs in one deployment", COUNT),
        "provider": _d("Provider of the price sheet row", LABEL),
        "region": _d("Region of the price sheet row", LABEL),
        "instance_type": _d("Instance type of the price sheet row", LABEL),
        "pricing": _d("'on_demand', 'spot', 'reserved'...", LABEL),
        "gpus_per_node": _d("GPUs per instance (node) of the offer", COUNT),
        "nodes_needed": _d("ceil(gpus / gpus_per_node)", COUNT),
        "offer": _d("provider/region/instance_type/pricing", LABEL),
        "usd_per_gpu_hour": _d("Price of the offer", "USD per GPU-hour"),
        "self_host_usd_per_month": _d("gpus x usd_per_gpu_hour x hours_per_month", "USD per month"),
        "rank": _d("1 = cheapest offer of the deployment (ties: provider, region, instance type, pricing)", COUNT),
        "same_provider": _d("True when the offer is of the deployment's provider (or it names none)", BOOL),
        "is_used": _d("True for the offer the break-even takes: the cheapest on-demand one of the deployment's provider, "
                      "when deployments.csv gives no price", BOOL),
    },
    "marts.peak_capacity": {
        "deployment": _d("Candidate self-host set-up", LABEL),
        "from_model": _d("Model whose traffic is served (the deployment's own model, or a substitution's from_model)", LABEL),
        "to_model": _d("Model the deployment serves", LABEL),
        "window_start": _d("First day of the 30-day peak window", DAY),
        "window_end": _d("Last day of the peak window (the last day with calls)", DAY),
        "hours": _d("Hours of marts.peak_concurrency in the window", COUNT),
        "peak_calls": _d("99th percentile (nearest rank) over the window's hours of p99_concurrent_calls", "calls in flight"),
        "profile_month": _d("Month of the p95 call profile used", _MONTHS),
        "prompt_tokens": _d("p95 prompt tokens", TOKENS),
        "thinking_tokens": _d("p95 thinking tokens x thinking_ratio", TOKENS),
        "output_tokens": _d("p95 output tokens x output_ratio", TOKENS),
        "kv_gb_per_call": _d("KV cache one p95 call holds on the deployment (copies under tensor parallelism included)", "GB (10^9 bytes)"),
        "max_concurrent_calls": _d("p95 calls one deployment holds at once (models.sizing)", COUNT),
        "fits": _d("True when at least one p95 call fits", BOOL),
        "deployments_needed": _d("max(1, ceil(peak_calls / max_concurrent_calls)); NULL if it does not fit", COUNT),
    },
    "marts.substitution_breakeven": {
        "month": _d("Month of the observed API traffic of from_model", _MONTHS),
        "from_model": _d("API model whose traffic would move", LABEL),
        "to_model": _d("Self-hosted model it would move to", LABEL),
        "deployment": _d("Deployment of to_model", LABEL),
        "thinking_ratio": _d("to_model thinking tokens per from_model thinking token (substitutions.csv)", "ratio"),
        "output_ratio": _d("to_model output tokens per from_model output token", "ratio"),
        "gpu_type": _d("GPU type of the deployment", LABEL),
        "gpus": _d("GPUs in one deployment", COUNT),
        "precision": _d("Weight precision", LABEL),
        "api_calls": _d("Priced API calls of from_model in the month", COUNT),
        "api_spend_usd": _d("API spend on from_model in the month (what moving would stop paying), at the cloud "
                            "invoice's net rate where one shows it (api_price_basis)", USD),
        "api_cost_per_call_usd": _d("api_spend_usd / api_calls", "USD per call"),
        "usd_per_gpu_hour": _d("GPU price used", "USD per GPU-hour"),
        "usd_per_gpu_hour_source": _d("'deployment' or 'gpu_price_sheet'", LABEL),
        "offer": _d("The price sheet offer used (provider/region/instance_type/pricing); NULL for a deployment's own price", LABEL),
        "self_host_usd_per_month": _d("Monthly cost of one deployment", "USD per month"),
        "calls_per_minute": _d("Calls per minute of one deployment on the scaled p50 profile (given or estimated)", "calls per minute"),
        "capacity_calls_per_month": _d("calls_per_minute x 60 x hours_per_month", "calls per month"),
        "deployments_needed": _d("max(1, ceil(api_calls / capacity)); NULL if infeasible", COUNT),
        "breakeven_calls_per_month": _d("self_host_usd_per_month / api_cost_per_call_usd", "calls per month"),
        "breakeven_api_spend_usd": _d("API spend at the break-even volume", "USD per month"),
        "savings_usd": _d("api_spend_usd - deployments_needed x self_host_usd_per_month (NULL if infeasible)", USD),
        "fits": _d("True when a scaled p95 call fits the deployment", BOOL),
        "verdict": _d("'self_host', 'stay_on_api' or 'infeasible'", LABEL),
        "api_spend_list_usd": _d("The same calls at list price (core.call_costs.cost_usd)", USD),
        "api_price_basis": _d(API_PRICE_BASIS, LABEL),
    },
    "marts.breakeven_outlook": {
        "model": _d("Reasoning model bought through an API (the traffic)", LABEL),
        "to_model": _d("Model of the deployment: the model itself, or a substitution's to_model", LABEL),
        "deployment": _d("Candidate self-host set-up of to_model", LABEL),
        "threshold_usd_per_month": _d("deployments_needed x self_host_usd_per_month: what self-hosting the peak costs", "USD per month"),
        "crossing_month_expected": _d("First forecast month whose forecast_usd reaches the threshold (NULL: not within the horizon)", _MONTHS),
        "crossing_month_earliest": _d("First forecast month whose hi95_usd reaches it", _MONTHS),
        "crossing_month_latest": _d("First forecast month whose lo95_usd reaches it", _MONTHS),
        "status": _d("'crossed' (the last full month already reached it), 'within_horizon', 'not_within_horizon', "
                     "'infeasible' (does not fit), 'no_forecast' (no API spend series)", LABEL),
        "months_until_expected": _d("Months from the first forecast month to the expected crossing (0 = the month under way)", COUNT),
        "deployments_needed": _d("max(peak_deployments_needed, queue_replicas_needed): what the threshold pays for", COUNT),
        "peak_deployments_needed": _d("Deployments the p99 peak hour of concurrent calls needs (marts.peak_capacity)", COUNT),
        "queue_replicas_needed": _d("Replicas the queueing replay needs (marts.capacity_plan.replicas_needed)", COUNT),
        "self_host_usd_per_month": _d("Monthly cost of one deployment", "USD per month"),
        "usd_per_gpu_hour": _d("GPU price used", "USD per GPU-hour"),
        "offer": _d("The price sheet offer used; NULL for a deployment's own price", LABEL),
        "last_full_month": _d("The last calendar month fully observed", _MONTHS),
        "last_full_month_api_spend_usd": _d("API spend on the model in last_full_month", USD),
        "thinking_ratio": _d("Thinking token scaling (1 for the model itself)", "ratio"),
        "output_ratio": _d("Output token scaling (1 for the model itself)", "ratio"),
        "api_price_basis": _d(API_PRICE_BASIS + " (of the model's spend forecast, else of its last full month)", LABEL),
    },
    "marts.budget_outlook": {
        "team": _d("Team (budgets.csv)", LABEL),
        "month": _d("Forecast month (the first may be under way)", _MONTHS),
        "budget_usd": _d("The team's monthly budget (the newest budgets.csv)", USD),
        "soft_usd": _d("budget_usd x soft_pct / 100", USD),
        "observed_usd": _d("The team's spend already observed in the month (API + self-hosted)", USD),
        "forecast_usd": _d("The chosen forecast of the month, API + self-hosted (marts.spend_forecast, scope team)" + _FLOAT_MONEY, USD),
        "lo80_usd": _d("Sum of the two servings' 80 % lower bounds (assumes they move together: wider)" + _FLOAT_MONEY, USD),
        "hi80_usd": _d("Sum of the 80 % upper bounds" + _FLOAT_MONEY, USD),
        "lo95_usd": _d("Sum of the 95 % lower bounds; NULL when a serving has no interval" + _FLOAT_MONEY, USD),
        "hi95_usd": _d("Sum of the 95 % upper bounds; NULL when a serving has no interval" + _FLOAT_MONEY, USD),
        "status_expected": _d("'over_budget' (forecast_usd >= budget), 'over_soft' (>= soft_usd) or 'ok'", LABEL),
        "over_budget_at_hi95": _d("True when the 95 % upper bound reaches the budget (NULL: no interval)", BOOL),
        "methods": _d("'<serving>: <method>' of each series summed", LABEL),
        "last_day": _d("The last day with calls in the warehouse", DAY),
    },
    "marts.capacity_plan": {
        "deployment": _d("Candidate self-host set-up", LABEL),
        "from_model": _d("Model whose traffic is replayed (the deployment's own model, or a substitution's from_model)", LABEL),
        "to_model": _d("Model the deployment serves", LABEL),
        "window_start": _d("First day of the 30-day window the busiest hours are taken from", DAY),
        "window_end": _d("Last day of the window (the last day with calls)", DAY),
        "hours_replayed": _d("Busiest hours replayed: the 3 with the most calls started (ties: the later)", COUNT),
        "calls_replayed": _d("Calls started in those hours", COUNT),
        "busiest_hour": _d("Start of the busiest replayed hour", TS),
        "busiest_hour_calls": _d("Calls started in the busiest hour", COUNT),
        "slots_per_replica": _d("KV slots of one replica: p95 calls one deployment holds at once (models.sizing); 0 if none fits", COUNT),
        "calls_per_minute": _d("Calls per minute of one deployment on the scaled p50 profile at a full batch (given or estimated)",
                               "calls per minute"),
        "seconds_per_generated_token": _d("Decode step at a full batch (models.throughput, p50 context) x k, k = estimated / "
                                          "given calls_per_minute (1 without a given one)", "seconds per token"),
        "mean_service_seconds": _d("Mean slot time of the replayed calls: (thinking x thinking_ratio + output x output_ratio) "
                                   "x seconds_per_generated_token + slots x prefill seconds x k", "seconds"),
        "p95_service_seconds": _d("95th percentile of the replayed calls' slot time (heavy tail of thinking)", "seconds"),
        "p99_service_seconds": _d("99th percentile of the replayed calls' slot time", "seconds"),
        "max_queue_seconds": _d("The target: [capacity] max_queue_seconds", "seconds"),
        "replicas_p95": _d("Smallest replicas whose p95 queueing delay (nearest rank, FIFO over every slot) <= the target", COUNT),
        "p95_queue_seconds": _d("p95 queueing delay at replicas_p95", "seconds"),
        "replicas_p99": _d("Smallest replicas whose p99 queueing delay <= the target", COUNT),
        "p99_queue_seconds": _d("p99 queueing delay at replicas_p99", "seconds"),
        "replicas_needed": _d("The plan: replicas_p95 (NULL if no call fits)", COUNT),
        "gpus_needed": _d("replicas_needed x GPUs of one deployment", COUNT),
        "mgc_replicas_p95": _d("Cross-check: the smallest replicas whose M/G/c p95 delay (Allen-Cunneen: Poisson arrivals "
                               "at the busiest replayed hour's rate, the replayed slot times' mean and variance) meets the "
                               "target; it ignores bursts within the hour, so it can be below replicas_p95", COUNT),
        "peak_deployments_needed": _d("Today's peak-concurrency sizing (marts.peak_capacity.deployments_needed)", COUNT),
        "planned_replicas": _d("max(replicas_needed, peak_deployments_needed): what the break-even pays for", COUNT),
        "planned_gpus": _d("planned_replicas x GPUs of one deployment", COUNT),
        "sizing_basis": _d("'queueing' when the replay needs more replicas than the peak, else 'peak_concurrency'; "
                           "'peak_concurrency (no replay)' where the build holds no per-call core.calls", LABEL),
        "fits": _d("True when at least one p95 call fits the deployment", BOOL),
    },
    "marts.peak_concurrency": {
        "model": _d("Model key", LABEL),
        "hour": _d("Start of the UTC hour", TS),
        "day": _d("UTC day of the hour", DAY),
        "calls_started": _d("Calls that started in the hour", COUNT),
        "p50_concurrent_calls": _d("Time-weighted median of calls in flight over the hour", "calls in flight"),
        "p95_concurrent_calls": _d("Time-weighted 95th percentile of calls in flight", "calls in flight"),
        "p99_concurrent_calls": _d("Time-weighted 99th percentile of calls in flight", "calls in flight"),
        "max_concurrent_calls": _d("Most calls in flight at any moment of the hour", "calls in flight"),
        "mean_concurrent_calls": _d("Call-seconds in the hour / 3,600", "calls in flight"),
        "p95_profile_tokens": _d("prompt + thinking + output tokens of the month's p95 profile", TOKENS),
        "kv_bytes_per_token_bf16": _d("KV bytes one token holds at bf16 (core.call_kv)", "bytes per token"),
        "kv_gb_p99_at_p95_profile": _d("p99_concurrent_calls x p95_profile_tokens x kv_bytes_per_token_bf16 / 1e9", "GB (10^9 bytes)"),
        "calls_without_latency": _d("Calls of the model that day left out for lack of latency_ms", COUNT),
    },
    "marts.budget_status": {
        "team": _d("Team (budgets.csv)", LABEL),
        "month": _d("Calendar month", _MONTHS),
        "budget_usd": _d("The team's monthly budget", USD),
        "soft_pct": _d("Percent of the budget at which budget_soft fires", "percent"),
        "soft_usd": _d("budget_usd x soft_pct / 100", USD),
        "spent_usd": _d("The team's API and self-hosted spend in the month up to last_day", USD),
        "days_elapsed": _d("Days of the month with data so far (from the first day with data)", COUNT),
        "days_remaining": _d("Days of the month after last_day", COUNT),
        "burn_usd_per_day": _d("spent_usd / days_elapsed", "USD per day"),
        "projected_month_end_usd": _d("spent_usd + burn_usd_per_day x days_remaining", USD),
        "projected_month_end_lo95_usd": _d("projected - 1.96 x daily sd x sqrt(days_remaining), at least spent_usd" + _FLOAT_MONEY, USD),
        "projected_month_end_hi95_usd": _d("projected + 1.96 x daily sd x sqrt(days_remaining)" + _FLOAT_MONEY, USD),
        "share_of_budget_spent": _d("spent_usd / budget_usd (above 1 once the budget is exceeded)", FRACTION),
        "runs_out_on": _d("First day whose cumulative spend reaches the budget, observed or projected at the burn rate; "
                          "NULL when it does not within the month", DAY),
        "runs_out_projected": _d("True when runs_out_on is projected, false when observed", BOOL),
        "status": _d("'hard' (spent >= budget), 'soft' (spent >= soft_usd) or 'ok'", LABEL),
        "last_day": _d("The last day with calls in the warehouse", DAY),
    },
})
COLUMNS["ops.settings"]["alert_warn_months"] = _d(
    "breakeven_ahead warns when the expected crossing is at most this many months away ([alert] warn_months)", "months")
COLUMNS["ops.settings"]["forecast_horizon_months"] = _d(
    "Months marts.spend_forecast covers after the last day with data ([forecast] horizon_months)", "months")
COLUMNS["ops.settings"]["capacity_max_queue_seconds"] = _d(
    "marts.capacity_plan keeps the p95 queueing delay of the busiest hours at or under this ([capacity] max_queue_seconds)",
    "seconds")
COLUMNS["marts.self_host_breakeven"]["offer"] = _d(
    "The price sheet offer a sheet-priced deployment took (provider/region/instance_type/pricing, the cheapest on-demand "
    "one of its provider and GPU); NULL where deployments.csv gives the price", LABEL)

# ---- issue 25: cloud invoices (AWS CUR 2.0, Azure cost details, GCP billing export)
TABLES.update({
    "ops.replaced_cloud_bill_lines": "Cloud invoice lines that a re-issued export of the same month replaced (moved from "
                                     "stg.cloud_bill_lines in the newer file's transaction): nothing lost, nothing counted twice.",
})
_INVOICE_BUCKET = ("input, output, cache_read, cache_write, cache_write_1h, cache_storage, provisioned; unattributed "
                   "(an AI line no rule read); credit, discount, tax, refund, rounding, fee, other (the invoice's own lines "
                   "and GCP credits inside a line)")
COLUMNS.update({
    "marts.invoice_reconciliation": {
        "provider": _d("Canonical provider: 'bedrock', 'azure', 'vertex_ai', 'gemini'", LABEL),
        "model": _d("Model family (core.cloud_model_key, e.g. 'claude-sonnet-4-5'); NULL for lines that name no model", LABEL),
        "day": _d("UTC day of the usage", DAY),
        "bucket": _d(_INVOICE_BUCKET, LABEL),
        "invoice_lines": _d("Invoice lines in the row (NULL: logs only)", COUNT),
        "invoice_tokens": _d("Tokens the invoice bills in the bucket (quantity x unit)", TOKENS),
        "log_tokens": _d("Tokens the logged calls have in the bucket (output includes thinking)", TOKENS),
        "invoice_usd": _d("What the invoice bills (usage rows gross of credits; credit rows negative)", USD),
        "logs_usd": _d("What the logged calls cost in the bucket: tokens x the rate each call was priced at", USD),
        "difference_usd": _d("invoice_usd - logs_usd", USD),
        "explained_usd": _d("The part of difference_usd that explained_by accounts for", USD),
        "explained_by": _d("credit, discount, tax, refund, rounding, fee, unattributed, provisioned, cache_storage, "
                           "missing_calls (token difference x the invoice's unit price), '+ rounding' (under half a cent)", LABEL),
        "unexplained_usd": _d("difference_usd - explained_usd: a price the sheet does not have (drift, negotiated rate, "
                              "a tier or region the logs do not report)", USD),
    },
    "marts.invoice_mismatch": {
        "provider": _d("Canonical provider", LABEL),
        "month": _d("Calendar month of the usage", _MONTHS),
        "invoice_usage_usd": _d("The month's invoice usage and commitment lines (gross of credits and discounts)", USD),
        "invoice_net_usd": _d("Everything the month's invoice lines add up to (credits, discounts, tax included)", USD),
        "logs_usd": _d("What the logged calls of the month cost (marts.invoice_reconciliation)", USD),
        "difference_usd": _d("Sum of marts.invoice_reconciliation.difference_usd", USD),
        "explained_usd": _d("Sum of explained_usd", USD),
        "unexplained_usd": _d("Sum of unexplained_usd: what the invoice_mismatch alert compares with its thresholds", USD),
        "unexplained_pct": _d("100 x unexplained_usd / invoice_usage_usd", "percent"),
    },
    "marts.effective_rates": {
        "provider": _d("Canonical provider", LABEL),
        "model": _d("Model family (core.cloud_model_key); NULL for credits / discounts whose SKU names no model", LABEL),
        "month": _d("Calendar month of the usage", _MONTHS),
        "list_usd": _d("Usage and commitment lines at the cloud's list price (gross of credits and discounts)", USD),
        "credits_usd": _d("Credits of the month (AWS Credit lines, GCP credits inside lines; negative)", USD),
        "discounts_usd": _d("Discounts and refunds (EdpDiscount, PrivateRateDiscount, SavingsPlanNegation, ...; negative)", USD),
        "net_usd": _d("list_usd + credits_usd + discounts_usd (tax left out)", USD),
        "effective_discount": _d("1 - net_usd / list_usd", FRACTION),
        "tokens": _d("Tokens the month's usage lines bill", TOKENS),
        "net_usd_per_mtok": _d("net_usd per million invoice tokens", "USD per 1M tokens"),
        "account_adjust_usd": _d("The model's share of the month's credits, discounts and refunds that name no model "
                                 "(the model NULL row's net_usd - list_usd), by its share of the provider-month's "
                                 "list_usd; NULL on the model NULL row", USD),
        "net_to_list": _d("(net_usd + account_adjust_usd) / list_usd: what one list-price dollar of the model cost "
                          "that month; the break-even and forecast marts multiply the calls' list cost by it", "ratio"),
    },
    "marts.unattributed_invoice_lines": {
        "day": _d("UTC day of the usage", DAY),
        "cloud": _d("'aws', 'azure' or 'gcp'", LABEL),
        "provider": _d("Canonical provider", LABEL),
        "service": _d("line_item_product_code, MeterCategory or service.description", LABEL),
        "sku": _d("line_item_usage_type, MeterName or sku.description: what no rule read", LABEL),
        "charge_type": _d("As written in the export", LABEL),
        "quantity": _d("Usage amount as billed", "the line's unit"),
        "unit": _d("The line's unit as written", LABEL),
        "amount_usd": _d("The line's cost", USD),
        "unattributed_reason": _d("Why no rule read the line", LABEL),
        "file": _d("Landing file of the line", LABEL),
        "line": _d("Line of the record in its file", COUNT),
    },
    "marts.chargeback": {
        "month": _d("First day of the UTC month", DAY),
        "cost_center": _d("catalog/cost_centers.csv's first matching rule, else the calls' team, else 'unallocated'", LABEL),
        "principal_kind": _d("'team', 'api_key', 'user', 'end_user', 'project', 'workspace', 'agent'; '*' = the cost center's total", LABEL),
        "principal_value": _d("The principal (NULL: calls that do not report it); '*' on the total row", LABEL),
        "calls": _d("Model calls of the row", COUNT),
        "usage_cost_usd": _d("The calls' cost_usd (API at list price, self-hosted at their share of paid node-hours)", USD),
        "thinking_cost_usd": _d("The thinking tokens' part of usage_cost_usd", USD),
        "cache_savings_usd": _d("What prompt caching saved the calls, net of cache writes' premium (can be negative)", USD),
        "shared_cost_usd": _d("The cost center's share of the month's shared costs (idle node-days, unconsumed commitment "
                              "fees, unexplained invoice lines) by [chargeback] shared, largest remainder; 0 on principal rows", USD),
        "total_cost_usd": _d("usage_cost_usd + commitment_cost_usd + shared_cost_usd; per month the '*' rows add up to "
                             "the month's spend", USD),
        "list_cost_usd": _d("The calls on demand at list price (a provisioned call at its on-demand rates)", USD),
        "commitment_cost_usd": _d("The consumed part of invoiced commitments (least of paid and its provisioned calls "
                                  "on demand) charged by those calls' on-demand cost, largest remainder; 0 on principal rows", USD),
    },
    "marts.agent_runs": {
        "trace_id": _d("OpenTelemetry trace id (lower-case hex)", LABEL),
        "span_id": _d("The invoke_agent span's id", LABEL),
        "parent_agent_span_id": _d("Its nearest invoke_agent ancestor; NULL for a top agent", LABEL),
        "agent_name": _d("gen_ai.agent.name", LABEL),
        "depth": _d("1 = a top agent, 2 = its sub-agent, ...", COUNT),
        "calls": _d("Model calls whose nearest agent is this span", COUNT),
        "own_cost_usd": _d("Their cost", USD),
        "total_calls": _d("Model calls below this span at any depth", COUNT),
        "total_cost_usd": _d("Their cost (each call once in each ancestor; the span's self-reported usage ignored)", USD),
        "thinking_cost_usd": _d("The thinking tokens' part of total_cost_usd", USD),
        "started_at": _d("The span's start", TS),
        "duration_s": _d("The span's end minus its start", "seconds"),
        "day": _d("The trace's UTC day: of its first model call, else of its first agent span start (the incremental key)", DAY),
    },
    "marts.run_costs": {
        "trace_id": _d("Trace id of the calls", LABEL),
        "session_id": _d("The run's conversation (smallest session id of its calls)", LABEL),
        "root_agent": _d("gen_ai.agent.name of its earliest top-level invoke_agent span; NULL without one", LABEL),
        "calls": _d("Model calls of the trace", COUNT),
        "cost_usd": _d("Their cost", USD),
        "thinking_cost_usd": _d("The thinking tokens' part of cost_usd", USD),
        "started_at": _d("Earliest agent span start, else first call", TS),
        "day": _d("UTC day of the run's first call (the incremental key)", DAY),
    },
    "marts.session_costs": {
        "session_id": _d("The conversation (gen_ai.conversation.id, LiteLLM session_id, metadata.session_id)", LABEL),
        "traces": _d("Distinct trace ids among its calls", COUNT),
        "calls": _d("Model calls of the conversation", COUNT),
        "cost_usd": _d("Their cost", USD),
        "first_at": _d("Its first call", TS),
        "last_at": _d("Its last call", TS),
        "day": _d("UTC day of the session's first call (the incremental key)", DAY),
    },
})
COLUMNS["ops.ingested_files"]["rows_skipped"] = _d(
    "Records read and deliberately not kept: the non-AI lines of a cloud invoice (0 for every other format); "
    "rows_in = rows_loaded + rows_duplicate + rows_quarantined + rows_skipped", COUNT)
COLUMNS["ops.ingested_files"]["export_key"] = _d(
    "Cloud invoices: cloud | months billed | path with run ids as '*'; a later file with the same key is a re-issue", LABEL)
COLUMNS["ops.ingested_files"]["replaced_by_file_id"] = _d(
    "Cloud invoices: the re-issued export (file_id) that replaced this file's rows; NULL while they are in force", LABEL)
COLUMNS["ops.ingested_files"]["rows_in"] = _d(
    "Records read: rows_loaded + rows_duplicate + rows_quarantined + rows_skipped", COUNT)
COLUMNS["ops.settings"]["cloud_team_tag"] = _d(
    "[cloud] team_tag: the tag / label of a cloud invoice line that names its team", LABEL)
COLUMNS["ops.settings"]["chargeback_shared"] = _d(
    "[chargeback] shared: how marts.chargeback spreads shared costs: 'proportional', 'even' or a cost center", LABEL)


def _replaced_cloud_columns() -> dict[str, str]:
    from sources import contract  # noqa: PLC0415

    out = {}
    for c in contract.table("stg.cloud_bill_lines").all_columns:
        if c.name.endswith("_usd"):
            unit = USD
        elif c.name == "tokens":
            unit = TOKENS
        elif c.type == "TIMESTAMP":
            unit = TS
        elif c.type == "DATE":
            unit = DAY
        elif c.type == "BOOLEAN":
            unit = BOOL
        elif c.name == "cost":
            unit = "the line's currency"
        elif c.name == "quantity":
            unit = "the line's unit"
        elif c.name == "fx_usd_per_unit":
            unit = "USD per unit of currency"
        elif c.name in ("line", "key_occurrence"):
            unit = COUNT
        else:
            unit = LABEL
        out[c.name] = _d(c.doc.rstrip("."), unit)
    out["replaced_by_file_id"] = _d("The re-issued export (ops.ingested_files.file_id) that replaced the line", LABEL)
    out["replaced_at"] = _d("When it was replaced", TS)
    return out


COLUMNS["ops.replaced_cloud_bill_lines"] = _replaced_cloud_columns()


# Provisioned throughput as a third way to buy (issue 25 item 5)
TABLES["marts.buying_options"] = (
    "Each API model's three ways to buy side by side: on demand, provisioned throughput (marts.commitments) and "
    "self-hosted (marts.self_host_breakeven), monthly at the observed and the forecast volume, the cheapest, and the "
    "volumes at which the fixed options overtake on demand. grain: provider x model.")
_PER_MONTH = "USD per month"
COLUMNS["marts.commitments"] = {
    "provider": _d("Provider (canonical, core.provider_key: bedrock, azure, vertex_ai, ...)", LABEL),
    "model": _d("Model family (core.cloud_model_key: 'claude-sonnet-4-5'); NULL for an invoice line that names no "
                "model (Azure PTU)", LABEL),
    "month": _d("Calendar month (UTC)", _MONTHS),
    "source": _d("'invoice' (provisioned lines of the cloud invoices) or 'catalog_offer' (catalog/commitments.csv)", LABEL),
    "units": _d("Model units / PTUs of the offer (NULL for invoice rows)", "units"),
    "usd_per_unit_hour": _d("The offer's price per unit per hour (NULL for invoice rows)", "USD per unit-hour"),
    "commit_months": _d("The offer's term (0 or NULL: hourly, no term)", "months"),
    "hours_billed": _d("Offer: the hours of the month within [start, end); invoice: 24 x the days with an hourly "
                       "(usage) provisioned line",
                       "hours"),
    "unit_hours": _d("Offer: units x hours_billed; invoice: the lines' quantity where the unit is hours (NULL otherwise)",
                     "unit-hours"),
    "paid_usd": _d("What the month costs: the invoice lines' amount (gross of credits), or units x usd_per_unit_hour x "
                   "hours_billed", USD),
    "usd_per_month": _d("The commitment over a whole month of hours_per_month hours: units x usd_per_unit_hour x "
                        "hours_per_month (offer); invoice: the hourly lines' paid x hours_per_month / hours_billed "
                        "plus purchase and fee lines as billed", _PER_MONTH),
    "used_on_demand_usd": _d("What the month's provisioned calls of the provider and model (marts.provisioned_usage) "
                             "would have cost on demand; model NULL: the provider's provisioned calls of models "
                             "without a commitment row of their own", USD),
    "utilisation": _d("used_on_demand_usd / paid_usd: 1 = the calls were worth on demand exactly what the commitment "
                      "cost, below 1 paying per token would have been cheaper (NULL when paid_usd is 0)", "ratio"),
    "model_on_demand_usd": _d("All API calls of the provider and model in the month at on-demand rates", USD),
    "invoice_lines": _d("Invoice lines behind the row (NULL for offers)", COUNT),
}
COLUMNS["marts.buying_options"] = {
    "provider": _d("Provider (canonical, core.provider_key)", LABEL),
    "model": _d("Model family (core.cloud_model_key)", LABEL),
    "window_first_day": _d("First day of the observed window ([alert] window_days ending on window_last_day)", DAY),
    "window_last_day": _d("The last day with API calls", DAY),
    "window_days": _d("Days in the window ([alert] window_days)", "days"),
    "calls_per_month": _d("The window's API calls x hours_per_month / (24 x window_days)", "calls per month"),
    "tokens_per_month": _d("The window's tokens (input, cached, cache writes, thinking, output) scaled the same way",
                           "tokens per month"),
    "on_demand_usd_per_call": _d("Average on-demand cost of the window's priced calls", "USD per call"),
    "on_demand_usd_per_mtok": _d("On-demand cost of the window's priced calls per million of their tokens",
                                 "USD per million tokens"),
    "on_demand_unpriced_calls": _d("Calls in the window no price sheet prices (left out of the rates)", COUNT),
    "on_demand_usd_per_month": _d("The window's calls at on-demand rates (provisioned calls at what they would have "
                                  "cost), scaled to a month", _PER_MONTH),
    "provisioned_usd_per_month": _d("usd_per_month of the commitment taken (marts.commitments): the catalog offer of "
                                    "the last day's month, else the latest offer, else the latest invoice month",
                                    _PER_MONTH),
    "provisioned_source": _d("'catalog_offer' or 'invoice': where provisioned_usd_per_month comes from", LABEL),
    "provisioned_month": _d("The marts.commitments month it was taken from", _MONTHS),
    "self_hosted_usd_per_month": _d("The cheapest deployment that fits (newest month of marts.self_host_breakeven) x "
                                    "the deployments calls_per_month needs", _PER_MONTH),
    "self_host_deployment": _d("That deployment", LABEL),
    "self_host_deployments_needed": _d("max(1, ceil(calls_per_month / capacity))", COUNT),
    "self_host_capacity_calls_per_month": _d("Calls one deployment serves in a month", "calls per month"),
    "cheapest": _d("'on_demand', 'provisioned' or 'self_hosted': the lowest known monthly cost at the observed volume "
                   "(ties in that order)", LABEL),
    "forecast_month": _d("The forecast month used: the first after the last day's month (marts.spend_forecast, scope "
                         "model, serving api); NULL: no forecast", _MONTHS),
    "forecast_growth": _d("forecast_usd of that month / the window's paid API spend scaled to a month", "ratio"),
    "calls_per_month_forecast": _d("calls_per_month x forecast_growth", "calls per month"),
    "tokens_per_month_forecast": _d("tokens_per_month x forecast_growth", "tokens per month"),
    "on_demand_usd_per_month_forecast": _d("on_demand_usd_per_month x forecast_growth", _PER_MONTH),
    "self_hosted_usd_per_month_forecast": _d("One deployment's monthly cost x the deployments the forecast volume needs",
                                             _PER_MONTH),
    "cheapest_forecast": _d("The cheapest option at the forecast volume (provisioned unchanged)", LABEL),
    "provisioned_crossover_calls_per_month": _d("ceil(provisioned_usd_per_month / on_demand_usd_per_call): from this "
                                                "volume on demand costs more than the commitment", "calls per month"),
    "provisioned_crossover_tokens_per_month": _d("The same in tokens: ceil(provisioned_usd_per_month / the on-demand "
                                                 "rate per token)", "tokens per month"),
    "self_host_crossover_calls_per_month": _d("ceil(one deployment's monthly cost / on_demand_usd_per_call): from this "
                                              "volume self-hosting costs less than on demand", "calls per month"),
    "self_host_crossover_tokens_per_month": _d("The same in tokens", "tokens per month"),
}

# Issue 26: the per-call tables as Parquet files beside the published file (warehouse/parts.py)
TABLES.update({
    "ops.storage": "Where this warehouse's Parquet parts live (one row): the folder the per-call tables' views read.",
    "ops.part_files": "One row per Parquet file of a per-call table or of stg.requests: listed by this build's views (retired_by NULL) "
                      "or retired by a recent build and kept while an older snapshot a reader may hold lists it.",
    "ops.part_tables": "One row per table stored as Parquet parts: its day key and its columns' SQL types (the view "
                       "casts the Parquet columns back to them).",
})
COLUMNS["ops.storage"] = {
    "parts_dir": _d("Absolute path of the parts folder (<warehouse file stem>.parts beside the DuckDB file)", LABEL),
}
COLUMNS["ops.part_files"] = {
    "table_name": _d("The table the file holds rows of ('core.call_costs')", LABEL),
    "day": _d("The value of the table's day key in every row of the file; NULL for the zero-row file that gives an "
              "empty table its columns, and for a file of stg.requests (the calls one run ingested, of any day)", DAY),
    "path": _d("Path of the file relative to ops.storage.parts_dir: <table>/<build id>/<key>=<day>/part_<n>.parquet "
               "(stg.requests: <table>/<build id>/part_<n>.parquet)",
               LABEL),
    "row_count": _d("Rows in the file (its Parquet footer)", COUNT),
    "bytes": _d("Size of the file as written; each run starts by checking it, a file of another size is damaged",
                "bytes"),
    "build_id": _d("The build that wrote the file", LABEL),
    "retired_by": _d("The build whose views no longer list the file (its days were rebuilt); NULL: listed by this "
                     "build. A retired file is removed once no build among the last [warehouse] keep_builds lists it",
                     LABEL),
    "key_hash": _d("A file of stg.requests: the function its hidden _key_hash column holds, the hash of each row's "
                   "request id ('hash(\"request_id\") duckdb <version>'); the ingest reads those hashes only when the "
                   "version is the running DuckDB's, else it hashes the request ids again. NULL: no such column "
                   "(a per-call table's file, or one written before it existed)", LABEL),
}
COLUMNS["ops.part_tables"] = {
    "table_name": _d("The table ('core.call_costs')", LABEL),
    "key_column": _d("The day column its files are partitioned by; NULL for a staging table (appended files)", LABEL),
    "columns": _d("Its columns in order, each with the SQL type the view casts it to (a list of name, type)", LABEL),
    "has_build_id": _d("Whether it has a build_id column, shown as ops.settings.build_id (the snapshot's)", BOOL),
    "kind": _d("'table': a SQL table's day-partitioned files, rewritten by day; 'staging': stg.requests, files "
               "appended (one per landing file of 50,000+ calls, one per run for the smaller ones), never rewritten, "
               "read with stg.requests__pending", LABEL),
    "ddl": _d("A staging table: the CREATE TABLE statement of its pending table (stg.requests__pending), made again "
              "by each run that ingests; NULL for a SQL table", LABEL),
}

# -- issue 42: spend anomalies and thinking drift (warehouse/anomalies.py) ------------------------
_METRIC_UNIT = "the metric's unit: USD (cost_usd), calls (calls), tokens per call (reasoning_tokens_per_call)"
TABLES["marts.spend_anomalies"] = (
    "Spend, calls and reasoning tokens per call of every series (all, and each value of team, model, task type) "
    "against a robust baseline: the median of the same day type (weekday / weekend) over the [anomaly] adapt_days "
    "days before, a band of 3 x 1.4826 x MAD; anomalous when above the band and beating both [anomaly] floors; "
    "episodes, root cause and feedback (docs/economics.md). Pay-per-use API calls only. "
    "grain: day x metric x scope x scope_value.")
COLUMNS["marts.spend_anomalies"] = {
    "day": _d("UTC day scored (from the series' first day + [anomaly] min_history_days)", DAY),
    "metric": _d("'cost_usd' (list-price API spend), 'calls', or 'reasoning_tokens_per_call' (thinking tokens / calls)", LABEL),
    "scope": _d("'all', or the scope the series is of: 'team', 'model', 'task_type', 'cost_center', 'api_key', 'user' (sources/contract.py ANOMALY_SCOPES)", LABEL),
    "scope_value": _d("'*' for scope all, else the team, model key or task type", LABEL),
    "actual": _d("The day's value (computed in floats)", _METRIC_UNIT),
    "expected": _d("Median of the same day type's values over the adapt_days days before", _METRIC_UNIT),
    "lower": _d("Lower end of the band: expected - 3 x 1.4826 x MAD, floored at 0", _METRIC_UNIT),
    "upper": _d("Upper end of the band: expected + 3 x 1.4826 x MAD", _METRIC_UNIT),
    "impact_usd": _d("actual - expected in dollars: for cost_usd the difference; for calls x the day's cost per call; "
                     "for reasoning_tokens_per_call x the day's calls x its thinking cost per thinking token "
                     "(the extra thinking priced); negative below expected", USD),
    "impact_pct": _d("100 x (actual - expected) / expected; NULL when expected is 0", "percent"),
    "is_anomaly": _d("actual above upper, impact_usd above [anomaly] min_impact_usd and impact_pct above "
                     "min_impact_pct (or expected 0); increases only", BOOL),
    "episode_id": _d("'<metric>:<scope>=<scope_value>:<first day>' of the episode an anomalous day belongs to "
                     "(anomalous days of the series at most one normal day apart); NULL on normal days", LABEL),
    "root_cause": _d("On an anomalous day: the child series ('<scope>=<value>' of another scope, e.g. "
                     "'task_type=summarize') with the largest positive impact_usd by the same method", LABEL),
    "root_cause_share": _d("The root cause's impact_usd over the sum of the positive impact_usd of its scope's "
                           "values on that day (task_type=summarize: of all task types that rose)", FRACTION),
    "feedback": _d("The label of catalog/anomaly_feedback.csv covering the day (on an episode: any of its days) "
                   "for this scope and value: 'planned' or 'not_anomaly' (no alert is sent); NULL: none", LABEL),
    "history_points": _d("Values of the day type in the window the median and MAD were taken over", COUNT),
    "method": _d("'median_mad_<weekday|weekend>_<adapt_days>d': the baseline used", LABEL),
}
COLUMNS["ops.settings"].update({
    "anomaly_adapt_days": _d("[anomaly] adapt_days: the window before a day whose median is its expected value "
                             "(marts.spend_anomalies)", "days"),
    "anomaly_min_history_days": _d("[anomaly] min_history_days: days a series needs before its first scored day", "days"),
    "anomaly_min_impact_usd": _d("[anomaly] min_impact_usd: the dollar floor an anomaly's excess must beat", USD),
    "anomaly_min_impact_pct": _d("[anomaly] min_impact_pct: the percent floor an anomaly's excess must beat", "percent"),
})
