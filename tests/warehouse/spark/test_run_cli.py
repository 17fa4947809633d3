"""`thinktax run --engine spark` end to end on the mini landing folder: the hand-worked figures of
tests/sql/test_costs_hand_worked.py come out of Spark's tables, and the run is a Dagster run (issue 27:
the same job, assets, materialisations and checks as a DuckDB run, read from the instance).

It reuses the test session's Spark (getOrCreate returns it) and re-creates the core and mart
tables, so it runs after test_parity.py (file order), whose comparisons are already made.
"""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

import pytest

# a Spark run plus 30 Spark queries: 97-99 s each at load average 8.5 (2026-12-03); 330 s when it started the session
pytestmark = pytest.mark.timeout(1200)

from tests.conftest import MINI_FILES, write_files  # noqa: E402
from tests.warehouse.spark.cli_json import canon, sql_json  # noqa: E402

# tests/sql/test_costs_hand_worked.py: r1 0.20225, r2 0.0028, r3 0.0567, r4 113.28, r5 28.32 (USD)
R1, R2, R3, R4, R5 = D("0.20225"), D("0.0028"), D("0.0567"), D("113.28"), D("28.32")


def _run_record(run_id: str) -> tuple[object, dict, set]:
    """From the Dagster instance: the run, its materialisations (asset -> metadata) and its check
    evaluations (asset, check, passed)."""
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
        mats = {}
        for r in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=10_000).records:
            ev = r.event_log_entry.dagster_event
            meta = {k: getattr(v, "value", v) for k, v in ev.step_materialization_data.materialization.metadata.items()}
            key = ev.asset_key.to_user_string()
            if key not in mats or "reason" not in meta:  # the step's own materialisation, not a late day's
                mats[key] = meta
        checks = {(r.event_log_entry.dagster_event.event_specific_data.asset_key.to_user_string(),
                   r.event_log_entry.dagster_event.event_specific_data.check_name,
                   r.event_log_entry.dagster_event.event_specific_data.passed)
                  for r in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION, limit=10_000).records}
    return run, mats, checks


def _last_run_id() -> str:
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        return instance.get_runs(limit=1)[0].run_id


@pytest.mark.slow
def test_thinktax_run_engine_spark_gives_the_hand_worked_figures(spark, tmp_path, capsys):
    from thinktax.cli import main

    landing = write_files(tmp_path / "landing", MINI_FILES)
    # --warehouse names a folder (issue 16: "where the Spark tables live"): the DuckDB build is
    # <folder>/thinktax.duckdb and the Spark tables <folder>/spark
    folder = tmp_path / "wh"
    warehouse = folder / "thinktax.duckdb"
    rc = main(["run", "--engine", "spark", "--landing", str(landing), "--warehouse", str(folder)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "engine: spark" in out and "rebuild: full" in out
    # a Spark run is a Dagster run of the same job: the same assets materialised and the same checks
    # evaluated as a DuckDB run of the same landing, row counts on the models
    import dagster as dg

    run, mats, checks = _run_record(_last_run_id())
    assert run.job_name == "thinktax" and run.status == dg.DagsterRunStatus.SUCCESS
    assert mats["ops/ingested_files"]["new_files"] == 4 and mats["ops/ingested_files"]["engine"] == "spark"
    assert mats["core/call_costs"]["dagster/row_count"] == 5 and mats["core/call_costs"]["engine"] == "spark"
    assert "ops/published_warehouse" in mats and all(passed for *_, passed in checks)
    assert main(["run", "--landing", str(landing), "--warehouse", str(tmp_path / "duck" / "thinktax.duckdb"), "--quiet"]) == 0
    _, duck_mats, duck_checks = _run_record(_last_run_id())
    assert set(mats) == set(duck_mats) and checks == duck_checks
    assert duck_mats["core/call_costs"]["dagster/row_count"] == 5 and duck_mats["core/call_costs"]["engine"] == "duckdb"
    capsys.readouterr()
    assert warehouse.exists()  # the DuckDB build (ingest bookkeeping, staging) was published
    assert (folder / "spark" / "_staging").is_dir()  # (the test session keeps its own table folder)
    # the same folder answers `thinktax sql --engine spark --warehouse <folder>` and the DuckDB `thinktax sql`
    q = "SELECT request_id, cost_usd FROM core.call_costs ORDER BY request_id"
    got = sql_json(capsys, ["sql", "--engine", "spark", "--warehouse", str(folder), "--format", "json", q])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5)]
    # without --engine spark: a local Spark run works on the warehouse's own layout, so the DuckDB
    # file holds the per-call views over the Parquet files Spark wrote (warehouse/spark/shared.py)
    assert (folder / "spark" / "CURRENT").is_file()  # the local build was published
    got = sql_json(capsys, ["sql", "--warehouse", str(folder), "--format", "json", q])
    assert [(r["request_id"], D(r["cost_usd"])) for r in got] == [("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4), ("r5", R5)]

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
    from warehouse.spark.engine import attach

    spark.sql("DROP VIEW marts.cost_per_task")
    assert "marts.cost_per_task" in attach(spark, folder / "spark")
    again = sorted((str(r["day"]), r["team"], r["task_type"], r["model"], r["serving"], r["tier"], r["tasks"], r["calls"],
                    r["cost_usd"], r["cost_per_task_usd"]) for r in spark.table("marts.cost_per_task").collect())
    assert again == rows

    # the same landing again, named by a URI (as s3a://... would be): the ingest on Spark's executors
    # finds every file ingested, adds nothing, and the figures stay the hand-worked ones
    capsys.readouterr()
    rc = main(["run", "--engine", "spark", "--landing", f"file://{landing}", "--warehouse", str(folder)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert _run_record(_last_run_id())[1]["ops/ingested_files"]["new_files"] == 0
    assert "re-made from the DuckDB build" not in out  # the Spark staging tables agreed with the published build
    assert spark.sql("SELECT count(*) FROM stg.requests").collect()[0][0] == 5
    costs = {r["request_id"]: r["cost_usd"] for r in spark.table("core.call_costs").collect()}
    assert costs == {"r1": R1, "r2": R2, "r3": R3, "r4": R4, "r5": R5}

@pytest.mark.slow
def test_spark_run_builds_the_economics_marts_and_sql_json_matches_duckdb(spark, tmp_path, capsys):
    """The economics landing of tests/pipelines/test_economics_marts.py, with the spend spike of
    tests/commands/test_anomaly_alert.py (issue 42), through `thinktax run --engine spark` as a user
    runs it, in a process of its own: the Python marts (self_host_breakeven, gpu_sizing,
    forecast/outlook, spend_anomalies) are built from Spark's rows and written back to Spark;
    `thinktax sql --engine spark --format json` gives DuckDB's JSON for every mart; the published
    DuckDB file serves `thinktax report`.

    The run's process (a local session: pyspark's JVM gateway and its Python workers) leaves nothing
    behind: the JVM is gone when the run has exited and nothing printed a traceback (stopping the JVM
    under a live accumulator server did, before the context was stopped first). Measured: the JVM
    also exits within this check's latency when left to see its stdin close at the process's end;
    the bounded stop (thinktax.cli ``_end_spark_gateway``) is what guarantees it, and
    tests/commands/test_end_children.py shows it ending one that does not exit by itself."""
    from tests.commands.test_anomaly_alert import PRICES, calls, days
    from tests.commands.test_run_exits import _alive, assert_nothing_left, thinktax
    from tests.conftest import build_warehouse
    from tests.pipelines.test_economics_marts import FILES
    from thinktax.cli import main
    from pipelines.defs.economics_assets import ECONOMICS
    from warehouse.sqltable import load_tables

    # d1's GPU price of tests/pipelines/test_economics_marts.py (0.000018 USD, chosen so that self-hosting wins
    # on 3 calls) is below the Great Expectations floor of stg.deployments (0.01 USD per GPU-hour):
    # a Spark run is a Dagster run now (issue 27), whose blocking staging suites would stop it, so
    # this landing prices d1 at 0.018
    files = {**FILES, "catalog/deployments.csv": FILES["catalog/deployments.csv"].replace(",0.000018\n", ",0.018\n")}
    assert files["catalog/deployments.csv"] != FILES["catalog/deployments.csv"]
    # the spike of tests/commands/test_anomaly_alert.py (a $400.40 excess of team search on 2025-06-04) and a
    # second, flat team (ops, task type triage), so that the team and task-type scopes have two values each
    ops = calls(days(0, 34)).replace('"team": "search"', '"team": "ops"').replace('"task_type": "qa"', '"task_type": "triage"')
    ops = ops.replace('"request_id": "', '"request_id": "ops-')
    spike = PRICES | {"telemetry/requests/search.jsonl": calls(days(0, 34, (34,))), "telemetry/requests/ops.jsonl": ops}
    assert not set(spike) & set(files)
    files |= spike
    landing = write_files(tmp_path / "landing", files)
    # the DuckDB reference: the same landing, models and economics built directly, then published
    ref = tmp_path / "duck" / "thinktax.duckdb"
    con, _ = build_warehouse(landing, ref)
    for e in ECONOMICS:
        e.builder(con)
    con.close()
    (tmp_path / "duck" / "thinktax.duckdb.build-t").rename(ref)

    warehouse = tmp_path / "wh" / "thinktax.duckdb"
    (tmp_path / "proc").mkdir()  # the process's stdout, stderr and Dagster home
    ran = thinktax(tmp_path / "proc", "run", "--engine", "spark", "--landing", str(landing), "--warehouse", str(warehouse),
                   "--spark-warehouse", str(tmp_path / "spark"), timeout=1100)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "[spark] economics:" in ran.stdout and "[spark] publish:" in ran.stdout  # progress lines
    jvms = [p for pid, p in ran.children.items() if "java" in ran.cmdlines.get(pid, "").split(" ")[0]]
    assert jvms, sorted(ran.cmdlines.values())
    assert not [p.pid for p in jvms if _alive(p)]
    assert_nothing_left(ran)

    # issue 40: a default warehouse with other data (the demo `make run` publishes into ./var; this test's
    # working folder is a temporary one, tests/conftest.py): the Spark folder answers from the DuckDB file it was published with
    # (recorded in its CURRENT), never from the default one
    other = write_files(tmp_path / "other_landing", MINI_FILES)
    assert main(["run", "--landing", str(other), "--quiet"]) == 0
    default = Path.cwd() / "var" / "thinktax.duckdb"
    assert default.is_file() and (tmp_path / "spark" / "CURRENT").read_text().splitlines()[1] == f"warehouse={warehouse}"
    spark_sql = ["sql", "--engine", "spark", "--spark-warehouse", str(tmp_path / "spark"), "--format", "json"]
    # hand-worked (tests/pipelines/test_economics_marts.py): d1 in June, 3 calls $0.027; at 0.018 USD per GPU-hour
    # 1 x 0.018 x 730 = $13.14 a month, savings 0.027 - 13.14 = -$13.113; the same row as DuckDB's
    d1_sql = ("SELECT api_calls, api_spend_usd, self_host_usd_per_month, savings_usd, verdict "
              "FROM marts.self_host_breakeven WHERE deployment = 'd1-h200-fp8' AND month = DATE '2026-06-01'")
    d1 = sql_json(capsys, [*spark_sql, d1_sql])
    assert [(r["api_calls"], r["api_spend_usd"], r["self_host_usd_per_month"], r["savings_usd"]) for r in d1] == [
        (3, "0.027000", "13.140000", "-13.113000")]
    assert d1 == sql_json(capsys, ["sql", "--warehouse", str(ref), "--format", "json", d1_sql])
    # the default warehouse has no d1 (the mini landing's deployments): the rows above are not from it
    assert sql_json(capsys, ["sql", "--format", "json", "SELECT count(*) AS n FROM marts.self_host_breakeven "
                             "WHERE deployment = 'd1-h200-fp8'"]) == [{"n": 0}]
    # naming another DuckDB file than the folder's own is a clear error (exit 2), not a silent mix
    capsys.readouterr()
    assert main([*spark_sql[:5], "--warehouse", str(default), d1_sql]) == 2
    err = capsys.readouterr().err
    assert f"was published with {warehouse}, not {default}" in err
    # naming its own file is the same answer
    assert sql_json(capsys, [*spark_sql, "--warehouse", str(warehouse), d1_sql]) == d1

    marts = [m.table for m in load_tables() if m.schema == "marts"] + [e.table for e in ECONOMICS]
    differ = {}
    for table in marts:
        query = f"SELECT * EXCLUDE (build_id) FROM {table}"
        want = sql_json(capsys, ["sql", "--warehouse", str(ref), "--format", "json", query])
        got = sql_json(capsys, [*spark_sql, query])
        if canon(got) != canon(want):
            differ[table] = (len(got), len(want), (sorted(set(canon(got)) ^ set(canon(want))) or [""])[0][:600])
    assert not differ, differ

    # marts.spend_anomalies (compared above): the spike is there, so the comparison is not of two empty
    # tables, and the published DuckDB file has the same rows
    query = "SELECT * EXCLUDE (build_id) FROM marts.spend_anomalies"
    want = sql_json(capsys, ["sql", "--warehouse", str(ref), "--format", "json", query])
    assert [r["episode_id"] for r in want if r["is_anomaly"] and r["scope"] == "team" and r["metric"] == "cost_usd"] == [
        "cost_usd:team=search:2025-06-04"]
    assert canon(sql_json(capsys, ["sql", "--warehouse", str(warehouse), "--format", "json", query])) == canon(want)

    # the published DuckDB build has the view models too: marts.cost_per_task (the old-named view of
    # marts.task_cost_breakdown) gives there what Spark's view gives
    query = "SELECT * EXCLUDE (build_id) FROM marts.cost_per_task"
    published = sql_json(capsys, ["sql", "--warehouse", str(warehouse), "--format", "json", query])
    assert published and canon(published) == canon(sql_json(capsys, [*spark_sql, query]))

    # the report reads the published DuckDB build (marts copied from Spark, economics built there)
    capsys.readouterr()
    assert main(["report", "--warehouse", str(warehouse), "--out", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "self_host" in html or "Break-even" in html
