"""Every core and mart table Spark builds from the rendered SQL equals DuckDB's (the scenario
and what "equal" means: tests/spark/conftest.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from warehouse.sqlmodel import load_models

MODELS = [m.table for m in load_models()]
DEMO_DAYS = 6  # tests/spark/conftest.py


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
    parts = scenario.spark.sql("SHOW PARTITIONS core.call_costs").collect()
    assert len(parts) == DEMO_DAYS
