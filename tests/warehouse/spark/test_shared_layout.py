"""A local Spark run on the warehouse's own layout (issue 26 item 1; warehouse/spark/shared.py).

One warehouse, three runs, the engines taking turns -- DuckDB builds the history, a local Spark run
adds a new day and a late file, DuckDB adds one more late file -- against a reference warehouse that
ran the same three steps on DuckDB alone. After each step every SQL table of the published DuckDB
file (the per-call views over their Parquet files included) has the reference's columns, types and
rows. The Spark run attached the history's files instead of rebuilding them: it wrote files for
the plan's days only, and every other day is still read from the files DuckDB wrote; the DuckDB run
after it reads the files Spark wrote.

Equal rows: exact, but DOUBLE within a relative 1e-9 (tests/warehouse/spark/conftest.py: float sums
depend on the order an engine adds them). The demo's size here (5 days x 40 tasks) has no DOUBLE
that rounds exactly half-way at the sixth decimal: such a tie (a burn rate of x.xxxxxx5 USD a day)
rounds differently between the engines whatever the layout -- render.py's note on ``a / b``.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.warehouse.spark.cli_json import sql_json
from tests.warehouse.spark.conftest import _line, rows_equal

pytestmark = pytest.mark.timeout(1200)

DAYS, TASKS = 5, 40


def _tables(con) -> dict[str, list[tuple[str, str]]]:
    from warehouse.sqltable import load_tables

    out = {}
    for m in load_tables():
        schema, name = m.table.split(".")
        out[m.table] = [tuple(r) for r in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "ORDER BY ordinal_position", [schema, name]).fetchall()]
    return out


def _differences(got: Path, want: Path) -> dict[str, str]:
    """Every SQL table of two published DuckDB files: columns, types and rows (build_id left out)."""
    out = {}
    with duckdb.connect(str(got), read_only=True) as a, duckdb.connect(str(want), read_only=True) as b:
        ta, tb = _tables(a), _tables(b)
        for table, cols in tb.items():
            if ta[table] != cols:
                out[table] = f"columns {ta[table]} != {cols}"
                continue
            names = ", ".join(f'"{c}"' for c, _ in cols if c != "build_id")
            ok, why = rows_equal(a.execute(f"SELECT {names} FROM {table}").fetchall(),
                                 b.execute(f"SELECT {names} FROM {table}").fetchall())
            if not ok:
                out[table] = why
    return out


def _run(main, capsys, args: list[str]) -> str:
    capsys.readouterr()
    rc = main(["run", *args])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    return cap.out


@pytest.mark.slow
def test_spark_and_duckdb_take_turns_on_one_warehouse(spark, tmp_path, capsys):
    from synthetic.demo import DemoSpec, write_landing
    from thinktax.cli import main

    spec = DemoSpec(days=DAYS, tasks_per_day=TASKS, sources=False)  # the calls only, as before issue 45's sources
    landing = tmp_path / "landing"
    write_landing(landing, spec)
    requests = landing / "telemetry" / "requests"
    last = spec.start + dt.timedelta(days=DAYS - 1)
    held = tmp_path / "held"
    held.mkdir()
    for f in requests.glob(f"*__{last}.jsonl*"):  # the new day arrives with the Spark run
        shutil.move(f, held / f.name)
    at = lambda d, h, m=0: dt.datetime.combine(spec.start + dt.timedelta(days=d), dt.time(h, m))  # noqa: E731
    # late files: a task's earlier first call (its team) on day 0 and a call crossing midnight into day 2
    late1 = "\n".join([_line(at(1, 9), "late-1", "late-task", team=None),
                       _line(at(0, 23, 40), "late-0", "late-task", team="late-team"),
                       _line(at(2, 0, 20), "late-midnight", "late-midnight-task", team="infra", node="qwen-a",
                             latency_ms=2 * 3_600_000)]) + "\n"
    late2 = _line(at(2, 11), "late-2", "late-task", team=None) + "\n"

    folder = tmp_path / "shared"
    warehouse = folder / "thinktax.duckdb"
    ref = tmp_path / "ref" / "thinktax.duckdb"

    # 1. the history, on DuckDB
    for wh in (warehouse, ref):
        _run(main, capsys, ["--landing", str(landing), "--warehouse", str(wh), "--quiet"])
    with duckdb.connect(str(warehouse), read_only=True) as con:
        (first,) = con.execute("SELECT build_id FROM ops.settings").fetchone()

    # 2. the new day and a late file, on Spark (local session) over the same warehouse
    for f in held.iterdir():
        shutil.copy(f, requests / f.name)
    (requests / "late-1.jsonl").write_text(late1)
    out = _run(main, capsys, ["--engine", "spark", "--landing", str(landing), "--warehouse", str(folder)])
    _run(main, capsys, ["--landing", str(landing), "--warehouse", str(ref), "--quiet"])
    assert "rebuild: incremental" in out, out
    assert "per-call table(s) attached over the warehouse's Parquet files" in out
    assert _differences(warehouse, ref) == {}

    with duckdb.connect(str(warehouse), read_only=True) as con:
        (second,) = con.execute("SELECT build_id FROM ops.settings").fetchone()
        (planned,) = con.execute("SELECT days FROM ops.build_scope").fetchone()
        planned = set(planned)
        # the run replaced the plan's days (the new day, the late file's days and the tasks' other
        # days) and nothing else: of the five days, one at least is still read from DuckDB's files
        assert {spec.start, spec.start + dt.timedelta(days=2), last} <= planned and len(planned) < DAYS
        per_call = [r[0] for r in con.execute("SELECT table_name FROM ops.part_tables WHERE kind = 'table'").fetchall()]
        assert "core.call_costs" in per_call and "core.calls" in per_call
        for table in per_call:
            live = con.execute("SELECT day, build_id FROM ops.part_files WHERE table_name = ? AND retired_by IS NULL "
                               "AND day IS NOT NULL", [table]).fetchall()
            halo = table == "core.self_hosted_usage_cost"  # a halo model: the planned days +- 1
            wrote = {d for d, b in live if b == second}
            assert wrote, table
            assert halo or wrote <= planned, (table, wrote - planned)
            kept = {d for d, b in live if b == first}
            assert halo or kept == {d for d, _ in live} - planned, table
            assert halo or kept, f"{table}: no day kept from the DuckDB build"
        # Spark's files: partitioned on a copy of the key, which stays in the file (DuckDB's view reads it)
        spark_file = con.execute("SELECT path FROM ops.part_files WHERE table_name = 'core.call_costs' AND build_id = ? "
                                 "AND retired_by IS NULL LIMIT 1", [second]).fetchone()[0]
        assert "/__day=" in spark_file
        assert con.execute("SELECT count(*) FROM core.call_costs WHERE day IS NULL").fetchone()[0] == 0

    # the Spark tables answer `thinktax sql --engine spark` as the DuckDB file answers `thinktax sql`
    q = "SELECT day, count(*) AS calls, sum(cost_usd) AS usd FROM core.call_costs GROUP BY day ORDER BY day"
    got = sql_json(capsys, ["sql", "--engine", "spark", "--warehouse", str(folder), "--format", "json", q])
    want = sql_json(capsys, ["sql", "--warehouse", str(warehouse), "--format", "json", q])
    assert got == want and len(got) == DAYS

    # 3. one more late file, on DuckDB again: it reads the files Spark wrote
    (requests / "late-2.jsonl").write_text(late2)
    for wh in (warehouse, ref):
        _run(main, capsys, ["--landing", str(landing), "--warehouse", str(wh), "--quiet"])
    assert _differences(warehouse, ref) == {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        still = con.execute("SELECT count(*) FROM ops.part_files WHERE build_id = ? AND retired_by IS NULL "
                            "AND table_name = 'core.call_costs'", [second]).fetchone()[0]
        assert still, "no file Spark wrote is read by the DuckDB run after it"
