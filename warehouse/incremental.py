"""Which days a run rebuilds: the incremental plan shared by every SQL table of one build.

A nightly run adds a day or two of telemetry to months of history. Rebuilding every per-call
table from all of staging makes the night grow with history; instead the SQL tables marked
``-- @kind: incremental_by_day`` (or ``_by_month``; warehouse/sqltable.py) replace only the rows of the days the run's new files
touched, and every other model is small enough to rebuild whole.

The plan (``plan``) is made once per build, after ingest, and stored in ``ops.build_scope`` so
that every asset of a Dagster run uses the same one. It says which models are rebuilt at all
(``Scope.tables``: a model none of whose inputs changed keeps its published table), which of
them are rebuilt whole, and which days the others replace:

* **full rebuild** (every model whole) when there is no earlier build state, when it is asked
  for (``thinktax run --full-rebuild``: the ingest step's run config), or when ``ops.settings``
  (thinktax.toml) changed.
* a model is **rebuilt whole** when its SQL changed since it was last built or its table is
  missing, or when it reads (directly or through other models) a staging table that is not
  day-bound and got new rows in this run (nodes.csv, the model catalog, model configs); and
  everything downstream of such a model.
* a **price sheet** (``stg.llm_prices``, ``stg.gpu_prices``) that got new rows is compared with
  the published price history: the model's version table is selected anew and diffed with the
  stored one; the earliest day on which a price in force differs (a new or changed version
  from its ``effective_from``; a version only cut short from its new ``effective_to``) starts
  the rebuild: every day of data from then on, and only the models that read prices. A sheet
  that changes no price (the same prices re-landed under a new date, as a nightly LiteLLM
  snapshot mostly is) rebuilds nothing. Currency rates (``stg.fx_rates``) are applied when a
  sheet or bill is ingested, so no model reads them: an FX file alone rebuilds nothing.
* otherwise the **days** = the days the run's new files touch (``ops.ingested_days``), the days
  a run was explicitly asked for (``thinktax run --days``, a backfill), and the days between
  the last day with calls and the new last day (nodes without an end date are paid up to the
  last day of data, so those idle days appear), closed over tasks: every day on which a task
  that has a call on one of these days has a call (repeated until nothing is added). With that
  closure a task never straddles the edge of the rebuilt days, so task-level rows
  (``marts.task_costs``, the team/task type a call inherits from its task) come out as in a
  full rebuild. The same closure runs over traces and sessions (issue 41: ``marts.agent_runs``,
  ``marts.run_costs``, ``marts.session_costs``, keyed by the day of their first call or span), a
  trace's invoke_agent spans counting as its calls; the days the new files' spans start on are
  among the run's days. Only models downstream of the changed day-bound tables replace them.
* a run with no new rows and no requested days rebuilds nothing.

SQL tables name the days through three macros, replaced by literals when a model is built
(``render``); in a full rebuild they are ``TRUE``:

* ``core.in_build_days(expr)``   -- ``expr`` is one of the days this model rewrites;
* ``core.in_build_context(expr)`` -- ``expr`` is within ``halo`` days of one of them (models
  whose rows depend on neighbouring days, e.g. call intervals that cross midnight);
* ``core.in_build_months(expr)`` -- ``expr`` (a month's first day) is a month this model rewrites.

The macros also exist in the database (migration 095) and are TRUE there, so each model's SQL
runs as written, e.g. pasted into a DuckDB shell.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

import duckdb

from warehouse import parts, sqltable
from warehouse.parts import has_table, is_view
from warehouse.sqltable import downstream  # the one downstream (issue 27); also imported from here
from warehouse.days import DAY_SOURCES, record_new_file_days, run_days

# price sheet staging table -> the model holding its price history (diffed to find what changed)
PRICE_VERSIONS = {"stg.llm_prices": "core.llm_price_versions", "stg.gpu_prices": "core.gpu_price_versions"}
MACROS = ("in_build_days", "in_build_context", "in_build_months")
# A task whose calls span more days than this is closed over in at most this many passes.
_MAX_CLOSURE_PASSES = 50


@dataclass(frozen=True)
class Scope:
    """The plan of one build: full, or the days to rewrite."""

    full: bool
    reason: str
    days: tuple[dt.date, ...] = ()
    halo_days: int = 1  # how far a call's interval can reach back (self-hosted latency), in days
    full_tables: frozenset[str] = field(default_factory=frozenset)
    tables: frozenset[str] | None = None  # the models rebuilt at all; None = every model
    price_from: dt.date | None = None  # the earliest day whose price in force changed (new sheets)

    def is_full(self, table: str) -> bool:
        return self.full or table in self.full_tables

    def builds(self, table: str) -> bool:
        """Whether this build rebuilds ``table`` at all (else it keeps the published one)."""
        return self.full or self.tables is None or table in self.tables

    def summary(self) -> str:
        """One line for the log and the run summary."""
        if self.full:
            return f"rebuild: full ({self.reason})"
        n = len(self.tables or ())
        if not n:
            return "rebuild: nothing (no new rows, no requested days)"
        span = f" ({self.days[0]}..{self.days[-1]})" if len(self.days) > 1 else (f" ({self.days[0]})" if self.days else "")
        price = f", prices changed from {self.price_from}" if self.price_from else ""
        return f"rebuild: incremental, {n} table(s), {len(self.days)} day(s) replaced{span}{price}"

    def model_days(self, halo: bool) -> list[dt.date]:
        """The days a model rewrites: the scope's days, widened by the halo for halo models."""
        return _widen(self.days, self.halo_days) if halo else list(self.days)


def _widen(days: tuple[dt.date, ...] | list[dt.date], by: int) -> list[dt.date]:
    out = {d + dt.timedelta(days=k) for d in days for k in range(-by, by + 1)}
    return sorted(out)


def _date_list(days: list[dt.date]) -> str:
    return ", ".join(f"DATE '{d.isoformat()}'" for d in days)


# ``CAST(<column> AS DATE)``: a day taken from a timestamp column (stg.requests.ts)
_COLUMN = r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)"  # a column, maybe qualified
_DAY_OF = re.compile(rf"\s*CAST\s*\(\s*{_COLUMN}\s+AS\s+DATE\s*\)\s*", re.I)
# a month's first day computed from a column: CAST(date_trunc('month', <col>) AS DATE)
_MONTH_OF = re.compile(rf"\s*CAST\s*\(\s*date_trunc\s*\(\s*'month'\s*,\s*{_COLUMN}\s*\)\s+AS\s+DATE\s*\)\s*", re.I)


def _next_month(d: dt.date) -> dt.date:
    return (d.replace(day=1) + dt.timedelta(days=32)).replace(day=1)


def _in(expr: str, days: list[dt.date]) -> str:
    if not days:
        return "FALSE"
    # the range first: DuckDB can prune row groups with it (zone maps, Parquet statistics), the IN
    # list is exact. A day cast from a timestamp column gets the range on the column itself: a cast
    # is not pushed into a Parquet scan (one day of 33M calls in stg.requests' files: 0.36 s through
    # the cast, 0.03 s with the column's range)
    m = _DAY_OF.fullmatch(expr)
    month = _MONTH_OF.fullmatch(expr)
    if m:
        col, end = m.group(1), days[-1] + dt.timedelta(days=1)
        rng = f"{col} >= TIMESTAMP '{days[0]} 00:00:00' AND {col} < TIMESTAMP '{end} 00:00:00'"
    elif month:
        # the months' days as a range of the column itself: a Parquet scan prunes its day folders and
        # row groups with it, which it cannot through date_trunc (core.call_profiles read every file of
        # core.calls for one month: a 32M-call night's rebuild 5.8 s at 4x history against 1.3 s at 1x)
        col = month.group(1)
        rng = f"{col} >= DATE '{days[0]}' AND {col} < DATE '{_next_month(days[-1])}'"
    else:
        rng = f"({expr}) BETWEEN DATE '{days[0]}' AND DATE '{days[-1]}'"
    return f"({rng} AND ({expr}) IN ({_date_list(days)}))"


@lru_cache(maxsize=1024)
def macro_calls(sql: str) -> tuple[tuple[str, int, int, int, int], ...]:
    """The outermost ``core.in_build_*(arg)`` calls of ``sql``, found with sqlglot's tokenizer (the
    one reading of the SQL both engines' renderers share: a name inside a string literal or a
    comment is not a call): (macro name, call start, argument start, argument end, call end) as
    character offsets. Cached per text: a build renders each model once or twice."""
    if "in_build_" not in sql.lower():
        return ()
    from sqlglot.dialects.duckdb import DuckDB  # noqa: PLC0415
    from sqlglot.tokens import TokenType  # noqa: PLC0415

    tokens = DuckDB().tokenize(sql)
    out, i = [], 0
    while i + 3 < len(tokens):
        core, dot, name, paren = tokens[i:i + 4]
        if not (core.token_type == TokenType.VAR and core.text.lower() == "core" and dot.token_type == TokenType.DOT
                and name.text.lower() in MACROS and paren.token_type == TokenType.L_PAREN):
            i += 1
            continue
        depth, j = 1, i + 4
        while j < len(tokens) and depth:
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
            j += 1
        if depth:
            raise ValueError(f"unbalanced parentheses in a core.{name.text}() call")
        close = tokens[j - 1]
        out.append((name.text.lower(), core.start, paren.end + 1, close.start, close.end + 1))
        i = j
    return tuple(out)


def render(sql: str, scope: Scope | None, *, full: bool, halo: bool = False) -> str:
    """The model's SQL with the in_build macros replaced by this build's days (TRUE when full).
    The one renderer of the in_build macros: the DuckDB build and Spark's (warehouse/spark/build.py,
    before its sqlglot transpile) both call it."""
    out, pos = [], 0
    for name, start, arg_start, arg_end, end in macro_calls(sql):
        arg = render(sql[arg_start:arg_end], scope, full=full, halo=halo)
        if full or scope is None:
            text = "TRUE"
        else:
            days = scope.model_days(halo)
            if name == "in_build_days":
                text = _in(arg, days)
            elif name == "in_build_context":
                text = _in(arg, _widen(days, scope.halo_days))
            else:
                months = sorted({d.replace(day=1) for d in days})
                text = _in(arg, months)
        out.append(sql[pos:start])
        out.append(text)
        pos = end
    out.append(sql[pos:])
    return "".join(out)


# -- state -------------------------------------------------------------------------------------
def sql_sha(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()


def settings_sha(con: duckdb.DuckDBPyConnection) -> str:
    """A digest of ops.settings without the build id (thinktax.toml as the SQL sees it)."""
    if not has_table(con, "ops.settings"):
        return ""
    cur = con.execute("SELECT * EXCLUDE (build_id) FROM ops.settings")
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return hashlib.sha256(json.dumps([names, rows], default=str, sort_keys=True).encode()).hexdigest()


def _built(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """table -> (sql sha, settings sha) of its last build."""
    rows = con.execute("SELECT table_name, sql_sha256, settings_sha256 FROM ops.model_builds").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _existing_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables"
    ).fetchall()
    return {r[0] for r in rows}


def record(con: duckdb.DuckDBPyConnection, table: str, sql: str, mode: str, days: int, build_id: str | None) -> None:
    if not has_table(con, "ops.model_builds"):  # a connection without the migrations (tests)
        return
    con.execute(
        """INSERT OR REPLACE INTO ops.model_builds
           VALUES (?, ?, ?, ?, ?, ?, now()::TIMESTAMP)""",
        [table, sql_sha(sql), settings_sha(con), mode, days, build_id],
    )


# -- the plan ----------------------------------------------------------------------------------
_NEW_ROWS_TABLES = """
    SELECT DISTINCT target_table FROM ops.ingested_files
    WHERE status = 'loaded' AND target_table IS NOT NULL AND rows_loaded > 0
      AND ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = ?)
"""


def tables_with_new_rows(con: duckdb.DuckDBPyConnection, build_id: str | None) -> set[str]:
    """The staging tables that files ingested by this build added rows to."""
    if build_id is None:
        return set()
    return {r[0] for r in con.execute(_NEW_ROWS_TABLES, [build_id]).fetchall()}


def _stale(con: duckdb.DuckDBPyConnection, models, present: set[str] | None = None) -> tuple[set[str], str]:
    """Models that must be rebuilt whole whatever the days (SQL changed, table missing), plus
    everything downstream of them; and a reason when the whole build must be full. ``present``:
    the tables that exist where the models are built (default: this DuckDB file; the Spark
    engine passes its catalog's)."""
    built = _built(con)
    if not built:
        return set(), "no earlier build of the SQL tables"
    sha_now = settings_sha(con)
    if any(s != sha_now for _, s in built.values()):
        return set(), "settings (thinktax.toml) changed"
    present = _existing_tables(con) if present is None else present
    stale: set[str] = set()
    for m in models:  # dependency order
        if m.table not in present or built.get(m.table, ("", ""))[0] != sql_sha(m.sql) or m.deps & stale:
            stale.add(m.table)
    return stale, ""


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    schema, name = table.split(".")
    return [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, name]).fetchall()]


def price_change_from(con: duckdb.DuckDBPyConnection, model) -> dt.date | None:
    """The earliest day on which the price history ``model`` would select now differs from the
    stored table (None: no price in force changed).

    A row only in one of the two is a change from its ``effective_from``, unless the other has
    the same row but for ``effective_to`` (a version cut short by a later one, or extended):
    then prices differ only from the earlier of the two ends.
    """
    cols = [c for c in _columns(con, model.table) if c != "effective_to"]
    same = " AND ".join(f'o."{c}" IS NOT DISTINCT FROM d."{c}"' for c in cols)
    end = "coalesce({}.effective_to, DATE '9999-12-31')"
    (since,) = con.execute(f"""
        WITH new AS (SELECT * FROM ({render(model.sql, None, full=True)})),
        old AS (SELECT * FROM {model.table}),
        diff AS (
            SELECT *, 'new' AS side FROM (SELECT * FROM new EXCEPT ALL SELECT * FROM old)
            UNION ALL BY NAME
            SELECT *, 'old' AS side FROM (SELECT * FROM old EXCEPT ALL SELECT * FROM new)
        )
        SELECT min(CASE WHEN o.side IS NULL THEN d.effective_from
                        ELSE least({end.format('d')}, {end.format('o')}) END)
        FROM diff d LEFT JOIN diff o ON o.side <> d.side AND {same}
    """).fetchall()[0]
    return since


def _call_days(con: duckdb.DuckDBPyConnection) -> tuple[dt.date | None, dt.date | None]:
    """The first and the last day of calls: from the Parquet statistics of stg.requests' files
    (warehouse.parts.staged_bounds) when they have them, which costs the same whatever the history,
    else by a scan of every call's ts."""
    bounds = parts.staged_bounds(con, "stg.requests", "ts") if has_table(con, "ops.storage") else None
    if bounds is None:
        return con.execute("SELECT CAST(min(ts) AS DATE), CAST(max(ts) AS DATE) FROM stg.requests").fetchall()[0]
    return tuple(None if v is None else (v.date() if isinstance(v, dt.datetime) else v) for v in bounds)  # type: ignore[return-value]


def _days_from(con: duckdb.DuckDBPyConnection, since: dt.date) -> set[dt.date]:
    """Every day from ``since`` (but not before the first day of calls) to the last day of calls."""
    (first, last) = _call_days(con)
    if last is None or last < since:
        return set()
    start = max(since, first)
    return {start + dt.timedelta(days=k) for k in range((last - start).days + 1)}


def closure_keys() -> tuple[str, ...]:
    """The keys the plan's days are closed over: every ``@closure`` of the SQL tables (task_id;
    trace_id and session_id since issue 41's agent runs, traces and sessions)."""
    return tuple(sorted({m.closure for m in sqltable.load_tables() if m.closure}))


def closed_days(con: duckdb.DuckDBPyConnection, days: set[dt.date], keys: tuple[str, ...] | None = None) -> set[dt.date]:
    """Add every day on which a task (trace, session: ``keys``, default ``closure_keys()``) with a call
    on one of ``days`` has a call, until stable. A trace's invoke_agent spans (stg.agent_spans) count
    as its calls do: the days they start on join the trace's days, and a trace with a span starting
    on one of ``days`` brings its calls' days."""
    keys = closure_keys() if keys is None else keys
    present = set(_columns(con, "stg.requests"))
    keys = tuple(k for k in keys if k in present)  # a staging table from before the key (a bare test table)
    if not keys:
        return days
    spans = "trace_id" in keys and has_table(con, "stg.agent_spans")
    for _ in range(_MAX_CLOSURE_PASSES):
        if not days:
            return days
        ds = sorted(days)
        on_days = _in("CAST(ts AS DATE)", ds)
        ids = {k: f"SELECT {k} FROM stg.requests WHERE {on_days}" for k in keys}
        if spans:
            ids["trace_id"] += f" UNION SELECT trace_id FROM stg.agent_spans WHERE {_in('CAST(started_at AS DATE)', ds)}"
        sql = "SELECT DISTINCT CAST(ts AS DATE) FROM stg.requests WHERE " + " OR ".join(f"{k} IN ({q})" for k, q in ids.items())
        if spans:
            sql += (" UNION SELECT DISTINCT CAST(started_at AS DATE) FROM stg.agent_spans"
                    f" WHERE started_at IS NOT NULL AND trace_id IN ({ids['trace_id']})")
        more = {r[0] for r in con.execute(sql).fetchall()} - days
        if not more:
            return days
        days |= more
    return days


def _new_span_days(con: duckdb.DuckDBPyConnection, build_id: str) -> set[dt.date]:
    """The days the invoke_agent spans of this build's new files start on (a side table of
    stg.requests, so not among ops.ingested_days: a trace without a model call has only these)."""
    if not has_table(con, "stg.agent_spans"):
        return set()
    rows = con.execute(
        "SELECT DISTINCT CAST(started_at AS DATE) FROM stg.agent_spans WHERE started_at IS NOT NULL AND file_id IN ("
        "SELECT file_id FROM ops.ingested_files WHERE ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = ?))",
        [build_id]).fetchall()
    return {r[0] for r in rows}


def _gap_days(con: duckdb.DuckDBPyConnection) -> set[dt.date]:
    """Days after the last day the per-call tables know, up to the last day of data."""
    present = _existing_tables(con)
    if "core.calls" not in present:
        return set()
    (before,) = con.execute("SELECT max(day) FROM core.calls").fetchall()[0]
    now = _call_days(con)[1]
    if before is None or now is None or now <= before:
        return set()
    return {before + dt.timedelta(days=k) for k in range(1, (now - before).days + 1)}


def halo_days_of(con: duckdb.DuckDBPyConnection) -> int:
    """Days a self-hosted call's interval [ts - latency, ts] can reach back: 1 + whole days of latency."""
    (ms,) = con.execute("SELECT max(latency_ms) FROM stg.requests WHERE node_id IS NOT NULL").fetchall()[0]
    return 1 + int((ms or 0) // 86_400_000)


def plan(con: duckdb.DuckDBPyConnection, build_id: str | None, *, extra_days: list[dt.date] | None = None,
         full: bool = False, present: set[str] | None = None) -> Scope:
    """Decide this build's scope and store it in ops.build_scope (replacing an earlier plan).

    ``extra_days``: days explicitly asked for (rebuilt even without new rows); ``full``: rebuild
    every model whole. See the module's docstring for the rules."""
    models = sqltable.load_tables()
    by_table = {m.table: m for m in models}
    reason = "a full rebuild was asked for" if full else ""
    stale, why = _stale(con, models, present)
    reason = reason or why
    days: set[dt.date] = set()
    tables: set[str] = set(stale)
    price_from: dt.date | None = None
    if not reason:
        changed: set[str] = set()
        if build_id is not None:
            record_new_file_days(con, build_id)
            changed = {r[0] for r in con.execute(_NEW_ROWS_TABLES, [build_id]).fetchall()}
        daily = changed & set(DAY_SOURCES)
        # catalog, nodes, model configs: whatever reads them is rebuilt whole (FX: nothing reads it)
        whole = downstream(models, changed - set(DAY_SOURCES) - set(PRICE_VERSIONS))
        stale |= whole
        tables |= whole | downstream(models, daily)
        if daily:
            days |= set(run_days(con, build_id))
            if "stg.requests" in daily and build_id is not None:
                days |= _new_span_days(con, build_id)
        for sheet, versions in PRICE_VERSIONS.items():
            if sheet in changed and versions in by_table and versions not in stale:
                since = price_change_from(con, by_table[versions])
                if since is not None:
                    price_from = since if price_from is None else min(price_from, since)
                    tables |= {versions} | downstream(models, {versions})
        if price_from is not None:
            days |= _days_from(con, price_from)
        if extra_days:
            days |= set(extra_days)
            tables |= downstream(models, set(DAY_SOURCES))
        if tables:
            days |= _gap_days(con)
            keys = tuple(sorted({m.closure for m in models if m.closure}))
            if keys:
                days = closed_days(con, days, keys)
    scope = Scope(full=bool(reason), reason=reason or "incremental", days=tuple(sorted(days)),
                  halo_days=halo_days_of(con) if not reason else 1, full_tables=frozenset(stale),
                  tables=None if reason else frozenset(tables), price_from=price_from)
    store(con, build_id, scope)
    return scope


def restamp(con: duckdb.DuckDBPyConnection, table: str, build_id: str | None) -> None:
    """A model kept as published: its rows' ``build_id`` (if it has one) becomes this build's,
    so that every mart of a snapshot still carries the same build id."""
    if build_id is None or "build_id" not in _columns(con, table):
        return
    if is_view(con, table):
        return  # a view (marts.cost_per_task) shows its table's build ids
    con.execute(f"UPDATE {table} SET build_id = ? WHERE build_id IS DISTINCT FROM ?", [build_id, build_id])


def store(con: duckdb.DuckDBPyConnection, build_id: str | None, scope: Scope) -> None:
    con.execute("DELETE FROM ops.build_scope")
    con.execute(
        "INSERT INTO ops.build_scope (build_id, full_rebuild, reason, days, halo_days, full_tables, planned_at, tables) "
        "VALUES (?, ?, ?, ?::DATE[], ?, ?::VARCHAR[], now()::TIMESTAMP, ?::VARCHAR[])",
        [build_id, scope.full, scope.reason, list(scope.days), scope.halo_days, sorted(scope.full_tables),
         None if scope.tables is None else sorted(scope.tables)],
    )


def current(con: duckdb.DuckDBPyConnection, build_id: str | None) -> Scope:
    """This build's stored plan; planned now (no extra days) if the build has none yet."""
    rows = con.execute(
        "SELECT full_rebuild, reason, days, halo_days, full_tables, tables FROM ops.build_scope "
        "WHERE build_id IS NOT DISTINCT FROM ?",
        [build_id],
    ).fetchall()
    if not rows:
        return plan(con, build_id)
    full, reason, days, halo, full_tables, tables = rows[0]
    return Scope(full=full, reason=reason, days=tuple(days or ()), halo_days=halo, full_tables=frozenset(full_tables or ()),
                 tables=None if tables is None else frozenset(tables))
