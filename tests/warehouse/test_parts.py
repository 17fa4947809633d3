"""The per-call tables as day-partitioned Parquet files (issue 26 item 1, warehouse/parts.py).

A build writes only the days it rebuilt, as new files in its own folder; the published DuckDB file
lists the exact files of its build in views; a reader holding an older build keeps reading it while
that build is among the last ``keep_builds``; a damaged file stops the next run before it builds;
the files of a build that was not published are removed by the next run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from services.config import Config, ConfigError, load_config
from synthetic import benchgen
from warehouse import incremental, parts
from warehouse.db import Build, copy_warehouse, migrate, read_only
from sources.base import InTable
from warehouse.ingest import Ingestor
from warehouse.rebuild import rebuild_all
from warehouse.sqltable import load_tables
from warehouse.transform import build

SPEC = benchgen.GenSpec(calls_per_day=400, days=3, lines_per_file=400)
STORED = {"core.calls", "core.call_costs", "core.call_kv", "core.self_hosted_allocation", "core.self_hosted_usage_cost",
          "core.tasks", "marts.task_costs"}


def _run(published: Path, landing: Path, name: str, keep: int = 2) -> incremental.Scope:
    """One warehouse-level run (what the Dagster job does, without Dagster): start, ingest, plan,
    build, publish."""
    b = Build(published, name)
    b.start(Config().settings_row(), keep_builds=keep)
    with b.connect() as con:
        parts.check(con)
        Ingestor(con, landing).ingest()
        scope = incremental.plan(con, b.build_id)
        rebuild_all(con, scope, b.build_id)
    b.publish(files_new=0, landing=str(landing))
    return scope


def _late(landing: Path, name: str, day: int, n: int = 3) -> None:
    """A late request file of ``n`` o3 calls on history day ``day`` (new tasks: no closure)."""
    ts = dt.datetime.combine(SPEC.day(day), dt.time(12))
    lines = [json.dumps({"ts": (ts + dt.timedelta(minutes=k)).isoformat() + "Z", "request_id": f"{name}-{k}",
                         "task_id": f"{name}-task-{k}", "model": "o3", "provider": "openai", "latency_ms": 1000,
                         "usage": {"prompt_tokens": 1000, "completion_tokens": 600,
                                   "completion_tokens_details": {"reasoning_tokens": 400}}}) for k in range(n)]
    out = landing / "telemetry" / "requests" / f"{name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("parts") / "landing"
    benchgen.write_reference_files(root, SPEC)
    for d in range(SPEC.days):
        benchgen.write_day(root, SPEC, d)
    return root


def _fresh_landing(landing: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(landing, tmp_path / "landing"))


def _listed(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("SELECT table_name, day, path, row_count, bytes, build_id FROM ops.part_files "
                       "WHERE retired_by IS NULL ORDER BY path").fetchall()


def test_per_call_tables_are_views_over_their_builds_files_with_the_sql_types(landing: Path, tmp_path: Path):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, landing, "one")
    with read_only(wh) as con:
        views = {f"{s}.{v}" for s, v in con.execute("SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        tables = {f"{s}.{t}" for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()}
        assert STORED <= views and not STORED & tables  # not in the DuckDB file
        assert STORED == {m.table for m in load_tables() if m.storage == "parquet"}
        listed = _listed(con)
        assert {r[0] for r in listed} == STORED | {"stg.requests"}  # and the calls as ingested (test_staged_...)
        listed = [r for r in listed if r[0] in STORED]
        for table in STORED:
            files = [r for r in listed if r[0] == table]
            (n,) = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0]
            assert n == sum(r[3] for r in files), table
            if not n:  # an empty table (no model config here sizes KV): one zero-row file gives its columns
                assert [(r[1], r[3]) for r in files] == [(None, 0)], table
            key = con.execute("SELECT key_column FROM ops.part_tables WHERE table_name = ?", [table]).fetchall()[0][0]
            for _, day, path, count, size, writer in files:
                p = wh.parent / "thinktax.parts" / path
                assert p.stat().st_size == size and writer == "one"
                # every row of a file has the day the list gives it, and the footer's count is its rows
                got = con.execute(f"SELECT count(*), count(*) FILTER (WHERE \"{key}\" IS DISTINCT FROM ?) "
                                  f"FROM read_parquet('{p}')", [day]).fetchall()[0]
                assert got == (count, 0), path
        types = {t: [(r[0], r[1]) for r in con.execute(f"DESCRIBE {t}").fetchall()] for t in STORED}
        per_task_days = con.execute("SELECT count(DISTINCT task_day) FROM core.tasks").fetchall()[0][0]
        assert len({r[1] for r in listed if r[0] == "core.tasks"}) == per_task_days
        ids = con.execute("SELECT DISTINCT build_id FROM marts.task_costs").fetchall()
    assert ids == [("one",)]
    # the same SQL built into a DuckDB file without parts (no ops.storage): the column types the views give
    native = tmp_path / "native.duckdb"
    with duckdb.connect(str(native)) as con:
        migrate(con)
        con.execute(f"ATTACH '{wh}' AS pub (READ_ONLY)")
        for (s, t) in con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'pub' "
                                  "AND schema_name IN ('stg', 'ops') AND table_name NOT IN ('storage', 'part_files', "
                                  "'part_tables', 'requests__pending') UNION ALL SELECT 'stg', 'requests'").fetchall():
            con.execute(f"CREATE OR REPLACE TABLE {s}.{t} AS SELECT * FROM pub.{s}.{t}" if t == "settings"
                        else f"INSERT INTO {s}.{t} BY NAME SELECT * FROM pub.{s}.{t}")
        con.execute("DETACH pub")
        for m in load_tables():
            build(con, m)
        for t in STORED:
            assert con.execute(f"SELECT table_type FROM information_schema.tables WHERE table_schema || '.' || table_name = '{t}'"
                               ).fetchall() == [("BASE TABLE",)]
            assert [(r[0], r[1]) for r in con.execute(f"DESCRIBE {t}").fetchall()] == types[t], t
    assert ("thinking_tokens", "HUGEINT") in types["core.tasks"]  # a sum: Parquet would make it DOUBLE


def test_a_nightly_run_writes_only_the_days_it_rebuilt_and_shares_the_rest(landing: Path, tmp_path: Path):
    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, land, "one")
    with read_only(wh) as con:
        before = _listed(con)
    stats = {r[2]: os.stat(wh.parent / "thinktax.parts" / r[2]) for r in before}
    _late(land, "late", 1)
    scope = _run(wh, land, "two")
    assert not scope.full and scope.days == (SPEC.day(1),)
    with read_only(wh) as con:
        after = _listed(con)
        retired = con.execute("SELECT DISTINCT table_name = 'core.self_hosted_usage_cost', day FROM ops.part_files "
                              "WHERE retired_by = 'two'").fetchall()
    # core.self_hosted_usage_cost is a halo table (a call's interval reaches into the day before): it
    # rewrites the late day's neighbours too
    halo = [r for r in after if r[5] == "two" and r[0] == "core.self_hosted_usage_cost"]
    assert {r[1] for r in halo} <= {SPEC.day(0), SPEC.day(1), SPEC.day(2)} and SPEC.day(1) in {r[1] for r in halo}
    new = [r for r in after if r[5] == "two" and r[0] not in ("stg.requests", "core.self_hosted_usage_cost")]
    # the late file's 3 calls: one more file of stg.requests, the files before it kept
    assert [(r[1], r[3]) for r in after if r[5] == "two" and r[0] == "stg.requests"] == [(None, 3)]
    # the late day's files of every per-call table, written again; nothing else
    assert {r[1] for r in new} == {SPEC.day(1)}
    assert ({r[0] for r in new} == {r[0] for r in before if r[1] == SPEC.day(1)} - {"core.self_hosted_usage_cost"}
            >= {"core.calls", "core.call_costs"})
    assert {d for h, d in retired if not h} == {SPEC.day(1)}
    assert {d for h, d in retired if h} == {r[1] for r in halo} & {r[1] for r in before if r[0] == "core.self_hosted_usage_cost"}
    kept = [r for r in after if r[5] == "one"]
    assert kept == [r for r in before if not (r[1] == SPEC.day(1) and r[0] in {x[0] for x in new})
                    and not (r[0] == "core.self_hosted_usage_cost" and r[1] in {x[1] for x in halo})]
    for r in kept:  # the very same files: not rewritten
        st = os.stat(wh.parent / "thinktax.parts" / r[2])
        assert (st.st_ino, st.st_mtime_ns) == (stats[r[2]].st_ino, stats[r[2]].st_mtime_ns)
    with read_only(wh) as con:
        assert con.execute("SELECT count(*) FROM core.calls WHERE request_id LIKE 'late-%'").fetchall() == [(3,)]
        assert con.execute("SELECT count(*) FROM core.calls").fetchall()[0][0] == SPEC.calls_per_day * SPEC.days + 3


@pytest.mark.parametrize("keep", [1, 2])
def test_files_an_older_build_lists_are_kept_while_it_is_among_the_last_keep_builds(landing: Path, tmp_path: Path, keep: int):
    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, land, "one", keep)
    # a reader that opened build one and holds it (through another path: one process shares an open file)
    held_path = tmp_path / "held.duckdb"
    os.link(wh, held_path)
    held = duckdb.connect(str(held_path), read_only=True)
    first = held.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall()
    try:
        _late(land, "late2", 2)
        _run(wh, land, "two", keep)  # retires build one's day-2 files
        assert held.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall() == first
        _late(land, "late3", 2)
        _run(wh, land, "three", keep)  # retires build two's day-2 files
        with read_only(wh) as con:
            gone = con.execute("SELECT count(*) FROM ops.part_files WHERE build_id = 'one' AND retired_by = 'two'").fetchall()[0][0]
        if keep == 2:  # build one is among the last two published when three starts: its files stay
            assert gone > 0
            assert held.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall() == first
            _run(wh, land, "four", keep)  # nothing new; now build one is three builds old: its files go
        else:
            assert gone == 0
        with pytest.raises(duckdb.IOException):  # gone: an error, never fewer rows
            held.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall()
    finally:
        held.close()
    with read_only(wh) as con:
        listed = {r[2] for r in con.execute("SELECT * FROM ops.part_files").fetchall()}
        n = con.execute("SELECT count(*) FROM core.calls").fetchall()[0][0]
    on_disk = {p.relative_to(wh.parent / "thinktax.parts").as_posix() for p in (wh.parent / "thinktax.parts").rglob("*.parquet")}
    assert on_disk == listed  # nothing on disk that no build lists
    assert n == SPEC.calls_per_day * SPEC.days + 6


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_damaged_file_of_the_published_build_stops_the_next_run_naming_it(landing: Path, tmp_path: Path, damage: str, capsys):
    from thinktax.cli import main

    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh)]) == 0
    with read_only(wh) as con:
        n, usd = con.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall()[0]
        path = con.execute("SELECT path FROM ops.part_files WHERE table_name = 'core.call_costs' AND retired_by IS NULL "
                           "ORDER BY path LIMIT 1").fetchall()[0][0]
    victim = wh.parent / "thinktax.parts" / path
    if damage == "deleted":
        victim.unlink()
    else:
        with open(victim, "r+b") as fh:
            fh.truncate(victim.stat().st_size // 2)
    published = _sha(wh)
    capsys.readouterr()
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh)]) != 0
    err = capsys.readouterr().err
    assert str(victim) in err and ("missing" if damage == "deleted" else "written with") in err
    assert _sha(wh) == published  # nothing published
    # the way out the message gives: rebuild every table from staging
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh), "--full-rebuild"]) == 0
    with read_only(wh) as con:
        assert con.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs").fetchall()[0] == (n, usd)
        assert parts.verify(con) == []


def test_the_files_of_a_build_that_was_not_published_are_removed_by_the_next_run(landing: Path, tmp_path: Path):
    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, land, "one")
    _late(land, "late", 0)
    b = Build(wh, "failed")
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, land).ingest()
        rebuild_all(con, incremental.plan(con, b.build_id), b.build_id)
    b.abandon()  # a check failed
    failed = list((wh.parent / "thinktax.parts").glob("*/failed"))
    assert any((d.parent.name == "core.calls" and any(d.rglob("*.parquet"))) for d in failed)
    with read_only(wh) as con:
        assert con.execute("SELECT count(*) FROM ops.part_files WHERE build_id = 'failed'").fetchall() == [(0,)]
        n = con.execute("SELECT count(*) FROM core.calls").fetchall()[0][0]
    assert n == SPEC.calls_per_day * SPEC.days
    _run(wh, land, "two")
    assert not list((wh.parent / "thinktax.parts").glob("*/failed"))
    with read_only(wh) as con:
        assert con.execute("SELECT count(*) FROM core.calls").fetchall()[0][0] == n + 3


def test_a_moved_warehouse_reads_its_new_place_and_a_file_copied_alone_is_refused(landing: Path, tmp_path: Path):
    wh = tmp_path / "a" / "thinktax.duckdb"
    _run(wh, landing, "one")
    with read_only(wh) as con:
        want = con.execute("SELECT count(*), sum(cost_usd) FROM marts.task_costs").fetchall()
    moved = tmp_path / "b"
    shutil.move(tmp_path / "a", moved)
    _run(moved / "thinktax.duckdb", landing, "two")  # nothing new: the views are remade over the new place
    with read_only(moved / "thinktax.duckdb") as con:
        assert con.execute("SELECT count(*), sum(cost_usd) FROM marts.task_costs").fetchall() == want
        assert con.execute("SELECT parts_dir FROM ops.storage").fetchall() == [(str((moved / "thinktax.parts").resolve()),)]
    # a copy made the supported way reads its own files
    copy = copy_warehouse(moved / "thinktax.duckdb", tmp_path / "c" / "thinktax.duckdb")
    shutil.rmtree(moved)
    with read_only(copy) as con:
        assert con.execute("SELECT count(*), sum(cost_usd) FROM marts.task_costs").fetchall() == want
    alone = tmp_path / "d" / "thinktax.duckdb"
    alone.parent.mkdir()
    shutil.copyfile(copy, alone)
    shutil.rmtree(tmp_path / "c")
    with pytest.raises(parts.PartsDamaged, match="without its parts folder"):
        Build(alone, "three").start(Config().settings_row())


def test_keep_builds_is_read_from_thinktax_toml_and_checked(tmp_path: Path):
    cfg = tmp_path / "thinktax.toml"
    cfg.write_text("[warehouse]\nkeep_builds = 3\n")
    assert load_config(cfg).warehouse.keep_builds == 3
    assert Config().warehouse.keep_builds == parts.DEFAULT_KEEP_BUILDS == 2
    example = Path(__file__).resolve().parents[2] / "thinktax.toml.example"
    assert load_config(example).warehouse.keep_builds == 2  # the documented example parses, with the default
    cfg.write_text("[warehouse]\nkeep_builds = 0\n")
    with pytest.raises(ConfigError, match="keep_builds"):
        load_config(cfg)


def test_a_spark_run_takes_the_per_call_tables_it_replaces_off_the_list(landing: Path, tmp_path: Path):
    """A Spark run's DuckDB build drops the per-call views and writes its projections as tables
    (warehouse/spark/economics.py): their files leave the build's list, retired by that build, so
    no later run remakes a view over them and the retention keeps them for older readers."""
    from warehouse.spark.economics import _duck_drop

    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, landing, "one")
    b = Build(wh, "spark")
    b.start(Config().settings_row())
    with b.connect() as con:
        n = con.execute("SELECT count(*) FROM ops.part_files WHERE table_name = 'core.call_costs'").fetchall()[0][0]
        _duck_drop(con, "core.call_costs")
        listed = {r[0] for r in con.execute("SELECT table_name FROM ops.part_tables").fetchall()}
        assert "core.call_costs" not in listed and "core.calls" in listed
        assert con.execute("SELECT retired_by, count(*) FROM ops.part_files WHERE table_name = 'core.call_costs' "
                           "GROUP BY ALL").fetchall() == [("spark", n)]
        assert parts.verify(con) == []


def _staged_files(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return [r for r in _listed(con) if r[0] == "stg.requests"]


def test_stg_requests_is_appended_as_one_file_per_build_and_a_migration_can_still_alter_it(
        landing: Path, tmp_path: Path, monkeypatch):
    """The calls as ingested: a view over one Parquet file per build that ingested any, plus the
    empty ``stg.requests__pending``; the DuckDB file holds none of their rows. A migration that adds
    a column runs on the (empty) table and the older files read NULL in it."""
    from warehouse import db

    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, land, "one")
    calls = SPEC.calls_per_day * SPEC.days  # what the generator wrote
    with read_only(wh) as con:
        # no pending table in a published file: its rows were written out and it was dropped
        assert parts.is_view(con, "stg.requests") and not incremental.has_table(con, "stg.requests__pending")
        (ddl,) = con.execute("SELECT ddl FROM ops.part_tables WHERE table_name = 'stg.requests'").fetchall()[0]
        files = _staged_files(con)
        assert [(r[1], r[3], r[5]) for r in files] == [(None, calls, "one")]
        assert con.execute("SELECT count(*), count(DISTINCT request_id) FROM stg.requests").fetchall() == [(calls, calls)]
        assert con.execute("SELECT sum(rows_loaded) FROM ops.ingested_files WHERE target_table = 'stg.requests'"
                           ).fetchall() == [(calls,)]
        view_columns = [r[:2] for r in con.execute("DESCRIBE stg.requests").fetchall()]
    # the view's columns are the table's, in order, with the migrations' types and constraints
    with duckdb.connect() as mem:
        migrate(mem)  # a bare connection (no parts folder): stg.requests is the migrations' table
        assert view_columns == [r[:2] for r in mem.execute("DESCRIBE stg.requests").fetchall()]
        mem.execute(ddl)  # the DDL kept for the next build's pending table: the same table
        assert (mem.execute("DESCRIBE stg.requests__pending").fetchall() == mem.execute("DESCRIBE stg.requests").fetchall())
    assert ("ts", "TIMESTAMP") in view_columns and ("request_id", "VARCHAR") in view_columns
    with read_only(wh) as con:
        before = con.execute("SELECT sum(thinking_tokens), sum(output_tokens), min(ts), max(ts) FROM stg.requests").fetchall()
    # the same files again: nothing new ingested, no file written
    _run(wh, land, "two")
    with read_only(wh) as con:
        assert _staged_files(con) == files
    # a migration that adds a column (as 100_request_pricing.sql did), then a late file
    extra = ("999_test.sql", "ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS test_note VARCHAR;")
    orig = db.migration_files
    monkeypatch.setattr(db, "migration_files", lambda: [*orig(), extra])
    _late(land, "late", 1)
    _run(wh, land, "three")
    with read_only(wh) as con:
        now = _staged_files(con)
        assert now[:1] == files and [(r[1], r[3], r[5]) for r in now[1:]] == [(None, 3, "three")]
        assert con.execute("SELECT count(*), count(test_note) FROM stg.requests").fetchall() == [(calls + 3, 0)]
        assert con.execute("SELECT sum(thinking_tokens), sum(output_tokens), min(ts), max(ts) FROM stg.requests "
                           "WHERE request_id NOT LIKE 'late-%'").fetchall() == before
        # the late calls: 400 reasoning tokens each of 600 completion tokens (_late)
        assert con.execute("SELECT sum(thinking_tokens), sum(output_tokens) FROM stg.requests "
                           "WHERE request_id LIKE 'late-%'").fetchall() == [(1200, 600)]
        newest = wh.parent / "thinktax.parts" / now[1][2]
        assert "test_note" in {r[0] for r in con.execute("SELECT name FROM parquet_schema(?)", [str(newest)]).fetchall()}
        assert con.execute("SELECT count(*) FROM core.calls").fetchall() == [(calls + 3,)]


def test_a_damaged_file_of_stg_requests_stops_even_a_full_rebuild(landing: Path, tmp_path: Path, capsys):
    """The calls as ingested cannot be rebuilt from anything in the warehouse: a full rebuild, which
    skips the check of the SQL tables' files (it rewrites them), still checks these."""
    from thinktax.cli import main

    wh = tmp_path / "wh" / "thinktax.duckdb"
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh)]) == 0
    with read_only(wh) as con:
        (path,) = [r[2] for r in _staged_files(con)]
    victim = wh.parent / "thinktax.parts" / path
    with open(victim, "r+b") as fh:
        fh.truncate(victim.stat().st_size - 1)
    published = _sha(wh)
    for extra in ([], ["--full-rebuild"]):
        capsys.readouterr()
        assert main(["run", "--landing", str(landing), "--warehouse", str(wh), *extra]) != 0
        err = capsys.readouterr().err
        assert str(victim) in err and "written with" in err and "from a backup" in err, extra
        assert _sha(wh) == published


def _with_a_dropped_table(path: Path, rows: int, keep: list[str]) -> None:
    """A DuckDB file at ``path`` with schema ``ops``, the statements ``keep`` and the free blocks of a
    dropped table of ``rows`` rows (DuckDB reuses them but never gives them back)."""
    from warehouse.db import connect

    with connect(path) as con:
        con.execute("CREATE SCHEMA ops")
        con.execute(f"CREATE TABLE ops.big AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range({rows})")
        con.execute("CHECKPOINT")
        for sql in keep:
            con.execute(sql)
        con.execute("CHECKPOINT")
        con.execute("DROP TABLE ops.big")
        con.execute("CHECKPOINT")


def test_a_build_file_with_many_free_blocks_is_rewritten_without_them_keeping_everything(tmp_path: Path):
    """DuckDB reuses a dropped table's blocks but never gives them back; a run copies the published
    file whole, so ``compact`` (called by ``Build.publish``) rewrites a file that is mostly free."""
    from warehouse.db import compact, connect

    path = tmp_path / "b.duckdb"
    _with_a_dropped_table(path, 1_500_000, [
        "CREATE TABLE ops.small (k VARCHAR PRIMARY KEY, v INTEGER NOT NULL DEFAULT 3)",
        "INSERT INTO ops.small VALUES ('a', 1), ('b', 2)",
        "COMMENT ON COLUMN ops.small.v IS 'the v, in tokens'",
        "CREATE VIEW ops.w AS SELECT k, v + 1 AS v1 FROM ops.small",
        "CREATE MACRO ops.twice(x) AS 2 * x"])
    before = path.stat().st_size
    assert before > 20 << 20  # the dropped table's blocks are still in the file
    assert compact(path)
    assert path.stat().st_size < 4 << 20
    with connect(path) as con:
        assert con.execute("SELECT * FROM ops.w ORDER BY k").fetchall() == [("a", 2), ("b", 3)]
        assert con.execute("SELECT ops.twice(21)").fetchall() == [(42,)]
        assert con.execute("SELECT comment FROM duckdb_columns() WHERE table_name = 'small' AND column_name = 'v'"
                           ).fetchall() == [("the v, in tokens",)]
        with pytest.raises(duckdb.ConstraintException):
            con.execute("INSERT INTO ops.small (k) VALUES ('a')")  # the primary key came along
        con.execute("INSERT INTO ops.small (k) VALUES ('c')")
        assert con.execute("SELECT v FROM ops.small WHERE k = 'c'").fetchall() == [(3,)]  # and the default
    assert not compact(path)  # nothing left to gain


def test_a_file_under_the_compaction_thresholds_is_kept_unless_forced(tmp_path: Path):
    """A few free blocks (under COMPACT_MIN_BYTES) are not worth a rewrite at publish; ``force``
    (the benchmark's history copies) rewrites a file that has any, and one with none is left alone."""
    from warehouse.db import COMPACT_MIN_BYTES, compact, connect

    path = tmp_path / "f.duckdb"
    _with_a_dropped_table(path, 100_000, ["CREATE TABLE ops.keep AS SELECT range AS i FROM range(1000)"])
    with connect(path) as con:
        block, free = con.execute("SELECT block_size, free_blocks FROM pragma_database_size()").fetchall()[0]
    assert 0 < free * block < COMPACT_MIN_BYTES
    before = path.stat().st_size
    assert not compact(path) and path.stat().st_size == before
    assert compact(path, force=True) and path.stat().st_size < before
    with connect(path) as con:
        assert con.execute("SELECT count(*), sum(i) FROM ops.keep").fetchall() == [(1000, 499500)]
    assert not compact(path, force=True)  # no free block left


def test_a_large_request_file_is_written_once_as_its_own_file_and_a_failed_group_leaves_none(
        landing: Path, tmp_path: Path, monkeypatch):
    """A request file of at least ``PART_ROWS`` rows goes straight to a Parquet file of its own
    (``parts.append``), read by path in the warehouse connection (``_ingest_in_place``); smaller ones
    gather in the pending table, one file at the end. The calls are the same either way, and a
    group of files that fails removes the files it wrote and lists none."""
    from warehouse import ingest as ingest_mod

    land = _fresh_landing(landing, tmp_path)
    _late(land, "small", 1)  # 3 calls: under the threshold
    calls = SPEC.calls_per_day * SPEC.days + 3
    monkeypatch.setattr(ingest_mod, "BY_PATH_BYTES", 1 << 10)  # the generated files (~160 KB) by path
    monkeypatch.setattr(ingest_mod, "PART_ROWS", 100)
    in_place: list[bool] = []  # per request file loaded: were its rows taken in place
    real_load = Ingestor._load

    def load(self, rel, *a):
        if rel.startswith("telemetry/requests/"):
            in_place.append(isinstance(a[-1].rows, InTable))
        return real_load(self, rel, *a)

    monkeypatch.setattr(Ingestor, "_load", load)

    # the third request file fails after writing its file: the two before it are committed (a file
    # read by path closes the open group first), the third's file is removed and listed nowhere
    wh = tmp_path / "failed" / "thinktax.duckdb"
    b = Build(wh, "failed")
    b.start(Config().settings_row())
    real_record, seen = Ingestor._record_loaded, []

    def failing(self, file_id, rel, *a, **k):
        if rel.startswith("telemetry/requests/") and len(seen) == 2:
            raise RuntimeError("disk full (test)")
        seen.append(rel) if rel.startswith("telemetry/requests/") else None
        return real_record(self, file_id, rel, *a, **k)

    monkeypatch.setattr(Ingestor, "_record_loaded", failing)
    with b.connect() as con, pytest.raises(RuntimeError, match="disk full"):
        Ingestor(con, land, commit_every=1000).ingest()
    with b.connect() as con:
        listed = {r[0] for r in con.execute("SELECT path FROM ops.part_files WHERE table_name = 'stg.requests'").fetchall()}
        assert con.execute("SELECT list(file ORDER BY file) FROM ops.ingested_files WHERE target_table = 'stg.requests'"
                           ).fetchall() == [(sorted(seen),)]
        assert con.execute("SELECT count(*) FROM stg.requests").fetchall() == [(2 * SPEC.lines_per_file,)]
    on_disk = {p.relative_to(wh.parent / "thinktax.parts").as_posix()
               for p in (wh.parent / "thinktax.parts" / "stg.requests").rglob("*.parquet")}
    assert len(seen) == 2 and len(listed) == 2 and on_disk == listed
    monkeypatch.setattr(Ingestor, "_record_loaded", real_record)

    in_place.clear()
    direct = tmp_path / "direct" / "thinktax.duckdb"
    _run(direct, land, "one")
    assert in_place[-1] is False and all(in_place[:-1]) and len(in_place) > 1  # every generated file, not the small one
    monkeypatch.setattr(ingest_mod, "PART_ROWS", 1 << 62)
    pending = tmp_path / "pending" / "thinktax.duckdb"
    _run(pending, land, "one")
    request_files = len([p for p in (land / "telemetry" / "requests").rglob("*.jsonl")])
    rows = "SELECT * EXCLUDE (file_id), (SELECT file FROM ops.ingested_files f WHERE f.file_id = r.file_id) FROM stg.requests r ORDER BY ALL"
    with read_only(direct) as a, read_only(pending) as b:
        assert a.execute(rows).fetchall() == b.execute(rows).fetchall()
        assert a.execute("SELECT count(*) FROM stg.requests").fetchall() == [(calls,)]
        # one file per generated request file (400 calls each), one more for the 3 small calls
        assert sorted(r[3] for r in _staged_files(a)) == [3] + [SPEC.lines_per_file] * (request_files - 1)
        assert [r[3] for r in _staged_files(b)] == [calls]
        for con in (a, b):
            assert con.execute("SELECT sum(rows_in), sum(rows_loaded + rows_duplicate + rows_quarantined) FROM ops.ingested_files "
                               "WHERE target_table = 'stg.requests'").fetchall() == [(calls, calls)]
            assert con.execute("SELECT count(*) FROM core.calls").fetchall() == [(calls,)]
        assert parts.verify(a) == []
    # the same landing again: nothing new, no file written
    monkeypatch.setattr(ingest_mod, "PART_ROWS", 100)
    with read_only(direct) as con:
        before = _staged_files(con)
    _run(direct, land, "two")
    with read_only(direct) as con:
        assert _staged_files(con) == before


def test_the_key_hashes_of_a_run_find_every_duplicate_and_conflict_the_stored_keys_find(landing: Path, tmp_path: Path,
                                                                                       monkeypatch):
    """From its first file on, a run asks "is any of these keys stored?" of the hashes of the
    stored keys (``Ingestor._key_hashes``), kept up to date with every file it loads, whatever the
    route: the same verdicts as the scan of the stored keys, on files read in place, written as
    Parquet files and batched."""
    from warehouse import ingest as ingest_mod

    land = _fresh_landing(landing, tmp_path)
    first = sorted((land / "telemetry" / "requests").rglob("*.jsonl"))[0]
    a, b = first.read_text().splitlines()[:2]
    changed = json.loads(b)
    changed["latency_ms"] = float(changed.get("latency_ms") or 0) + 1  # another value: a conflict
    # a large file (read in place): one call as stored (a duplicate), one with another count (a conflict)
    # and 10 new calls
    (land / "telemetry" / "requests" / "zz-repeats.jsonl").write_text(
        "\n".join([a, json.dumps(changed), *(_late_line("r", k) for k in range(10))]) + "\n")
    # two small files, batched: the same two again and a new call; a new call
    (land / "telemetry" / "requests" / "zz-small-1.jsonl").write_text("\n".join([a, json.dumps(changed), _late_line("s", 1)]) + "\n")
    (land / "telemetry" / "requests" / "zz-small-2.jsonl").write_text(_late_line("s", 2) + "\n")
    monkeypatch.setattr(ingest_mod, "BY_PATH_BYTES", 2000)  # the generated files and zz-repeats, not the small ones
    monkeypatch.setattr(ingest_mod, "PART_ROWS", 2)
    used: set[tuple[str, bool]] = set()  # (the rows classified, with the key hashes)
    real_verdicts = ingest_mod.verdicts

    def verdicts(con, table, key, col_names, rows, order, key_hashes=None):
        if table == "stg.requests":
            used.add((rows, key_hashes is not None))
        return real_verdicts(con, table, key, col_names, rows, order, key_hashes)

    monkeypatch.setattr(ingest_mod, "verdicts", verdicts)
    out = {}
    for hashes in (True, False):
        if hashes is False:
            # both routes asked the hashes: the files read in place and the batch of small files
            assert {("_incoming", True), ("_batch_rows", True)} <= used, used
        if not hashes:
            monkeypatch.setattr(Ingestor, "_key_hashes", lambda self, table, key: None)
        wh = tmp_path / f"h{hashes}" / "thinktax.duckdb"
        b_ = Build(wh, "one")
        b_.start(Config().settings_row())
        with b_.connect() as con:
            ing = Ingestor(con, land)
            ing.ingest()
            if hashes:
                assert "stg.requests" in ing._hashes
                (name, _k) = ing._hashes["stg.requests"]
                # one hash per stored call, kept up to date with every file loaded
                assert con.execute(f"SELECT count(*) FROM {name}").fetchall() == con.execute("SELECT count(*) FROM stg.requests").fetchall()
            out[hashes] = [con.execute(q).fetchall() for q in (
                "SELECT * EXCLUDE (file_id), (SELECT file FROM ops.ingested_files f WHERE f.file_id = r.file_id) FROM stg.requests r ORDER BY ALL",
                "SELECT f.file, q.line, q.field, q.reason FROM ops.quarantine q JOIN ops.ingested_files f USING (file_id) ORDER BY ALL",
                "SELECT file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined FROM ops.ingested_files ORDER BY file")]
    assert out[True] == out[False]
    files = {r[0].rsplit("/", 1)[1]: r[2:] for r in out[True][2]}
    # (in, loaded, duplicate, quarantined), worked out by hand from the lines written above
    assert files["zz-repeats.jsonl"] == (12, 10, 1, 1)
    assert files["zz-small-1.jsonl"] == (3, 1, 1, 1)
    assert files["zz-small-2.jsonl"] == (1, 1, 0, 0)


def _late_line(name: str, k: int) -> str:
    return json.dumps({"ts": dt.datetime.combine(SPEC.day(1), dt.time(12)).isoformat() + "Z", "request_id": f"{name}-{k}",
                       "model": "o3", "provider": "openai", "usage": {"prompt_tokens": 10, "completion_tokens": 5}})


def test_staged_bounds_are_the_min_and_max_a_scan_finds(landing: Path, tmp_path: Path):
    """warehouse.parts.staged_bounds (the plan's first and last day of calls) reads the Parquet
    statistics of stg.requests' files and its pending rows: the same values as min() / max() over
    every row, for files of several builds and rows still pending; None when a row group has no
    statistics for the column (an all-NULL column), so that the caller scans instead."""
    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    _run(wh, land, "one")
    _late(land, "late", 0)  # a file of day 0: in its own, later file; the bounds do not move
    _run(wh, land, "two")
    b = Build(wh, "three")
    b.start(Config().settings_row())
    with b.connect() as con:
        assert len(_staged_files(con)) == 2
        for col in ("ts", "latency_ms", "request_id"):
            assert parts.staged_bounds(con, "stg.requests", col) == tuple(
                con.execute(f"SELECT min({col}), max({col}) FROM stg.requests").fetchall()[0]), col
        # pending rows (an ingest under way): they count too, past the files' last day
        later = dt.datetime.combine(SPEC.day(SPEC.days + 5), dt.time(9, 30, 0, 123456))
        con.execute("INSERT INTO stg.requests__pending BY NAME SELECT * REPLACE (? AS ts, 'p-1' AS request_id) "
                    "FROM stg.requests LIMIT 1", [later])
        assert parts.staged_bounds(con, "stg.requests", "ts") == (
            con.execute("SELECT min(ts) FROM stg.requests").fetchall()[0][0], later)
        assert incremental._call_days(con) == (SPEC.day(0), later.date())
        # every call of the generated days is API traffic or self-hosted: node_id is NULL in some row
        # groups and set in others; a row group of NULLs has no statistics: no answer, the caller scans
        if con.execute("SELECT count(*) FROM stg.requests WHERE request_id LIKE 'late-%' AND node_id IS NULL").fetchall()[0][0]:
            assert parts.staged_bounds(con, "stg.requests", "node_id") is None
        assert parts.staged_bounds(con, "stg.requests", "no_such_column") is None
    b.abandon()


def test_each_stg_requests_file_keeps_its_key_hashes_and_a_night_reads_only_those_this_duckdb_made(
        landing: Path, tmp_path: Path):
    """A night's de-duplication reads the hashes of the stored request ids that each file of
    stg.requests keeps (column _key_hash, not in the view) instead of hashing every stored id again.
    They are hashes of DuckDB's hash(), which may change between versions: a file whose hashes
    another DuckDB made is hashed again from its request_id, so a repeated call is still found."""
    land = _fresh_landing(landing, tmp_path)
    wh = tmp_path / "w" / "thinktax.duckdb"
    _run(wh, land, "one")
    with read_only(wh) as con:
        cols = [r[0] for r in con.execute("DESCRIBE stg.requests").fetchall()]
        assert parts.KEY_HASH not in cols and "request_id" in cols
        files = con.execute("SELECT path, key_hash FROM ops.part_files WHERE table_name = 'stg.requests' "
                            "AND retired_by IS NULL ORDER BY path").fetchall()
        assert files and {t for _p, t in files} == {parts.key_hash_tag("stg.requests")}
        root = parts.location(con)
        for p, _t in files:  # every row's stored hash is the hash of its request id
            assert con.execute("SELECT count(*), count(*) FILTER (_key_hash = hash(request_id)) FROM read_parquet(?)",
                               [str(root / p)]).fetchall()[0][0:2] == con.execute(
                "SELECT count(*), count(*) FROM read_parquet(?)", [str(root / p)]).fetchall()[0]
        stored = sorted(r[0] for r in con.execute("SELECT hash(request_id) FROM stg.requests").fetchall())
        assert sorted(r[0] for r in con.execute(parts.key_hashes_sql(con, "stg.requests")).fetchall()) == stored
        first, first_tag = files[0]
        repeated = con.execute("SELECT request_id FROM read_parquet(?) LIMIT 1", [str(root / first)]).fetchall()[0][0]

    # the first file as an older DuckDB would have left it: other hashes, its version in the tag
    f = root / first
    body = tmp_path / "rewritten.parquet"
    duckdb.execute(f"COPY (SELECT * REPLACE (0::UBIGINT AS _key_hash) FROM read_parquet('{f}')) TO '{body}' "
                   f"(FORMAT parquet, {parts.WRITE_OPTIONS})")
    shutil.move(body, f)
    with duckdb.connect(str(wh)) as con:
        con.execute("UPDATE ops.part_files SET bytes = ?, key_hash = ? WHERE path = ?",
                    [f.stat().st_size, first_tag.replace(duckdb.__version__, "0.0.0"), first])
    with read_only(wh) as con:
        # hashed again from the file's request ids: the same hashes as before, no 0 among them
        assert sorted(r[0] for r in con.execute(parts.key_hashes_sql(con, "stg.requests")).fetchall()) == stored
    # a night with the call of that file logged again, and one new call: a duplicate and a new row
    again = next(line for f_ in sorted((land / "telemetry" / "requests").rglob("*.jsonl"))
                 for line in f_.read_text().splitlines() if json.loads(line).get("request_id") == repeated)
    (land / "telemetry" / "requests" / "zz-night.jsonl").write_text("\n".join([again, _late_line("n", 1)]) + "\n")
    _run(wh, land, "two")
    with read_only(wh) as con:
        assert con.execute("SELECT rows_in, rows_loaded, rows_duplicate, rows_quarantined FROM ops.ingested_files "
                           "WHERE file LIKE '%zz-night.jsonl'").fetchall() == [(2, 1, 1, 0)]
        assert con.execute("SELECT count(*) FROM stg.requests WHERE request_id = ?", [repeated]).fetchall() == [(1,)]
