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

The suites are generated from the staging contract (``sources/contract.py``): every table's
declaration lists its columns (NOT NULL ones get ``not_null``), the rules on each column and the
rules over several columns, with the limits the parsers enforce defined there once. A staging
table that is not declared (a new family before its declaration) gets :func:`fallback_suite`.

Suites are plain data (:class:`Expect`), so they can be listed and tested without importing Great
Expectations; GX (several seconds to import) is imported only when there are rows to validate.
GX 1.x has no DuckDB-safe SQL source, so the new rows are taken from DuckDB as a pandas frame
(``.df()``) and validated through an ephemeral context's pandas data source.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb

from sources import contract
from sources.contract import Rule, between, not_null

SAMPLE_ROWS = 200_000  # validate at most this many new rows per table (a random sample above it)
SAMPLE_SEED = 42
SAMPLES_PER_EXPECTATION = 5

log = logging.getLogger("thinktax.expectations")


# ------------------------------------------------------------------------------------------------
# Suites as data, generated from the staging contract (sources/contract.py)

# One expectation (a GX 1.x expectation class name, its arguments, why it exists). The rules are
# declared with their tables in sources/contract.py.
Expect = Rule


@dataclass(frozen=True)
class Suite:
    table: str
    expectations: tuple[Expect, ...]
    # Extra columns computed in DuckDB before validation: name -> SQL expression over the table.
    derived: dict[str, str] = field(default_factory=dict)


def suites(now: dt.datetime) -> dict[str, Suite]:
    """Every declared staging table's suite. ``now`` is the run's start (naive UTC): bounds such as
    "a day after the run" are resolved against it.

    A suite is: ``not_null`` for every NOT NULL column, then the rules declared on the columns
    (``line >= 1`` included), then the table's rules over several columns.
    """
    return {name: Suite(name, tuple(r.at(now) for r in t.expectations()), dict(t.derived))
            for name, t in contract.TABLES.items()}


def fallback_suite(con: duckdb.DuckDBPyConnection, table: str) -> Suite:
    """For a staging table without an explicit suite: its NOT NULL columns, and line >= 1."""
    schema, name = table.split(".")
    cols = [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "AND is_nullable = 'NO' AND column_name NOT IN ('file_id', 'line') ORDER BY ordinal_position",
        [schema, name]).fetchall()]
    return Suite(table, (*[not_null(c, why="NOT NULL in the staging table") for c in cols],
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
_WORKER: Any = None  # concurrent.futures.ProcessPoolExecutor: the GX worker process (start_worker)
_WORKER_USED = False  # whether a table's rows were sent to it (submit)
# Pools told to end (stop_worker) and not yet reaped: (pool's manager thread, its processes).
_STOPPING: list[tuple[Any, list[Any]]] = []
STOP_SECONDS = 5.0  # how long reap_workers waits for a worker to end before ending it


def start_worker() -> None:
    """Start one worker process that imports GX and makes its context, in parallel with what this
    process does meanwhile. The ingest step calls this at its first new landing file: GX's import
    is ~4 CPU s of Python, which on the demo otherwise ran after the ingest, on the step's own core
    (in a thread of this process it slowed the ingest by as much, for the GIL). The checks then
    send each table's new rows there (:func:`submit`); :func:`stop_worker` ends it and
    :func:`reap_workers` (the CLI's exit, and an exit handler) waits for its end, bounded.

    A spawned process (not forked: DuckDB's threads hold locks). One that cannot be started, or
    that dies, is replaced by validating in this process; ``THINKTAX_GX_WORKER=0`` turns it off."""
    global _WORKER, _WORKER_USED
    if _WORKER is not None or _CONTEXT is not None or os.environ.get("THINKTAX_GX_WORKER", "1").strip() == "0":
        return
    import atexit  # noqa: PLC0415
    import multiprocessing  # noqa: PLC0415
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    try:
        _WORKER = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_worker_init)
        _WORKER.submit(int)  # the pool starts its process at the first task: now
        _WORKER_USED = False
    except (OSError, RuntimeError) as exc:
        log.warning("Great Expectations worker process not started (%s): validating in this process", exc)
        _WORKER = None
        return
    # Exit handlers run last-registered first: this one before multiprocessing's own, which closes
    # the pool's call queue and then joins its process, forever when the pool's manager thread had
    # not yet sent the process its end (issue 47: the fast exit skips the thread shutdown that would).
    atexit.unregister(reap_workers)
    atexit.register(reap_workers)


def stop_worker() -> None:
    """Tell the worker to end, without waiting for it (its interpreter's teardown, ~0.7 s, then
    overlaps the rest of the run); :func:`reap_workers` waits for it, bounded.

    A worker no table was sent to (every new file was a duplicate, unreadable or empty) is ended
    now: it is at most importing GX, which nothing will use."""
    global _WORKER
    if _WORKER is None:
        return
    pool, _WORKER = _WORKER, None
    procs = list((pool._processes or {}).values())  # noqa: SLF001 - shutdown() forgets them
    manager = pool._executor_manager_thread  # noqa: SLF001
    if not _WORKER_USED:
        for p in procs:
            _end(p, signal_only=True)
    pool.shutdown(wait=False, cancel_futures=True)
    _STOPPING.append((manager, procs))


def reap_workers(timeout: float | None = None) -> list[int]:
    """Wait, at most ``timeout`` seconds in all (default :data:`STOP_SECONDS`), for the workers
    :func:`stop_worker` told to end; end any still alive (SIGTERM, then SIGKILL). Returns the pids
    that had to be ended. Called by the CLI before it exits, and as an exit handler."""
    if _WORKER is not None:
        stop_worker()
    deadline = time.monotonic() + (STOP_SECONDS if timeout is None else timeout)
    ended: list[int] = []
    while _STOPPING:
        manager, procs = _STOPPING.pop(0)
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                log.warning("Great Expectations worker process %s still running after %.0f s: ending it",
                            p.pid, STOP_SECONDS if timeout is None else timeout)
                _end(p)
                ended.append(p.pid)
        if manager is not None:
            manager.join(max(1.0, deadline - time.monotonic()))  # it sees its process gone, and returns
    return ended


def _end(p: Any, *, signal_only: bool = False) -> None:
    """SIGTERM ``p`` (a multiprocessing process); unless ``signal_only``, wait 2 s, then SIGKILL."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        p.terminate()
        if signal_only:
            return
        p.join(2.0)
        if p.is_alive():
            p.kill()
            p.join(2.0)


@contextlib.contextmanager
def worker_scope() -> Iterator[None]:
    """A scope at whose end the GX worker, if one was started in it, is stopped (also on error)."""
    try:
        yield
    finally:
        stop_worker()


def _worker_init() -> None:
    _gx_context()


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


def _suite_columns(suite: Suite) -> set[str]:
    """The columns a suite reads: its expectations' columns and row conditions' (any ``column*``
    argument), plus file_id and line, which name an offending row."""
    cols = {"file_id", "line"}
    for e in suite.expectations:
        for k, v in e.kwargs.items():
            if k.startswith("column"):
                cols.update([v] if isinstance(v, str) else v)
        cols.update(c for c, _op, _v in e.where)
    return cols


# pandas datetime64[ns] spans 1677-09-21 .. 2262-04-11
_NS_MIN, _NS_MAX = dt.datetime(1678, 1, 1), dt.datetime(2262, 1, 1)


def _frame(con: duckdb.DuckDBPyConnection, suite: Suite, first_file_id: int, rows_new: int, sample_rows: int):
    """The new rows (or the sample) as a pandas frame, with only the columns the suite reads.

    DuckDB hands TIMESTAMP columns over as datetime64[us]; GX's ``between`` compares those one
    Python value at a time (~1 s per 200k rows) but datetime64[ns] ones vectorised, so a column
    whose values all fit in nanoseconds is converted (exactly: the same instants); one that does
    not (a year outside 1678-2261, which the suites reject anyway) is left as it is.
    """
    want = _suite_columns(suite)
    schema, name = suite.table.split(".")
    stored = [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "ORDER BY ordinal_position", [schema, name]).fetchall()]
    picked = ", ".join(f't."{c}"' for c in stored if c in want and c not in suite.derived) or "t.*"
    derived = "".join(f", {expr} AS {name}" for name, expr in suite.derived.items())
    sql = f"SELECT {picked}{derived} FROM {suite.table} t WHERE t.file_id >= ?"
    if rows_new > sample_rows:
        sql = f"SELECT * FROM ({sql}) USING SAMPLE reservoir({int(sample_rows)} ROWS) REPEATABLE ({SAMPLE_SEED})"
    df = con.execute(sql, [first_file_id]).df()
    for c in df.columns:
        col = df[c]
        if str(col.dtype).startswith("datetime64[") and str(col.dtype) != "datetime64[ns]" and getattr(col.dt, "tz", None) is None:
            lo, hi = col.min(), col.max()
            if col.isna().all() or (_NS_MIN <= lo and hi < _NS_MAX):
                df[c] = col.astype("datetime64[ns]")
    df["_row"] = range(len(df))
    return df


def validate_new_rows(con: duckdb.DuckDBPyConnection, table: str, first_file_id: int, *,
                      now: dt.datetime | None = None, suite: Suite | None = None,
                      sample_rows: int = SAMPLE_ROWS) -> SuiteResult:
    """Validate the rows of ``table`` with ``file_id >= first_file_id`` against its suite."""
    return submit(con, table, first_file_id, now=now, suite=suite, sample_rows=sample_rows)()


def submit(con: duckdb.DuckDBPyConnection, table: str, first_file_id: int, *,
           now: dt.datetime | None = None, suite: Suite | None = None,
           sample_rows: int = SAMPLE_ROWS) -> Callable[[], SuiteResult]:
    """Read the new rows of ``table`` and start their validation: in the GX worker process if one
    runs (:func:`start_worker`), else when the returned function is called, here. Calling it
    gives the :class:`SuiteResult`. The checks submit every table first, then collect, so the
    worker validates one table while this process reads the next."""
    global _WORKER_USED
    start = time.monotonic()
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    suite = suite or suite_for(con, table, now)
    rows_new = con.execute(f"SELECT count(*) FROM {table} WHERE file_id >= ?", [first_file_id]).fetchall()[0][0]
    result = SuiteResult(table, rows_new, 0, first_file_id)
    if rows_new == 0:
        result.seconds = time.monotonic() - start
        return lambda: result
    df = _frame(con, suite, first_file_id, rows_new, sample_rows)
    result.rows_validated = len(df)
    files = dict(con.execute(
        "SELECT file_id, file FROM ops.ingested_files WHERE file_id >= ?", [first_file_id]).fetchall())
    future = None
    if _WORKER is not None:
        _WORKER_USED = True
        try:
            future = _WORKER.submit(_gx_results, suite, df)
        except RuntimeError as exc:  # BrokenProcessPool: the worker process died
            _worker_died(exc, table)

    def finish() -> SuiteResult:
        raw = None
        if future is not None:
            from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

            try:
                raw = future.result()
            except BrokenProcessPool as exc:
                _worker_died(exc, table)
        if raw is None:
            raw = _gx_results(suite, df)
        _assemble(result, suite, raw, df, files)
        result.seconds = time.monotonic() - start
        return result

    return finish


def _worker_died(exc: Exception, table: str) -> None:
    log.warning("Great Expectations worker process died (%s): validating %s in this process", exc, table)


def _gx_results(suite: Suite, df: Any) -> list[tuple[int, bool, dict, dict]]:
    """(expectation index, success, result, exception_info) of each of GX's results on ``df``:
    what GX computes, in plain picklable values (this runs in the worker process, or here)."""
    ctx = _gx_context()
    source = ctx.data_sources.get("thinktax")
    table = suite.table
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
    keep = ("unexpected_count", "unexpected_percent", "partial_unexpected_list", "partial_unexpected_index_list")
    return [(r.expectation_config.meta["thinktax_index"], bool(r.success),
             {k: v for k, v in (r.result or {}).items() if k in keep},
             dict(r.exception_info or {}))
            for r in validation.results]


def _assemble(result: SuiteResult, suite: Suite, raw: list[tuple[int, bool, dict, dict]], df: Any,
              files: dict[int, str]) -> None:
    """``result.results`` from GX's raw results, in the suite's order, with the offending rows."""
    order: list[int] = []
    for index, success, res, info in raw:
        exp = suite.expectations[index]
        error = info.get("exception_message") if info.get("raised_exception") else None
        rows = []
        for idx in res.get("partial_unexpected_index_list") or []:
            i = idx["_row"] if isinstance(idx, dict) else idx
            rec = df.iloc[int(i)]
            row = {"file": files.get(int(rec["file_id"])), "line": _jsonable(rec["line"])}
            row.update({c: _jsonable(rec[c]) for c in exp.columns})
            rows.append(row)
        order.append(index)
        result.results.append(ExpectationResult(
            label=exp.label,
            why=exp.why,
            success=success and error is None,
            unexpected_count=int(res.get("unexpected_count") or 0),
            unexpected_percent=_jsonable(res.get("unexpected_percent")),
            sample_values=[_jsonable(v) for v in res.get("partial_unexpected_list") or []],
            sample_rows=rows,
            error=error,
        ))
    result.results = [r for _, r in sorted(zip(order, result.results), key=lambda p: p[0])]
