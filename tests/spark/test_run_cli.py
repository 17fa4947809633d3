"""`thinktax run --engine spark` end to end on the mini landing folder: the hand-worked figures of
tests/test_costs_hand_worked.py come out of Spark's tables.

It reuses the test session's Spark (getOrCreate returns it) and re-creates the core and mart
tables, so it runs after test_parity.py (file order), whose comparisons are already made.
"""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from tests.conftest import MINI_FILES, write_files

# tests/test_costs_hand_worked.py: r1 0.20225, r2 0.0028, r3 0.0567, r4 113.28, r5 28.32 (USD)
R1, R2, R3, R4, R5 = D("0.20225"), D("0.0028"), D("0.0567"), D("113.28"), D("28.32")


@pytest.mark.slow
def test_thinktax_run_engine_spark_gives_the_hand_worked_figures(spark, tmp_path, capsys):
    from thinktax.cli import main  # noqa: PLC0415

    landing = write_files(tmp_path / "landing", MINI_FILES)
    warehouse = tmp_path / "wh" / "thinktax.duckdb"
    rc = main(["run", "--engine", "spark", "--landing", str(landing), "--warehouse", str(warehouse),
               "--spark-warehouse", str(tmp_path / "spark")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "engine: spark" in out and "rebuild: full" in out
    assert warehouse.exists()  # the DuckDB build (ingest bookkeeping, staging) was published

    costs = {r["request_id"]: r["cost_usd"] for r in spark.table("core.call_costs").collect()}
    assert costs == {"r1": R1, "r2": R2, "r3": R3, "r4": R4, "r5": R5}
    rows = sorted(
        (str(r["day"]), r["team"], r["task_type"], r["model"], r["serving"], r["tier"], r["tasks"], r["calls"],
         r["cost_usd"], r["cost_per_task_usd"])
        for r in spark.table("marts.cost_per_task").collect())
    assert rows == [
        ("2026-06-30", "ops", "review", "claude-x", "api", "medium", 1, 1, R3, R3),
        ("2026-06-30", "ops", "review", "qwen3-32b", "self_hosted", "fast", 1, 1, R5, R5),
        ("2026-06-30", "search", "qa", "o3", "api", "full", 1, 1, R1, R1),
        ("2026-06-30", "search", "qa", "qwen3-32b", "self_hosted", "full", 1, 1, R4, R4),
        ("2026-07-01", "search", "qa", "o3", "api", "fast", 1, 1, R2, R2),
    ]
    # t1 = r1 + r4, thinking 0.18 + 56.64; its tier is r1's (full)
    t1 = spark.sql("SELECT cost_usd, thinking_cost_usd, tier FROM marts.task_costs WHERE task_id = 't1'").collect()[0]
    assert (t1["cost_usd"], t1["thinking_cost_usd"], t1["tier"]) == (R1 + R4, D("56.82"), "full")

    # `thinktax sql --engine spark` registers the tables a run left (attach) and re-creates the view
    # models over them: marts.cost_per_task is the old-named view of marts.task_cost_breakdown (issue 17)
    from warehouse.spark.pipeline import attach  # noqa: PLC0415

    spark.sql("DROP VIEW marts.cost_per_task")
    assert "marts.cost_per_task" in attach(spark, tmp_path / "spark")
    again = sorted((str(r["day"]), r["team"], r["task_type"], r["model"], r["serving"], r["tier"], r["tasks"], r["calls"],
                    r["cost_usd"], r["cost_per_task_usd"]) for r in spark.table("marts.cost_per_task").collect())
    assert again == rows
