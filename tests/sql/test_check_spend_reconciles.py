"""sql/checks/spend_reconciles.sql: marts.cost_per_task (a task on its first call's day) and
marts.daily_spend (each call on its own day) add up to the same spend over the history. A task
whose calls span midnight moves spend between two days of the one and not of the other: that is
not a failure (it stopped every run whose landing held such a task from publishing); a real
difference, above a cent plus the rounding of the rows, is."""

from __future__ import annotations

from decimal import Decimal as D

import duckdb

from warehouse.checks import load_checks


def _check():
    return next(c for c in load_checks() if c.name == "spend_reconciles")


def _marts(per_task: list[tuple[str, str]], daily: list[tuple[str, str, str]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.cost_per_task (day DATE, cost_usd DECIMAL(18,6))")
    con.execute("CREATE TABLE marts.daily_spend (day DATE, source VARCHAR, cost_usd DECIMAL(18,6))")
    con.executemany("INSERT INTO marts.cost_per_task VALUES (?, ?)", per_task)
    con.executemany("INSERT INTO marts.daily_spend VALUES (?, ?, ?)", daily)
    return con


def test_a_task_across_midnight_reconciles():
    # task t: 4.00 on June 1 (its first call, 23:50) and 6.00 on June 2 (00:10); task u: 2.50 on June 2.
    # cost_per_task: June 1 10.00 (all of t), June 2 2.50; daily_spend: June 1 4.00, June 2 8.50;
    # a bill line (api_bill) is no part of either
    con = _marts([("2026-06-01", "10.000000"), ("2026-06-02", "2.500000")],
                 [("2026-06-01", "api_usage", "4.000000"), ("2026-06-02", "api_usage", "6.000000"),
                  ("2026-06-02", "self_hosted", "2.500000"), ("2026-06-02", "api_bill", "99.000000")])
    assert _check().run(con, 5) == (0, [])


def test_a_difference_above_a_cent_fails():
    # daily_spend is 0.02 USD short over the history: 12.50 against 12.48; the tolerance with 2 + 2 rows is
    # 0.01 + 0.0000005 x 4 = 0.010002 USD
    con = _marts([("2026-06-01", "10.000000"), ("2026-06-02", "2.500000")],
                 [("2026-06-01", "api_usage", "4.000000"), ("2026-06-02", "api_usage", "8.480000")])
    bad, sample = _check().run(con, 5)
    assert bad == 1
    assert (sample[0]["cost_per_task_usd"], sample[0]["daily_spend_usd"], sample[0]["difference_usd"]) == (
        D("12.500000"), D("12.480000"), D("0.020000"))
