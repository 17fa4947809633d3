"""A deterministic demo landing folder: one organisation's ~2 months of reasoning traffic.

What it looks like (defaults, seed 7): 55 days (2026-06-15 .. 2026-08-08), 6 teams, 10 task
types, ~1,700 tasks a day of 1-14 calls each (agent task types make many calls), ~250k calls.
API models are priced from two real LiteLLM snapshots shipped in data/real/litellm/ (o3 drops from
$10/$40 to $2/$8 per million tokens, deepseek-reasoner from $0.55/$2.19 to $0.28/$0.42, on
2026-07-24, the later snapshot's date); self-hosted Qwen3-32B runs on two 2xH100 nodes priced
from the real Nebius SkyPilot catalog. Reasoning calls think 8-25x their visible output; prompts
run from 1k to 30k tokens; about half the calls are fast (no reasoning), so the tier mix is far
from the 80/15/5 target. Three gateways write the three usage shapes. A handful of broken
records (a truncated line, reasoning > completion) show the quarantine at work.

Cloud traffic (issue 24), drawn with its own seed so the traffic above is byte-for-byte what it
was: team ``platform`` runs Claude 3.7 Sonnet on Amazon Bedrock (Converse responses through the
``us.`` cross-region profile with prompt caching, some 1-hour cache writes, and InvokeModel calls
returning the Anthropic body with ``output_tokens_details.thinking_tokens``); team ``analytics``
runs Gemini 2.5 Pro on Vertex AI from 2026-07-24 (the sheet that prices it), a third of it on
provisioned throughput (``trafficType`` PROVISIONED_THROUGHPUT); team ``ops`` calls o4-mini through
an Azure OpenAI deployment named ``ops-o4mini-eu``, mapped in ``catalog/endpoints.csv``. A
``catalog/commitments.csv`` offers one unit of Vertex AI provisioned throughput for Gemini 2.5 Pro
at an illustrative $2.50 per unit-hour (not a published rate), so ``marts.buying_options`` and the
report show on demand, provisioned and self-hosted side by side.

Every per-call column is drawn with numpy in one vectorised pass and written with polars
(one file per gateway and day); no per-call Python loop.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from synthetic import demo_modalities, demo_principals, demo_sources
from synthetic.demo_principals import principal_columns

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "data" / "real"
MARKER = ".thinktax-demo"

TEAMS = ["search", "support", "code-assist", "data-science", "legal", "growth"]
TEAM_WEIGHTS = [0.22, 0.24, 0.2, 0.12, 0.08, 0.14]
# task type: (weight, mean calls per task, probability a call needs reasoning)
TASK_TYPES = {
    "qa": (0.20, 1.3, 0.25),
    "summarize": (0.14, 1.1, 0.10),
    "classify": (0.12, 1.0, 0.02),
    "extract": (0.10, 1.2, 0.05),
    "translate": (0.06, 1.0, 0.02),
    "sql_gen": (0.08, 2.0, 0.55),
    "code_review": (0.08, 3.0, 0.70),
    "code_agent": (0.08, 8.0, 0.65),
    "research_agent": (0.08, 6.0, 0.60),
    "contract_review": (0.06, 2.5, 0.80),
}
# model: (provider, gateway/shape, node pool?, share among reasoning calls or fast calls)
REASONING_MODELS = {
    "o3": ("openai", "openai_chat", 0.22),
    "o4-mini": ("openai", "openai_responses", 0.24),
    "claude-3-7-sonnet-20250219": ("anthropic", "anthropic", 0.16),
    "deepseek-reasoner": ("deepseek", "openai_chat", 0.16),
    "qwen3-32b": (None, "self_hosted", 0.22),
}
FAST_MODELS = {
    "gpt-4.1-mini": ("openai", "openai_chat", 0.55),
    "gpt-4.1-nano": ("openai", "openai_chat", 0.45),
}
NODES = [
    # node_id, provider, gpu_type, gpus, model, precision, usd_per_gpu_hour ('' = GPU sheet), active_from, active_to
    ("qwen-a", "nebius", "H100", 2, "qwen3-32b", "fp8", "2.95", "2026-06-15T00:00:00Z", ""),
    ("qwen-b", "nebius", "H100", 2, "qwen3-32b", "fp8", "", "2026-07-05T00:00:00Z", ""),
]


@dataclass(frozen=True)
class DemoSpec:
    start: dt.date = dt.date(2026, 6, 15)
    days: int = 55
    tasks_per_day: int = 1700
    seed: int = 7
    clouds: bool = True  # the Bedrock / Vertex AI / Azure teams (their own seed: the rest is unchanged)
    anomalies: bool = True  # one thinking drift and one spend spike (add_anomalies; no draw: the rest is unchanged)
    sources: bool = True  # bills, LiteLLM spend logs, Prometheus scrapes (synthetic/demo_sources.py; the calls above unchanged)


# issue 42: what marts.spend_anomalies and the spend_anomaly alert find in the demo (docs/economics.md
# 11.8). A prompt change makes every team's code_agent think DRIFT_FACTOR x longer on DRIFT_DAYS days
# (counted back from the last day: ~3,800 thinking tokens a call become ~30,000, some $130-170 a day
# more at the API's prices: a drift of the task type), and team SPIKE_TEAM's jobs of one day are run
# SPIKE_COPIES times by a retry loop (~$24 becomes ~$240). Both beat the default floors of $100 and
# 25 % and end within the alert's last 7 days; the demo's whole API spend is ~$200 a day, so smaller
# ones would stay under the $100 floor. Only a demo of at least ANOMALY_MIN_DAYS days has them (the
# baseline needs 14 days of history).
DRIFT_TASK_TYPE, DRIFT_FACTOR, DRIFT_DAYS = "code_agent", 8, (6, 5, 4)
SPIKE_TEAM, SPIKE_COPIES, SPIKE_DAY = "support", 10, 2
ANOMALY_MIN_DAYS = 30


# cloud traffic: (team, gateway, share of the cloud tasks, mean calls per task)
CLOUD_TEAMS = (("platform", "bedrock_converse", 0.45, 2.0), ("platform", "bedrock_invoke", 0.15, 1.5),
               ("analytics", "vertex_gemini", 0.25, 1.5), ("ops", "azure_chat", 0.15, 1.2))
CLOUD_TASK_SHARE = 0.08  # cloud tasks per day, as a share of tasks_per_day
VERTEX_FROM = dt.date(2026, 7, 24)  # gemini-2.5-pro is on the 2026-07-24 sheet, not on the 2025-05-19 one


def _catalog_files(landing: Path) -> None:
    cat = landing / "catalog"
    (cat / "configs").mkdir(parents=True, exist_ok=True)
    for name in ("qwen3-32b_config.json", "deepseek-v3_config.json", "llama-3.1-70b-instruct_config.json",
                 "gpt-oss-120b_config.json"):
        shutil.copyfile(REAL / "model_configs" / name, cat / "configs" / name)
    (cat / "models.csv").write_text(
        "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
        "qwen3-32b,qwen3,true,32.8,32.8,configs/qwen3-32b_config.json,,\n"
        "deepseek-reasoner,deepseek-r1,true,671,37,configs/deepseek-v3_config.json,,\n"
        "llama-3.1-70b,llama3,false,70.6,70.6,configs/llama-3.1-70b-instruct_config.json,,\n"
        "gpt-oss-120b,gpt-oss,true,116.8,5.1,configs/gpt-oss-120b_config.json,,\n"
        "o3,o-series,true,,,,,\n"
        "o4-mini,o-series,true,,,,,\n"
        "claude-3-7-sonnet,claude,true,,,,,\n"
        "gpt-4.1-mini,gpt-4.1,false,,,,,\n"
        "gpt-4.1-nano,gpt-4.1,false,,,,,\n"
    )
    # what the logs name instead of a model: the Azure deployment of team ops (EU data zone)
    (cat / "endpoints.csv").write_text(
        "provider,endpoint,model,sheet_provider,deployment_type,region,billing\n"
        "azure,ops-o4mini-eu,o4-mini,azure,global,swedencentral,on_demand\n"
    )
    (cat / "nodes.csv").write_text(
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        + "".join(",".join(map(str, n)) + "\n" for n in NODES)
    )
    (cat / "deployments.csv").write_text(
        "deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,usd_per_gpu_hour\n"
        "r1-8xh200,deepseek-reasoner,nebius,H200,8,fp8,,,\n"
        "r1-16xh200,deepseek-reasoner,nebius,H200,16,fp8,,,\n"
        "r1-8xb200,deepseek-reasoner,nebius,B200,8,fp8,,,\n"
        "qwen-1xh100,qwen3-32b,nebius,H100,1,fp8,,,\n"
        "qwen-2xh100,qwen3-32b,nebius,H100,2,fp8,,,\n"
        "oss-1xh100,gpt-oss-120b,nebius,H100,1,fp8,,,\n"
    )
    # What moving API traffic to an open model would cost (docs/economics.md section 11): DeepSeek-R1
    # thinks about 1.3x as long as o3 on the same prompt (published reasoning-token counts vary 1.1-1.6x);
    # Qwen3-32B thinks ~1.5x Claude 3.7 Sonnet's extended thinking and answers ~10 % longer.
    (cat / "substitutions.csv").write_text(
        "from_model,to_model,thinking_ratio,output_ratio,note\n"
        "o3,deepseek-reasoner,1.3,1.0,R1 reasons longer than o3 on the same prompt\n"
        "claude-3-7-sonnet,qwen3-32b,1.5,1.1,Qwen3-32B thinking mode vs Claude extended thinking\n"
    )
    # Team budgets per calendar month (USD); code-assist and legal run out before month end.
    (cat / "budgets.csv").write_text(
        "team,monthly_usd,soft_pct\n"
        "search,4000,80\n"
        "support,4500,80\n"
        "code-assist,2500,80\n"
        "data-science,2500,75\n"
        "legal,900,80\n"
        "growth,3000,80\n"
    )


def _price_files(landing: Path) -> None:
    llm = landing / "prices" / "llm"
    llm.mkdir(parents=True, exist_ok=True)
    for name in ("model_prices_and_context_window.2025-05-19.json", "model_prices_and_context_window.2026-07-24.json"):
        shutil.copyfile(REAL / "litellm" / name, llm / name)
    gpu = landing / "prices" / "gpu"
    gpu.mkdir(parents=True, exist_ok=True)
    # The real catalog carries no date; the demo assumes it was in force from 2026-06-01.
    shutil.copyfile(REAL / "skypilot" / "skypilot_catalog_v7_nebius_vms.csv",
                    gpu / "skypilot_catalog_v7_nebius_vms.2026-06-01.csv")


def _pick(rng: np.random.Generator, options: dict, n: int) -> np.ndarray:
    names = np.array(list(options))
    weights = np.array([v[-1] for v in options.values()], dtype=float)
    return names[rng.choice(len(names), size=n, p=weights / weights.sum())]


def generate_calls(spec: DemoSpec) -> pl.DataFrame:
    """One row per call, every column drawn vectorised."""
    rng = np.random.default_rng(spec.seed)
    n_tasks = spec.days * spec.tasks_per_day
    task_day = np.repeat(np.arange(spec.days), spec.tasks_per_day)
    type_names = np.array(list(TASK_TYPES))
    type_w = np.array([v[0] for v in TASK_TYPES.values()])
    task_type_idx = rng.choice(len(type_names), size=n_tasks, p=type_w / type_w.sum())
    mean_calls = np.array([v[1] for v in TASK_TYPES.values()])[task_type_idx]
    calls_per_task = np.minimum(1 + rng.poisson(mean_calls - 1), 14)
    task_team = rng.choice(len(TEAMS), size=n_tasks, p=TEAM_WEIGHTS)
    # diurnal start times: busier in working hours (UTC)
    hour = np.clip(rng.normal(13, 4, n_tasks), 0, 23.99)
    task_start = task_day * 86400.0 + hour * 3600.0

    n = int(calls_per_task.sum())
    task_of_call = np.repeat(np.arange(n_tasks), calls_per_task)
    first_call = np.repeat(np.cumsum(calls_per_task) - calls_per_task, calls_per_task)
    step = np.arange(n) - first_call
    p_reason = np.array([v[2] for v in TASK_TYPES.values()])[task_type_idx][task_of_call]
    reasoning = rng.random(n) < p_reason

    model = np.where(reasoning, _pick(rng, REASONING_MODELS, n), _pick(rng, FAST_MODELS, n))
    # prompts: 1k-30k tokens, later steps of agent tasks carry more context and more cache hits
    prompt = np.clip(rng.lognormal(np.log(2500) + 0.25 * np.minimum(step, 6), 0.7), 1000, 30000).astype(np.int64)
    cached = np.where(step > 0, (prompt * rng.uniform(0.2, 0.7, n)).astype(np.int64), 0)
    output = np.where(reasoning, np.clip(rng.lognormal(np.log(450), 0.6, n), 60, 4000),
                      np.clip(rng.lognormal(np.log(250), 0.7, n), 10, 3000)).astype(np.int64)
    # thinking: 8-25x the visible output; a third of reasoning calls are "low effort" (x1-3)
    ratio = np.where(rng.random(n) < 0.33, rng.uniform(1, 3, n), rng.uniform(8, 25, n))
    thinking = np.where(reasoning, (output * ratio).astype(np.int64), 0)
    gap = rng.exponential(20, n)  # seconds between a task's calls
    elapsed = np.cumsum(gap)
    within_task = elapsed - (elapsed[first_call] - gap[first_call])
    ts = task_start[task_of_call] + within_task
    ts = np.minimum(ts, (task_day[task_of_call] + 1) * 86400.0 - 1)
    latency = (300 + (thinking + output) * rng.uniform(5, 12, n)).round(1)
    cache_write = np.where((step == 0) & (model == "claude-3-7-sonnet-20250219"), (prompt * 0.5).astype(np.int64), 0)

    start = dt.datetime.combine(spec.start, dt.time(), dt.UTC).timestamp()
    node = np.where(model == "qwen3-32b", np.where(rng.random(n) < 0.5, "qwen-a", "qwen-b"), "")
    # qwen-b only serves from 2026-07-05 (day 20)
    node = np.where((node == "qwen-b") & (task_day[task_of_call] < 20), "qwen-a", node)
    provider_of = {m: v[0] for m, v in {**REASONING_MODELS, **FAST_MODELS}.items()}
    shape_of = {m: v[1] for m, v in {**REASONING_MODELS, **FAST_MODELS}.items()}
    df = pl.DataFrame({
        "epoch": start + ts,
        "request_id": np.char.add("req-", np.arange(n).astype(str)),
        "task_id": np.char.add("task-", task_of_call.astype(str)),
        "team": np.array(TEAMS)[task_team][task_of_call],
        "task_type": type_names[task_type_idx][task_of_call],
        "model": model,
        "node_id": node,
        "prompt": prompt, "cached": cached, "cache_write": cache_write,
        "thinking": thinking, "output": output, "latency_ms": latency,
    })
    return df.with_columns(
        pl.col("model").replace_strict(provider_of, default=None).alias("provider"),
        pl.col("model").replace_strict(shape_of).alias("gateway"),
        pl.from_epoch(pl.col("epoch"), time_unit="s").dt.date().alias("day"),
        pl.when(pl.col("node_id") != "").then(pl.col("node_id")).alias("node_id"),
    )


def add_anomalies(calls: pl.DataFrame, spec: DemoSpec) -> pl.DataFrame:
    """The demo's thinking drift and spend spike (DRIFT_* and SPIKE_* above) on generate_calls' frame;
    the calls unchanged when ``spec.anomalies`` is off or the demo is shorter than ANOMALY_MIN_DAYS."""
    if not spec.anomalies or spec.days < ANOMALY_MIN_DAYS:
        return calls
    last = spec.start + dt.timedelta(days=spec.days - 1)
    drift = [last - dt.timedelta(days=k) for k in DRIFT_DAYS]
    spike = last - dt.timedelta(days=SPIKE_DAY)
    calls = calls.with_columns(
        pl.when((pl.col("task_type") == DRIFT_TASK_TYPE) & pl.col("day").is_in(drift))
        .then(pl.col("thinking") * DRIFT_FACTOR).otherwise(pl.col("thinking")).alias("thinking"))
    day_of_team = calls.filter((pl.col("team") == SPIKE_TEAM) & (pl.col("day") == spike))
    copies = [day_of_team.with_columns(pl.col("request_id") + f"-rerun{k}", pl.col("task_id") + f"-rerun{k}")
              for k in range(1, SPIKE_COPIES)]
    return pl.concat([calls, *copies])


def _records(df: pl.DataFrame, gateway: str) -> pl.DataFrame:
    """The JSON-lines records one gateway writes, in its provider's usage shape."""
    ts_iso = pl.from_epoch((pl.col("epoch") * 1000).cast(pl.Int64), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
    common = [ts_iso.alias("ts"), "request_id", "model"]
    if gateway == "openai_chat":
        usage = pl.struct(
            pl.col("prompt").alias("prompt_tokens"),
            (pl.col("thinking") + pl.col("output")).alias("completion_tokens"),
            pl.struct(pl.col("cached").alias("cached_tokens")).alias("prompt_tokens_details"),
            pl.struct(pl.col("thinking").alias("reasoning_tokens")).alias("completion_tokens_details"),
        )
        return df.select(*common, "provider", "task_id", "team", "task_type", "latency_ms", usage.alias("usage"),
                         pl.struct(*principal_columns()).alias("metadata"))
    if gateway == "openai_responses":
        usage = pl.struct(
            pl.col("prompt").alias("input_tokens"),
            (pl.col("thinking") + pl.col("output")).alias("output_tokens"),
            pl.struct(pl.col("cached").alias("cached_tokens")).alias("input_tokens_details"),
            pl.struct(pl.col("thinking").alias("reasoning_tokens")).alias("output_tokens_details"),
        )
        return df.select(*common, "provider", "task_id", "team", "task_type", "latency_ms", usage.alias("usage"),
                         pl.struct(*principal_columns()).alias("metadata"))
    if gateway == "anthropic":
        # LiteLLM-proxy style: epoch seconds, team / task in metadata
        usage = pl.struct(
            (pl.col("prompt") - pl.col("cached") - pl.col("cache_write")).alias("input_tokens"),
            pl.col("cached").alias("cache_read_input_tokens"),
            pl.col("cache_write").alias("cache_creation_input_tokens"),
            (pl.col("thinking") + pl.col("output")).alias("output_tokens"),
            # thinking: the documented usage.output_tokens_details.thinking_tokens (part of output_tokens)
            pl.struct(pl.col("thinking").alias("thinking_tokens")).alias("output_tokens_details"),
        )
        meta = pl.struct(pl.col("team"), pl.col("task_type"), pl.col("task_id"), *principal_columns())
        return df.select(pl.col("epoch").round(3).alias("ts"), "request_id", "model", "provider",
                         "latency_ms", meta.alias("metadata"), usage.alias("usage"))
    # self-hosted vLLM behind a gateway: chat usage with reasoning tokens (--reasoning-parser)
    usage = pl.struct(
        pl.col("prompt").alias("prompt_tokens"),
        (pl.col("thinking") + pl.col("output")).alias("completion_tokens"),
        pl.struct(pl.col("cached").alias("cached_tokens")).alias("prompt_tokens_details"),
        pl.struct(pl.col("thinking").alias("reasoning_tokens")).alias("completion_tokens_details"),
    )
    return df.select(*common, "node_id", "task_id", "team", "task_type", "latency_ms", usage.alias("usage"),
                     pl.struct(*principal_columns()).alias("metadata"))


def generate_cloud_calls(spec: DemoSpec) -> pl.DataFrame:
    """The Bedrock, Vertex AI and Azure teams' calls, one row per call, drawn vectorised with their
    own generator (seed + 1000), so that generate_calls' draws are untouched."""
    rng = np.random.default_rng(spec.seed + 1000)
    n_tasks = max(1, int(spec.tasks_per_day * CLOUD_TASK_SHARE)) * spec.days
    task_day = np.repeat(np.arange(spec.days), n_tasks // spec.days)
    kind = rng.choice(len(CLOUD_TEAMS), size=len(task_day), p=[c[2] for c in CLOUD_TEAMS])
    first_vertex_day = (VERTEX_FROM - spec.start).days
    # Vertex AI tasks before its sheet's date go to Bedrock Converse (the team moved over on 2026-07-24)
    kind = np.where((kind == 2) & (task_day < first_vertex_day), 0, kind)
    mean_calls = np.array([c[3] for c in CLOUD_TEAMS])[kind]
    calls_per_task = np.minimum(1 + rng.poisson(mean_calls - 1), 8)
    hour = np.clip(rng.normal(14, 4, len(task_day)), 0, 23.99)
    n = int(calls_per_task.sum())
    task_of_call = np.repeat(np.arange(len(task_day)), calls_per_task)
    first_call = np.repeat(np.cumsum(calls_per_task) - calls_per_task, calls_per_task)
    step = np.arange(n) - first_call
    gateway = np.array([c[1] for c in CLOUD_TEAMS])[kind][task_of_call]
    team = np.array([c[0] for c in CLOUD_TEAMS])[kind][task_of_call]
    prompt = np.clip(rng.lognormal(np.log(4000) + 0.2 * np.minimum(step, 4), 0.6, n), 500, 60000).astype(np.int64)
    reasoning = rng.random(n) < 0.6
    output = np.clip(rng.lognormal(np.log(400), 0.6, n), 20, 4000).astype(np.int64)
    thinking = np.where(reasoning, (output * rng.uniform(4, 20, n)).astype(np.int64), 0)
    cached = np.where(step > 0, (prompt * rng.uniform(0.3, 0.8, n)).astype(np.int64), 0)
    # Bedrock prompt caching: the first call of a task writes half its prompt, a fifth of them with the 1-hour TTL
    cache_write = np.where((step == 0) & (gateway != "azure_chat") & (gateway != "vertex_gemini"),
                           (prompt * 0.5).astype(np.int64), 0)
    write_1h = np.where(rng.random(n) < 0.2, cache_write, 0)
    # Converse reports no thinking count: its outputTokens hold the thinking
    provisioned = (gateway == "vertex_gemini") & (rng.random(n) < 0.33)
    gap = rng.exponential(25, n)
    elapsed = np.cumsum(gap)
    within = elapsed - (elapsed[first_call] - gap[first_call])
    ts = np.minimum(task_day[task_of_call] * 86400.0 + hour[task_of_call] * 3600.0 + within,
                    (task_day[task_of_call] + 1) * 86400.0 - 1)
    start = dt.datetime.combine(spec.start, dt.time(), dt.UTC).timestamp()
    task_types = np.array(["doc_pipeline", "analytics_qa", "ops_triage"])
    task_type = np.where(team == "platform", task_types[0], np.where(team == "analytics", task_types[1], task_types[2]))
    df = pl.DataFrame({
        "epoch": start + ts,
        "request_id": np.char.add("cloud-", np.arange(n).astype(str)),
        "task_id": np.char.add("cloud-task-", task_of_call.astype(str)),
        "team": team, "task_type": task_type, "gateway": gateway,
        "prompt": prompt, "cached": cached, "cache_write": cache_write, "write_1h": write_1h,
        "thinking": thinking, "output": output, "provisioned": provisioned,
        "latency_ms": (400 + (thinking + output) * rng.uniform(5, 12, n)).round(1),
    })
    return df.with_columns(pl.from_epoch(pl.col("epoch"), time_unit="s").dt.date().alias("day"))


def _cloud_records(df: pl.DataFrame, gateway: str) -> pl.DataFrame:
    """Each cloud gateway's lines: the provider's response body as returned, with ts, provider,
    model (where the body has none), team and task at the top level."""
    ts_iso = pl.from_epoch((pl.col("epoch") * 1000).cast(pl.Int64), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
    common = [ts_iso.alias("ts"), "task_id", "team", "task_type", "latency_ms"]
    five_min = pl.col("cache_write") - pl.col("write_1h")
    if gateway == "bedrock_converse":
        # Amazon Bedrock Converse: inputTokens exclude cache reads and writes; totalTokens = all four
        uncached = pl.col("prompt") - pl.col("cached") - pl.col("cache_write")
        completion = pl.col("thinking") + pl.col("output")
        details = pl.when(pl.col("cache_write") > 0).then(pl.concat_list(
            pl.struct(pl.lit("1h").alias("ttl"), pl.col("write_1h").alias("inputTokens")),
            pl.struct(pl.lit("5m").alias("ttl"), five_min.alias("inputTokens"))))
        usage = pl.struct(uncached.alias("inputTokens"), completion.alias("outputTokens"),
                          (pl.col("prompt") + completion).alias("totalTokens"),
                          pl.col("cached").alias("cacheReadInputTokens"), pl.col("cache_write").alias("cacheWriteInputTokens"),
                          details.alias("cacheDetails"))
        return df.select(*common, pl.col("request_id"), pl.lit("aws.bedrock").alias("provider"),
                         pl.lit("us.anthropic.claude-3-7-sonnet-20250219-v1:0").alias("model"),
                         pl.lit("end_turn").alias("stopReason"), usage.alias("usage"))
    if gateway == "bedrock_invoke":
        # InvokeModel returns the Anthropic Messages body for Claude
        usage = pl.struct(
            (pl.col("prompt") - pl.col("cached") - pl.col("cache_write")).alias("input_tokens"),
            pl.col("cached").alias("cache_read_input_tokens"), pl.col("cache_write").alias("cache_creation_input_tokens"),
            pl.struct(five_min.alias("ephemeral_5m_input_tokens"), pl.col("write_1h").alias("ephemeral_1h_input_tokens")
                      ).alias("cache_creation"),
            (pl.col("thinking") + pl.col("output")).alias("output_tokens"),
            pl.struct(pl.col("thinking").alias("thinking_tokens")).alias("output_tokens_details"))
        return df.select(*common, pl.col("request_id").alias("id"), pl.lit("message").alias("type"),
                         pl.lit("bedrock").alias("provider"), pl.lit("anthropic.claude-3-7-sonnet-20250219-v1:0").alias("model"),
                         usage.alias("usage"))
    if gateway == "vertex_gemini":
        # Vertex AI generateContent: promptTokenCount includes the cached tokens, candidates exclude thoughts
        meta = pl.struct(pl.col("prompt").alias("promptTokenCount"), pl.col("cached").alias("cachedContentTokenCount"),
                         pl.col("output").alias("candidatesTokenCount"), pl.col("thinking").alias("thoughtsTokenCount"),
                         (pl.col("prompt") + pl.col("output") + pl.col("thinking")).alias("totalTokenCount"),
                         pl.when(pl.col("provisioned")).then(pl.lit("PROVISIONED_THROUGHPUT")).otherwise(pl.lit("ON_DEMAND"))
                         .alias("trafficType"))
        return df.select(*common, pl.col("request_id").alias("responseId"), pl.lit("vertex_ai").alias("provider"),
                         pl.lit("gemini-2.5-pro").alias("modelVersion"), meta.alias("usageMetadata"))
    # Azure OpenAI chat completion through a deployment: the body's model is the deployment's model; the
    # gateway logs the deployment name (mapped in catalog/endpoints.csv)
    usage = pl.struct(pl.col("prompt").alias("prompt_tokens"), (pl.col("thinking") + pl.col("output")).alias("completion_tokens"),
                      pl.struct(pl.col("cached").alias("cached_tokens")).alias("prompt_tokens_details"),
                      pl.struct(pl.col("thinking").alias("reasoning_tokens")).alias("completion_tokens_details"))
    return df.select(*common, pl.col("request_id").alias("id"), pl.lit("azure").alias("provider"),
                     pl.lit("ops-o4mini-eu").alias("model"), usage.alias("usage"))


def write_landing(landing: Path, spec: DemoSpec = DemoSpec()) -> dict[str, int]:
    """Write the demo landing folder; returns counts. Same seed, same bytes."""
    landing.mkdir(parents=True, exist_ok=True)
    (landing / MARKER).write_text("written by `thinktax demo`; safe to delete\n")
    _catalog_files(landing)
    _price_files(landing)
    calls = add_anomalies(generate_calls(spec), spec)
    req = landing / "telemetry" / "requests"
    req.mkdir(parents=True, exist_ok=True)
    files = 0
    for (gateway, day), part in calls.sort("epoch").group_by(["gateway", "day"], maintain_order=True):
        name = f"{gateway}__{day}.jsonl"
        path = req / name
        _records(part, gateway).write_ndjson(path)
        if gateway == "self_hosted":
            import gzip  # noqa: PLC0415

            path.with_suffix(".jsonl.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            path.unlink()
        files += 1
    cloud_calls = generate_cloud_calls(spec) if spec.clouds else None
    if cloud_calls is not None:
        for (gateway, day), part in cloud_calls.sort("epoch").group_by(["gateway", "day"], maintain_order=True):
            _cloud_records(part, gateway).write_ndjson(req / f"{gateway}__{day}.jsonl")
            files += 1
        # an offer not yet bought, for marts.commitments / marts.buying_options: one unit of Vertex AI
        # provisioned throughput for Gemini 2.5 Pro from August, one-month term. The price is
        # illustrative (a round figure, not a published Google rate): the demo shows the three ways
        # to buy side by side, not Google's price list.
        (landing / "catalog" / "commitments.csv").write_text(
            "provider,model,units,usd_per_unit_hour,commit_months,start,end,note\n"
            "vertex_ai,gemini-2.5-pro,1,2.50,1,2026-08-01,,illustrative offer (not a published rate)\n"
        )
    else:
        (landing / "catalog" / "endpoints.csv").unlink()
    # Real logs are not perfect: a truncated line and a call whose reasoning exceeds its completion.
    bad = req / "openai_chat__late-fixups.jsonl"
    bad.write_text(
        '{"ts":"2026-08-08T23:59:01Z","request_id":"req-bad-1","model":"o3","provider":"openai","usage":{"prompt_tokens":1200,"completion_tokens":90,'
        '"completion_tokens_details":{"reasoning_tokens":400}}}\n'
        '{"ts":"2026-08-08T23:59:02Z","request_id":"req-bad-2","model":"o3","provider":"openai","usage":{"prompt_tok\n'
    )
    # issue 44: a voice-agent team and an image step (synthetic/demo_modalities.py, its own seed)
    files += demo_modalities.write(req, spec.start, spec.seed, spec.days)
    # issue 41: catalog/cost_centers.csv and nested agent traces (synthetic/demo_principals.py)
    demo_principals.write(landing, spec.start + dt.timedelta(days=spec.days - 1), spec.seed, spec.days)
    # issue 45: the bills, spend logs and scrapes of these calls (synthetic/demo_sources.py)
    sources = demo_sources.write(landing, calls, cloud_calls, spec.start, spec.days, spec.seed,
                                 spec.tasks_per_day) if spec.sources else 0
    n_cloud = 0 if cloud_calls is None else cloud_calls.height
    tasks = calls["task_id"].n_unique() + (0 if cloud_calls is None else cloud_calls["task_id"].n_unique())
    return {"calls": calls.height + n_cloud, "tasks": tasks, "days": spec.days, "request_files": files + 1,
            "source_files": sources}


def is_demo_folder(landing: Path) -> bool:
    return not landing.exists() or not any(landing.iterdir()) or (landing / MARKER).exists()
