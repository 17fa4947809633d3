"""Telemetry at scale for `make bench`: per-request JSONL as gateways write it, vectorised.

Every call is drawn with numpy and every JSON line is assembled by polars string expressions
(no Python loop over calls), one chunk at a time, so memory is bounded by ``lines_per_file``
whatever the number of days. A day is written as ``ceil(calls_per_day / lines_per_file)``
files, each covering a consecutive slice of the UTC day in time order (gateways rotate their
logs the same way), under ``telemetry/requests/<day>/``.

The three usage shapes of the contract (DESIGN.md section 2) all occur:

=====================  ==============================  ========================================
model (share)          shape                           what it reports
=====================  ==============================  ========================================
o3-2025-04-16 (22%)    OpenAI Chat Completions         prompt/completion + cached + reasoning
o4-mini (18%)          OpenAI Responses                input/output + cached + reasoning
gpt-4.1-mini (18%)     OpenAI Chat Completions         no reasoning (a fast model)
claude-sonnet-4 (12%)  Anthropic Messages              input excl. cache, cache read/write,
                                                       output incl. thinking, thinking_tokens
claude-3-5-haiku (10%) Anthropic Messages              no thinking
deepseek-reasoner (8%) OpenAI Chat Completions         reasoning
Qwen/Qwen3-32B (12%)   OpenAI Chat, self-hosted        vLLM via a LiteLLM proxy: node_id, and
                                                       team/task in ``metadata``
=====================  ==============================  ========================================

Calls are grouped into tasks (1 + geometric(mean 2) calls of one team and task type, seconds
apart); request and task ids are random base-62 strings like the providers' own, so the
natural key has no order a database could exploit. The same calls can also be written as
Parquet (``parquet/day=<day>/part-NN.parquet``, hive-partitioned by day) with the token
buckets the contract defines, for the floor query. :func:`write_reference_files` writes the
price sheets (a thinktax price CSV, plus a second sheet that cuts the o3 price mid-way) and a
``nodes.csv`` so that every call gets a real cost.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

# name, provider ('' = self-hosted), shape, share of calls, reasoning (share of calls that think)
MODELS: list[tuple[str, str, str, float, float]] = [
    ("o3-2025-04-16", "openai", "openai_chat", 0.22, 0.92),
    ("o4-mini", "openai", "openai_responses", 0.18, 0.85),
    ("gpt-4.1-mini", "openai", "openai_chat", 0.18, 0.0),
    ("claude-sonnet-4-20250514", "anthropic", "anthropic", 0.12, 0.70),
    ("claude-3-5-haiku-20241022", "anthropic", "anthropic", 0.10, 0.0),
    ("deepseek-reasoner", "deepseek", "openai_chat", 0.08, 1.0),
    ("Qwen/Qwen3-32B", "", "openai_chat", 0.12, 0.75),
]
NODES = ("gpu-node-a", "gpu-node-b")
TEAMS = ("search", "payments", "support", "growth", "platform", "risk", "data", "mobile")
TASK_TYPES = ("code_review", "triage", "summarise", "agent_plan", "extract", "chat")

# provider, model, input, cached input, cache write, output (USD per million tokens)
PRICES = [
    ("openai", "o3", "2", "0.5", "", "8"),
    ("openai", "o4-mini", "1.1", "0.275", "", "4.4"),
    ("openai", "gpt-4.1-mini", "0.4", "0.1", "", "1.6"),
    ("anthropic", "claude-sonnet-4", "3", "0.3", "3.75", "15"),
    ("anthropic", "claude-3-5-haiku", "0.8", "0.08", "1", "4"),
    ("deepseek", "deepseek-reasoner", "0.55", "0.14", "", "2.19"),
]
PRICE_HEADER = (
    "provider,model,effective_from,input_usd_per_mtok,cached_input_usd_per_mtok,"
    "cache_write_usd_per_mtok,output_usd_per_mtok,reasoning_usd_per_mtok,currency"
)

_ALPHABET = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
_MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class GenSpec:
    calls_per_day: int
    days: int
    start: dt.date = dt.date(2026, 1, 5)
    seed: int = 20260105
    lines_per_file: int = 250_000
    gzip: bool = False  # write .jsonl.gz (gzip level 1) instead of .jsonl

    def day(self, index: int) -> dt.date:
        return self.start + dt.timedelta(days=index)

    @property
    def files_per_day(self) -> int:
        return max(1, math.ceil(self.calls_per_day / self.lines_per_file))


@dataclass
class DayFiles:
    day: dt.date
    calls: int
    jsonl: list[Path]
    parquet: list[Path]
    jsonl_bytes: int


def write_reference_files(landing: Path, spec: GenSpec) -> list[Path]:
    """The price sheets and nodes.csv the calls are costed with. Returns the files written."""
    sheets = landing / "prices" / "llm"
    catalog = landing / "catalog"
    sheets.mkdir(parents=True, exist_ok=True)
    catalog.mkdir(parents=True, exist_ok=True)
    first = spec.start - dt.timedelta(days=90)
    base = sheets / f"bench_prices.{first.isoformat()}.csv"
    base.write_text(
        PRICE_HEADER + "\n"
        + "".join(f"{p},{m},{first.isoformat()},{i},{c},{w},{o},,USD\n" for p, m, i, c, w, o in PRICES)
    )
    # A price cut half-way through the data, so the price join has two versions to choose from.
    cut = spec.start + dt.timedelta(days=max(1, spec.days // 2))
    later = sheets / f"bench_prices.{cut.isoformat()}.csv"
    later.write_text(PRICE_HEADER + "\n" + f"openai,o3,{cut.isoformat()},1.5,0.375,,6,,USD\n")
    nodes = catalog / "nodes.csv"
    nodes.write_text(
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        f"gpu-node-a,nebius,H100,8,Qwen/Qwen3-32B,fp8,2.95,{spec.start.isoformat()},\n"
        f"gpu-node-b,lambda,H100,8,Qwen/Qwen3-32B,fp8,2.49,{spec.start.isoformat()},\n"
    )
    return [base, later, nodes]


def _ids(rng: np.random.Generator, n: int, width: int) -> pa.StringArray:
    """n random base-62 strings of ``width`` characters, built in one buffer."""
    chars = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(n, width), dtype=np.uint8)]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(chars)))


def _lognormal_int(rng: np.random.Generator, n: int, median: float, sigma: float, lo: int, hi: int) -> np.ndarray:
    return np.clip(rng.lognormal(math.log(median), sigma, n), lo, hi).astype(np.int64)


def chunk(spec: GenSpec, day_index: int, part: int) -> pl.DataFrame:
    """The calls of one file: part ``part`` of day ``day_index``, in time order.

    Columns: the raw fields a gateway logs (shape-specific usage numbers as reported) plus the
    contract's buckets, from which :func:`jsonl_lines` and :func:`parquet_table` are written.
    """
    parts = spec.files_per_day
    n = spec.calls_per_day // parts + (1 if part < spec.calls_per_day % parts else 0)
    rng = np.random.default_rng([spec.seed, day_index, part])
    day0 = np.datetime64(spec.day(day_index), "ms").astype(np.int64)
    t0 = day0 + part * _MS_PER_DAY // parts
    t1 = day0 + (part + 1) * _MS_PER_DAY // parts

    # tasks: 1 + geometric calls each, started uniformly in the slice, calls a few seconds apart
    sizes = rng.geometric(1 / 3, size=n)
    n_tasks = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    sizes = sizes[:n_tasks]
    sizes[-1] -= sizes.sum() - n
    task_of = np.repeat(np.arange(n_tasks), sizes)
    first_of_task = np.repeat(np.cumsum(sizes) - sizes, sizes)
    step = np.arange(n) - first_of_task
    task_start = rng.integers(t0, t1, size=n_tasks)
    ts = np.minimum(task_start[task_of] + step * rng.integers(2_000, 45_000, size=n), t1 - 1)
    task_team = rng.integers(0, len(TEAMS), size=n_tasks)
    task_type = rng.integers(0, len(TASK_TYPES), size=n_tasks)

    shares = np.array([m[3] for m in MODELS])
    model = rng.choice(len(MODELS), size=n, p=shares / shares.sum())
    thinks = rng.random(n) < np.array([m[4] for m in MODELS])[model]
    prompt = _lognormal_int(rng, n, 3_000, 1.0, 40, 180_000)
    cached = np.where(rng.random(n) < 0.45, (prompt * rng.uniform(0.2, 0.9, n)).astype(np.int64), 0)
    # heavy-tailed thinking: most reasoning calls think a little, some think a lot (tier 'full')
    thinking = np.where(thinks, _lognormal_int(rng, n, 1_400, 1.3, 1, 60_000), 0)
    output = _lognormal_int(rng, n, 260, 0.9, 1, 16_000)
    ttft = _lognormal_int(rng, n, 450, 0.6, 40, 30_000)
    latency = ttft + (thinking + output) * 1000 // 70

    shape = np.array([("openai_chat", "openai_responses", "anthropic").index(m[2]) for m in MODELS])[model]
    anthropic = shape == 2
    cache_write = np.where(anthropic & (rng.random(n) < 0.12), prompt // 4, 0)
    cache_read = np.where(anthropic, cached, 0)
    uncached = np.maximum(np.where(anthropic, prompt - cached - cache_write, prompt - cached), 0)
    hosted = np.array([m[1] == "" for m in MODELS])[model]
    node = np.where(hosted, rng.integers(1, len(NODES) + 1, size=n), 0)  # 0: none
    # Anthropic reports thinking_tokens only when asked for it: half of the calls here do.
    has_thinking_field = anthropic & (rng.random(n) < 0.5)

    order = np.argsort(ts, kind="stable")
    ids = _ids(rng, n, 24)
    task_ids = _ids(rng, n_tasks, 16)
    prefix = np.where(hosted, 3, shape)  # request id prefix by API (self-hosted: vLLM's)
    df = pl.DataFrame({
        "ts_ms": ts,
        "request_id": _pick(["chatcmpl-", "resp_", "msg_", "cmpl-"], prefix),
        "rid_body": pl.from_arrow(ids),
        "task_id": pl.from_arrow(task_ids).gather(task_of),
        "team": _pick(TEAMS, task_team[task_of]),
        "task_type": _pick(TASK_TYPES, task_type[task_of]),
        "model": _pick([m[0] for m in MODELS], model),
        "provider": _pick([m[1] or None for m in MODELS], model),
        "node_id": _pick((None, *NODES), node),
        "usage_shape": _pick(["openai_chat", "openai_responses", "anthropic"], shape),
        "uncached_input_tokens": uncached,
        "cached_input_tokens": cached,
        "cache_write_tokens": cache_write,
        "thinking_tokens": thinking,
        "output_tokens": output,
        "cache_read": cache_read,
        "has_thinking_field": has_thinking_field,
        "latency_ms": latency,
        "ttft_ms": ttft,
    })
    df = df[order]
    return df.with_columns(
        request_id=pl.concat_str("request_id", "rid_body"),
        ts=pl.from_epoch("ts_ms", time_unit="ms"),
    ).drop("rid_body")


def _pick(values, codes: np.ndarray) -> pl.Series:
    """values[codes] as a polars string column (a gather, not a Python loop)."""
    return pl.Series(list(values), dtype=pl.String).gather(codes)


def _s(col: str) -> pl.Expr:
    return pl.col(col).cast(pl.String)


def jsonl_lines(df: pl.DataFrame) -> pl.DataFrame:
    """One column ``line``: each call as the JSON object its gateway logs."""
    prompt = pl.col("uncached_input_tokens") + pl.col("cached_input_tokens")
    completion = pl.col("thinking_tokens") + pl.col("output_tokens")
    chat = pl.concat_str(
        pl.lit('"usage":{"prompt_tokens":'), prompt.cast(pl.String),
        pl.lit(',"completion_tokens":'), completion.cast(pl.String),
        pl.lit(',"total_tokens":'), (prompt + completion).cast(pl.String),
        pl.lit(',"prompt_tokens_details":{"cached_tokens":'), _s("cached_input_tokens"),
        pl.lit('},"completion_tokens_details":{"reasoning_tokens":'), _s("thinking_tokens"), pl.lit("}}"),
    )
    responses = pl.concat_str(
        pl.lit('"usage":{"input_tokens":'), prompt.cast(pl.String),
        pl.lit(',"input_tokens_details":{"cached_tokens":'), _s("cached_input_tokens"),
        pl.lit('},"output_tokens":'), completion.cast(pl.String),
        pl.lit(',"output_tokens_details":{"reasoning_tokens":'), _s("thinking_tokens"),
        pl.lit('},"total_tokens":'), (prompt + completion).cast(pl.String), pl.lit("}"),
    )
    anthropic = pl.concat_str(
        pl.lit('"usage":{"input_tokens":'), _s("uncached_input_tokens"),
        pl.lit(',"cache_creation_input_tokens":'), _s("cache_write_tokens"),
        pl.lit(',"cache_read_input_tokens":'), _s("cache_read"),
        pl.lit(',"output_tokens":'), completion.cast(pl.String),
        pl.when(pl.col("has_thinking_field"))
        .then(pl.concat_str(pl.lit(',"thinking_tokens":'), _s("thinking_tokens")))
        .otherwise(pl.lit("")),
        pl.lit("}"),
    )
    usage = (
        pl.when(pl.col("usage_shape") == "openai_chat").then(chat)
        .when(pl.col("usage_shape") == "openai_responses").then(responses)
        .otherwise(anthropic)
    )
    ts = pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
    # API calls carry team/task at the top level; proxied self-hosted calls in metadata (LiteLLM).
    who_api = pl.concat_str(
        pl.lit('"provider":"'), pl.col("provider"), pl.lit('","task_id":"'), pl.col("task_id"),
        pl.lit('","task_type":"'), pl.col("task_type"), pl.lit('","team":"'), pl.col("team"), pl.lit('",'),
    )
    who_hosted = pl.concat_str(
        pl.lit('"node_id":"'), pl.col("node_id"),
        pl.lit('","metadata":{"user_api_key_team_alias":"'), pl.col("team"),
        pl.lit('","task_id":"'), pl.col("task_id"), pl.lit('","task_type":"'), pl.col("task_type"), pl.lit('"},'),
    )
    line = pl.concat_str(
        pl.lit('{"ts":"'), ts,
        pl.lit('","request_id":"'), pl.col("request_id"),
        pl.lit('","model":"'), pl.col("model"), pl.lit('",'),
        pl.when(pl.col("node_id").is_null()).then(who_api).otherwise(who_hosted),
        pl.lit('"latency_ms":'), _s("latency_ms"), pl.lit(',"ttft_ms":'), _s("ttft_ms"), pl.lit(","),
        usage, pl.lit("}"),
    )
    return df.select(line.alias("line"))


PARQUET_COLUMNS = [
    "ts", "request_id", "model", "provider", "node_id", "task_id", "task_type", "team", "latency_ms",
    "ttft_ms", "usage_shape", "uncached_input_tokens", "cached_input_tokens", "cache_write_tokens",
    "thinking_tokens", "output_tokens",
]


def parquet_table(df: pl.DataFrame) -> pl.DataFrame:
    """The same calls as flat columns: the contract's buckets, as stg.requests holds them."""
    return df.select(PARQUET_COLUMNS).with_columns(
        pl.col("ts").dt.cast_time_unit("us"), pl.col("latency_ms").cast(pl.Float64), pl.col("ttft_ms").cast(pl.Float64)
    )


def _write_lines(lines: pl.DataFrame, path: Path, gzip: bool) -> int:
    if gzip:
        buf = io.BytesIO()
        lines.write_csv(buf, include_header=False, quote_style="never")
        packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip container, fastest level
        path.write_bytes(packer.compress(buf.getbuffer()) + packer.flush())
    else:
        lines.write_csv(path, include_header=False, quote_style="never")
    return path.stat().st_size


def write_day(landing: Path, spec: GenSpec, day_index: int, parquet_root: Path | None = None) -> DayFiles:
    """Write one day of calls as JSONL files (and Parquet when ``parquet_root`` is given)."""
    day = spec.day(day_index)
    folder = landing / "telemetry" / "requests" / day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    out = DayFiles(day, 0, [], [], 0)
    for part in range(spec.files_per_day):
        df = chunk(spec, day_index, part)
        name = f"gateway-{day.isoformat()}-{part:03d}.jsonl" + (".gz" if spec.gzip else "")
        path = folder / name
        out.jsonl_bytes += _write_lines(jsonl_lines(df), path, spec.gzip)
        out.jsonl.append(path)
        if parquet_root is not None:
            pdir = parquet_root / f"day={day.isoformat()}"
            pdir.mkdir(parents=True, exist_ok=True)
            ppath = pdir / f"part-{part:03d}.parquet"
            pq.write_table(parquet_table(df).to_arrow(), ppath, compression="zstd", row_group_size=1 << 20)
            out.parquet.append(ppath)
        out.calls += df.height
    return out
