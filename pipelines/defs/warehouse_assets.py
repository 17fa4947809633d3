"""The asset graph: ingest (staging) -> models (core, marts) -> alert -> publish -> report.

Wiring only: parsing lives in sources/, SQL in sql/, DuckDB handling in warehouse/. Every asset
writes the run's private build file; `published_warehouse` renames it over the published one
once every blocking check upstream has passed. Where the landing files are parsed and the SQL
models built and checked is the engine's business (warehouse/engine.py: DuckDB, or Apache Spark
with `[engine] kind = "spark"` / `thinktax run --engine spark`): the same assets, materialisations
and checks either way; the DuckDB build stays the control plane (ops tables, the plan, the file
that is published).

Two steps do the data work, so a run pays Dagster's per-step cost (a process-local step
start, its events written to the instance's event log) a handful of times, not once per table:

* ``ingest_landing`` starts the build (``ops/settings``), ingests every new landing file into
  the staging tables, runs the blocking checks on them (Great Expectations, imported only when a
  table got new rows; the ingest accounting) and plans the rebuild once (warehouse/incremental.py,
  stored in ops.build_scope).
* ``warehouse_models`` materialises every SQL table and the two economics marts in dependency
  order, like dagster-dbt does for a dbt project: one ``multi_asset`` with ``can_subset=True``
  that yields one materialisation per table (row count, rebuild mode, schema and preview for
  marts) and runs each table's blocking SQL checks right after the table is built. The UI
  still shows every table, its lineage, partitions and metadata; selecting a few tables runs
  only those.

Daily partitions (UTC): every SQL table that reads day-bound staging (telemetry, bills; see
warehouse/days.py) is partitioned by day. The plan rebuilds only the models whose inputs
changed: the days the run's new files touch (late files included), the days explicitly asked
for (`thinktax run --days`, a backfill, the launchpad), closed over tasks; a new price sheet
rebuilds the days from the earliest price it changes, and only the models that read prices; a
run with nothing new rebuilds nothing and says so. A table the plan keeps is not materialised
again (its last materialisation is the run that built it); in a run that rebuilds nothing, its
checks are not run again either. The run records a materialisation for the
days it was asked for plus every day touched by the files it ingested.
"""


import datetime as dt
import os
import re
import warnings
from collections.abc import Iterator
from importlib import resources

import dagster as dg

from pipelines import progress
from pipelines.defs.alerts import DESCRIPTION as ALERT_DESCRIPTION, AlertConfig, breakeven_alert
from pipelines.defs.economics_assets import ANOMALY_CHECK, ANOMALY_CHECK_SPEC, ECONOMICS, SPEND_ANOMALIES, anomaly_check, result_metadata
from pipelines.defs.gx_checks import CHECK_NAME as GX_CHECK, gx_collect, gx_submit
from pipelines.defs.metadata import table_metadata
from pipelines.defs.resources import ThinktaxResource
from warehouse import comments, expectations, incremental, parts
from warehouse.checks import SqlCheck, load_checks
from warehouse.days import DAY_SOURCES, record_new_file_days, run_days
from warehouse.engine import Engine
from warehouse.rebuild import Rebuilt
from warehouse.transform import load_tables

SETTINGS = dg.AssetKey(["ops", "settings"])
INGESTED = dg.AssetKey(["ops", "ingested_files"])
QUARANTINE = dg.AssetKey(["ops", "quarantine"])
PUBLISHED = dg.AssetKey(["ops", "published_warehouse"])
ALERTS = dg.AssetKey(["ops", "alerts"])  # the break-even alert (pipelines/defs/alerts.py)

# First partition; days before it are still built, they just have no partition in the UI.
PARTITIONS_START = os.environ.get("THINKTAX_PARTITIONS_START", "2024-01-01")
DAILY = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC", end_offset=1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)
    # One run for a whole range of days (a backfill does not start one full rebuild per day).
    SINGLE_RUN = dg.BackfillPolicy.single_run()


def key_of(table: str) -> dg.AssetKey:
    return dg.AssetKey(table.split("."))


def staging_tables() -> list[str]:
    """Every stg.* table the migrations declare."""
    names: set[str] = set()
    for f in resources.files("warehouse.migrations").iterdir():
        if f.name.endswith(".sql"):
            names.update(re.findall(r"CREATE TABLE IF NOT EXISTS (stg\.[a-z_0-9]+)", f.read_text(encoding="utf-8")))
    return sorted(names)


def daily_tables() -> set[str]:
    """SQL tables that read day-bound staging tables, directly or through other models."""
    return incremental.downstream(load_tables(), set(DAY_SOURCES))


def requested_days(tags: dict[str, str]) -> list[dt.date]:
    """The daily partitions a run was launched for, from its tags (none for a plain run)."""
    if tags.get("dagster/partition"):
        try:
            return [dt.date.fromisoformat(tags["dagster/partition"])]
        except ValueError:
            return []
    start, end = tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")
    if not (start and end):
        return []
    try:
        first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    except ValueError:
        return []
    return [first + dt.timedelta(days=k) for k in range((last - first).days + 1)]


# Dagster records one event per asset per day (measured here: ~50 ms each on a loaded 2-core
# machine, so a year of history x 11 daily assets would add minutes). A run whose new files touch
# more days than this (a bulk import of history) records none of them; `--days` can, on purpose.
LATE_DAYS_MAX = int(os.environ.get("THINKTAX_LATE_DAYS_MAX", "31"))


def late_partitions(touched: list[dt.date], requested: set[str]) -> list[str]:
    """Touched days that are partitions but were not requested: re-materialised by this run too."""
    first = dt.date.fromisoformat(PARTITIONS_START[:10])
    last = dt.datetime.now(dt.UTC).date()  # end_offset=1: today's partition exists
    days = [d.isoformat() for d in touched if first <= d <= last and d.isoformat() not in requested]
    return days if len(days) <= LATE_DAYS_MAX else []


def _model_checks(table: str, checks, con, failed: set[str], engine: Engine):
    """The selected SQL checks of one model table, run where the engine built it, as check results;
    a table with a failing check is added to ``failed``."""
    for c in MODEL_CHECKS:
        if c.asset == table and dg.AssetCheckKey(key_of(c.asset), c.name) in checks:
            res = _check_result(c, con, engine)
            if not res.passed:
                failed.add(table)
            yield res


def _check_result(check: SqlCheck, con, engine: Engine | None = None) -> dg.AssetCheckResult:
    bad, sample = check.run(con) if engine is None else engine.check(con, check)
    return dg.AssetCheckResult(
        asset_key=key_of(check.asset), check_name=check.name, passed=bad == 0,
        metadata={"offending_rows": bad, "sample": dg.MetadataValue.json([{k: str(v) for k, v in r.items()} for r in sample])},
    )


class IngestConfig(dg.Config):
    """Run options of the plan (set by `thinktax run`, the schedule, the sensor or the launchpad)."""

    full_rebuild: bool = False  # rebuild every model whole (`thinktax run --full-rebuild`)
    # Rebuild the run's partitions even when no new file touches them (`--days`, a backfill). The
    # nightly schedule, the landing sensor and a plain `thinktax run` set it false: their day is
    # the default, not a request, and a run with nothing new rebuilds nothing.
    rebuild_requested_days: bool = True


def ingest_run_config(*, full_rebuild: bool = False, rebuild_requested_days: bool = True) -> dict:
    """The run config of the ingest step (merged into the job's run config by callers)."""
    return {"ops": {"ingest_landing": {"config": {
        "full_rebuild": full_rebuild, "rebuild_requested_days": rebuild_requested_days}}}}


_UNLANDED_CONFIGS = """
    SELECT m.model, m.config_json FROM stg.models m
    WHERE m.file_id = (SELECT max(file_id) FROM stg.models) AND m.config_json IS NOT NULL
      AND m.config_json NOT IN (SELECT path FROM stg.model_configs)
    ORDER BY m.model
"""

INGEST_KEYS = [SETTINGS, *(key_of(t) for t in staging_tables()), INGESTED, QUARANTINE]
INGEST_CHECKS = [c for c in load_checks() if key_of(c.asset) in INGEST_KEYS]


@dg.multi_asset(
    specs=[dg.AssetSpec(SETTINGS, group_name="ingest", kinds={"duckdb"},
                        description="Starts the run's build (a copy of the published warehouse) and records thinktax.toml as ops.settings.")]
    + [dg.AssetSpec(key_of(t), deps=[SETTINGS], group_name="ingest", kinds={"duckdb"}) for t in staging_tables()]
    + [dg.AssetSpec(INGESTED, deps=[SETTINGS], group_name="ingest", kinds={"duckdb"},
                    description="One row per landed file: rows in = loaded + duplicate + quarantined."),
       dg.AssetSpec(QUARANTINE, deps=[SETTINGS], group_name="ingest", kinds={"duckdb"},
                    description="One row per rejected record, with file, line, field and reason.")],
    check_specs=[dg.AssetCheckSpec(GX_CHECK, asset=key_of(t), blocking=True,
                                   description=f"Great Expectations suite on the rows this run added to {t} (a 200k-row sample above that).")
                 for t in staging_tables()]
    + [dg.AssetCheckSpec(c.name, asset=key_of(c.asset), blocking=True, description=c.description) for c in INGEST_CHECKS],
    name="ingest_landing",
)
def ingest_landing(context: dg.AssetExecutionContext, config: IngestConfig, thinktax: ThinktaxResource) -> Iterator:
    """Start the build, ingest every new landing file (by content hash), check the new rows, plan the rebuild."""
    cfg = thinktax.config()
    build_ = thinktax.build(context.run.run_id)
    engine = thinktax.engine(build_, cfg)
    try:
        yield from _ingest(context, config, thinktax, cfg, build_, engine)
    except BaseException:
        thinktax.end_engine(published=False)
        raise


def _ingest(context, config, thinktax, cfg, build_, engine: Engine) -> Iterator:
    progress.report("prepare", str(build_.path))
    build_.start(cfg.settings_row(), keep_builds=cfg.warehouse.keep_builds)
    with build_.connect() as con:
        # a Parquet file of the published build deleted or truncated: stop, naming it (a full rebuild
        # rewrites every SQL table, so it checks only the staging tables' files)
        parts.check(con, full_rebuild=config.full_rebuild)
    yield dg.MaterializeResult(asset_key=SETTINGS, metadata={"build_file": str(build_.path), "config": cfg.source or "defaults",
                                                             "engine": engine.kind})
    with build_.connect() as con, expectations.worker_scope():
        # the build is thrown away unless the whole run succeeds: files are committed in groups
        summary = engine.ingest(con, thinktax.landing_source, progress=lambda f: progress.report("ingest", f),
                                on_new=expectations.start_worker)
        parts.flush(con, build_.build_id)  # the calls it ingested, as one more Parquet file of stg.requests
        # the new rows go to Great Expectations now: the worker validates them while the step plans
        validations = gx_submit(con, build_.build_id, staging_tables())
        touched = record_new_file_days(con, build_.build_id)
        tags = dict(context.run.tags)
        scope = incremental.plan(con, build_.build_id, full=config.full_rebuild,
                                 extra_days=requested_days(tags) if config.rebuild_requested_days else [],
                                 present=engine.present())
        engine.prepare(con)  # the small tables the engine's models read (ops; staging on Spark)
        new = summary.new_files
        for f in new:
            if f.status == "unreadable":
                context.log.warning(f"{f.file}: unreadable, quarantined: {f.message}")
            if f.unknown_fields:  # issue 44: keys its parser does not read (ops.unknown_fields)
                from sources.fieldguard import summary_line  # noqa: PLC0415

                rows = [(u["path"], 1, u["records"], u["token_like"], u["nonzero_records"]) for u in f.unknown_fields]
                context.log.warning(f"{f.file}: {summary_line(rows, 1)}")
        # a config_json in the models.csv in force that names no landed file: said, never silently ignored
        unlanded = con.execute(_UNLANDED_CONFIGS).fetchall()
        for model, path in unlanded:
            context.log.warning(f"catalog/models.csv: model {model}: config_json {path!r} names no landed file "
                                f"(expected catalog/{path}); it is sized from models.csv's own columns, if any")
        totals = {k: summary.total(k) for k in ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined")}
        context.log.info(f"ingested {len(new)} new file(s) of {len(summary.files)}: {totals}")
        context.log.info(f"engine: {engine.kind}; " + scope.summary())
        days = {"engine": engine.kind, "days_touched": len(touched), "rebuild": "full" if scope.full else "incremental",
                "rebuild_reason": scope.reason, "days_rebuilt": len(scope.days),
                "tables_rebuilt": "all" if scope.tables is None else len(scope.tables),
                "first_day_touched": str(touched[0]) if touched else "", "last_day_touched": str(touched[-1]) if touched else ""}
        for t in staging_tables():
            yield dg.MaterializeResult(asset_key=key_of(t))
        yield dg.MaterializeResult(asset_key=INGESTED, metadata={
            "new_files": len(new), **totals, **days,
            "config_json_not_landed": dg.MetadataValue.json([{"model": m, "config_json": p} for m, p in unlanded])})
        yield dg.MaterializeResult(asset_key=QUARANTINE)
        yield from gx_collect(validations, context.log)
        for check in INGEST_CHECKS:
            yield _check_result(check, con)


# -- the models: one step for every SQL table and the economics marts ------------------------
MODELS = load_tables()
DAILY_TABLES = daily_tables()
MODEL_CHECKS = [c for c in load_checks() if c not in INGEST_CHECKS]
MODEL_KEYS = [key_of(m.table) for m in MODELS] + [e.key for e in ECONOMICS]  # the tables of the models step


def _model_specs() -> list[dg.AssetSpec]:
    specs = [dg.AssetSpec(key_of(m.table), deps=[key_of(d) for d in sorted(m.deps)], group_name=m.schema,
                          kinds={"duckdb", "sql"}, description=m.description, skippable=True,
                          partitions_def=DAILY if m.table in DAILY_TABLES else None)
             for m in MODELS]
    specs += [dg.AssetSpec(e.key, deps=[key_of(d) for d in sorted(e.deps)], group_name="marts",
                           kinds={"duckdb", "python"}, description=e.description, skippable=True)
              for e in ECONOMICS]
    specs += [
        dg.AssetSpec(ALERTS, deps=[*MODEL_KEYS, INGESTED, QUARANTINE], group_name="publish", kinds={"duckdb"},
                     description=ALERT_DESCRIPTION, skippable=True),
        # every staging table too: a failing blocking check on one that no SQL table reads must still stop the publish
        dg.AssetSpec(PUBLISHED, deps=MODEL_KEYS + [key_of(t) for t in staging_tables()] + [INGESTED, QUARANTINE, ALERTS],
                     group_name="publish", kinds={"duckdb"}, skippable=True,
                     description="Atomically replaces the published warehouse with this run's build (after every blocking check passed)."),
    ]
    return specs


with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)  # backfill_policy

    @dg.multi_asset(
        specs=_model_specs(),
        check_specs=[dg.AssetCheckSpec(c.name, asset=key_of(c.asset), blocking=True, description=c.description)
                     for c in MODEL_CHECKS] + [ANOMALY_CHECK_SPEC],
        can_subset=True,
        name="warehouse_models",
        backfill_policy=SINGLE_RUN,
    )
    def warehouse_models(context: dg.AssetExecutionContext, config: AlertConfig, thinktax: ThinktaxResource) -> Iterator:
        """Rebuild the selected models in dependency order by the run's plan, each table's checks
        right after it; then the alert and the publish, unless a blocking check failed."""
        build_ = thinktax.build(context.run.run_id)
        engine = thinktax.engine(build_)
        try:
            yield from _models(context, config, thinktax, build_, engine)
        except BaseException:
            thinktax.end_engine(published=False)
            raise


def _models(context, config, thinktax, build_, engine: Engine) -> Iterator:
    selected = context.selected_asset_keys
    checks = context.selected_asset_check_keys
    requested = {d.isoformat() for d in requested_days(dict(context.run.tags))}
    failed: set[str] = set()  # tables whose blocking check failed: nothing downstream is built
    with build_.connect() as con:
        scope = incremental.current(con, build_.build_id)
        touched = run_days(con, build_.build_id)
        late = late_partitions(touched, requested)
        # a run that rebuilds nothing: no table changed since the run that built it, whose
        # checks passed (it was published), so they are not run again
        nothing = not scope.full and scope.tables is not None and not scope.tables
        with_new_rows = incremental.tables_with_new_rows(con, build_.build_id)
        for e in ECONOMICS:
            if e.warm is not None and e.key in selected and _rebuilds(con, e, scope, set(scope.tables or ()) | with_new_rows):
                e.warm()
        kept = 0
        for m in MODELS:
            if key_of(m.table) not in selected:
                continue
            if m.deps & failed:
                failed.add(m.table)
                context.log.warning(f"{m.table}: not built, an input failed a blocking check")
                continue
            progress.report("build", m.table)
            done = engine.build(con, m, scope, build_.build_id)
            if done.mode == "kept":
                # the published table, unchanged (but its build_id): not materialised again --
                # its last materialisation is the run that built it
                kept += 1
                if not nothing:
                    yield from _model_checks(m.table, checks, con, failed, engine)
                continue
            meta = built_metadata(con, m, done, engine.kind)
            daily = m.table in DAILY_TABLES
            if daily and touched:
                # the days that late files touched were replaced too (whole table or those days): say so
                for day in late:
                    context.log_event(dg.AssetMaterialization(asset_key=key_of(m.table), partition=day,
                                                              metadata=late_day_metadata(done)))
                meta |= {"days_touched_by_new_files": len(touched), "late_days_recorded": len(late)}
            yield dg.MaterializeResult(asset_key=key_of(m.table), metadata=meta)
            yield from _model_checks(m.table, checks, con, failed, engine)
        if failed:
            thinktax.end_engine(published=False)
            return  # Dagster fails the step on the failed blocking check; nothing is alerted or published
        # the economics (models/, Python on small rows) and the alert read the DuckDB build
        engine.to_control(con)
        # an economics mart is rebuilt when a model it reads was, a staging table it reads got
        # rows in this run (catalog files such as substitutions.csv), or an economics mart it reads was
        changed = set(scope.tables or ()) | with_new_rows
        economics_built: list[str] = []
        for e in ECONOMICS:
            if e.key not in selected:
                continue
            if e.deps & failed:
                continue
            if _rebuilds(con, e, scope, changed):
                changed.add(e.table)
                progress.report("build", e.table)
                yield dg.MaterializeResult(asset_key=e.key, metadata=result_metadata(context, e.builder(con)))
                economics_built.append(e.table)
                if e.key == SPEND_ANOMALIES and dg.AssetCheckKey(SPEND_ANOMALIES, ANOMALY_CHECK) in checks:
                    yield anomaly_check(con)
            else:
                kept += 1  # kept as published: not materialised again (as the SQL tables above)
        engine.from_control(con, economics_built)
    if kept and kept == len(selected & set(MODEL_KEYS)):
        context.log.info("rebuild: nothing (no new rows, no requested days): every table kept as published")
    if ALERTS in selected:
        yield dg.MaterializeResult(asset_key=ALERTS, metadata=breakeven_alert(context, config, thinktax).metadata)
    if PUBLISHED in selected:
        yield dg.MaterializeResult(asset_key=PUBLISHED, metadata=_publish(build_, thinktax, engine))


def built_metadata(con, m, done: Rebuilt, kind: str) -> dict[str, object]:
    """The materialisation metadata of model ``m`` that engine ``kind`` built (``done``): marts show
    their schema (with column docs) and a preview of their head in the UI (from the DuckDB build:
    on another engine the row count and the rebuild mode)."""
    meta = (table_metadata(con, m.table, rows=done.rows) if m.schema == "marts" and kind == "duckdb"
            else {"dagster/row_count": done.rows})
    return meta | {"engine": kind, "rebuild": done.describe()}


def late_day_metadata(done: Rebuilt) -> dict[str, object]:
    """The metadata of a day partition a late file touched, re-materialised with the table."""
    return {"reason": "day touched by a file ingested in this run", "dagster/row_count": done.rows}


def _rebuilds(con, e, scope, changed: set[str]) -> bool:
    """Whether economics mart ``e`` is rebuilt, ``changed`` being the tables rebuilt or given new
    rows in this run. A mart the published warehouse lacks (built before it existed, or by a
    direct build of the SQL tables only) is built, never "kept"."""
    return bool(scope.full or scope.tables is None or e.deps & changed
                or not parts.has_table(con, e.table, views=False, attached=False))


def _publish(build_, thinktax: ThinktaxResource, engine: Engine) -> dict:
    """Column docs into the build, then rename it over the published warehouse (and publish the
    engine's tables with it)."""
    progress.report("publish", str(thinktax.warehouse_file))
    with build_.connect() as con:
        engine.finish(con)  # what the published file must not hold (Spark: the per-call projection)
        comments.apply(con)  # column docs (COMMENT ON) for BI tools; every CREATE OR REPLACE dropped them
        new_files = con.execute(
            "SELECT count(*) FROM ops.ingested_files WHERE ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = ?)",
            [build_.build_id],
        ).fetchall()[0][0]
    path = build_.publish(files_new=new_files, landing=str(thinktax.landing_source))
    engine.publish()
    thinktax.end_engine(published=True)
    return {"path": str(path), "bytes": path.stat().st_size, "build_id": build_.build_id, "engine": engine.kind}
