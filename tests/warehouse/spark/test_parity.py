"""Every core and mart table Spark builds from the rendered SQL equals DuckDB's (the scenario
and what "equal" means: tests/warehouse/spark/conftest.py)."""

from __future__ import annotations

import datetime as dt

import pytest

# the scenario fixture (three Spark builds of every model, two DuckDB builds) is set up inside the first test:
# measured 703 s at load average 8.5 on 2 cores (2026-12-03), over pytest's default 600 s
pytestmark = pytest.mark.timeout(1800)

from warehouse.sqltable import load_tables

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
