"""The asset graph: build -> ingest (staging) -> SQL models (core, marts) -> publish.

Wiring only: parsing lives in sources/, SQL in sql/, DuckDB handling in warehouse/. Every asset
writes the run's private build file; `published_warehouse` renames it over the published one
once every blocking check upstream has passed.

Daily partitions (UTC): every SQL model that reads day-bound staging (telemetry, bills; see
warehouse/days.py) is partitioned by day. After ingest the run plans its rebuild once
(warehouse/incremental.py, stored in ops.build_scope): the days it was asked for (`thinktax run
--days`, a schedule tick, a backfill) plus every day touched by the files it ingested (late files
included), closed over tasks. Incremental models replace the rows of those days from the
de-duplicated staging tables, the others are recreated whole; a new price sheet, nodes.csv,
changed settings or changed SQL make the rebuild full. Either way a run for any set of days
replaces those days (never duplicates them); it records a materialisation for the days it was
asked for plus every day touched by the files it ingested.
"""


import datetime as dt
import os
import re
import warnings
from importlib import resources

import dagster as dg

from pipelines.defs.metadata import table_metadata
from pipelines.defs.resources import ThinktaxResource
from thinktax import progress
from warehouse import comments, incremental
from warehouse.checks import SqlCheck, load_checks
from warehouse.days import DAY_SOURCES, record_new_file_days, run_days
from warehouse.ingest import Ingestor
from warehouse.transform import SqlModel, build, load_models

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
    """SQL models that read day-bound staging tables, directly or through other models."""
    daily = set(DAY_SOURCES)
    for m in load_models():  # dependency order: upstream models are classified first
        if m.deps & daily:
            daily.add(m.table)
    return daily - set(DAY_SOURCES)


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


def partition_days(context: dg.AssetExecutionContext) -> set[str]:
    """The partition keys this run was launched for (none for a plain `thinktax run`)."""
    if context.has_partition_key_range:
        return set(context.partition_keys)
    return set()


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


@dg.asset(key=SETTINGS, group_name="ingest", kinds={"duckdb"},
          description="Starts the run's build (a copy of the published warehouse) and records thinktax.toml as ops.settings.")
def warehouse_build(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    cfg = thinktax.config()
    build_ = thinktax.build(context.run.run_id)
    progress.report("prepare", str(build_.path))
    build_.start(cfg.settings_row())
    return dg.MaterializeResult(metadata={"build_file": str(build_.path), "config": cfg.source or "defaults"})


@dg.multi_asset(
    specs=[dg.AssetSpec(key_of(t), deps=[SETTINGS], group_name="ingest", kinds={"duckdb"}) for t in staging_tables()]
    + [dg.AssetSpec(INGESTED, deps=[SETTINGS], group_name="ingest", kinds={"duckdb"},
                    description="One row per landed file: rows in = loaded + duplicate + quarantined."),
       dg.AssetSpec(QUARANTINE, deps=[SETTINGS], group_name="ingest", kinds={"duckdb"},
                    description="One row per rejected record, with file, line, field and reason.")],
    name="ingest_landing",
)
def ingest_landing(context: dg.AssetExecutionContext, thinktax: ThinktaxResource):
    """Ingest every new landing file (by content hash) into the staging tables."""
    build_ = thinktax.build(context.run.run_id)
    from pathlib import Path

    with build_.connect() as con:
        summary = Ingestor(con, thinktax.landing_dir).ingest(progress=lambda f: progress.report("ingest", f))
        touched = record_new_file_days(con, build_.build_id)
        tags = dict(context.run.tags)
        scope = incremental.plan(con, build_.build_id, extra_days=requested_days(tags),
                                 full=tags.get(incremental.FULL_REBUILD_TAG, "").lower() in ("1", "true", "yes"))
    new = summary.new_files
    for f in new:
        if f.status == "unreadable":
            context.log.warning(f"{f.file}: unreadable, quarantined: {f.message}")
    totals = {k: summary.total(k) for k in ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined")}
    context.log.info(f"ingested {len(new)} new file(s) of {len(summary.files)}: {totals}")
    context.log.info("rebuild: " + ("full (" + scope.reason + ")" if scope.full
                                    else f"incremental, {len(scope.days)} day(s)" + (f" {scope.days[0]}..{scope.days[-1]}" if scope.days else "")))
    days = {"days_touched": len(touched), "rebuild": "full" if scope.full else "incremental",
            "rebuild_reason": scope.reason, "days_rebuilt": len(scope.days),
            "first_day_touched": str(touched[0]) if touched else "", "last_day_touched": str(touched[-1]) if touched else ""}
    for spec_key in [key_of(t) for t in staging_tables()] + [INGESTED, QUARANTINE]:
        yield dg.MaterializeResult(
            asset_key=spec_key,
            metadata={"new_files": len(new), **totals, **days} if spec_key == INGESTED else {},
        )


def _sql_asset(model: SqlModel, daily: bool) -> dg.AssetsDefinition:
    @dg.asset(
        key=key_of(model.table),
        deps=[key_of(d) for d in sorted(model.deps)],
        group_name=model.schema,
        kinds={"duckdb", "sql"},
        description=model.description,
        partitions_def=DAILY if daily else None,
        backfill_policy=SINGLE_RUN if daily else None,
    )
    def _asset(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
        progress.report("build", model.table)
        build_ = thinktax.build(context.run.run_id)
        with build_.connect() as con:
            scope = incremental.current(con, build_.build_id)
            rows = build(con, model, scope)
            touched = run_days(con, build_.build_id) if daily else []
            # marts show their schema (with column docs) and a preview of their head in the UI
            meta = table_metadata(con, model.table, rows=rows) if model.schema == "marts" else {"dagster/row_count": rows}
            meta["rebuild"] = "full" if scope.is_full(model.table) or model.incremental is None else \
                f"incremental: {len(scope.model_days(model.halo))} day(s) replaced"
        # The days that late files touched were replaced too (whole table or those days): say so.
        late = late_partitions(touched, partition_days(context))
        for day in late:
            context.log_event(dg.AssetMaterialization(
                asset_key=context.asset_key, partition=day,
                metadata={"reason": "day touched by a file ingested in this run", "dagster/row_count": rows}))
        if touched:
            meta |= {"days_touched_by_new_files": len(touched), "late_days_recorded": len(late)}
        return dg.MaterializeResult(metadata=meta)

    return _asset


def _sql_check(check: SqlCheck) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=key_of(check.asset), name=check.name, blocking=True, description=check.description)
    def _check(context: dg.AssetCheckExecutionContext, thinktax: ThinktaxResource) -> dg.AssetCheckResult:
        with thinktax.build(context.run.run_id).connect() as con:
            bad, sample = check.run(con)
        return dg.AssetCheckResult(
            passed=bad == 0,
            metadata={"offending_rows": bad, "sample": dg.MetadataValue.json([{k: str(v) for k, v in r.items()} for r in sample])},
        )

    return _check


with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)  # backfill_policy
    sql_assets = [_sql_asset(m, m.table in daily_tables()) for m in load_models()]
sql_checks = [_sql_check(c) for c in load_checks()]


@dg.asset(
    key=PUBLISHED,
    # every staging table too: a failing blocking check on one that no SQL model reads must still stop the publish
    deps=[key_of(m.table) for m in load_models()] + [key_of(t) for t in staging_tables()]
    + [INGESTED, QUARANTINE, ALERTS, dg.AssetKey(["marts", "gpu_sizing"]), dg.AssetKey(["marts", "self_host_breakeven"]),
       *[dg.AssetKey(["marts", t]) for t in ("spend_forecast", "deployment_offers", "peak_capacity",
                                              "substitution_breakeven", "breakeven_outlook")]],
    group_name="publish",
    kinds={"duckdb"},
    description="Atomically replaces the published warehouse with this run's build (after every blocking check passed).",
)
def published_warehouse(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    build_ = thinktax.build(context.run.run_id)
    progress.report("publish", str(thinktax.warehouse_file))
    with build_.connect() as con:
        comments.apply(con)  # column docs (COMMENT ON) for BI tools; every CREATE OR REPLACE dropped them
        new_files = con.execute(
            "SELECT count(*) FROM ops.ingested_files WHERE ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = ?)",
            [build_.build_id],
        ).fetchall()[0][0]
    path = build_.publish(files_new=new_files, landing=str(thinktax.landing_dir))
    return dg.MaterializeResult(metadata={"path": str(path), "bytes": path.stat().st_size, "build_id": build_.build_id})
