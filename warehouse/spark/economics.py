"""The Python economics marts, the break-even alert and the report on a Spark run.

``models/`` (break-even, GPU sizing, forecasts) runs in Python on small aggregated rows; it is not
rewritten for Spark. After Spark has built the SQL tables and passed the checks:

1. ``to_duckdb``: every SQL mart (aggregates: per day / month / hour / task) and the small core
   tables the economics read (``core.call_profiles``, ``core.dim_models``, ``core.dim_deployments``,
   ``core.gpu_price_versions``, ``core.llm_price_versions``) are written by Spark as Parquet and loaded into the DuckDB build,
   replacing what that build held; the per-call ``core.call_costs`` is brought over as the
   columns the economics and the alert read (``CALL_COSTS_COLUMNS``) and is
   dropped again before publish, as are the other per-call core tables, which live only in Spark;
   ``core.calls`` comes over likewise, its replay window only (the 30 days ending the last day with
   calls; model, day, request_id, ts, latency_ms, thinking and output tokens), for
   ``marts.capacity_plan``'s queue replay, and is dropped before publish too;
2. the same builders as on DuckDB (``pipelines.defs.economics_assets.ECONOMICS``) run there, then
   the alert (``services.alert.evaluate``) exactly as on a DuckDB run;
3. ``to_spark``: the economics marts are written back as Parquet tables in Spark's ``marts``
   database, so ``thinktax sql --engine spark`` reads every mart.

So the published DuckDB file of a Spark run holds ingest bookkeeping (ops), staging (stg), every
mart and the core dimension tables: ``thinktax report`` and BI tools read it as after a DuckDB run.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence

from sources.contract import ANOMALY_SCOPES
from warehouse import anomalies, buying_options, economics, outlook, parts
from warehouse.sqltable import load_tables

log = logging.getLogger("thinktax.spark")

# every Python mart's inputs, as declared next to its builder (warehouse/economics.py INPUTS; the Dagster
# assets take their deps from the same declarations)
PYTHON_MART_INPUTS: dict[str, frozenset[str]] = economics.INPUTS | outlook.INPUTS | buying_options.INPUTS | anomalies.INPUTS
# the per-call core tables: brought over as the columns the economics read (below), not whole
PER_CALL = ("core.call_costs", "core.calls")
# small core tables copied whole: what the economics read (derived from their inputs), and the price
# histories the next incremental plan compares a new price sheet with (warehouse/incremental.py price_change_from)
CORE_SMALL = (*sorted({t for deps in PYTHON_MART_INPUTS.values() for t in deps
                       if t.startswith("core.") and t not in PER_CALL}), "core.llm_price_versions")
# what the economics (warehouse/economics.py, warehouse/outlook.py, warehouse/buying_options.py) and the
# alert read of core.call_costs (buying_options: provider, the on-demand cost and the token buckets)
# marts.spend_anomalies (warehouse/anomalies.py) reads price_basis, thinking_cost_usd and the columns of its scopes
CALL_COSTS_COLUMNS = tuple(dict.fromkeys((
    "model", "day", "serving", "cost_usd", "thinking_tokens", "provider", "on_demand_cost_usd",
    "uncached_input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
    "price_basis", "thinking_cost_usd", *ANOMALY_SCOPES.values())))
# what marts.capacity_plan's queue replay reads of core.calls (warehouse/outlook.py busiest_hours):
# the calls of the replay window only (PEAK_WINDOW_DAYS days ending the last day with calls)
CALLS_REPLAY_COLUMNS = ("model", "day", "request_id", "ts", "latency_ms", "thinking_tokens", "output_tokens")


def _duck_kind(con, table: str) -> str | None:
    kind = parts.table_kind(con, table)
    return None if kind is None else ("VIEW" if kind == "VIEW" else "TABLE")


def _duck_drop(con, table: str) -> None:
    kind = _duck_kind(con, table)
    if kind is not None:
        con.execute(f"DROP {kind} {table}")
    # a per-call table a DuckDB run stored as Parquet parts (warehouse/parts.py): its files leave this
    # build's list (kept for the builds before it, as any retired file), so no later run remakes its view
    build = con.execute("SELECT build_id FROM ops.settings").fetchall()
    parts.forget(con, table, build[0][0] if build else None)


def to_duckdb(spark, con, folder: str, target=None, *, remote: bool = False) -> list[str]:
    """Spark's marts and the economics' core inputs into the DuckDB build (see the module doc);
    returns the tables written."""
    from warehouse.spark.build import Target, columns_in_model_order, to_arrow  # noqa: PLC0415

    target = target or Target()
    models = [m for m in load_tables() if not m.view]
    marts = [m.table for m in models if m.schema == "marts"]
    wanted: list[tuple[str, tuple[str, ...] | None]] = [(t, None) for t in (*CORE_SMALL, *marts)]
    wanted.append(("core.call_costs", CALL_COSTS_COLUMNS))
    wanted.append(("core.calls", CALLS_REPLAY_COLUMNS))
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, exist_ok=True)
    # the build file is a copy of the last published one: no core table of an earlier run may stay
    for m in load_tables():
        if m.schema == "core" and m.table not in CORE_SMALL and not m.view:
            _duck_drop(con, m.table)
    out = []
    for table, cols in wanted:
        df = spark.table(target.table(table))
        if table == "core.calls":  # the replay window only: at most PEAK_WINDOW_DAYS days of calls
            df = _replay_window(spark, df)
        if cols:
            df = df.select(*cols)
        else:  # the model's column order (Spark puts partition keys last)
            df = df.select(*[f"`{c}`" for c in columns_in_model_order(spark, target.table(table))])
        df = _wall_clock(df)
        _duck_drop(con, table)
        if remote:  # Spark Connect: the rows come back as Arrow (the server's files need not be this machine's)
            con.register("_spark_rows", to_arrow(df))
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM _spark_rows")
            con.unregister("_spark_rows")
        else:
            path = os.path.join(folder, table)
            df.write.mode("overwrite").parquet(path)
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet('{path}/*.parquet')")
        out.append(table)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def _wall_clock(df):
    """Spark's TIMESTAMP columns (with the session's time zone, UTC) as TIMESTAMP_NTZ, the UTC wall
    clock DuckDB's model tables hold as TIMESTAMP: over Arrow or Parquet a TIMESTAMP column arrives
    in DuckDB as TIMESTAMP WITH TIME ZONE (seen through Spark Connect in issue 46:
    marts.unpriced_usage's first_seen and last_seen in the published file)."""
    fields = df.schema.fields
    if not any(f.dataType.typeName() == "timestamp" for f in fields):
        return df
    return df.selectExpr(*[f"CAST(`{f.name}` AS TIMESTAMP_NTZ) AS `{f.name}`" if f.dataType.typeName() == "timestamp"
                           else f"`{f.name}`" for f in fields])


def _replay_window(spark, df):
    """core.calls of the PEAK_WINDOW_DAYS days ending its last day (the window busiest_hours reads).

    SQL text, not ``pyspark.sql.functions``: on a Spark Connect session built by the Connect client's
    own builder, ``F.max`` looks for a local SparkContext and fails (warehouse/spark/build.py
    ``session``; issue 46 found this one through the Connect run in make test)."""
    import datetime as dt  # noqa: PLC0415

    from warehouse.outlook import PEAK_WINDOW_DAYS  # noqa: PLC0415

    last = df.selectExpr("max(day) AS last").collect()[0]["last"]
    if last is None:
        return df.limit(0)
    first = last - dt.timedelta(days=PEAK_WINDOW_DAYS - 1)
    return df.where(f"day BETWEEN DATE '{first.isoformat()}' AND DATE '{last.isoformat()}'")


def build_economics(con, models: Sequence, log_line: Callable[[str], None] = log.info) -> dict[str, int]:
    """The Python marts ``models`` (pipelines.defs.economics_assets.ECONOMICS, passed in by the
    caller: this module sits below pipelines/), built by the same functions as on DuckDB; table -> rows."""
    out = {}
    for e in models:
        built = e.builder(con)
        out[e.table] = built.rows
        for reason in built.skipped:
            log_line(f"{e.table}: left out: {reason}")
    return out


def to_spark(spark, con, tables: list[str], folder: str, target=None, *, remote: bool = False,
             journal=None) -> None:
    """The DuckDB build's ``tables`` (the economics marts) as managed Parquet tables in Spark's
    catalog: through a Parquet file when the session reads this machine's files (local), else
    through Arrow and the DataFrame API (Spark Connect). Each is written as ``<table>__new`` and
    swapped in (warehouse.spark.build.Journal: undone if the run is not published)."""
    from warehouse.spark.build import Target, _drop, _swap_in, from_arrow  # noqa: PLC0415

    target = target or Target()
    for table in tables:
        name = target.table(table)
        _drop(spark, f"{name}__new")
        if remote:
            from_arrow(spark, con.sql(f"SELECT * FROM {table}").to_arrow_table()).write.format("parquet").saveAsTable(f"{name}__new")
        else:
            path = os.path.join(folder, table)
            shutil.rmtree(path, ignore_errors=True)
            os.makedirs(path)
            con.execute(f"COPY {table} TO '{os.path.join(path, 'data.parquet')}' (FORMAT parquet)")
            spark.sql(f"CREATE TABLE {name}__new USING parquet AS SELECT * FROM parquet.`{path}`")
        _swap_in(spark, name, f"{name}__new", journal, partitioned=False)  # written without partitions above
    shutil.rmtree(folder, ignore_errors=True)


def drop_per_call(con) -> None:
    """The projected core.call_costs is not a published table: the per-call tables live in Spark.
    The view models whose tables the build holds (``marts.cost_per_task``, the old-named view of
    ``marts.task_cost_breakdown``) are created over them, so DuckDB readers (`thinktax sql`,
    `thinktax report`) find the same names after a Spark run as after a DuckDB one."""
    from warehouse import incremental  # noqa: PLC0415

    _duck_drop(con, "core.call_costs")
    _duck_drop(con, "core.calls")  # the replay window of marts.capacity_plan, as core.call_costs
    for m in load_tables():
        if m.view and all(_duck_kind(con, d) for d in m.deps):
            _duck_drop(con, m.table)
            con.execute(f"CREATE VIEW {m.table} AS {incremental.render(m.sql, None, full=True)}")
