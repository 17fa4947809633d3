"""The staging contract: one declaration per ``stg.*`` table, and every limit the parsers and checks share.

Each :class:`Table` below says, once, what a staging table holds: its columns in order (DuckDB
type, NOT NULL or not, meaning and unit), its natural key (de-duplication at ingest), the
column(s) that place a row on a UTC day (daily partitions) and the rules its new rows must meet
(the Great Expectations suite). Everything else is derived from it:

* the Arrow schema a parser returns (:meth:`Table.arrow_schema`: ``line`` + the columns, no
  ``file_id``, which the warehouse adds) -- the parsers build their rows with it;
* ``SourceSpec.key`` (:mod:`sources.base`: a spec names its table, the key comes from here);
* ``warehouse.days.DAY_SOURCES`` (the tables that make an asset daily-partitioned);
* the GX suites (``warehouse.expectations.suites``): ``not_null`` for every NOT NULL column, the
  column rules, the table rules;
* the DDL of a *new* staging table (:meth:`Table.create_sql`). The migrations in
  ``warehouse/migrations`` are history and append-only; ``tests/sources/test_contract.py`` checks that
  the migrated DDL of every stg table equals the declaration (names, types, NOT NULL, order),
  and that every stg table the migrations create is declared here, so the two cannot drift.
  Adding a column: add it at the end of its declaration here, then write its migration with
  ``python -m sources.contract --ddl stg.<table> <column>`` (``ALTER TABLE ... ADD COLUMN``);
  a new table: declare it, then ``python -m sources.contract --ddl stg.<table>`` writes its
  ``CREATE TABLE``; then ``make docs``.

This module sits at the bottom of ``sources/`` (it imports pyarrow only), so both the parsers
and ``warehouse/`` may import it (the import-linter contracts in pyproject.toml).

Rules are plain data in Great Expectations 1.x vocabulary (an expectation class name and its
arguments); a bound that depends on the run's start is a :class:`RunOffset`, resolved when the
suite is built (``warehouse.expectations.suites(now)``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pyarrow as pa

# ------------------------------------------------------------------------------------------------
# Limits, each defined once (parsers reject beyond them; the suites check the same bounds)

# No model reads or writes more than this in one call (the largest context window, Llama 4 Scout,
# is 10M tokens): a count above it is a unit or logging error, e.g. a 10^6x outlier.
MAX_TOKENS_PER_CALL = 10_000_000
# Prices per million tokens: the dearest real one is ~$600/M (o1-pro output); the cheapest
# non-zero one in the LiteLLM sheet of 2026-07-24 is $0.00013/M. A per-1K price typed as per-1M
# lands above the maximum; a per-token price that was not scaled by 1e6 lands below the minimum.
MAX_USD_PER_MTOK = Decimal(1000)
MIN_NONZERO_USD_PER_MTOK = Decimal("0.0001")
# Per-request fees (a web search is $0.01-$0.05 per query) and regional uplifts (real ones: 1.1x).
MAX_USD_PER_REQUEST = Decimal(100)
MAX_UPLIFT = Decimal(10)
# GPU rental per GPU-hour: $0.16 (GCP spot) to $23.33 (Azure 8xH100) in the real SkyPilot
# catalogs (dearest sheet row: azure H200 8-GPU 169.6 / 8 = 21.2); a per-node price taken as
# per-GPU (8x) lands above the maximum.
MIN_USD_PER_GPU_HOUR = Decimal("0.01")
MAX_USD_PER_GPU_HOUR = Decimal(100)
# A price typed in the catalog (nodes.csv, deployments.csv) may be any positive number up to
# this; the check above then flags one beyond the sheet range.
MAX_CATALOG_USD_PER_GPU_HOUR = Decimal(1000)
MAX_GPUS_PER_NODE = 64
EARLIEST = dt.datetime(2015, 1, 1)  # no LLM API usage, bill or price sheet predates this

# Allowed values
# issue 41: who made a call, on stg.requests -> core.calls -> core.call_costs (docs/contract.md
# "Principals"). Every source fills the ones it carries; NULL = not reported.
PRINCIPALS = ("api_key", "user_id", "end_user_id", "project_id", "workspace_id", "session_id", "trace_id",
              "span_id", "parent_span_id", "agent_name", "tags")
# A principal that looks like a secret key is never stored: its call is quarantined. The shapes of
# the providers' secret keys: OpenAI `sk-...` / `sk-proj-...` / `sk-svcacct-...` / `sk-admin-...`
# (platform.openai.com/docs/api-reference/authentication), Anthropic `sk-ant-api03-...` /
# `sk-ant-admin01-...` (docs.anthropic.com/en/api/admin-api), LiteLLM virtual keys `sk-...`
# (docs.litellm.ai/docs/proxy/virtual_keys), restricted keys `rk-...`, AWS access key ids
# `AKIA` + 16 (docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html), Google
# API keys `AIza` + 35 (cloud.google.com/docs/authentication/api-keys). The rule: such a prefix
# followed by at least 20 key characters ([A-Za-z0-9_-]) anywhere in the value. A key's id
# (`key_abc...`, OpenAI `api_key_id`, Anthropic `apikey_01...`), a sha256 hash (LiteLLM
# `user_api_key_hash`: 64 hex digits) or a redacted alias (`sk-proj-...Xy3Q`: the dots break the
# run) does not match.
SECRET_KEY_REGEX = r"(^|[^A-Za-z0-9_-])((sk|rk)-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})"


def redact_sql(expr: str) -> str:
    """``expr`` (a rejected line's text) with every secret-looking key replaced by ``<redacted>``."""
    return f"regexp_replace({expr}, '{SECRET_KEY_REGEX}', '\\1<redacted>', 'g')"


def secret_checks_sql(fields: dict[str, str]) -> str:
    """CASE arms (``WHEN ... THEN struct_pack(f, r)``) that quarantine a row whose principal looks
    like a secret key: ``fields`` maps each principal expression to the input field it was read
    from (named in the reason; the value itself is never copied into the reason)."""
    return "\n            ".join(
        f"WHEN regexp_matches({expr}, '{SECRET_KEY_REGEX}') THEN struct_pack(f := '{path}', "
        f"r := 'looks like a secret API key (sk-/rk-/AKIA/AIza + 20 or more key characters): never stored; "
        f"log the key id, hash or alias instead')"
        for expr, path in fields.items())


USAGE_SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini", "litellm", "otel_genai", "bedrock_converse",
                "media_units")
# How a call is paid: per token (NULL / on_demand) or by a reservation (provisioned throughput)
BILLINGS = ("on_demand", "provisioned")
SERVICE_TIERS = ("standard", "flex", "priority", "scale", "batch")
WEB_SEARCH_CONTEXT_SIZES = ("low", "medium", "high")
GPU_PRICINGS = ("on_demand", "reserved", "spot")
METRIC_ENGINES = ("vllm", "sglang", "dcgm", "other")
REPORTERS = ("litellm",)


# ------------------------------------------------------------------------------------------------
# Rules (one Great Expectations expectation each)


@dataclass(frozen=True)
class RunOffset:
    """A bound relative to the run's start: ``now + days`` (resolved by :meth:`Rule.at`)."""

    days: int


Where = tuple[tuple[str, str, Any], ...]


@dataclass(frozen=True)
class Rule:
    """One expectation: a GX 1.x expectation class name, its arguments, and why it exists."""

    type: str  # e.g. "ExpectColumnValuesToBeBetween"
    kwargs: dict[str, Any]
    why: str
    # Row condition, ANDed clauses (column, operator, value); operator one of == != < <= > >= in.
    where: Where = ()

    @property
    def columns(self) -> list[str]:
        k = self.kwargs
        if "column" in k:
            return [k["column"]]
        return [k[c] for c in ("column_A", "column_B") if c in k]

    def at(self, now: dt.datetime) -> Rule:
        """This rule with every :class:`RunOffset` bound replaced by ``now + days``."""
        if not any(isinstance(v, RunOffset) for v in self.kwargs.values()):
            return self
        kwargs = {k: now + dt.timedelta(days=v.days) if isinstance(v, RunOffset) else v for k, v in self.kwargs.items()}
        return replace(self, kwargs=kwargs)

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
    if isinstance(v, RunOffset):
        return f"run{v.days:+d}d"
    if isinstance(v, dt.datetime):
        return v.date().isoformat() if v.time() == dt.time() else v.isoformat(sep=" ", timespec="minutes")
    return f"{v:g}" if isinstance(v, float) else str(v)


def _num(v: Any) -> Any:
    """A bound as GX takes it: Decimals become floats (DuckDB DECIMAL arrives in pandas as float)."""
    return float(v) if isinstance(v, Decimal) else v


def not_null(column: str, why: str = "key or required field") -> Rule:
    return Rule("ExpectColumnValuesToNotBeNull", {"column": column}, why)


def between(column: str, lo: Any, hi: Any, why: str, *, where: Where = (), strict_min: bool = False) -> Rule:
    kwargs: dict[str, Any] = {"column": column, "min_value": _num(lo), "max_value": _num(hi)}
    if strict_min:
        kwargs["strict_min"] = True
    return Rule("ExpectColumnValuesToBeBetween", kwargs, why, where)


def in_set(column: str, values: list[Any] | tuple[Any, ...], why: str, *, where: Where = ()) -> Rule:
    return Rule("ExpectColumnValuesToBeInSet", {"column": column, "value_set": list(values)}, why, where)


def matches(column: str, regex: str, why: str) -> Rule:
    return Rule("ExpectColumnValuesToMatchRegex", {"column": column, "regex": regex}, why)


def unique(column: str, why: str) -> Rule:
    return Rule("ExpectColumnValuesToBeUnique", {"column": column}, why)


def a_at_least_b(a: str, b: str, why: str, *, strict: bool = False) -> Rule:
    """a >= b (a > b when strict) on every row where both are given."""
    return Rule(
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {"column_A": a, "column_B": b, "or_equal": not strict, "ignore_row_if": "either_value_is_missing"},
        why,
    )


SOON = RunOffset(1)  # telemetry and bills: the parsers reject more than a day ahead
NEXT_YEAR = RunOffset(366)  # price sheets and catalogs may announce ahead


def in_time(column: str, latest: RunOffset = SOON,
            why: str = "a timestamp between 2015 and a day after the run") -> Rule:
    return between(column, EARLIEST, latest, why)


def non_negative(column: str, why: str = "a count cannot be negative") -> Rule:
    return between(column, 0, None, why)


def usd_per_mtok(column: str) -> tuple[Rule, ...]:
    return (
        between(column, 0, MAX_USD_PER_MTOK,
                f"USD per million tokens in [0, {MAX_USD_PER_MTOK}] (above: a per-1K price taken as per-1M)"),
        between(column, MIN_NONZERO_USD_PER_MTOK, MAX_USD_PER_MTOK,
                f"a non-zero price is at least {MIN_NONZERO_USD_PER_MTOK} USD/M (below: a per-token price not scaled to per-million)",
                where=((column, ">", 0),)),
    )


def usd_per_gpu_hour(column: str) -> Rule:
    return between(column, MIN_USD_PER_GPU_HOUR, MAX_USD_PER_GPU_HOUR,
                   f"USD per GPU-hour in [{MIN_USD_PER_GPU_HOUR}, {MAX_USD_PER_GPU_HOUR}] (above: a per-node price taken as per-GPU)")


def tokens_per_call(column: str, why: str = "a non-negative count, at most the largest context window (10M tokens)") -> Rule:
    return between(column, 0, MAX_TOKENS_PER_CALL, why)


# ------------------------------------------------------------------------------------------------
# Columns and tables

_DECIMAL = re.compile(r"DECIMAL\((\d+),(\d+)\)")
_ARROW = {
    "VARCHAR": pa.string(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us"),  # naive UTC
    "DATE": pa.date32(),
}


def arrow_type(duckdb_type: str) -> pa.DataType:
    m = _DECIMAL.fullmatch(duckdb_type)
    if m:
        return pa.decimal128(int(m[1]), int(m[2]))
    return _ARROW[duckdb_type]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB type as information_schema spells it: VARCHAR, BIGINT, DECIMAL(18,9), ...
    doc: str = ""  # meaning, with its unit where it has one
    nullable: bool = True
    rules: tuple[Rule, ...] = ()

    @property
    def arrow(self) -> pa.DataType:
        return arrow_type(self.type)


def col(name: str, type: str, doc: str = "", *rules: Rule | tuple[Rule, ...], null: bool = True) -> Column:
    flat: list[Rule] = []
    for r in rules:
        flat.extend(r if isinstance(r, tuple) else (r,))
    return Column(name, type, doc, null, tuple(flat))


def req(name: str, type: str, doc: str = "", *rules: Rule | tuple[Rule, ...]) -> Column:
    """A NOT NULL column."""
    return col(name, type, doc, *rules, null=False)


# Every staging table starts with these two (the warehouse writes file_id; the parser writes line).
FILE_ID = req("file_id", "INTEGER", "ops.ingested_files.file_id of the file the row came from")
LINE = req("line", "BIGINT", "1-based line of the record in its file (record number for JSON documents)",
           between("line", 1, None, "lines are 1-based"))


@dataclass(frozen=True)
class Table:
    name: str  # 'stg.requests'
    doc: str  # what a row is (its grain)
    columns: tuple[Column, ...]  # after file_id and line
    # Natural key for de-duplication against rows already loaded: a row whose key and values match
    # a loaded row is a duplicate; same key, other values is quarantined as 'conflicting_duplicate'.
    # None: no key (catalog snapshots; the newest file wins).
    key: tuple[str, ...] | None = None
    # (start column, end column or None; end exclusive): the UTC days a row touches. None: the
    # table is not day-bound (catalog, price sheets).
    day: tuple[str, str | None] | None = None
    rules: tuple[Rule, ...] = ()  # rules over several columns
    # Columns computed in DuckDB before validation: name -> SQL expression over the table.
    derived: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.all_columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: a column is declared twice")
        known = set(names) | set(self.derived)
        for cols in (self.key or (), self.day or ()):
            missing = [c for c in cols if c is not None and c not in known]
            if missing:
                raise ValueError(f"{self.name}: key/day names undeclared column(s) {missing}")
        for r in self.rules + tuple(r for c in self.columns for r in c.rules):
            if not set(r.columns) <= known:
                raise ValueError(f"{self.name}: rule {r.label} names undeclared column(s)")

    @property
    def all_columns(self) -> tuple[Column, ...]:
        return (FILE_ID, LINE, *self.columns)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.all_columns]

    def column(self, name: str) -> Column:
        for c in self.all_columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def arrow_schema(self) -> pa.Schema:
        """What a parser returns for this table: ``line`` and the columns, in table order."""
        return pa.schema([pa.field(c.name, c.arrow) for c in self.all_columns if c.name != "file_id"])

    def expectations(self) -> tuple[Rule, ...]:
        """The suite, before run-relative bounds are resolved: NOT NULL columns, then column rules, then table rules."""
        nn = tuple(not_null(c.name) for c in self.columns if not c.nullable)
        return nn + tuple(r for c in self.all_columns for r in c.rules) + self.rules

    def create_sql(self) -> str:
        """``CREATE TABLE`` for this table, for a migration that adds a new staging table."""
        width = max(len(c.name) for c in self.all_columns)
        lines = []
        for i, c in enumerate(self.all_columns):
            comma = "," if i < len(self.all_columns) - 1 else ""
            text = f"    {c.name.ljust(width)} {c.type}{'' if c.nullable else ' NOT NULL'}{comma}"
            lines.append(f"{text}  -- {c.doc}" if c.doc else text)
        head = f"-- {self.doc}\n" if self.doc else ""
        return f"{head}CREATE TABLE IF NOT EXISTS {self.name} (\n" + "\n".join(lines) + "\n);\n"

    def add_column_sql(self, name: str) -> str:
        """``ALTER TABLE ... ADD COLUMN`` for the migration that adds a column (declare it at the end of
        its table: DuckDB appends it there). A column added to an existing table is nullable: rows
        loaded before it have no value."""
        c = self.column(name)
        if not c.nullable:
            raise ValueError(f"{self.name}.{name}: a column added to an existing table must be nullable")
        return f"ALTER TABLE {self.name} ADD COLUMN IF NOT EXISTS {c.name} {c.type};  -- {c.doc}\n"


# ------------------------------------------------------------------------------------------------
# The declarations

_TIME_AHEAD = "effective between 2015 and a year after the run"
_BUCKET = (a_at_least_b("bucket_end", "bucket_start", "a bucket ends after it starts", strict=True),)


def _fx_rules(currency: str) -> tuple[Rule, ...]:
    """Money kept in the billed currency and converted with fx_usd_per_unit: check the conversion."""
    return (
        matches(currency, r"^[A-Z]{3}$", "an ISO 4217 code, upper case"),
        between("fx_usd_per_unit", 0, None, "an FX rate is positive", strict_min=True),
        in_set("fx_usd_per_unit", [1.0], "USD converts to USD at 1", where=((currency, "==", "USD"),)),
    )


def _fx_error(amount: str) -> tuple[Rule, dict[str, str]]:
    return (between("fx_error_usd", 0, 1e-6, "amount_usd = amount x fx_usd_per_unit (currency = USD after FX)"),
            {"fx_error_usd": f"abs(CAST({amount}_usd AS DOUBLE) - CAST({amount} AS DOUBLE) * CAST(fx_usd_per_unit AS DOUBLE))"})


_TOKENS = "count of tokens"
# issue 44: the non-text parts of a call's token buckets (stg.requests, core.calls, core.call_costs)
MODALITY_TOKEN_COLUMNS = (
    ("audio_input_tokens", "of uncached_input_tokens, audio tokens"),
    ("image_input_tokens", "of uncached_input_tokens, image tokens"),
    ("video_input_tokens", "of uncached_input_tokens, video tokens"),
    ("cached_audio_input_tokens", "of cached_input_tokens, audio tokens"),
    ("audio_output_tokens", "of output_tokens, audio tokens"),
    ("image_output_tokens", "of output_tokens, image tokens"),
    ("video_output_tokens", "of output_tokens, video tokens"),
)

REQUESTS = Table(
    "stg.requests",
    "Per-request telemetry split into non-overlapping token buckets (prompt: uncached + cached + "
    "cache_write; output side: thinking + output). grain: one row per model call (request_id).",
    (
        req("ts", "TIMESTAMP", "when the call was made, naive UTC", in_time("ts")),
        req("request_id", "VARCHAR", "the provider's or proxy's id of the call",
            unique("request_id", "one row per call (ingest dedupes by request_id)")),
        req("model", "VARCHAR", "model name as reported"),
        col("provider", "VARCHAR", "API provider, lower case; NULL for self-hosted"),
        col("node_id", "VARCHAR", "self-hosted node (nodes.csv); NULL for API calls"),
        req("task_id", "VARCHAR", "the task the call belongs to; defaults to request_id"),
        col("task_type", "VARCHAR", "task type as reported"),
        col("team", "VARCHAR", "team as reported"),
        col("latency_ms", "DOUBLE", "end-to-end latency in milliseconds",
            between("latency_ms", 0, None, "latency is a duration")),
        col("ttft_ms", "DOUBLE", "time to first token in milliseconds",
            between("ttft_ms", 0, None, "time to first token is a duration")),
        req("usage_shape", "VARCHAR", f"how usage was reported: {', '.join(USAGE_SHAPES)}",
            in_set("usage_shape", USAGE_SHAPES,
                   "a known usage shape (litellm: LiteLLM spend logs; otel_genai: OpenTelemetry GenAI spans)")),
        req("uncached_input_tokens", "BIGINT", f"prompt tokens neither read from nor written to the cache; {_TOKENS}",
            tokens_per_call("uncached_input_tokens")),
        req("cached_input_tokens", "BIGINT", f"prompt tokens read from the prompt cache; {_TOKENS}",
            tokens_per_call("cached_input_tokens")),
        req("cache_write_tokens", "BIGINT", f"prompt tokens written to the prompt cache; {_TOKENS}",
            tokens_per_call("cache_write_tokens")),
        req("thinking_tokens", "BIGINT", f"reasoning tokens (part of the completion); {_TOKENS}",
            tokens_per_call("thinking_tokens")),
        req("output_tokens", "BIGINT", f"visible output tokens only; {_TOKENS}", tokens_per_call("output_tokens")),
        # pricing modifiers (migration 100)
        col("service_tier", "VARCHAR", "processing tier the provider reports (flex, priority, scale, batch); NULL = standard",
            in_set("service_tier", SERVICE_TIERS, "a known service tier (the parser quarantines others)")),
        col("is_batch", "BOOLEAN", "made through a batch API; NULL = false"),
        col("cache_write_1h_tokens", "BIGINT", f"of cache_write_tokens, those written with a 1-hour TTL; NULL = 0; {_TOKENS}",
            tokens_per_call("cache_write_1h_tokens", "a non-negative count")),
        col("processing_region", "VARCHAR", "lower-case region the call was processed in, e.g. 'us', 'eu'; NULL = not reported"),
        col("web_search_requests", "BIGINT", "web searches billed per query; NULL = 0; count",
            between("web_search_requests", 0, None, "a non-negative count of web-search queries")),
        col("web_search_context_size", "VARCHAR", "OpenAI web-search context size (low, medium, high); NULL = medium",
            in_set("web_search_context_size", WEB_SEARCH_CONTEXT_SIZES, "OpenAI's search context sizes")),
        # issue 24 (migration 150)
        col("billing", "VARCHAR", "how the call is paid when the provider reports it: 'provisioned' "
            "(Gemini / Vertex AI usageMetadata.trafficType PROVISIONED_THROUGHPUT: paid by the reservation, "
            "not per token); NULL = on demand or not reported",
            in_set("billing", BILLINGS, "a known way to pay for a call")),
        # issue 41 (migration 250): who made the call. NULL = not reported. A value that looks like
        # a secret API key is never stored: the parser quarantines the call (SECRET_KEY_RULE).
        col("api_key", "VARCHAR", "the API key's id, hash or alias (LiteLLM user_api_key_hash / alias, "
            "metadata.api_key_id) -- never the secret itself"),
        col("user_id", "VARCHAR", "the caller's user (OpenAI `user`, Anthropic metadata.user_id, LiteLLM user)"),
        col("end_user_id", "VARCHAR", "the caller's own customer (LiteLLM end_user, metadata.end_user_id)"),
        col("project_id", "VARCHAR", "provider project (OpenAI project) or metadata.project_id"),
        col("workspace_id", "VARCHAR", "provider workspace (Anthropic workspace) or metadata.workspace_id"),
        col("session_id", "VARCHAR", "the conversation: gen_ai.conversation.id, LiteLLM session_id, metadata.session_id"),
        col("trace_id", "VARCHAR", "OpenTelemetry trace id (32 hex digits) or metadata.trace_id"),
        col("span_id", "VARCHAR", "OpenTelemetry span id of the model call (16 hex digits)"),
        col("parent_span_id", "VARCHAR", "the span the call's span is a child of"),
        col("agent_name", "VARCHAR", "gen_ai.agent.name of the nearest invoke_agent ancestor, or metadata.agent_name"),
        col("tags", "VARCHAR", "tags / labels as a JSON object text {key: value} (metadata.tags, LiteLLM request_tags)"),
        col("agent_span_id", "VARCHAR", "OTel: the span id of the call's nearest invoke_agent ancestor (stg.agent_spans)"),
        # issue 44 (migration 300): usage by modality -- parts of the buckets above, priced at their
        # own rates (never at the text rate); NULL = 0 (a call logged before these columns existed
        # and the same call re-exported now are one row)
        *[col(c, "BIGINT", f"{doc}; NULL = 0; {_TOKENS}", tokens_per_call(c, "a non-negative count"))
          for c, doc in MODALITY_TOKEN_COLUMNS],
        col("output_images", "BIGINT", "images the call generated (OpenAI Images data[], Gemini / Imagen "
            "generated images); NULL = 0; count", between("output_images", 0, None, "a non-negative count of images")),
        col("output_video_seconds", "DECIMAL(18,3)", "seconds of video the call generated (OpenAI Sora `seconds`, "
            "Veo durationSeconds); NULL = 0", between("output_video_seconds", 0, None, "a non-negative duration")),
        col("image_size", "VARCHAR", "size of the generated images as WIDTHxHEIGHT, e.g. '1024x1024'; NULL = not reported"),
        col("image_quality", "VARCHAR", "quality of the generated images, lower case ('low', 'medium', 'high', "
            "'standard', 'hd'); NULL = not reported"),
        col("video_resolution", "VARCHAR", "resolution of the generated video, e.g. '720p', '1080p' "
            "(the shorter side of its size); NULL = not reported"),
    ),
    key=("request_id",),
    day=("ts", None),
    rules=(
        a_at_least_b("completion_tokens", "thinking_tokens",
                     "thinking is part of the completion (completion = thinking + visible output)"),
        a_at_least_b("cache_write_tokens", "cache_write_1h_tokens", "1-hour cache writes are part of the cache writes"),
    ),
    derived={"completion_tokens": "thinking_tokens + output_tokens"},
)

REPORTED_COSTS = Table(
    "stg.reported_costs",
    "What a proxy or gateway itself charged for a call, loaded with its call. grain: one row per request_id.",
    (
        req("request_id", "VARCHAR", "the call (stg.requests.request_id)",
            unique("request_id", "one reported cost per call (loaded with its call)")),
        req("reporter", "VARCHAR", "who computed it: 'litellm'", in_set("reporter", REPORTERS, "a known reporter")),
        req("reported_cost_usd", "DECIMAL(38,12)", "USD, as the reporter stored it (LiteLLM: spend)",
            between("reported_cost_usd", 0, None, "a cost is not negative (the parser quarantines others)")),
    ),
    key=("request_id",),  # loaded only as a side table of stg.requests: dedupes with its call
)

_PRICE = "DECIMAL(18,9)"
MODALITY_PRICE_COLUMNS = (
    ("audio_input_usd_per_mtok", "USD per 1,000,000 audio input tokens"),
    ("cached_audio_input_usd_per_mtok", "USD per 1,000,000 cached audio input tokens"),
    ("image_input_usd_per_mtok", "USD per 1,000,000 image input tokens"),
    ("video_input_usd_per_mtok", "USD per 1,000,000 video input tokens"),
    ("audio_output_usd_per_mtok", "USD per 1,000,000 audio output tokens"),
    ("image_output_usd_per_mtok", "USD per 1,000,000 image output tokens"),
    ("video_output_usd_per_mtok", "USD per 1,000,000 video output tokens"),
)
LLM_PRICES = Table(
    "stg.llm_prices",
    "Price sheets as landed (history is built in core). grain: one row per (provider, model, price_kind) per sheet.",
    (
        req("provider", "VARCHAR", "lower case, e.g. 'openai', 'anthropic', 'deepseek'"),
        req("model", "VARCHAR", "as the sheet names it, e.g. 'o3', 'deepseek/deepseek-reasoner'"),
        req("price_kind", "VARCHAR", "'standard', 'batch', 'priority', 'flex', 'above_200k_tokens', ..."),
        req("effective_from", "DATE", "first UTC day the price applies", in_time("effective_from", NEXT_YEAR, _TIME_AHEAD)),
        col("input_usd_per_mtok", _PRICE, "USD per 1,000,000 input tokens", usd_per_mtok("input_usd_per_mtok")),
        col("cached_input_usd_per_mtok", _PRICE, "USD per 1,000,000 cached input tokens; NULL: the input price",
            usd_per_mtok("cached_input_usd_per_mtok")),
        col("cache_write_usd_per_mtok", _PRICE, "USD per 1,000,000 cache-write tokens; NULL: the input price",
            usd_per_mtok("cache_write_usd_per_mtok")),
        col("output_usd_per_mtok", _PRICE, "USD per 1,000,000 output tokens", usd_per_mtok("output_usd_per_mtok")),
        col("reasoning_usd_per_mtok", _PRICE, "USD per 1,000,000 thinking tokens; NULL: the output price",
            usd_per_mtok("reasoning_usd_per_mtok")),
        req("currency", "VARCHAR", "'USD' (after FX)",
            in_set("currency", ["USD"], "prices are stored in USD (other currencies converted with FX at parse)")),
        col("supports_reasoning", "BOOLEAN", "the model can think"),
        req("source_format", "VARCHAR", "'litellm_json', 'openrouter_json', 'thinktax_csv'"),
        # pricing modifiers (migration 100)
        col("cache_write_1h_usd_per_mtok", _PRICE, "USD per 1,000,000 tokens written with a 1-hour TTL; NULL: 2 x the input price",
            usd_per_mtok("cache_write_1h_usd_per_mtok")),
        *[col(c, _PRICE, doc, between(c, 0, MAX_USD_PER_REQUEST, "a per-request fee in USD (a web search is $0.01-$0.05 per query)"))
          for c, doc in (("usd_per_request_fee", "USD per request; NULL: no fee"),
                         ("web_search_usd_per_query_low", "USD per web-search query, low context size"),
                         ("web_search_usd_per_query_high", "USD per web-search query, high context size"))],
        *[col(c, "DECIMAL(9,6)", doc, between(c, 1, MAX_UPLIFT, "a regional-processing multiplier (1.1 = +10%)"))
          for c, doc in (("regional_uplift_eu", "price multiplier for calls processed in the EU (1.1 = +10%)"),
                         ("regional_uplift_us", "price multiplier for calls processed in the US (1.1 = +10%)"))],
        # issue 44 (migration 300): prices by modality and unit; NULL = not given (the tokens or
        # units are then unpriced, never priced at the text rate)
        *[col(c, _PRICE, doc, usd_per_mtok(c)) for c, doc in MODALITY_PRICE_COLUMNS],
        col("usd_per_output_image", _PRICE, "USD per generated image (of this kind's size and quality, if any)",
            between("usd_per_output_image", 0, MAX_USD_PER_REQUEST, "a per-image price in USD")),
        col("usd_per_output_video_second", _PRICE, "USD per second of generated video (of this kind's resolution, if any)",
            between("usd_per_output_video_second", 0, MAX_USD_PER_REQUEST, "a per-second price in USD")),
    ),
    key=("provider", "model", "price_kind", "effective_from"),
)

GPU_PRICES = Table(
    "stg.gpu_prices",
    "GPU rental price sheets. grain: one row per (provider, gpu_type, gpus_per_node, pricing, region, instance_type) per sheet.",
    (
        req("provider", "VARCHAR", "lower-case cloud, e.g. 'nebius', 'gcp', 'lambda'"),
        req("gpu_type", "VARCHAR", "as the sheet names it, e.g. 'H100', 'A100-80GB'"),
        col("gpus_per_node", "INTEGER", "GPUs in the instance",
            between("gpus_per_node", 1, MAX_GPUS_PER_NODE, f"a node has 1 to {MAX_GPUS_PER_NODE} GPUs")),
        req("usd_per_gpu_hour", "DECIMAL(18,6)", "USD per GPU-hour", usd_per_gpu_hour("usd_per_gpu_hour")),
        req("pricing", "VARCHAR", f"{', '.join(GPU_PRICINGS)}", in_set("pricing", GPU_PRICINGS, "a known pricing model")),
        col("region", "VARCHAR", "cloud region"),
        col("instance_type", "VARCHAR", "NULL for attachment-only prices (GCP accelerators)"),
        req("effective_from", "DATE", "first UTC day the price applies", in_time("effective_from", NEXT_YEAR, _TIME_AHEAD)),
        req("source_format", "VARCHAR", "'skypilot_csv', 'thinktax_gpu_csv'"),
    ),
    key=("provider", "gpu_type", "gpus_per_node", "pricing", "region", "instance_type", "effective_from"),
)

FX_RATES = Table(
    "stg.fx_rates",
    "Currency rates: USD per unit of a currency, from a date. grain: one row per (currency, effective_from).",
    (
        req("currency", "VARCHAR", "ISO 4217, upper case, e.g. 'EUR'", matches("currency", r"^[A-Z]{3}$", "an ISO 4217 code, upper case")),
        req("usd_per_unit", "DECIMAL(18,9)", "USD for one unit of the currency",
            between("usd_per_unit", 0, None, "an FX rate is positive", strict_min=True)),
        req("effective_from", "DATE", "first UTC day the rate applies"),
    ),
    key=("currency", "effective_from"),
)

_GPUS = f"a node has 1 to {MAX_GPUS_PER_NODE} GPUs"
MODELS = Table(
    "stg.models",
    "Catalog snapshot (catalog/models.csv); the newest file is the catalog in force. grain: one row per model.",
    (
        req("model", "VARCHAR", "model name"),
        col("family", "VARCHAR", "model family"),
        col("reasoning", "BOOLEAN", "a reasoning (thinking) model"),
        col("params_total_b", "DOUBLE", "billions of parameters",
            between("params_total_b", 0, 10_000, "parameters in billions (0 to 10T)", strict_min=True)),
        col("params_active_b", "DOUBLE", "billions of parameters active per token (MoE)"),
        col("config_json", "VARCHAR", "path of the Hugging Face config.json, relative to catalog/"),
        col("weights_gb_fp8", "DOUBLE", "weights in GB (10^9 bytes) at fp8",
            non_negative("weights_gb_fp8", "a size cannot be negative")),
        col("kv_bytes_per_token_bf16", "BIGINT", "KV-cache bytes per token at bf16, for models without a config",
            non_negative("kv_bytes_per_token_bf16", "a size cannot be negative")),
    ),
    rules=(a_at_least_b("params_total_b", "params_active_b", "active parameters are part of the total (MoE)"),),
)

MODEL_CONFIGS = Table(
    "stg.model_configs",
    "Hugging Face config.json files of the catalog. grain: one row per file.",
    (
        req("path", "VARCHAR", "path relative to catalog/, as models.csv names it"),
        req("config_json", "VARCHAR", "the Hugging Face config.json text"),
    ),
)

NODES = Table(
    "stg.nodes",
    "Catalog snapshot (catalog/nodes.csv): self-hosted nodes. grain: one row per node.",
    (
        req("node_id", "VARCHAR", "node id, as telemetry names it"),
        col("provider", "VARCHAR", "lower-case cloud"),
        req("gpu_type", "VARCHAR", "GPU type, e.g. 'H100'"),
        req("gpus", "INTEGER", "GPUs in the node", between("gpus", 1, MAX_GPUS_PER_NODE, _GPUS)),
        col("model", "VARCHAR", "model served"),
        col("precision", "VARCHAR", "lower case, e.g. 'fp8', 'bf16'"),
        col("usd_per_gpu_hour", "DECIMAL(18,6)", "USD per GPU-hour; NULL: take the GPU price sheet in force",
            usd_per_gpu_hour("usd_per_gpu_hour")),
        req("active_from", "TIMESTAMP", "naive UTC",
            in_time("active_from", NEXT_YEAR, "active from a date between 2015 and a year after the run")),
        col("active_to", "TIMESTAMP", "exclusive, naive UTC; NULL: until the end of the latest day with data"),
        col("cloud_resource_id", "VARCHAR", "the node's resource id on the cloud invoice (AWS instance id 'i-...', "
                                            "Azure VM ResourceId, GCP resource name), matched case-insensitively; "
                                            "its invoice lines price its hours (NULL: the catalog price)"),
    ),
    rules=(a_at_least_b("active_to", "active_from", "active_to (exclusive) is after active_from", strict=True),),
)

DEPLOYMENTS = Table(
    "stg.deployments",
    "Catalog snapshot (catalog/deployments.csv): candidate self-hosted deployments. grain: one row per deployment.",
    (
        req("deployment", "VARCHAR", "deployment name"),
        req("model", "VARCHAR", "model served"),
        col("provider", "VARCHAR", "lower-case cloud"),
        req("gpu_type", "VARCHAR", "GPU type, e.g. 'H100'"),
        req("gpus", "INTEGER", "GPUs used",
            between("gpus", 1, MAX_GPUS_PER_NODE, f"a deployment uses 1 to {MAX_GPUS_PER_NODE} GPUs")),
        col("precision", "VARCHAR", "lower case, e.g. 'fp8'"),
        col("gpu_mem_gb", "DOUBLE", "per GPU, GB (10^9 bytes); NULL: from the GPU spec table",
            between("gpu_mem_gb", 1, 1000, "GPU memory in GB (10^9 bytes) per GPU")),
        col("calls_per_minute", "DOUBLE", "throughput in calls per minute; NULL: estimated (models/throughput)",
            between("calls_per_minute", 0, None, "a throughput cannot be negative")),
        col("usd_per_gpu_hour", "DECIMAL(18,6)", "USD per GPU-hour; NULL: newest on-demand GPU sheet price",
            usd_per_gpu_hour("usd_per_gpu_hour")),
    ),
)

SUBSTITUTIONS = Table(
    "stg.substitutions",
    "Catalog snapshot (catalog/substitutions.csv): move from_model's traffic to a self-hosted to_model. grain: one row per pair.",
    (
        req("from_model", "VARCHAR", "the API model whose observed traffic moves"),
        req("to_model", "VARCHAR", "the self-hosted model it moves to"),
        req("thinking_ratio", "DOUBLE", "to_model thinking tokens per from_model thinking token",
            between("thinking_ratio", 0, 100, "to_model thinks 0 to 100 times as many tokens as from_model")),
        req("output_ratio", "DOUBLE", "to_model visible output tokens per from_model output token",
            between("output_ratio", 0, 100, "to_model answers with 0 to 100 times as many tokens as from_model")),
        col("note", "VARCHAR", "free text"),
    ),
)

ENDPOINTS = Table(
    "stg.endpoints",
    "Catalog snapshot (catalog/endpoints.csv): what a log names instead of a model (a Bedrock "
    "inference-profile / provisioned-model ARN, an Azure deployment, a Vertex AI endpoint, a proxy "
    "alias) -> the model and the price-sheet entry it is billed at. grain: one row per (provider, endpoint).",
    (
        req("provider", "VARCHAR", "the provider as logged, lower case (aliases such as aws.bedrock are matched "
            "by their canonical name: core.provider_key)"),
        req("endpoint", "VARCHAR", "exactly what the log's model field holds (ARN, deployment name, endpoint id, alias)"),
        req("model", "VARCHAR", "the model served, as the price sheet names it (e.g. "
            "anthropic.claude-sonnet-4-5-20250929-v1:0, gpt-5-2025-08-07, gemini-2.5-pro)"),
        col("sheet_provider", "VARCHAR", "the price sheet provider to price it from (e.g. bedrock_converse, azure); "
            "NULL = any of the provider's sheet entries"),
        col("deployment_type", "VARCHAR", "lower case: global, data_zone_eu, data_zone_us, regional (Azure); "
            "a Bedrock cross-region profile prefix (us, eu, apac, jp, au, global); NULL = global / not said"),
        col("region", "VARCHAR", "the cloud region, lower case (e.g. us-east-1, swedencentral)"),
        req("billing", "VARCHAR", "on_demand (per token, the default) or provisioned (paid by a reservation: "
            "cost 0 per token, counted in marts.provisioned_usage)",
            in_set("billing", BILLINGS, "a known way to pay for a call")),
    ),
)

BUDGETS = Table(
    "stg.budgets",
    "Catalog snapshot (catalog/budgets.csv): a team's monthly budget. grain: one row per team.",
    (
        req("team", "VARCHAR", "team"),
        req("monthly_usd", "DECIMAL(18,6)", "USD per calendar month",
            between("monthly_usd", 0, None, "a budget cannot be negative")),
        req("soft_pct", "DOUBLE", "percent of monthly_usd at which budget_soft fires (default 80)",
            between("soft_pct", 0, 100, "the soft limit is a percent of the budget")),
    ),
)

# The scopes of marts.spend_anomalies (issue 42), declared ONCE, here at the lowest layer because the
# feedback file below is checked against them: scope name -> the core.call_costs column holding its
# value. A new per-call attribute is one line (warehouse/anomalies.py takes its series, root causes,
# the Spark hand-over and the [anomaly] alert_scopes check from this).
ANOMALY_SCOPES: dict[str, str] = {
    "team": "team",
    "model": "model",
    "task_type": "task_type",
    # issue 41's attribution (core.call_costs: the cost center of catalog/cost_centers.csv, the API key
    # id / hash / alias and the user the call reports)
    "cost_center": "cost_center",
    "api_key": "api_key",
    "user": "user_id",
}

ANOMALY_FEEDBACK = Table(
    "stg.anomaly_feedback",
    "Catalog snapshot (catalog/anomaly_feedback.csv, issue 42): a known change of a series of "
    "marts.spend_anomalies, so its episode raises no spend_anomaly alert. grain: one row per "
    "(scope, scope_value, from, to).",
    (
        req("scope", "VARCHAR", "the mart's scope: all, or one of ANOMALY_SCOPES (team, model, task_type, cost_center, api_key, user)",
            in_set("scope", ("all", *ANOMALY_SCOPES), "a scope of marts.spend_anomalies")),
        req("scope_value", "VARCHAR", "the team, model, task type, cost center, API key or user ('*' for scope all)"),
        req("from_day", "DATE", "the CSV's `from`: first UTC day covered"),
        req("to_day", "DATE", "the CSV's `to`: last UTC day covered (inclusive)"),
        req("label", "VARCHAR", "planned (an expected change: a launch, a backfill) or not_anomaly (a false alarm)",
            in_set("label", ("planned", "not_anomaly"), "a known feedback label")),
    ),
)

OPENAI_USAGE = Table(
    "stg.openai_usage",
    "OpenAI Usage API, /v1/organization/usage/completions. grain: one row per (bucket, group-by values) result.",
    (
        req("bucket_start", "TIMESTAMP", "naive UTC, inclusive", in_time("bucket_start")),
        req("bucket_end", "TIMESTAMP", "naive UTC, exclusive"),
        col("project_id", "VARCHAR", "group-by value; NULL: not grouped by it"),
        col("user_id", "VARCHAR", "group-by value"),
        col("api_key_id", "VARCHAR", "group-by value"),
        col("model", "VARCHAR", "group-by value"),
        col("batch", "BOOLEAN", "group-by value"),
        col("service_tier", "VARCHAR", "group-by value"),
        col("api_source", "VARCHAR", "group-by value"),
        req("input_tokens", "BIGINT", f"includes input_cached_tokens; {_TOKENS}", non_negative("input_tokens")),
        req("input_cached_tokens", "BIGINT", _TOKENS, non_negative("input_cached_tokens")),
        col("input_audio_tokens", "BIGINT", f"NULL: not reported; {_TOKENS}"),
        req("output_tokens", "BIGINT", f"includes reasoning tokens; {_TOKENS}", non_negative("output_tokens")),
        col("output_audio_tokens", "BIGINT", _TOKENS),
        req("num_model_requests", "BIGINT", "count of requests", non_negative("num_model_requests")),
    ),
    key=("bucket_start", "bucket_end", "project_id", "user_id", "api_key_id", "model", "batch", "service_tier",
         "api_source"),
    day=("bucket_start", "bucket_end"),
    rules=(a_at_least_b("input_tokens", "input_cached_tokens", "cached input is part of the input"), *_BUCKET),
)

_fx_openai, _fx_openai_derived = _fx_error("amount")
OPENAI_COSTS = Table(
    "stg.openai_costs",
    "OpenAI Costs API, /v1/organization/costs. grain: one row per (bucket, project_id, line_item) result.",
    (
        req("bucket_start", "TIMESTAMP", "naive UTC, inclusive", in_time("bucket_start")),
        req("bucket_end", "TIMESTAMP", "naive UTC, exclusive"),
        col("project_id", "VARCHAR", "group-by value"),
        col("line_item", "VARCHAR", "e.g. 'o3, input'"),
        req("amount", "DECIMAL(38,12)", "in `currency`, major units"),
        req("currency", "VARCHAR", "upper-case ISO 4217, e.g. 'USD'"),
        req("fx_usd_per_unit", "DECIMAL(18,9)", "USD per unit of currency; 1 for USD"),
        req("amount_usd", "DECIMAL(38,12)", "USD"),
    ),
    key=("bucket_start", "bucket_end", "project_id", "line_item"),
    day=("bucket_start", "bucket_end"),
    rules=(*_fx_rules("currency"), _fx_openai, *_BUCKET),
    derived=_fx_openai_derived,
)

_ANTHROPIC_USAGE_GROUPS = ("workspace_id", "api_key_id", "model", "service_tier", "context_window", "inference_geo",
                           "account_id", "service_account_id", "speed")
ANTHROPIC_USAGE = Table(
    "stg.anthropic_usage",
    "Anthropic Admin API, /v1/organizations/usage_report/messages. grain: one row per (bucket, group-by values) result.",
    (
        req("bucket_start", "TIMESTAMP", "starting_at, naive UTC", in_time("bucket_start")),
        req("bucket_end", "TIMESTAMP", "ending_at, naive UTC, exclusive"),
        col("workspace_id", "VARCHAR", "group-by value"),
        col("api_key_id", "VARCHAR", "group-by value"),
        col("model", "VARCHAR", "group-by value"),
        col("service_tier", "VARCHAR", "'standard', 'batch', 'priority', ..."),
        col("context_window", "VARCHAR", "'0-200k', '200k-1M'"),
        col("inference_geo", "VARCHAR", "group-by value"),
        col("account_id", "VARCHAR", "group-by value"),
        col("service_account_id", "VARCHAR", "group-by value"),
        col("speed", "VARCHAR", "group-by value"),
        req("uncached_input_tokens", "BIGINT", f"excludes cache reads and writes; {_TOKENS}",
            non_negative("uncached_input_tokens")),
        req("cache_read_input_tokens", "BIGINT", _TOKENS, non_negative("cache_read_input_tokens")),
        req("cache_creation_5m_tokens", "BIGINT", f"cache_creation.ephemeral_5m_input_tokens; {_TOKENS}",
            non_negative("cache_creation_5m_tokens")),
        req("cache_creation_1h_tokens", "BIGINT", f"cache_creation.ephemeral_1h_input_tokens; {_TOKENS}",
            non_negative("cache_creation_1h_tokens")),
        req("output_tokens", "BIGINT", f"includes thinking; {_TOKENS}", non_negative("output_tokens")),
        req("web_search_requests", "BIGINT", "server_tool_use.web_search_requests; count",
            non_negative("web_search_requests")),
    ),
    key=("bucket_start", "bucket_end", *_ANTHROPIC_USAGE_GROUPS),
    day=("bucket_start", "bucket_end"),
    rules=_BUCKET,
)

_ANTHROPIC_COSTS_GROUPS = ("workspace_id", "description", "cost_type", "token_type", "model", "service_tier",
                           "context_window", "inference_geo")
_fx_anthropic, _fx_anthropic_derived = _fx_error("amount")
ANTHROPIC_COSTS = Table(
    "stg.anthropic_costs",
    "Anthropic Admin API, /v1/organizations/cost_report. grain: one row per (bucket, group-by values) result.",
    (
        req("bucket_start", "TIMESTAMP", "naive UTC, inclusive", in_time("bucket_start")),
        req("bucket_end", "TIMESTAMP", "naive UTC, exclusive"),
        col("workspace_id", "VARCHAR", "group-by value"),
        col("description", "VARCHAR", "group-by value"),
        col("cost_type", "VARCHAR", "'tokens', 'web_search', 'code_execution', ..."),
        col("token_type", "VARCHAR", "'uncached_input_tokens', 'output_tokens', 'cache_read_input_tokens', ..."),
        col("model", "VARCHAR", "group-by value"),
        col("service_tier", "VARCHAR", "group-by value"),
        col("context_window", "VARCHAR", "group-by value"),
        col("inference_geo", "VARCHAR", "group-by value"),
        req("amount", "DECIMAL(38,12)", "in `currency`, major units (= cents / 100, exact)"),
        req("currency", "VARCHAR", "upper-case ISO 4217"),
        req("fx_usd_per_unit", "DECIMAL(18,9)", "USD per unit of currency; 1 for USD"),
        req("amount_usd", "DECIMAL(38,12)", "USD"),
    ),
    key=("bucket_start", "bucket_end", *_ANTHROPIC_COSTS_GROUPS),
    day=("bucket_start", "bucket_end"),
    rules=(*_fx_rules("currency"), _fx_anthropic, *_BUCKET),
    derived=_fx_anthropic_derived,
)

_MONEY10 = "DECIMAL(38,10)"
_FOCUS_KEY = (
    "billing_account_id", "sub_account_id", "billing_period_start", "charge_period_start", "charge_period_end",
    "charge_category", "charge_class", "charge_frequency", "charge_description", "pricing_category", "provider_name",
    "service_name", "sku_id", "sku_price_id", "sku_meter", "resource_id", "region_id", "availability_zone",
    "commitment_discount_id", "commitment_discount_status", "capacity_reservation_id", "pricing_unit", "consumed_unit",
)
FOCUS_COSTS = Table(
    "stg.focus_costs",
    "FOCUS 1.x cost and usage exports (CSV); money converted to USD. grain: one row per FOCUS line.",
    (
        col("billing_account_id", "VARCHAR", "BillingAccountId"),
        col("billing_account_name", "VARCHAR", "BillingAccountName"),
        col("sub_account_id", "VARCHAR", "SubAccountId"),
        col("sub_account_name", "VARCHAR", "SubAccountName"),
        req("billing_currency", "VARCHAR", "as billed, upper-case ISO 4217"),
        req("fx_usd_per_unit", "DECIMAL(18,9)", "USD per unit of billing_currency; 1 for USD"),
        col("billing_period_start", "TIMESTAMP", "naive UTC"),
        col("billing_period_end", "TIMESTAMP", "naive UTC, exclusive"),
        req("charge_period_start", "TIMESTAMP", "naive UTC", in_time("charge_period_start")),
        req("charge_period_end", "TIMESTAMP", "naive UTC, exclusive"),
        col("charge_category", "VARCHAR", "'Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment' (ChargeType before 1.0)"),
        col("charge_class", "VARCHAR", "'Correction' or NULL"),
        col("charge_frequency", "VARCHAR", "ChargeFrequency"),
        col("charge_description", "VARCHAR", "ChargeDescription"),
        col("pricing_category", "VARCHAR", "PricingCategory"),
        req("billed_cost_usd", _MONEY10, "BilledCost in USD"),
        col("effective_cost_usd", _MONEY10, "EffectiveCost in USD"),
        col("list_cost_usd", _MONEY10, "ListCost in USD"),
        col("contracted_cost_usd", _MONEY10, "ContractedCost in USD"),
        col("list_unit_price_usd", _MONEY10, "ListUnitPrice in USD"),
        col("contracted_unit_price_usd", _MONEY10, "ContractedUnitPrice in USD"),
        col("pricing_quantity", _MONEY10, "in pricing_unit"),
        col("pricing_unit", "VARCHAR", "e.g. 'Hour', 'Token', '1M Tokens'"),
        col("consumed_quantity", _MONEY10, "in consumed_unit"),
        col("consumed_unit", "VARCHAR", "ConsumedUnit"),
        col("provider_name", "VARCHAR", "ProviderName (ServiceProviderName in 1.3)"),
        col("publisher_name", "VARCHAR", "PublisherName"),
        col("invoice_issuer_name", "VARCHAR", "InvoiceIssuerName"),
        col("invoice_id", "VARCHAR", "InvoiceId"),
        col("service_name", "VARCHAR", "ServiceName"),
        col("service_category", "VARCHAR", "ServiceCategory"),
        col("service_subcategory", "VARCHAR", "ServiceSubcategory"),
        col("sku_id", "VARCHAR", "SkuId"),
        col("sku_price_id", "VARCHAR", "SkuPriceId"),
        col("sku_meter", "VARCHAR", "SkuMeter"),
        col("resource_id", "VARCHAR", "ResourceId"),
        col("resource_name", "VARCHAR", "ResourceName"),
        col("resource_type", "VARCHAR", "ResourceType"),
        col("region_id", "VARCHAR", "RegionId"),
        col("region_name", "VARCHAR", "RegionName"),
        col("availability_zone", "VARCHAR", "AvailabilityZone"),
        col("commitment_discount_id", "VARCHAR", "CommitmentDiscountId"),
        col("commitment_discount_name", "VARCHAR", "CommitmentDiscountName"),
        col("commitment_discount_category", "VARCHAR", "CommitmentDiscountCategory"),
        col("commitment_discount_type", "VARCHAR", "CommitmentDiscountType"),
        col("commitment_discount_status", "VARCHAR", "'Used', 'Unused'"),
        col("commitment_discount_quantity", _MONEY10, "CommitmentDiscountQuantity"),
        col("commitment_discount_unit", "VARCHAR", "CommitmentDiscountUnit"),
        col("capacity_reservation_id", "VARCHAR", "CapacityReservationId"),
        col("capacity_reservation_status", "VARCHAR", "CapacityReservationStatus"),
        col("tags_json", "VARCHAR", "the Tags column (a JSON object), as given"),
        req("key_occurrence", "INTEGER", "1, 2, ... for lines of one file that share the other key columns"),
    ),
    key=(*_FOCUS_KEY, "key_occurrence"),
    day=("charge_period_start", "charge_period_end"),
    rules=(
        matches("billing_currency", r"^[A-Z]{3}$", "an ISO 4217 code, upper case"),
        between("fx_usd_per_unit", 0, None, "an FX rate is positive", strict_min=True),
        in_set("fx_usd_per_unit", [1.0], "USD converts to USD at 1", where=(("billing_currency", "==", "USD"),)),
        a_at_least_b("charge_period_end", "charge_period_start", "a charge period does not end before it starts"),
    ),
)

# AWS CUR 2.0, Azure cost details, GCP billing export: the AI lines of a cloud invoice (issue 25)
CLOUDS = ("aws", "azure", "gcp")
CHARGE_KINDS = ("usage", "commitment", "credit", "discount", "tax", "refund", "rounding", "fee", "other")
BUCKETS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "cache_storage", "provisioned",
           "instance_hours")
# bucket of the compute lines kept to price self-hosted nodes (EC2, Azure VM, Compute Engine; issue 25 item 4)
COMPUTE_BUCKET = "instance_hours"
_CLOUD_KEY = (
    "cloud", "account_id", "usage_start", "usage_end", "charge_type", "pricing_model", "service", "sku", "sku_id",
    "operation", "region", "resource_id",
)
CLOUD_BILL_LINES = Table(
    "stg.cloud_bill_lines",
    "AI lines of cloud invoices: AWS Data Exports CUR 2.0 (bills/aws/), Azure Cost Management cost details "
    "(bills/azure/), GCP Cloud Billing export (bills/gcp/), and the compute lines that can price a self-hosted node "
    "(EC2 instance hours, Azure VM, Compute Engine lines with a resource id: bucket 'instance_hours'); other lines "
    "are counted (ops.ingested_files.rows_skipped), not kept. grain: one row per invoice line.",
    (
        req("cloud", "VARCHAR", "'aws', 'azure' or 'gcp': the export it came from",
            in_set("cloud", CLOUDS, "a known cloud export")),
        req("provider", "VARCHAR", "canonical provider (core.provider_key): 'bedrock', 'azure', 'vertex_ai', 'gemini'"),
        col("billing_period", "DATE", "first day of the billing month (bill_billing_period_start_date, "
                                      "BillingPeriodStartDate, invoice.month), else the usage month"),
        col("invoice_id", "VARCHAR", "bill_invoice_id / InvoiceId / invoice.month"),
        col("account_id", "VARCHAR", "AWS usage account, Azure subscription, GCP project id"),
        req("usage_start", "TIMESTAMP", "naive UTC", in_time("usage_start")),
        req("usage_end", "TIMESTAMP", "naive UTC, exclusive (= usage_start + 1 day for Azure's daily Date)"),
        req("charge_type", "VARCHAR", "as written: line_item_line_item_type, ChargeType, cost_type"),
        req("charge_kind", "VARCHAR", f"normalised: {', '.join(CHARGE_KINDS)}",
            in_set("charge_kind", CHARGE_KINDS, "a known charge kind")),
        col("pricing_model", "VARCHAR", "Azure PricingModel (OnDemand, Reservation, ...); AWS pricing term"),
        req("service", "VARCHAR", "line_item_product_code, MeterCategory (ProductName when it is blank, as on an "
                                  "Azure purchase), service.description"),
        req("sku", "VARCHAR", "line_item_usage_type, MeterName, sku.description: what the rules read"),
        col("sku_id", "VARCHAR", "GCP sku.id, Azure MeterSubCategory / ProductName, AWS line_item_operation"),
        col("operation", "VARCHAR", "line_item_operation"),
        col("region", "VARCHAR", "product_region_code, ResourceLocation, location.region (lower case)"),
        col("resource_id", "VARCHAR", "line_item_resource_id, ResourceId"),
        col("principal", "VARCHAR", "line_item_iam_principal (CUR 2.0, when exported)"),
        col("tags_json", "VARCHAR", "resource_tags / Tags / labels as a JSON object"),
        col("quantity", "DECIMAL(38,10)", "as billed, in `unit`",
            between("quantity", 0, None, "a usage amount is not negative", where=(("charge_kind", "==", "usage"),))),
        col("unit", "VARCHAR", "pricing_unit, UnitOfMeasure, usage.unit, as written"),
        col("tokens", "DECIMAL(38,0)", "tokens the line bills: quantity x the unit (thousands, 1K, 1M, count); "
                                       "NULL when the line bills no tokens"),
        req("cost", "DECIMAL(38,10)", "line_item_unblended_cost, CostInBillingCurrency, cost: in `currency`, gross "
                                      "of credits and discounts"),
        req("currency", "VARCHAR", "upper-case ISO 4217"),
        req("fx_usd_per_unit", "DECIMAL(18,9)", "USD per unit of currency; 1 for USD"),
        req("cost_usd", "DECIMAL(38,10)", "cost in USD"),
        col("net_cost_usd", "DECIMAL(38,10)", "line_item_net_unblended_cost (AWS), cost + credits (GCP), in USD"),
        col("credits_usd", "DECIMAL(38,10)", "GCP: the line's credits (negative), in USD"),
        col("model", "VARCHAR", "the model family the rule read, as core.cloud_model_key spells it "
                                "('claude-sonnet-4-6', 'gpt-4o', 'gemini-2.5-pro'); NULL when unattributed"),
        col("bucket", "VARCHAR", f"token bucket: {', '.join(BUCKETS)} (instance_hours: a compute line, kept to price "
                                 "a node, not an AI line); NULL for credits, tax, unattributed",
            in_set("bucket", BUCKETS, "a known bucket")),
        col("tier", "VARCHAR", "standard, batch, priority, flex, provisioned"),
        col("deployment_type", "VARCHAR", "AWS: in_region, cross_region, cross_region_global; Azure: global, "
                                          "data_zone, regional; GCP: NULL"),
        col("long_context", "BOOLEAN", "the SKU is the long-context (>200K) price"),
        req("rule", "VARCHAR", "the rule that read the line (sources/bills_cloud.py RULES), or 'unattributed'"),
        col("unattributed_reason", "VARCHAR", "why no rule read an AI line (its money stays in the totals)"),
        col("team", "VARCHAR", "[cloud] team_tag of the line's tags / labels"),
        req("key_occurrence", "INTEGER", "1, 2, ... for lines of one file that share the other key columns"),
        col("cost_basis", "VARCHAR", "'actual' or 'amortized': the Azure dataset of a line whose amount depends on it "
                                     "(ChargeType Purchase / UnusedReservation / UnusedSavingsPlan, PricingModel "
                                     "Reservation / SavingsPlan); NULL for every other line (the same in both datasets)",
            in_set("cost_basis", ("actual", "amortized"), "a known cost basis")),
        col("reservation_id", "VARCHAR", "Azure ReservationId: the reservation the line's charge belongs to (a "
                                         "reserved PTU's purchase, its usage); NULL when the export names none"),
        col("amortized_cost_usd", "DECIMAL(38,10)", "AWS: the amortized cost of an hour a reserved instance or savings "
                                                   "plan covers (reservation_effective_cost on DiscountedUsage lines, "
                                                   "savings_plan_savings_plan_effective_cost on SavingsPlanCoveredUsage "
                                                   "lines), in USD; NULL on every other line"),
    ),
    key=(*_CLOUD_KEY, "cost_basis", "key_occurrence"),
    day=("usage_start", "usage_end"),
    rules=(*_fx_rules("currency"),
           a_at_least_b("usage_end", "usage_start", "a usage period does not end before it starts")),
)

CLOUD_PRINCIPALS = Table(
    "stg.cloud_principals",
    "Catalog snapshot (catalog/cloud_principals.csv): the team of a cloud principal (an AWS IAM role or user "
    "ARN as line_item_iam_principal writes it), for cloud invoice lines without a [cloud] team_tag. "
    "grain: one row per principal.",
    (
        req("principal", "VARCHAR", "as the invoice writes it, e.g. 'arn:aws:iam::111122223333:role/search-app'"),
        req("team", "VARCHAR", "team"),
    ),
)

COMMITMENTS = Table(
    "stg.commitments",
    "Catalog snapshot (catalog/commitments.csv): provisioned-throughput offers (Bedrock Provisioned Throughput "
    "model units, Azure PTU, Vertex AI provisioned throughput) priced per unit-hour, bought or not yet bought. "
    "grain: one row per offer (file line).",
    (
        req("provider", "VARCHAR", "the provider as written, lower case (normalised by core.provider_key in "
            "marts.commitments: aws.bedrock -> bedrock, azure_openai -> azure, vertex -> vertex_ai)"),
        req("model", "VARCHAR", "the model the units serve, as the price sheet or the invoice names it "
            "(marts.commitments keys it by core.cloud_model_key: 'claude-sonnet-4-5')"),
        req("units", "DECIMAL(18,6)", "model units / PTUs committed (> 0)",
            between("units", 0, None, "units are positive", strict_min=True)),
        req("usd_per_unit_hour", "DECIMAL(18,6)", "USD per unit per hour (> 0)",
            between("usd_per_unit_hour", 0, None, "a price per unit-hour is positive", strict_min=True)),
        col("commit_months", "INTEGER", "the term in months (0 or empty: hourly, no term)",
            between("commit_months", 0, 120, "a term of 0 to 120 months")),
        req("commit_start", "TIMESTAMP", "CSV column `start`: naive UTC, inclusive (a bare date: 00:00 UTC)"),
        req("commit_end", "TIMESTAMP", "CSV column `end`: naive UTC, exclusive; empty: start + commit_months months"),
        col("note", "VARCHAR", "free text"),
    ),
    rules=(a_at_least_b("commit_end", "commit_start", "a commitment ends after it starts", strict=True),),
)

METRIC_SAMPLES = Table(
    "stg.metric_samples",
    "Prometheus scrapes from vLLM, SGLang and the NVIDIA DCGM exporter, in long form. "
    "grain: one row per node x scrape time x exposed series (source_metric + labels).",
    (
        req("node_id", "VARCHAR", "file-name prefix before '__' (else a node/instance label)"),
        req("scrape_ts", "TIMESTAMP", "naive UTC: the sample's own timestamp, else the time in the file name",
            in_time("scrape_ts")),
        req("engine", "VARCHAR", f"{', '.join(METRIC_ENGINES[:-1])} (by name prefix) or 'other'",
            in_set("engine", METRIC_ENGINES, "a known exporter")),
        req("metric", "VARCHAR", "canonical name with its unit (e.g. 'prompt_tokens_total', 'kv_cache_usage' 0-1); "
                                 "= source_metric when not mapped"),
        req("mapped", "BOOLEAN", "metric is a canonical name"),
        req("source_metric", "VARCHAR", "sample name as exposed, e.g. 'vllm:gpu_cache_usage_perc'"),
        req("kind", "VARCHAR", "'counter', 'gauge', 'histogram_bucket', 'histogram_sum', ..."),
        req("labels", "VARCHAR", "all labels as a JSON object, keys sorted"),
        req("series", "VARCHAR", "labels identifying the series over time (DCGM: gpu/UUID/MIG ids only; others: = labels)"),
        col("gpu", "VARCHAR", "DCGM 'gpu' label (GPU index on the node)"),
        col("model_name", "VARCHAR", "vLLM/SGLang 'model_name' label (served model)"),
        req("value", "DOUBLE", "in the unit of `metric` (DCGM % are scaled to 0-1)",
            between("value", 0, 1, "a usage ratio is 0-1 (DCGM percentages scaled)",
                    where=(("metric", "in", ["kv_cache_usage", "gpu_util"]),)),
            between("value", 0, None, "a counter only counts up from 0",
                    where=(("kind", "==", "counter"), ("mapped", "==", True)))),
    ),
    key=("node_id", "scrape_ts", "source_metric", "labels"),
    day=("scrape_ts", None),
)

AGENT_SPANS = Table(
    "stg.agent_spans",
    "OpenTelemetry GenAI invoke_agent spans (telemetry/otel/), kept beside the model calls of their "
    "document line (a side table of stg.requests). grain: one row per agent span (trace_id, span_id) "
    "and file.",
    (
        req("trace_id", "VARCHAR", "traceId, lower-case hex"),
        req("span_id", "VARCHAR", "spanId of the invoke_agent span, lower-case hex"),
        col("parent_agent_span_id", "VARCHAR", "the nearest invoke_agent ancestor's span id; NULL for a top agent"),
        col("agent_name", "VARCHAR", "gen_ai.agent.name"),
        req("depth", "INTEGER", "1 for a top agent, 2 for its sub-agent, ..."),
        req("agent_path", "VARCHAR", "the span ids of its invoke_agent ancestors and itself, root first, '/'-separated"),
        col("started_at", "TIMESTAMP", "startTimeUnixNano, naive UTC"),
        col("ended_at", "TIMESTAMP", "endTimeUnixNano, naive UTC"),
    ),
)

# issue 41: what a cost-center rule may match (catalog/cost_centers.csv), besides tag:<key>
COST_CENTER_FIELDS = ("team", "api_key", "user", "end_user", "project", "workspace", "agent", "service", "principal")

COST_CENTERS = Table(
    "stg.cost_centers",
    "Catalog snapshot (catalog/cost_centers.csv): rules that put a call or a cloud bill line in a cost center; "
    "the first rule in file order that matches wins. grain: one row per rule (its line).",
    (
        req("cost_center", "VARCHAR", "the cost center the rule assigns"),
        req("field", "VARCHAR", f"what the rule matches: {', '.join(COST_CENTER_FIELDS)} or tag:<key>"),
        req("pattern", "VARCHAR", "a shell glob (* any text, ? one character, [abc] / [!abc] a set), case-sensitive"),
        req("pattern_regex", "VARCHAR", "the glob as an anchored regular expression (what both engines match with)"),
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in (
    REQUESTS, REPORTED_COSTS, LLM_PRICES, GPU_PRICES, FX_RATES, MODELS, MODEL_CONFIGS, NODES, DEPLOYMENTS,
    SUBSTITUTIONS, BUDGETS, ENDPOINTS, OPENAI_USAGE, OPENAI_COSTS, ANTHROPIC_USAGE, ANTHROPIC_COSTS, FOCUS_COSTS, METRIC_SAMPLES,
    CLOUD_BILL_LINES, CLOUD_PRINCIPALS, COMMITMENTS, ANOMALY_FEEDBACK, COST_CENTERS, AGENT_SPANS,
)}


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"{name} is not declared in sources/contract.py") from None


# ------------------------------------------------------------------------------------------------
# docs/staging.md


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown() -> str:
    """The text of docs/staging.md: every declared staging table, generated from this module."""
    out = [
        "# Staging tables (`stg.*`)",
        "",
        "<!-- Generated by `make docs` (python -m sources.contract docs/staging.md) from sources/contract.py. "
        "Do not edit by hand. -->",
        "",
        "What the parsers load, one table per landed format family. Each table is declared once in "
        "`sources/contract.py`; the parsers' Arrow schemas, the ingest's de-duplication key, the days a "
        "file touches and the Great Expectations suite (docs/data-quality.md) are derived from the "
        "declaration, and `tests/sources/test_contract.py` checks that the migrated DDL equals it.",
        "",
        "| table | key (de-duplication) | day column(s) |",
        "|---|---|---|",
    ]
    for t in TABLES.values():
        key = ", ".join(f"`{k}`" for k in t.key) if t.key else "none (a snapshot: the newest file wins)"
        day = "" if t.day is None else f"`{t.day[0]}`" + (f" .. `{t.day[1]}` (exclusive)" if t.day[1] else "")
        out.append(f"| [`{t.name}`](#{t.name.replace('.', '')}) | {key} | {day or 'not day-bound'} |")
    for t in TABLES.values():
        out += ["", f"## {t.name}", "", _md(t.doc), "", "| column | type | NOT NULL | meaning | checks |",
                "|---|---|---|---|---|"]
        for c in t.all_columns:
            checks = "; ".join(f"`{r.label}`" for r in c.rules)
            out.append(f"| `{c.name}` | {c.type} | {'' if c.nullable else 'yes'} | {_md(c.doc)} | {_md(checks)} |")
        if t.rules:
            out += ["", "Checks over several columns: " + "; ".join(f"`{r.label}` ({_md(r.why)})" for r in t.rules)
                    + (" — computed before validation: " + ", ".join(f"`{k} = {v}`" for k, v in t.derived.items())
                       if t.derived else "") + "."]
    out += ["", "`run+1d` / `run+366d`: a day / a year after the run started (telemetry and bills may not "
                "come from the future; price sheets and catalogs may announce ahead)."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    # python -m sources.contract docs/staging.md       the staging reference
    # python -m sources.contract --ddl stg.new_table    CREATE TABLE for a new table's migration
    # python -m sources.contract --ddl stg.t column     ALTER TABLE ... ADD COLUMN for a new column
    import sys
    from pathlib import Path

    args = sys.argv[1:]
    if args[:1] == ["--ddl"]:
        t = table(args[1])
        sys.stdout.write(t.add_column_sql(args[2]) if len(args) > 2 else t.create_sql())
    elif args:
        Path(args[0]).write_text(render_markdown(), encoding="utf-8")
    else:
        sys.stdout.write(render_markdown())
