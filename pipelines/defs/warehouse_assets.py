"""The asset graph: build -> ingest (staging) -> SQL models (core, marts) -> publish.

Wiring only: parsing lives in sources/, SQL in sql/, DuckDB handling in warehouse/. Every asset
writes the run's private build file; `published_warehouse` renames it over the published one
once every blocking check upstream has passed.
"""


import re
from importlib import resources

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from thinktax import progress
from warehouse.checks import SqlCheck, load_checks
from warehouse.ingest import Ingestor
from warehouse.transform import SqlModel, build, load_models

SETTINGS = dg.AssetKey(["ops", "settings"])
INGESTED = dg.AssetKey(["ops", "ingested_files"])
QUARANTINE = dg.AssetKey(["ops", "quarantine"])
PUBLISHED = dg.AssetKey(["ops", "published_warehouse"])


def key_of(table: str) -> dg.AssetKey:
    return dg.AssetKey(table.split("."))


def staging_tables() -> list[str]:
    """Every stg.* table the migrations declare."""
    names: set[str] = set()
    for f in resources.files("warehouse.migrations").iterdir():
        if f.name.endswith(".sql"):
            names.update(re.findall(r"CREATE TABLE IF NOT EXISTS (stg\.[a-z_0-9]+)", f.read_text(encoding="utf-8")))
    return sorted(names)


@dg.asset(key=SETTINGS, group_name="ingest", kinds={"duckdb"},
          description="Starts the run's build (a copy of the published warehouse) and records thinktax.toml as ops.settings.")
def warehouse_build(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    cfg = thinktax.config()
    build_ = thinktax.build(context.run_id)
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
    build_ = thinktax.build(context.run_id)
    from pathlib import Path

    with build_.connect() as con:
        summary = Ingestor(con, Path(thinktax.landing)).ingest(progress=lambda f: progress.report("ingest", f))
    new = summary.new_files
    for f in new:
        if f.status == "unreadable":
            context.log.warning(f"{f.file}: unreadable, quarantined: {f.message}")
    totals = {k: summary.total(k) for k in ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined")}
    context.log.info(f"ingested {len(new)} new file(s) of {len(summary.files)}: {totals}")
    for spec_key in [key_of(t) for t in staging_tables()] + [INGESTED, QUARANTINE]:
        yield dg.MaterializeResult(
            asset_key=spec_key,
            metadata={"new_files": len(new), **totals} if spec_key == INGESTED else {},
        )


def _sql_asset(model: SqlModel) -> dg.AssetsDefinition:
    @dg.asset(
        key=key_of(model.table),
        deps=[key_of(d) for d in sorted(model.deps)],
        group_name=model.schema,
        kinds={"duckdb", "sql"},
        description=model.description,
    )
    def _asset(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
        progress.report("build", model.table)
        with thinktax.build(context.run_id).connect() as con:
            rows = build(con, model)
        return dg.MaterializeResult(metadata={"dagster/row_count": rows})

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


sql_assets = [_sql_asset(m) for m in load_models()]
sql_checks = [_sql_check(c) for c in load_checks()]


@dg.asset(
    key=PUBLISHED,
    deps=[key_of(m.table) for m in load_models()] + [INGESTED, QUARANTINE],
    group_name="publish",
    kinds={"duckdb"},
    description="Atomically replaces the published warehouse with this run's build (after every blocking check passed).",
)
def published_warehouse(context: dg.AssetExecutionContext, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    build_ = thinktax.build(context.run_id)
    progress.report("publish", thinktax.warehouse)
    with build_.connect() as con:
        new_files = con.execute(
            "SELECT count(*) FROM ops.ingested_files WHERE ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = ?)",
            [build_.build_id],
        ).fetchall()[0][0]
    path = build_.publish(files_new=new_files, landing=thinktax.landing)
    return dg.MaterializeResult(metadata={"path": str(path), "bytes": path.stat().st_size, "build_id": build_.build_id})
