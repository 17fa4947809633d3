"""SQL tables on DuckDB: one SELECT per file under sql/<schema>/, materialised as table
<schema>.<file name>. The models, their headers and dependencies are loaded by warehouse/sqltable.py
(re-exported here). Used by the Dagster asset factory and directly by tests and the benchmark.

A model whose header says ``-- @kind: incremental_by_day`` (or ``_by_month``; ``-- @halo: true``
for rows that depend on neighbouring days) is rebuilt in place when the build's plan (warehouse/incremental.py)
is incremental: its rows of the planned days (months) are deleted and re-selected, with
``core.in_build_days(...)`` etc. in its SQL narrowing what it reads. Other models are recreated
whole. Either way ``ops.model_builds`` records what the table was built from.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from dataclasses import dataclass

import duckdb

from warehouse import incremental, parts
from warehouse.incremental import Scope
from warehouse.sqltable import SCHEMAS, SqlTable, load_tables

__all__ = ["SCHEMAS", "SqlTable", "build", "build_all", "load_tables"]
_RENAMED = {"SqlModel": "SqlTable", "load_models": "load_tables"}  # issue 27: "model" is an LLM


def __getattr__(name: str):
    if name in _RENAMED:
        import warnings  # noqa: PLC0415

        warnings.warn(f"warehouse.transform.{name} is deprecated: use {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

log = logging.getLogger("thinktax.transform")


def _build_id(con: duckdb.DuckDBPyConnection) -> str | None:
    if not incremental.has_table(con, "ops.settings"):  # a bare connection (tests): no build
        return None
    rows = con.execute("SELECT build_id FROM ops.settings").fetchall()
    return rows[0][0] if rows else None


def _has_build_id(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    schema, name = table.split(".")
    return con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND column_name = 'build_id'",
        [schema, name],
    ).fetchall()[0][0] > 0


# When a model does not fit in the build's memory limit (warehouse/db.py, 3 GB by default; DuckDB
# spills most operators to disk, but not every aggregate state), it is retried once with this
# limit instead of failing the run: THINKTAX_MEMORY_LIMIT_RETRY, default 80% of the machine's RAM
# (DuckDB's own default).
RETRY_ENV = "THINKTAX_MEMORY_LIMIT_RETRY"


def _retry_limit() -> str:
    if os.environ.get(RETRY_ENV):
        return os.environ[RETRY_ENV]
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "16GB"
    return f"{int(ram * 0.8) // (1 << 20)}MB"


def build(con: duckdb.DuckDBPyConnection, model: SqlTable, scope: Scope | None = None) -> int:
    """(Re)build the model's table; returns its row count.

    Without a scope (or a full one, or a model that is not incremental) the table is recreated
    from its SELECT. With an incremental scope the rows of the scope's days are replaced.
    A model that runs out of memory is retried once with a larger limit (``RETRY_ENV``).
    """
    try:
        return _build(con, model, scope)
    except duckdb.OutOfMemoryException as exc:
        from warehouse.db import duckdb_memory_limit, memory_budget  # noqa: PLC0415

        limit = duckdb_memory_limit()
        retry = _retry_limit()
        log.warning("%s: out of memory at memory_limit %s (DuckDB's share of the build's %s; %s); retrying with %s",
                    model.table, limit, memory_budget(), str(exc).splitlines()[0], retry)
        con.execute(f"SET memory_limit = '{retry}'")
        try:
            return _build(con, model, scope)
        finally:
            con.execute(f"SET memory_limit = '{limit}'")


def _days_sql(model: SqlTable, scope: Scope) -> tuple[list, str, str]:
    """An incremental build of ``model``: the days it rewrites, the filter on its key column that
    keeps exactly those rows, and its SQL rendered for them."""
    days = scope.model_days(model.halo)
    key = incremental.render(f"core.in_build_{model.incremental}s({model.key_column})", scope, full=False, halo=model.halo)
    return days, key, incremental.render(model.sql, scope, full=False, halo=model.halo)


# A full rebuild of a Parquet per-call table over more calls than this is written in batches of
# consecutive days, each of about this many calls (issue 26 item 3): one query over every call of
# a large warehouse spilled ~30 GB at 100M calls and went over the build's memory limit at 32M.
FULL_BATCH_CALLS = 5_000_000


@dataclass(frozen=True)
class Batch:
    """Consecutive days of one batch of a full rebuild: it writes the rows whose key is in
    [lo, hi) (no bound where None: the first batch also takes rows before every day of data and
    NULL keys, the last the rows after), computed from ``read_days`` (every day of the batch, and
    of the tasks that have a call in it; a halo model reads its usual halo around them)."""

    lo: dt.date | None
    hi: dt.date | None
    read_days: tuple[dt.date, ...]
    halo_days: int = 1  # incremental.halo_days_of(con): how far a call's interval reaches back

    def key_filter(self, key: str) -> str:
        parts_ = []
        if self.lo is not None:
            parts_.append(f"{key} >= DATE '{self.lo}'")
        if self.hi is not None:
            parts_.append(f"{key} < DATE '{self.hi}'")
        where = " AND ".join(parts_) or "TRUE"
        return f"({key} IS NULL OR ({where}))" if self.lo is None else f"({where})"


_BATCHES: dict[tuple[str, int, int, str], list[Batch]] = {}


def full_batches(con: duckdb.DuckDBPyConnection, build_id: str) -> list[Batch]:
    """The batches of a full rebuild of the per-call tables in this build ([] or one batch: write
    whole). Days are cut where the running count of calls (stg.requests) passes FULL_BATCH_CALLS;
    each batch's days are closed over tasks, as the incremental plan closes its days
    (``incremental.closed_days``), so a task never straddles what a batch reads. Computed once per
    build and number of calls."""
    if not incremental.has_table(con, "stg.requests"):
        return []
    (calls,) = con.execute("SELECT count(*) FROM stg.requests").fetchall()[0]
    if calls <= FULL_BATCH_CALLS:
        return []
    cache_key = (build_id, int(calls), FULL_BATCH_CALLS, str(parts.location(con)))
    if cache_key in _BATCHES:
        return _BATCHES[cache_key]
    per_day = con.execute("SELECT CAST(ts AS DATE) AS day, count(*) FROM stg.requests GROUP BY ALL ORDER BY day").fetchall()
    lo, hi = per_day[0][0], per_day[-1][0]
    halo = incremental.halo_days_of(con)
    cuts, running = [], 0
    for day, n in per_day:
        if running and running + n > FULL_BATCH_CALLS:
            cuts.append(day)
            running = 0
        running += n
    bounds = [None, *cuts, None]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        first = (a or lo) - dt.timedelta(days=halo)
        last = (b - dt.timedelta(days=1)) if b is not None else hi + dt.timedelta(days=halo)
        days = {first + dt.timedelta(days=k) for k in range((last - first).days + 1)}
        out.append(Batch(a, b, tuple(sorted(incremental.closed_days(con, days))), halo))
    span = (hi - lo).days + 1 + 2 * halo
    if sum(len(b.read_days) for b in out) > 3 * span:
        # tasks that span most days (one task id reused every day) make every batch read most of the
        # history: batches would cost a multiple of one whole write
        log.info("full rebuild written whole: the batches' task closures read %d days of %d",
                 sum(len(b.read_days) for b in out), span)
        out = []
    _BATCHES.clear()
    _BATCHES[cache_key] = out
    if out:
        log.info("full rebuild of the per-call tables in %d batches of about %s calls (%s calls)",
                 len(out), f"{FULL_BATCH_CALLS:,}", f"{calls:,}")
    return out


def _write_in_batches(con: duckdb.DuckDBPyConnection, model: SqlTable, batches: list[Batch], build_id: str) -> None:
    """A full rebuild of a Parquet table, batch by batch: each batch renders the model's SQL for
    its read days (as an incremental build of those days would) and keeps the rows of its own key
    range, so every row is written by exactly one batch. The first batch replaces every file of the
    table; the others add theirs (warehouse/parts.py ``write``, ``folder``)."""
    # the days of paid node hours before the first call or after the last (idle node-days are rows of
    # core.self_hosted_allocation too): read by the first and the last batch. Asked here, not with
    # the batches: core.node_hours_cost is rebuilt in the same build, maybe after the first model
    edge = None
    if incremental.has_table(con, "core.node_hours_cost"):
        edge = con.execute("SELECT min(day), max(day) FROM core.node_hours_cost").fetchall()[0]
    for i, batch in enumerate(batches):
        read = set(batch.read_days)
        if edge is not None and edge[0] is not None:
            if i == 0 and edge[0] < min(read):
                read |= {edge[0] + dt.timedelta(days=k) for k in range((min(read) - edge[0]).days)}
            if i == len(batches) - 1 and edge[1] > max(read):
                read |= {max(read) + dt.timedelta(days=k) for k in range(1, (edge[1] - max(read)).days + 1)}
        scope = Scope(full=False, reason="full rebuild in batches", days=tuple(sorted(read)), halo_days=batch.halo_days)
        sql = incremental.render(model.sql, scope, full=False, halo=model.halo)
        parts.write(con, model.table, model.key_column, f"SELECT * FROM ({sql}) WHERE {batch.key_filter(model.key_column)}",
                    build_id=build_id, days=None if i == 0 else [], folder=None if i == 0 else f"batch_{i}")


def _build(con: duckdb.DuckDBPyConnection, model: SqlTable, scope: Scope | None) -> int:
    build_id = _build_id(con)
    if model.view:
        if parts.has_table(con, model.table, views=False):
            con.execute(f"DROP TABLE {model.table}")  # it was a table in an older warehouse
        con.execute(f"CREATE OR REPLACE VIEW {model.table} AS {incremental.render(model.sql, scope, full=True)}")
        incremental.record(con, model.table, model.sql, "view", 0, build_id)
    elif model.storage == "parquet" and build_id is not None and parts.location(con) is not None:
        # a table not yet in Parquet (a warehouse from before issue 26) is written whole once
        full = scope is None or scope.is_full(model.table) or not parts.stored(con, model.table)
        batches = full_batches(con, build_id) if full and model.incremental == "day" else []
        if full and len(batches) > 1:
            _write_in_batches(con, model, batches, build_id)
            incremental.record(con, model.table, model.sql, "full", 0, build_id)
        elif full:
            parts.write(con, model.table, model.key_column, incremental.render(model.sql, scope, full=True),
                        build_id=build_id, days=None)
            incremental.record(con, model.table, model.sql, "full", 0, build_id)
        else:
            days, key, sql = _days_sql(model, scope)
            parts.write(con, model.table, model.key_column, f"SELECT * FROM ({sql}) WHERE {key}", build_id=build_id, days=days)
            incremental.record(con, model.table, model.sql, "incremental", len(days), build_id)
        return parts.rows(con, model.table)
    elif scope is None or scope.is_full(model.table) or model.incremental is None:
        parts.forget(con, model.table, build_id)
        if parts.is_view(con, model.table):
            con.execute(f"DROP VIEW {model.table}")  # it was a view in an older warehouse (core.calls until issue 17)
        con.execute(f"CREATE OR REPLACE TABLE {model.table} AS {incremental.render(model.sql, scope, full=True)}")
        incremental.record(con, model.table, model.sql, "full", 0, build_id)
    else:
        days, key, sql = _days_sql(model, scope)
        con.execute("BEGIN")
        try:
            con.execute(f"DELETE FROM {model.table} WHERE {key}")
            con.execute(f"INSERT INTO {model.table} BY NAME SELECT * FROM ({sql}) WHERE {key}")
            if _has_build_id(con, model.table):
                # every row says which build it belongs to (the published snapshot), not only the new days
                con.execute(f"UPDATE {model.table} SET build_id = ? WHERE build_id IS DISTINCT FROM ?", [build_id, build_id])
            incremental.record(con, model.table, model.sql, "incremental", len(days), build_id)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return con.execute(f"SELECT count(*) FROM {model.table}").fetchall()[0][0]


def build_all(con: duckdb.DuckDBPyConnection, scope: Scope | None = None) -> dict[str, int]:
    """Build every model in dependency order: whole, or by a plan (``incremental.current(...)``)."""
    return {m.table: build(con, m, scope) for m in load_tables()}
