"""Blocking Great Expectations checks, one per staging table (suites: warehouse/expectations.py).

They run inside the ingest step (pipelines/defs/warehouse_assets.py, ``ingest_landing``'s
check specs), right after the files are ingested. Each check validates the rows this run added to its ``stg.*`` table, in the run's build file. It
is blocking: a failure stops everything downstream of the table (core, marts, publish), so the
published warehouse stays as it was and ``thinktax run`` exits non-zero naming the check and
showing a sample of the offending rows. Every expectation's result (unexpected count, sample
values and rows) goes into the check's metadata, shown in the Dagster UI.

Great Expectations is imported only when a table has new rows: in the GX worker process that the
ingest started at its first new file (warehouse/expectations.py ``start_worker``), or here.
"""

from collections.abc import Callable

import dagster as dg

from warehouse.expectations import SuiteResult, first_new_file_id, run_started_at, submit

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


def gx_submit(con, build_id: str, tables: list[str]) -> list[tuple[str, Callable[[], SuiteResult]]]:
    """Read the rows this build added to each staging table and start their validation (in the
    GX worker, if the ingest started one: it validates while this step goes on with its plan).
    The build's first new file and start time are looked up once for all tables."""
    first = first_new_file_id(con, build_id)
    now = run_started_at(con, build_id)
    return [(table, submit(con, table, first, now=now)) for table in tables]


def gx_collect(pending: list[tuple[str, Callable[[], SuiteResult]]], log) -> list[dg.AssetCheckResult]:
    """The ``gx_suite`` check result of each table submitted by :func:`gx_submit`."""
    return [_gx_check_result(table, finish(), log) for table, finish in pending]


def _gx_check_result(table: str, res, log) -> dg.AssetCheckResult:
    if not res.success:
        log.error(f"{table}: {len(res.failed)} expectation(s) failed; sample: {res.sample(5)}")
    return dg.AssetCheckResult(asset_key=dg.AssetKey(table.split(".")), check_name=CHECK_NAME,
                               passed=res.success, metadata=_metadata(res))
