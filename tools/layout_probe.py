"""What issue 26's copy-free layout would cost, measured on a warehouse `make bench` kept.

Not a part of thinktax: a probe for the design of issue 26 item 1 (per-call tables as
day-partitioned Parquet files, the published DuckDB file holding the small tables and views over
the exact file set of its build). It takes the full build of ``python -m tools.bench --keep
--workdir DIR`` (``DIR/wh/full.duckdb``) and measures, one after another in this process:

1. today's ``Build.start``: a byte copy of the whole file;
2. writing the per-call tables once as day-partitioned Parquet (``COPY ... PARTITION_BY``);
3. the small file: every other table copied, the per-call tables as views over their exact
   Parquet files; its size and the cost of copying it;
4. every SQL table that reads a per-call table, built from the native tables and from the views
   (``CREATE TABLE ... AS`` of its full SQL), summed;
5. four BI-style queries on the per-call tables, native and through the views;
6. one nightly day of each per-call table: delete + insert + checkpoint in the native file, against
   writing that day as one new Parquet file per table.

    .venv/bin/python -m tools.bench --workdir /tmp/tbk --keep
    .venv/bin/python -m tools.layout_probe /tmp/tbk

The figures are in docs/performance.md ("A copy-free layout, probed").
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from warehouse import incremental
from warehouse.sqltable import load_tables

# per-call (and per-task) tables and the column their day partitions are keyed by
BIG = {
    "stg.requests": "CAST(ts AS DATE)",
    "core.calls": "day",
    "core.call_costs": "day",
    "core.self_hosted_allocation": "day",
    "core.tasks": "task_day",
    "marts.task_costs": "day",
}

# what a BI tool asks of the per-call tables (README "Questions the warehouse answers" style)
BI_QUERIES = (
    "SELECT team, tier, count(*), sum(cost_usd) FROM marts.task_costs GROUP BY ALL",
    "SELECT day, model, sum(thinking_tokens), sum(cost_usd) FROM core.call_costs GROUP BY ALL",
    "SELECT * FROM core.call_costs WHERE request_id = (SELECT max(request_id) FROM core.calls)",
    "SELECT model, quantile_cont(thinking_tokens, 0.9) FROM core.calls WHERE day >= (SELECT max(day) - 7 FROM core.calls) GROUP BY ALL",
)


def _mib(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    return path.stat().st_size / 2**20


def _timed(label: str, fn, rows: list) -> object:  # noqa: ANN001
    t = time.perf_counter()
    out = fn()
    rows.append((label, time.perf_counter() - t))
    print(f"{label}: {rows[-1][1]:.2f} s", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workdir", type=Path, help="the --workdir of a kept `tools.bench` run")
    ap.add_argument("--memory-limit", default="3GB")
    args = ap.parse_args(argv)
    full = args.workdir / "wh" / "full.duckdb"
    if not full.exists():
        ap.error(f"{full} not found: run python -m tools.bench --workdir {args.workdir} --keep first")
    out = Path(tempfile.mkdtemp(prefix="layout-probe-", dir=args.workdir))
    rows: list[tuple[str, float]] = []
    sizes: dict[str, float] = {"whole file": _mib(full)}

    native = out / "native.duckdb"
    _timed("1. byte copy of the whole file (today's Build.start)", lambda: shutil.copyfile(full, native), rows)

    con = duckdb.connect(str(native))
    con.execute(f"SET memory_limit = '{args.memory_limit}'")
    present = {t for t in BIG if incremental.has_table(con, t)}
    lay = out / "parquet"
    files: dict[str, list[str]] = {}

    def export() -> None:
        for t in sorted(present):
            d = lay / t
            lay.mkdir(parents=True, exist_ok=True)
            con.execute(f"COPY (SELECT *, {BIG[t]} AS _part FROM {t}) TO '{d}' "
                        "(FORMAT parquet, PARTITION_BY (_part), COMPRESSION zstd)")
            files[t] = sorted(str(p) for p in d.rglob("*.parquet"))

    _timed("2. per-call tables written once as day-partitioned Parquet", export, rows)
    sizes["Parquet files"] = _mib(lay)

    small = out / "small.duckdb"

    def make_small() -> None:
        staging = out / "staging.duckdb"
        shutil.copyfile(native, staging)
        s = duckdb.connect(str(staging))
        for t in sorted(present):
            cols = ", ".join(f'"{c}"' for c, *_ in s.execute(f"DESCRIBE {t}").fetchall())
            listing = ", ".join(f"'{f}'" for f in files[t])
            s.execute(f"DROP TABLE {t}")
            s.execute(f"CREATE VIEW {t} AS SELECT {cols} FROM read_parquet([{listing}], hive_partitioning = false)")
        s.execute(f"ATTACH '{small}' AS small")
        s.execute("COPY FROM DATABASE staging TO small")
        s.close()
        staging.unlink()

    _timed("3a. small file made (other tables copied, views over the exact files)", make_small, rows)
    sizes["small file"] = _mib(small)
    _timed("3b. byte copy of the small file (the new Build.start)", lambda: shutil.copyfile(small, out / "small2.duckdb"), rows)

    readers = [m for m in load_tables() if m.deps & present and m.table not in present and not m.view]
    views = duckdb.connect(str(small))
    views.execute(f"SET memory_limit = '{args.memory_limit}'")

    def build_readers(c: duckdb.DuckDBPyConnection) -> None:
        for m in readers:
            c.execute(f"CREATE OR REPLACE TEMP TABLE _probe AS {incremental.render(m.sql, None, full=True)}")
        c.execute("DROP TABLE IF EXISTS _probe")

    for t in sorted(present):  # the views give back every row
        a = con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        b = views.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        if a != b:
            raise SystemExit(f"{t}: {a} rows in the native table, {b} through the view")

    _timed(f"4a. the {len(readers)} readers of the per-call tables, from native tables", lambda: build_readers(con), rows)
    _timed(f"4b. the same {len(readers)} readers, from the Parquet views", lambda: build_readers(views), rows)

    def bi(c: duckdb.DuckDBPyConnection) -> None:
        for q in BI_QUERIES:
            c.execute(q).fetchall()

    _timed(f"5a. {len(BI_QUERIES)} BI queries on per-call tables, native", lambda: bi(con), rows)
    _timed(f"5b. the same {len(BI_QUERIES)} BI queries, through the views", lambda: bi(views), rows)

    day = con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]

    def nightly_native() -> None:
        con.execute("BEGIN")
        for t in sorted(present):
            con.execute(f"CREATE OR REPLACE TEMP TABLE _d AS SELECT * FROM {t} WHERE {BIG[t]} = DATE '{day}'")
            con.execute(f"DELETE FROM {t} WHERE {BIG[t]} = DATE '{day}'")
            con.execute(f"INSERT INTO {t} SELECT * FROM _d")
        con.execute("COMMIT")
        con.execute("CHECKPOINT")

    def nightly_parquet() -> None:
        for t in sorted(present):
            new = lay / t / f"_part={day}" / "next-build.parquet"
            views.execute(f"COPY (SELECT * FROM {t} WHERE {BIG[t]} = DATE '{day}') TO '{new}' "
                          "(FORMAT parquet, COMPRESSION zstd)")

    _timed(f"6a. one day ({day}) rewritten in the native file (delete, insert, checkpoint)", nightly_native, rows)
    _timed(f"6b. the same day written as one new Parquet file per table", nightly_parquet, rows)
    con.close()
    views.close()

    print("\n| step | s |\n|---|---|")
    for label, s in rows:
        print(f"| {label} | {s:.2f} |")
    print("\n| size | MiB |\n|---|---|")
    for label, mib in sizes.items():
        print(f"| {label} | {mib:,.1f} |")
    shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
