"""Blocking Great Expectations checks, one per staging table (suites: warehouse/expectations.py).

Each check validates the rows this run added to its ``stg.*`` table, in the run's build file. It
is blocking: a failure stops everything downstream of the table (core, marts, publish), so the
published warehouse stays as it was and ``thinktax run`` exits non-zero naming the check and
showing a sample of the offending rows. Every expectation's result (unexpected count, sample
values and rows) goes into the check's metadata, shown in the Dagster UI.

Great Expectations is imported inside the check, and only when the table has new rows.
"""

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from pipelines.defs.warehouse_assets import key_of, staging_tables
from warehouse.expectations import first_new_file_id, run_started_at, validate_new_rows

CHECK_NAME = "gx_suite"


def _metadata(res) -> dict:
    return {
        "rows_new": dg.MetadataValue.int(res.rows_new),
        "rows_validated": dg.MetadataValue.int(res.rows_validated),
        "sampled": dg.MetadataValue.bool(res.sampled),
        "scope": dg.MetadataValue.text(res.scope),
        "gx_seconds": dg.MetadataValue.float(round(res.seconds, 3)),
        "failed_expectations": dg.MetadataValue.int(len(res.failed)),
        "offending_rows": dg.MetadataValue.int(res.offending_rows),
        "sample": dg.MetadataValue.json(res.sample()),
        "expectations": dg.MetadataValue.md(res.summary_table() if res.results else res.scope),
        "results": dg.MetadataValue.json([
            {"expectation": r.label, "success": r.success, "unexpected_count": r.unexpected_count,
             "unexpected_percent": r.unexpected_percent, "sample_values": r.sample_values, "why": r.why,
             **({"error": r.error} if r.error else {})}
            for r in res.results
        ]),
    }


def _gx_check(table: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=key_of(table),
        name=CHECK_NAME,
        blocking=True,
        description=f"Great Expectations suite on the rows this run added to {table} (a 200k-row sample above that).",
    )
    def _check(context: dg.AssetCheckExecutionContext, thinktax: ThinktaxResource) -> dg.AssetCheckResult:
        build = thinktax.build(context.run.run_id)
        with build.connect() as con:
            first = first_new_file_id(con, build.build_id)
            now = run_started_at(con, build.build_id)
            res = validate_new_rows(con, table, first, now=now)
        if not res.success:
            context.log.error(f"{table}: {len(res.failed)} expectation(s) failed; sample: {res.sample(5)}")
        return dg.AssetCheckResult(passed=res.success, metadata=_metadata(res))

    return _check


gx_checks = [_gx_check(t) for t in staging_tables()]
