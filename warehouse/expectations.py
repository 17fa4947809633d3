"""Great Expectations suites on the staging tables, and the runner the Dagster checks call.

Where this sits among thinktax's data-quality layers (docs/data-quality.md has the whole map):

1. Parsers (``sources/``) reject bad records; they go to ``ops.quarantine`` and never reach staging.
2. These suites re-check what *did* reach staging, with rules a reader can see in the Dagster UI:
   keys not null, token counts >= 0, thinking <= completion, prices per million tokens and per
   GPU-hour in a plausible range, timestamps between 2015 and the run's day, currency USD after
   FX. A failure here means a parser let something through: the check is blocking, so the marts
   are not rebuilt and the published warehouse stays as it was.
3. SQL checks (``sql/checks/``) guard invariants across tables (accounting, allocation, marts).

Only what this run added is validated: rows whose ``file_id`` is above the highest file id that
was ingested before the run started (:func:`first_new_file_id`). Above :data:`SAMPLE_ROWS` new
rows, a reproducible random sample of that size is validated and the result says so.

Suites are plain data (:class:`Expect`), so they can be listed and tested without importing Great
Expectations; GX (several seconds to import) is imported only when there are rows to validate.
GX 1.x has no DuckDB-safe SQL source, so the new rows are taken from DuckDB as a pandas frame
(``.df()``) and validated through an ephemeral context's pandas data source.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import duckdb

SAMPLE_ROWS = 200_000  # validate at most this many new rows per table (a random sample above it)
SAMPLE_SEED = 42
SAMPLES_PER_EXPECTATION = 5

EARLIEST = dt.datetime(2015, 1, 1)  # no LLM API usage, bill or price sheet predates this
# Prices per million tokens: the dearest real one is ~$600/M (o1-pro output); the cheapest
# non-zero one in the LiteLLM sheet of 2026-07-24 is $0.00013/M. A per-1K price typed as per-1M
# lands above the maximum; a per-token price that was not scaled by 1e6 lands below the minimum.
MAX_USD_PER_MTOK = 1000.0
MIN_NONZERO_USD_PER_MTOK = 0.0001
# GPU rental per GPU-hour: $0.16 (GCP spot) to $23.33 (Azure 8xH100) in the real SkyPilot
# catalogs; a per-node price taken as per-GPU (8x) lands above the maximum.
MIN_USD_PER_GPU_HOUR = 0.01
MAX_USD_PER_GPU_HOUR = 100.0
MAX_TOKENS_PER_CALL = 10_000_000  # the largest context window (Llama 4 Scout); sources/requests.py rejects above

log = logging.getLogger("thinktax.expectations")


# ------------------------------------------------------------------------------------------------
# Suites as data


@dataclass(frozen=True)
class Expect:
    """One expectation: a GX 1.x expectation class name, its arguments, and why it exists."""

    type: str  # e.g. "ExpectColumnValuesToBeBetween"
    kwargs: dict[str, Any]
    why: str
    # Row condition, ANDed clauses (column, operator, value); operator one of == != < <= > >= in.
    where: tuple[tuple[str, str, Any], ...] = ()

    @property
    def columns(self) -> list[str]:
        k = self.kwargs
        if "column" in k:
            return [k["column"]]
        return [k[c] for c in ("column_A", "column_B") if c in k]

    @property
    def label(self) -> str:
        """Short and unique within a suite, e.g. ``between(ts, 2015-01-01 .. 2026-08-02)``."""
        k = self.kwargs
        cols = ", ".join(self.columns)
        if self.type == "ExpectColumnValuesToBeBetween":
            lo = "" if k.get("min_value") is None else _short(k["min_value"])
            hi = "" if k.get("max_value") is None else _short(k["max_value"])
            text = f"between({cols}, {lo}{' <' if k.get('strict_min') else ''} .. {hi})"
        elif self.type == "ExpectColumnPairValuesAToBeGreaterThanB":
            text = f"{k['column_A']} {'>=' if k.get('or_equal') else '>'} {k['column_B']}"
        elif self.type == "ExpectColumnValuesToBeInSet":
            text = f"in_set({cols}, {k['value_set']})"
        elif self.type == "ExpectColumnValuesToMatchRegex":
            text = f"matches({cols}, {k['regex']})"
        else:
            short = {"ExpectColumnValuesToNotBeNull": "not_null", "ExpectColumnValuesToBeUnique": "unique"}
            text = f"{short.get(self.type, self.type)}({cols})"
        if self.where:
            text += " where " + " and ".join(f"{c} {op} {v!r}" if isinstance(v, str) else f"{c} {op} {v}"
                                             for c, op, v in self.where)
        return text


def _short(v: Any) -> str:
    if isinstance(v, dt.datetime):
        return v.date().isoformat() if v.time() == dt.time() else v.isoformat(sep=" ", timespec="minutes")
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Suite:
    table: str
    expectations: tuple[Expect, ...]
    # Extra columns computed in DuckDB before validation: name -> SQL expression over the table.
    derived: dict[str, str] = field(default_factory=dict)


def not_null(*columns: str, why: str = "key or required field") -> list[Expect]:
    return [Expect("ExpectColumnValuesToNotBeNull", {"column": c}, why) for c in columns]


def between(column: str, lo: Any, hi: Any, why: str, *, where: tuple[tuple[str, str, Any], ...] = (),
            strict_min: bool = False) -> Expect:
    kwargs: dict[str, Any] = {"column": column, "min_value": lo, "max_value": hi}
    if strict_min:
        kwargs["strict_min"] = True
    return Expect("ExpectColumnValuesToBeBetween", kwargs, why, where)


def non_negative(*columns: str, why: str = "a count cannot be negative") -> list[Expect]:
    return [between(c, 0, None, why) for c in columns]


def in_set(column: str, values: list[Any], why: str, *, where: tuple[tuple[str, str, Any], ...] = ()) -> Expect:
    return Expect("ExpectColumnValuesToBeInSet", {"column": column, "value_set": values}, why, where)


def matches(column: str, regex: str, why: str) -> Expect:
    return Expect("ExpectColumnValuesToMatchRegex", {"column": column, "regex": regex}, why)


def a_at_least_b(a: str, b: str, why: str, *, strict: bool = False) -> Expect:
    """a >= b (a > b when strict) on every row where both are given."""
    return Expect(
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {"column_A": a, "column_B": b, "or_equal": not strict, "ignore_row_if": "either_value_is_missing"},
        why,
    )


def in_time(column: str, latest: dt.datetime, why: str = "a timestamp between 2015 and a day after the run") -> Expect:
    return between(column, EARLIEST, latest, why)


def usd_per_mtok(*columns: str) -> list[Expect]:
    out: list[Expect] = []
    for c in columns:
        out.append(between(c, 0, MAX_USD_PER_MTOK,
                           f"USD per million tokens in [0, {MAX_USD_PER_MTOK:g}] (above: a per-1K price taken as per-1M)"))
        out.append(between(c, MIN_NONZERO_USD_PER_MTOK, MAX_USD_PER_MTOK,
                           f"a non-zero price is at least {MIN_NONZERO_USD_PER_MTOK} USD/M (below: a per-token price not scaled to per-million)",
                           where=((c, ">", 0),)))
    return out


def usd_per_gpu_hour(column: str) -> Expect:
    return between(column, MIN_USD_PER_GPU_HOUR, MAX_USD_PER_GPU_HOUR,
                   f"USD per GPU-hour in [{MIN_USD_PER_GPU_HOUR}, {MAX_USD_PER_GPU_HOUR:g}] (above: a per-node price taken as per-GPU)")


def money_after_fx(amount: str, currency: str) -> tuple[list[Expect], dict[str, str]]:
    """Bills keep the billed currency and convert with fx_usd_per_unit: check the conversion."""
    exps = [
        matches(currency, r"^[A-Z]{3}$", "an ISO 4217 code, upper case"),
        between("fx_usd_per_unit", 0, None, "an FX rate is positive", strict_min=True),
        in_set("fx_usd_per_unit", [1.0], "USD converts to USD at 1", where=((currency, "==", "USD"),)),
        between("fx_error_usd", 0, 1e-6, "amount_usd = amount x fx_usd_per_unit (currency = USD after FX)"),
    ]
    return exps, {"fx_error_usd": f"abs(CAST({amount}_usd AS DOUBLE) - CAST({amount} AS DOUBLE) * CAST(fx_usd_per_unit AS DOUBLE))"}


def suites(now: dt.datetime) -> dict[str, Suite]:
    """Every explicit suite, keyed by staging table. ``now`` is the run's start (naive UTC)."""
    soon = now + dt.timedelta(days=1)  # telemetry: the parsers reject more than a day ahead
    next_year = now + dt.timedelta(days=366)  # price sheets and catalogs may announce ahead
    tokens = "uncached_input_tokens", "cached_input_tokens", "cache_write_tokens", "thinking_tokens", "output_tokens"
    out = [
        Suite("stg.requests", (
            *not_null("ts", "request_id", "model", "task_id", "usage_shape"),
            Expect("ExpectColumnValuesToBeUnique", {"column": "request_id"}, "one row per call (ingest dedupes by request_id)"),
            *[between(t, 0, MAX_TOKENS_PER_CALL, "a non-negative count, at most the largest context window (10M tokens)")
              for t in tokens],
            a_at_least_b("completion_tokens", "thinking_tokens",
                         "thinking is part of the completion (completion = thinking + visible output)"),
            in_time("ts", soon),
            in_set("usage_shape", ["openai_chat", "openai_responses", "anthropic", "gemini", "litellm", "otel_genai"],
                   "a known usage shape (litellm: LiteLLM spend logs; otel_genai: OpenTelemetry GenAI spans)"),
            in_set("service_tier", ["standard", "flex", "priority", "scale", "batch"],
                   "a known service tier (the parser quarantines others)"),
            between("cache_write_1h_tokens", 0, MAX_TOKENS_PER_CALL, "a non-negative count"),
            a_at_least_b("cache_write_tokens", "cache_write_1h_tokens", "1-hour cache writes are part of the cache writes"),
            between("web_search_requests", 0, None, "a non-negative count of web-search queries"),
            in_set("web_search_context_size", ["low", "medium", "high"], "OpenAI's search context sizes"),
            between("latency_ms", 0, None, "latency is a duration"),
            between("ttft_ms", 0, None, "time to first token is a duration"),
        ), {"completion_tokens": "thinking_tokens + output_tokens"}),
        Suite("stg.llm_prices", (
            *not_null("provider", "model", "price_kind", "effective_from", "currency", "source_format"),
            *usd_per_mtok("input_usd_per_mtok", "cached_input_usd_per_mtok", "cache_write_usd_per_mtok",
                          "output_usd_per_mtok", "reasoning_usd_per_mtok"),
            in_set("currency", ["USD"], "prices are stored in USD (other currencies converted with FX at parse)"),
            *usd_per_mtok("cache_write_1h_usd_per_mtok"),
            *[between(c, 0, 100, "a per-request fee in USD (a web search is $0.01-$0.05 per query)")
              for c in ("usd_per_request_fee", "web_search_usd_per_query_low", "web_search_usd_per_query_high")],
            *[between(c, 1, 10, "a regional-processing multiplier (1.1 = +10%)")
              for c in ("regional_uplift_eu", "regional_uplift_us")],
            in_time("effective_from", next_year, "effective between 2015 and a year after the run"),
        )),
        Suite("stg.gpu_prices", (
            *not_null("provider", "gpu_type", "usd_per_gpu_hour", "pricing", "effective_from", "source_format"),
            usd_per_gpu_hour("usd_per_gpu_hour"),
            in_set("pricing", ["on_demand", "reserved", "spot"], "a known pricing model"),
            between("gpus_per_node", 1, 64, "a node has 1 to 64 GPUs"),
            in_time("effective_from", next_year, "effective between 2015 and a year after the run"),
        )),
        Suite("stg.models", (
            *not_null("model"),
            between("params_total_b", 0, 10_000, "parameters in billions (0 to 10T)", strict_min=True),
            a_at_least_b("params_total_b", "params_active_b", "active parameters are part of the total (MoE)"),
            *non_negative("weights_gb_fp8", "kv_bytes_per_token_bf16", why="a size cannot be negative"),
        )),
        Suite("stg.model_configs", (*not_null("path", "config_json"),)),
        Suite("stg.nodes", (
            *not_null("node_id", "gpu_type", "gpus", "active_from"),
            between("gpus", 1, 64, "a node has 1 to 64 GPUs"),
            usd_per_gpu_hour("usd_per_gpu_hour"),
            in_time("active_from", next_year, "active from a date between 2015 and a year after the run"),
            a_at_least_b("active_to", "active_from", "active_to (exclusive) is after active_from", strict=True),
        )),
        Suite("stg.deployments", (
            *not_null("deployment", "model", "gpu_type", "gpus"),
            between("gpus", 1, 64, "a deployment uses 1 to 64 GPUs"),
            usd_per_gpu_hour("usd_per_gpu_hour"),
            between("gpu_mem_gb", 1, 1000, "GPU memory in GB (10^9 bytes) per GPU"),
            between("calls_per_minute", 0, None, "a throughput cannot be negative"),
        )),
        Suite("stg.substitutions", (
            *not_null("from_model", "to_model", "thinking_ratio", "output_ratio"),
            between("thinking_ratio", 0, 100, "to_model thinks 0 to 100 times as many tokens as from_model"),
            between("output_ratio", 0, 100, "to_model answers with 0 to 100 times as many tokens as from_model"),
        )),
        Suite("stg.budgets", (
            *not_null("team", "monthly_usd", "soft_pct"),
            between("monthly_usd", 0, None, "a budget cannot be negative"),
            between("soft_pct", 0, 100, "the soft limit is a percent of the budget"),
        )),
        Suite("stg.openai_usage", (
            *not_null("bucket_start", "bucket_end"),
            *non_negative("input_tokens", "input_cached_tokens", "output_tokens", "num_model_requests"),
            a_at_least_b("input_tokens", "input_cached_tokens", "cached input is part of the input"),
            a_at_least_b("bucket_end", "bucket_start", "a bucket ends after it starts", strict=True),
            in_time("bucket_start", soon),
        )),
        Suite("stg.anthropic_usage", (
            *not_null("bucket_start", "bucket_end"),
            *non_negative("uncached_input_tokens", "cache_read_input_tokens", "cache_creation_5m_tokens",
                          "cache_creation_1h_tokens", "output_tokens", "web_search_requests"),
            a_at_least_b("bucket_end", "bucket_start", "a bucket ends after it starts", strict=True),
            in_time("bucket_start", soon),
        )),
        Suite("stg.metric_samples", (
            *not_null("node_id", "scrape_ts", "metric", "source_metric", "kind"),
            in_time("scrape_ts", soon),
            in_set("engine", ["vllm", "sglang", "dcgm", "other"], "a known exporter"),
            between("value", 0, 1, "a usage ratio is 0-1 (DCGM percentages scaled)",
                    where=(("metric", "in", ["kv_cache_usage", "gpu_util"]),)),
            between("value", 0, None, "a counter only counts up from 0",
                    where=(("kind", "==", "counter"), ("mapped", "==", True))),
        )),
    ]
    for table in ("stg.openai_costs", "stg.anthropic_costs"):
        fx, derived = money_after_fx("amount", "currency")
        out.append(Suite(table, (
            *not_null("bucket_start", "bucket_end", "amount", "currency", "amount_usd"),
            *fx,
            a_at_least_b("bucket_end", "bucket_start", "a bucket ends after it starts", strict=True),
            in_time("bucket_start", soon),
        ), derived))
    out.append(Suite("stg.focus_costs", (
        *not_null("billing_currency", "charge_period_start", "charge_period_end", "billed_cost_usd"),
        matches("billing_currency", r"^[A-Z]{3}$", "an ISO 4217 code, upper case"),
        between("fx_usd_per_unit", 0, None, "an FX rate is positive", strict_min=True),
        in_set("fx_usd_per_unit", [1.0], "USD converts to USD at 1", where=(("billing_currency", "==", "USD"),)),
        a_at_least_b("charge_period_end", "charge_period_start", "a charge period does not end before it starts"),
        in_time("charge_period_start", soon),
    )))
    out.append(Suite("stg.reported_costs", (
        *not_null("request_id", "reporter", "reported_cost_usd"),
        Expect("ExpectColumnValuesToBeUnique", {"column": "request_id"}, "one reported cost per call (loaded with its call)"),
        between("reported_cost_usd", 0, None, "a cost is not negative (the parser quarantines others)"),
        in_set("reporter", ["litellm"], "a known reporter"),
    )))
    return {s.table: s for s in out}


def fallback_suite(con: duckdb.DuckDBPyConnection, table: str) -> Suite:
    """For a staging table without an explicit suite: its NOT NULL columns, and line >= 1."""
    schema, name = table.split(".")
    cols = [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "AND is_nullable = 'NO' AND column_name NOT IN ('file_id', 'line') ORDER BY ordinal_position",
        [schema, name]).fetchall()]
    return Suite(table, (*not_null(*cols, why="NOT NULL in the staging table"),
                         between("line", 1, None, "lines are 1-based")))


def suite_for(con: duckdb.DuckDBPyConnection, table: str, now: dt.datetime) -> Suite:
    return suites(now).get(table) or fallback_suite(con, table)


# ------------------------------------------------------------------------------------------------
# Which rows are new


def first_new_file_id(con: duckdb.DuckDBPyConnection, build_id: str) -> int:
    """The smallest file id this build could have added: 1 + the highest one ingested before it started.

    Files are ingested inside the build after ``Build.start`` wrote ``ops.runs.started_at``, with
    ``ingested_at`` taken from the same (UTC) clock later, so earlier runs' files are the ones
    ingested before that instant.
    """
    row = con.execute(
        """SELECT coalesce(max(f.file_id), 0) + 1
           FROM ops.ingested_files f
           WHERE f.ingested_at < (SELECT started_at FROM ops.runs WHERE build_id = ?)""",
        [build_id],
    ).fetchall()
    return int(row[0][0])


def run_started_at(con: duckdb.DuckDBPyConnection, build_id: str) -> dt.datetime | None:
    row = con.execute("SELECT started_at FROM ops.runs WHERE build_id = ?", [build_id]).fetchall()
    return row[0][0] if row else None


# ------------------------------------------------------------------------------------------------
# Results


@dataclass
class ExpectationResult:
    label: str
    why: str
    success: bool
    unexpected_count: int = 0
    unexpected_percent: float | None = None
    sample_values: list[Any] = field(default_factory=list)
    sample_rows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # GX raised while evaluating (counts as a failure)


@dataclass
class SuiteResult:
    table: str
    rows_new: int
    rows_validated: int
    first_file_id: int
    seconds: float = 0.0
    results: list[ExpectationResult] = field(default_factory=list)

    @property
    def sampled(self) -> bool:
        return self.rows_validated < self.rows_new

    @property
    def success(self) -> bool:
        return all(r.success for r in self.results)

    @property
    def failed(self) -> list[ExpectationResult]:
        return [r for r in self.results if not r.success]

    @property
    def offending_rows(self) -> int:
        """Unexpected values over the failed expectations (a row failing two counts twice)."""
        return sum(r.unexpected_count for r in self.failed)

    def sample(self, limit: int = 20) -> list[dict[str, Any]]:
        """Offending rows, each with the expectation it broke (first ``limit``)."""
        rows = [{"expectation": r.label, **row} for r in self.failed for row in r.sample_rows]
        errors = [{"expectation": r.label, "error": r.error} for r in self.failed if r.error and not r.sample_rows]
        return (rows + errors)[:limit]

    @property
    def scope(self) -> str:
        if self.rows_new == 0:
            return f"no new rows in {self.table} in this run (file_id >= {self.first_file_id}): nothing to validate"
        if self.sampled:
            return (f"validated a random sample of {self.rows_validated:,} of the {self.rows_new:,} new rows "
                    f"(file_id >= {self.first_file_id}; seed {SAMPLE_SEED})")
        return f"validated all {self.rows_new:,} new rows (file_id >= {self.first_file_id})"

    def summary_table(self) -> str:
        """Markdown: one line per expectation (for the Dagster UI)."""
        lines = ["| expectation | ok | unexpected | % | sample values | why |", "|---|---|---|---|---|---|"]
        for r in self.results:
            pct = "" if r.unexpected_percent is None else f"{r.unexpected_percent:.4g}"
            vals = ", ".join(str(v) for v in r.sample_values[:SAMPLES_PER_EXPECTATION]) or (r.error or "")
            cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
            lines.append(f"| {cell(r.label)} | {'yes' if r.success else '**NO**'} | {r.unexpected_count} | {pct} "
                         f"| {cell(vals)} | {cell(r.why)} |")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Running GX

_CONTEXT: Any = None


def _gx_context() -> Any:
    """One ephemeral GX context per process (GX is imported here, on first use)."""
    global _CONTEXT
    if _CONTEXT is None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        # GX probes every optional backend it knows at import; with pyspark installed (the Spark
        # engine's extra) that alone imports pyspark and its Connect client, seconds that the DuckDB
        # path does not use: hide pyspark while GX is imported, unless this process already has it.
        hide = "pyspark" not in sys.modules
        if hide:
            sys.modules["pyspark"] = None  # type: ignore[assignment] - makes `import pyspark` raise ImportError
        try:
            import great_expectations as gx  # noqa: PLC0415 - takes seconds: only when there is something to validate
            from great_expectations.data_context.types.base import ProgressBarsConfig  # noqa: PLC0415
        finally:
            if hide:
                del sys.modules["pyspark"]

        for name in ("great_expectations", "great_expectations.core", "great_expectations.expectations"):
            logging.getLogger(name).setLevel(logging.ERROR)
        ctx = gx.get_context(mode="ephemeral")
        ctx.enable_analytics(False)
        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        ctx.data_sources.add_pandas("thinktax")
        _CONTEXT = ctx
    return _CONTEXT


def _gx_suite(suite: Suite) -> Any:
    import great_expectations as gx  # noqa: PLC0415 - already imported by _gx_context

    from great_expectations.expectations.row_conditions import Column  # noqa: PLC0415

    def condition(where: tuple[tuple[str, str, Any], ...]) -> Any:
        ops = {"==": Column.__eq__, "!=": Column.__ne__, "<": Column.__lt__, "<=": Column.__le__,
               ">": Column.__gt__, ">=": Column.__ge__, "in": Column.is_in}
        clauses = [ops[op](Column(col), value) for col, op, value in where]
        out = clauses[0]
        for c in clauses[1:]:
            out = out & c
        return out

    gx_suite = gx.ExpectationSuite(name=suite.table)
    for i, e in enumerate(suite.expectations):
        cls = getattr(gx.expectations, e.type)
        extra = {"row_condition": condition(e.where)} if e.where else {}
        gx_suite.add_expectation(cls(**e.kwargs, **extra, meta={"thinktax_index": i}))
    return gx_suite


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, float):  # also numpy.float64
        return None if math.isnan(v) else float(v)
    if hasattr(v, "item") and not hasattr(v, "isoformat"):  # numpy scalar
        return _jsonable(v.item())
    if isinstance(v, int):
        return v
    try:
        import pandas as pd  # noqa: PLC0415

        if v is pd.NaT or (not isinstance(v, (list, tuple, dict)) and pd.isna(v)):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


def _frame(con: duckdb.DuckDBPyConnection, suite: Suite, first_file_id: int, rows_new: int, sample_rows: int):
    derived = "".join(f", {expr} AS {name}" for name, expr in suite.derived.items())
    sql = f"SELECT t.*{derived} FROM {suite.table} t WHERE t.file_id >= ?"
    if rows_new > sample_rows:
        sql = f"SELECT * FROM ({sql}) USING SAMPLE reservoir({int(sample_rows)} ROWS) REPEATABLE ({SAMPLE_SEED})"
    df = con.execute(sql, [first_file_id]).df()
    df["_row"] = range(len(df))
    return df


def validate_new_rows(con: duckdb.DuckDBPyConnection, table: str, first_file_id: int, *,
                      now: dt.datetime | None = None, suite: Suite | None = None,
                      sample_rows: int = SAMPLE_ROWS) -> SuiteResult:
    """Validate the rows of ``table`` with ``file_id >= first_file_id`` against its suite."""
    start = time.monotonic()
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    suite = suite or suite_for(con, table, now)
    rows_new = con.execute(f"SELECT count(*) FROM {table} WHERE file_id >= ?", [first_file_id]).fetchall()[0][0]
    result = SuiteResult(table, rows_new, 0, first_file_id)
    if rows_new == 0:
        result.seconds = time.monotonic() - start
        return result
    df = _frame(con, suite, first_file_id, rows_new, sample_rows)
    result.rows_validated = len(df)
    files = dict(con.execute(
        "SELECT file_id, file FROM ops.ingested_files WHERE file_id >= ?", [first_file_id]).fetchall())
    ctx = _gx_context()
    source = ctx.data_sources.get("thinktax")
    try:
        asset = source.get_asset(table)
    except LookupError:
        asset = source.add_dataframe_asset(table)
    try:
        batch_def = asset.get_batch_definition("new_rows")
    except KeyError:
        batch_def = asset.add_batch_definition_whole_dataframe("new_rows")
    batch = batch_def.get_batch(batch_parameters={"dataframe": df})
    validation = batch.validate(_gx_suite(suite), result_format={
        "result_format": "SUMMARY",
        "partial_unexpected_count": SAMPLES_PER_EXPECTATION,
        "unexpected_index_column_names": ["_row"],
    })
    order: list[int] = []
    for r in validation.results:
        exp = suite.expectations[r.expectation_config.meta["thinktax_index"]]
        res = r.result or {}
        info = r.exception_info or {}
        error = info.get("exception_message") if info.get("raised_exception") else None
        rows = []
        for idx in res.get("partial_unexpected_index_list") or []:
            i = idx["_row"] if isinstance(idx, dict) else idx
            rec = df.iloc[int(i)]
            row = {"file": files.get(int(rec["file_id"])), "line": _jsonable(rec["line"])}
            row.update({c: _jsonable(rec[c]) for c in exp.columns})
            rows.append(row)
        order.append(r.expectation_config.meta["thinktax_index"])
        result.results.append(ExpectationResult(
            label=exp.label,
            why=exp.why,
            success=bool(r.success) and error is None,
            unexpected_count=int(res.get("unexpected_count") or 0),
            unexpected_percent=_jsonable(res.get("unexpected_percent")),
            sample_values=[_jsonable(v) for v in res.get("partial_unexpected_list") or []],
            sample_rows=rows,
            error=error,
        ))
    result.results = [r for _, r in sorted(zip(order, result.results), key=lambda p: p[0])]
    result.seconds = time.monotonic() - start
    return result
