"""Every core and mart table Spark builds from the rendered SQL equals DuckDB's (the scenario
and what "equal" means: tests/warehouse/spark/conftest.py); and the journalled publish guarantee
on the scenario's staging (docs/operations.md, "Publish guarantee on Spark").

Every test that uses the scenario is in this file: ``make test`` runs each file whole in one
xdist worker, so the scenario (a session fixture, minutes to build) is built once, not once per
worker (tests/warehouse/spark/test_publish.py has the local-session half of the guarantee).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import duckdb
import pytest

# the scenario fixture (three Spark builds of every model, two DuckDB builds) is set up inside the first test:
# measured 703 s at load average 8.5 on 2 cores (2026-12-03), over pytest's default 600 s
pytestmark = pytest.mark.timeout(1800)

from warehouse.sqltable import load_tables  # noqa: E402

MODELS = [m.table for m in load_tables()]
DEMO_DAYS = 6  # tests/warehouse/spark/conftest.py


@pytest.mark.slow
@pytest.mark.parametrize("table", MODELS)
def test_spark_full_build_equals_duckdb(scenario, table):
    ok, why = scenario.history[table]
    assert ok, f"{table}: Spark's full build != DuckDB's: {why}"


@pytest.mark.slow
@pytest.mark.parametrize("table", MODELS)
def test_spark_incremental_build_equals_a_full_build(scenario, table):
    """The nightly run on Spark (DuckDB's plan, partitions replaced) gives a full build's rows."""
    ok, why = scenario.nightly[table]
    assert ok, f"{table}: Spark's incremental build != the full build: {why}"


@pytest.mark.slow
@pytest.mark.parametrize("table", MODELS)
def test_spark_incremental_run_equals_a_full_spark_run(scenario, table):
    """The nightly run on Spark, partitions replaced, against the same staging built whole on Spark
    (databases core_full / marts_full) in the same session."""
    ok, why = scenario.incremental_vs_full[table]
    assert ok, f"{table}: Spark's incremental build != Spark's full build: {why}"


@pytest.mark.slow
def test_the_nightly_plan_was_incremental_and_reached_back(scenario):
    """The plan took the incremental path and includes the history days the late file touches
    (the task's earlier first call on day 0, the midnight-crossing call's day 2) and the new day."""
    scope = scenario.scope
    start = dt.date(2026, 6, 15)
    assert not scope.full, scope.reason
    assert {start, start + dt.timedelta(days=2), start + dt.timedelta(days=DEMO_DAYS - 1)} <= set(scope.days)
    # incremental tables are partitioned by day on Spark: one partition per day with calls
    assert scenario.call_costs_partitions == DEMO_DAYS


@pytest.mark.slow
def test_the_session_keeps_decimal_precision_and_utc(spark):
    """With Spark's default allowPrecisionLoss=true per-call costs move by micro-dollars and every
    check still passes: the session must have it off. 0.123456789012345 x 3 in DECIMAL(38,15)
    stays exact (with precision loss on, the product's scale is cut to 6: 0.370370)."""
    assert spark.conf.get("spark.sql.decimalOperations.allowPrecisionLoss") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    (v,) = spark.sql("SELECT CAST(0.123456789012345 AS DECIMAL(38,15)) * CAST(3 AS DECIMAL(38,0)) AS v").collect()[0]
    assert str(v) == "0.370370367037035"


# -- the publish guarantee on Spark, journalled: a session whose catalog outlives the run (Spark
# Connect, a long-lived session). Every change a run makes to the Spark tables is journalled
# (warehouse.spark.build.Journal) -- a full model is built as ``<table>__new`` and swapped in by
# renames, an incremental model's planned days are copied aside before they are replaced -- so a run
# that is not published (a check failed, the run failed) is put back exactly as it was, and a
# published one leaves no side tables.
def _fingerprint(spark, tables: list[str]) -> dict[str, tuple]:
    """Per table: its row count and the sum of a 64-bit hash of every row (order-free)."""
    out = {}
    for t in tables:
        cols = ", ".join(f"`{c}`" for c in spark.table(t).columns if c != "build_id")
        (row,) = spark.sql(f"SELECT count(*), sum(CAST(xxhash64({cols}) AS DECIMAL(38, 0))) FROM {t}").collect()
        out[t] = tuple(row)
    return out


def _side_tables(spark, dbs: tuple[str, ...]) -> list[str]:
    return [f"{db}.{t.name}" for db in dbs for t in spark.catalog.listTables(db)
            if t.name.endswith(("__new", "__prev", "__newdays", "__prevdays"))]


def test_a_run_that_is_not_published_is_put_back_and_a_published_one_leaves_no_side_tables(scenario, spark):
    from warehouse.spark.build import Journal, Target, build
    from warehouse.spark.render import load_spark_tables

    # the models daily_spend needs (full and incremental ones), on a copy of the scenario's staging
    models = {m.table: m for m in load_spark_tables()}
    need, todo = set(), ["marts.daily_spend"]
    while todo:
        t = todo.pop()
        if t in models and t not in need:
            need.add(t)
            todo.extend(models[t].deps)
    subset = [m for m in load_spark_tables() if m.table in need]
    assert {m.incremental is None for m in subset if not m.view} == {True, False}  # both kinds are in it
    target = Target((("stg", "jr_stg"), ("ops", "jr_ops"), ("core", "jr_core"), ("marts", "jr_marts")))
    for db in ("jr_stg", "jr_ops", "jr_core", "jr_marts"):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    # from the scenario's staging files, not the catalog: another test of the session may have
    # unregistered the stg and ops tables (tests/warehouse/spark/test_spark_ingest.py); the build
    # reads ops.settings, so the ops tables are copied too (the stop-33 CI failure: `ops`.`settings`
    # not found when test_spark_ingest ran first in the same worker)
    for schema in ("stg", "ops"):
        for folder in sorted(Path(scenario.staging).glob(f"{schema}.*")):
            spark.sql(f"CREATE TABLE jr_{schema}.{folder.name.removeprefix(schema + '.')} USING parquet AS "
                      f"SELECT * FROM parquet.`{folder}`")
    assert spark.catalog.tableExists("jr_ops.settings")
    tables = [target.table(m.table) for m in subset if not m.view]

    for m in subset:  # state A: built whole
        build(spark, m, None, target)
    a = _fingerprint(spark, tables)

    # more calls on the last planned day (copies of that day's calls under new request ids)
    scope = scenario.scope
    day = max(scope.days)
    assert not scope.full and day in scope.days
    cols = spark.table("jr_stg.requests").columns
    select = ", ".join("concat(request_id, '-again') AS request_id" if c == "request_id" else f"`{c}`" for c in cols)
    spark.sql(f"INSERT INTO jr_stg.requests SELECT {select} FROM jr_stg.requests WHERE to_date(ts) = DATE '{day}'")

    journal = Journal(spark)
    for m in subset:  # the nightly plan's days replaced, journalled
        build(spark, m, scope, target, journal)
    b = _fingerprint(spark, tables)
    changed = {t for t in tables if a[t] != b[t]}
    assert {"jr_core.calls", "jr_marts.daily_spend"} <= changed, changed
    assert _side_tables(spark, ("jr_core", "jr_marts"))  # the old versions are kept until commit

    journal.rollback()  # not published: every table as it was
    assert _fingerprint(spark, tables) == a
    assert _side_tables(spark, ("jr_core", "jr_marts")) == []

    journal = Journal(spark)
    for m in subset:
        build(spark, m, scope, target, journal)
    journal.commit()  # published: the new tables stay, nothing else
    assert _fingerprint(spark, tables) == b
    assert _side_tables(spark, ("jr_core", "jr_marts")) == []


def test_only_this_file_asks_for_the_scenario():
    """The scenario is built once per xdist worker that asks for it (see the module docstring)."""
    import ast

    users = set()
    for f in sorted(Path(__file__).parent.glob("test_*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and \
                    any(a.arg == "scenario" for a in node.args.args):
                users.add(f.name)
    assert users == {Path(__file__).name}


# issue 26 item 1: Spark reads the DuckDB warehouse's Parquet parts in place. With the DuckDB ingest a
# Spark run's staging tables come from the DuckDB build, and stg.requests is Parquet already: its
# files are hard-linked into Spark's staging folder instead of written again; only the rows the
# build has not written out yet (its pending table) are one more file.
def test_a_spark_run_reads_the_parquet_files_of_stg_requests_in_place(scenario):
    staged = Path(scenario.staging) / "stg.requests"
    linked = sorted(staged.glob("part_*.parquet"))
    published = sorted((scenario.parts_dir / "stg.requests").rglob("*.parquet"))
    assert len(linked) == len(published) == 1  # build one's calls, written out when it was published
    assert {os.stat(f).st_ino for f in linked} == {os.stat(f).st_ino for f in published}  # the same files
    # the nightly's new calls (still in its pending table when Spark got its staging): one more file
    assert (staged / "pending.parquet").is_file()
    with duckdb.connect() as con:
        got = con.execute("SELECT count(*), sum(thinking_tokens) FROM read_parquet(?, union_by_name = true)",
                          [[str(f) for f in sorted(staged.glob("*.parquet"))]]).fetchall()[0]
        (pending,) = con.execute("SELECT count(*) FROM read_parquet(?)", [str(staged / "pending.parquet")]).fetchall()[0]
    assert got == scenario.stg_requests and 0 < pending < got[0]
