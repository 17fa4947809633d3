"""Ordered hash of every stg / core / marts relation of the demo warehouse (issue 17, item 7).

    .venv/bin/python -m tests.demo_identity --write     # record tests/fixtures/demo_table_hashes.json
    .venv/bin/python -m tests.demo_identity             # print the current hashes, compare with it

The demo landing folder is deterministic (synthetic.demo.write_landing: same seed, same bytes); it is
ingested and built without Dagster (tests.conftest.build_warehouse: every SQL table, then the Python
economics marts of pipelines.defs.economics_assets.ECONOMICS), build id 't'.

What one table's hash is: md5 over its column names, then every row as text, rows sorted. A row's
text is each value cast to VARCHAR ('<NULL>' for NULL) joined by U+001F, with two normalisations:
  * DOUBLE / FLOAT values are printed with 9 significant digits (printf '%.9g'), which absorbs the
    last-bit noise of a float sum done in another order; DECIMAL, integers, text, dates stay exact;
  * integer types (TINYINT .. HUGEINT) print the same text whatever their width, so a count column
    retyped from INTEGER / HUGEINT to BIGINT hashes the same. Nothing else is forgiven.
The fixture records the commit its hashes were computed from (``recorded_at_commit``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "demo_table_hashes.json"
SCHEMAS = ("stg", "core", "marts")
# the demo of `thinktax demo` (55 days, seed 7) at 250 tasks a day instead of 1700 (~35k calls: the
# same days, teams, models, nodes and price sheets; the build takes ~1/6 of the time)
SPEC = {"days": 55, "tasks_per_day": 250, "seed": 7}
FLOAT_TYPES = {"DOUBLE", "FLOAT", "REAL"}
SEP = "chr(31)"


def build_demo(root: Path, spec: dict[str, int] = SPEC) -> duckdb.DuckDBPyConnection:
    """Write the demo landing folder under ``root`` and build it; returns an open connection."""
    from pipelines.defs.economics_assets import ECONOMICS
    from tests.conftest import build_warehouse
    from synthetic.demo import DemoSpec, write_landing

    # without the cloud teams (issue 24): the tables recorded before them must come out identical, which
    # proves a call in none of the new shapes costs exactly what it did (synthetic/demo.py draws the
    # cloud traffic with its own seed; tests/synthetic/test_demo_clouds.py checks what it adds); and without
    # the anomalies of issue 42 (synthetic.demo.add_anomalies: no draw, so the rest is unchanged;
    # tests/synthetic/test_demo_anomalies.py checks that they are found); and without issue 45's bills, spend
    # logs and scrapes (synthetic/demo_sources.py: their own seed, no call of the logs above changes;
    # tests/synthetic/test_demo_clouds.py checks what they add)
    write_landing(root / "landing", DemoSpec(**spec, clouds=False, anomalies=False, sources=False))
    con, _ = build_warehouse(root / "landing", root / "w.duckdb")
    for e in ECONOMICS:
        e.builder(con)
    return con


def relations(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables "
        f"WHERE table_catalog = current_database() AND table_schema IN {SCHEMAS} ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {relation} AS t").fetchall()]


def value_sql(name: str, dtype: str) -> str:
    col = f'"{name}"'
    if dtype.upper() in FLOAT_TYPES:
        text = f"printf('%.9g', {col})"
    else:
        text = f"CAST({col} AS VARCHAR)"
    return f"coalesce({text}, '<NULL>')"


def table_hash(con: duckdb.DuckDBPyConnection, relation: str, select: str | None = None) -> dict[str, object]:
    """Hash of ``relation`` (or of the query ``select``, whose columns are read from it)."""
    source = f"({select})" if select else relation
    cols = columns(con, source)
    row = " || chr(31) || ".join(value_sql(n, t) for n, t in cols)
    header = "\x1f".join(n for n, _ in cols)
    rows, digest = con.execute(
        f"SELECT count(*), md5(? || chr(10) || coalesce(string_agg(r, chr(10) ORDER BY r), '')) "
        f"FROM (SELECT {row} AS r FROM {source} AS t)", [header]).fetchall()[0]
    return {"rows": rows, "columns": [n for n, _ in cols], "md5": digest}


def all_hashes(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, object]]:
    return {rel: table_hash(con, rel) for rel in relations(con)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"record the hashes in {FIXTURE.relative_to(REPO)}")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        con = build_demo(Path(tmp))
        built = time.monotonic() - t0
        hashes = all_hashes(con)
        con.close()
    print(f"demo built in {built:.1f} s, hashed in {time.monotonic() - t0 - built:.1f} s: {len(hashes)} relations")
    if args.write:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "sql", "warehouse", "sources", "thinktax",
                                     "pipelines", "models"], cwd=REPO, capture_output=True, text=True).stdout.strip())
        FIXTURE.write_text(json.dumps({
            "recorded_at_commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "command": ".venv/bin/python -m tests.demo_identity --write",
            "demo": SPEC,
            "tables": hashes,
        }, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FIXTURE}")
        return 0
    if FIXTURE.exists():
        recorded = json.loads(FIXTURE.read_text())["tables"]
        for rel in sorted(set(recorded) | set(hashes)):
            a, b = recorded.get(rel), hashes.get(rel)
            if a != b:
                print(f"{rel}: recorded {a and (a['rows'], a['md5'])} now {b and (b['rows'], b['md5'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
