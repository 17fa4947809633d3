"""Great Expectations checks on the staging tables (warehouse/expectations.py, pipelines/defs/gx_checks.py).

Parsers quarantine what they can tell is bad, so staging should always pass; these tests prove the
suites *can* fail (rows written straight into staging, or a parser forced to let a bad row
through) and that a failure blocks the marts and leaves the published warehouse byte-identical.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections import deque
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipelines.defs.warehouse_assets import PUBLISHED, staging_tables
from warehouse import expectations as E
from warehouse.db import migrate, utcnow
from warehouse.ingest import Ingestor

REPO = Path(__file__).resolve().parents[2]

NOW = dt.datetime(2026, 8, 1)

CALL = ('{{"ts":"{ts}","request_id":"{rid}","model":"o3","provider":"openai",'
        '"usage":{{"prompt_tokens":100,"completion_tokens":50,"completion_tokens_details":{{"reasoning_tokens":20}}}}}}')
LANDING = {
    "prices/llm/prices.2026-01-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok\nopenai,o3,2,8\n",
    "telemetry/requests/day1.jsonl": "\n".join(CALL.format(ts=f"2026-06-30T1{i}:00:00Z", rid=f"r{i}") for i in range(3)) + "\n",
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    migrate(c)
    yield c
    c.close()


def add_file(con, file_id: int, name: str, ingested_at: dt.datetime = NOW) -> None:
    con.execute("INSERT INTO ops.ingested_files (file_id, file, sha256, folder, format, target_table, status, rows_in, "
                "rows_loaded, rows_duplicate, rows_quarantined, effective_from, bytes, ingested_at) "
                "VALUES (?, ?, ?, 'x', 'f', NULL, 'loaded', 0, 0, 0, 0, NULL, 0, ?)",
                [file_id, name, f"sha{file_id}", ingested_at])


def add_request(con, file_id: int, line: int, rid: str, *, ts="2026-06-30 10:00:00", thinking=20, output=30) -> None:
    con.execute(
        "INSERT INTO stg.requests (file_id, line, ts, request_id, model, task_id, usage_shape, uncached_input_tokens, "
        "cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens) "
        "VALUES (?, ?, ?, ?, 'o3', ?, 'openai_chat', 100, 0, 0, ?, ?)",
        [file_id, line, ts, rid, rid, thinking, output])


# ------------------------------------------------------------------------------------------ suites


def test_every_staging_table_has_a_suite_naming_real_columns(con):
    explicit = E.suites(NOW)
    for table in staging_tables():
        suite = E.suite_for(con, table, NOW)
        assert suite.expectations, table
        schema, name = table.split(".")
        cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_schema = ? AND table_name = ?", [schema, name]).fetchall()}
        for e in suite.expectations:
            assert set(e.columns) <= cols | set(suite.derived), (table, e.label)
    # the tables the issue names have hand-written suites, not just the NOT NULL fallback
    assert {"stg.requests", "stg.llm_prices", "stg.gpu_prices", "stg.models", "stg.nodes", "stg.deployments"} <= set(explicit)
    labels = [e.label for e in explicit["stg.requests"].expectations]
    assert "completion_tokens >= thinking_tokens" in labels
    assert "between(ts, 2015-01-01 .. 2026-08-02)" in labels  # a day after the run
    assert "in_set(currency, ['USD'])" in [e.label for e in explicit["stg.llm_prices"].expectations]


def test_fallback_suite_covers_not_null_columns(con):
    con.execute("CREATE TABLE stg.new_family (file_id INTEGER NOT NULL, line BIGINT NOT NULL, k VARCHAR NOT NULL, v DOUBLE)")
    suite = E.suite_for(con, "stg.new_family", NOW)
    assert [e.label for e in suite.expectations] == ["not_null(k)", "between(line, 1 .. )"]


# ------------------------------------------------------------------------------------------ runner


def test_good_rows_pass_and_only_new_files_are_validated(con):
    add_file(con, 1, "telemetry/requests/old.jsonl")
    add_file(con, 2, "telemetry/requests/new.jsonl")
    add_request(con, 1, 1, "old", thinking=-1)  # bad, but from an earlier run: not this run's business
    add_request(con, 2, 1, "a")
    add_request(con, 2, 2, "b", thinking=0, output=0)
    res = E.validate_new_rows(con, "stg.requests", 2, now=NOW)
    assert (res.rows_new, res.rows_validated, res.sampled, res.success) == (2, 2, False, True)
    assert len(res.results) == len(E.suites(NOW)["stg.requests"].expectations)
    assert res.scope == "validated all 2 new rows (file_id >= 2)"
    # the same table validated from file 1 on sees the old bad row
    assert not E.validate_new_rows(con, "stg.requests", 1, now=NOW).success


def test_no_new_rows_passes_without_great_expectations(con):
    res = E.validate_new_rows(con, "stg.nodes", 1, now=NOW)
    assert res.success and res.rows_new == 0 and res.results == []
    assert "nothing to validate" in res.scope


def test_bad_rows_fail_with_counts_and_sample_rows(con):
    add_file(con, 1, "telemetry/requests/bad.jsonl")
    add_request(con, 1, 1, "ok")
    add_request(con, 1, 2, "neg", thinking=-5)  # a negative bucket (completion -5 + 30 = 25 is still >= -5)
    add_request(con, 1, 3, "future", ts="2099-01-01 00:00:00")
    add_request(con, 1, 4, "over", thinking=40, output=-10)  # completion 30 < thinking 40
    res = E.validate_new_rows(con, "stg.requests", 1, now=NOW)
    failed = {r.label: r for r in res.failed}
    assert set(failed) == {"between(thinking_tokens, 0 .. 10000000)", "between(output_tokens, 0 .. 10000000)",
                           "between(ts, 2015-01-01 .. 2026-08-02)", "completion_tokens >= thinking_tokens"}
    assert failed["between(ts, 2015-01-01 .. 2026-08-02)"].sample_rows == [
        {"file": "telemetry/requests/bad.jsonl", "line": 3, "ts": "2099-01-01 00:00:00"}]
    assert failed["between(thinking_tokens, 0 .. 10000000)"].sample_values == [-5]
    assert failed["completion_tokens >= thinking_tokens"].sample_rows == [
        {"file": "telemetry/requests/bad.jsonl", "line": 4, "completion_tokens": 30, "thinking_tokens": 40}]
    assert res.offending_rows == 4  # one unexpected value per failed expectation
    assert {s["line"] for s in res.sample()} == {2, 3, 4}
    assert "| between(ts, 2015-01-01 .. 2026-08-02) | **NO** | 1 |" in res.summary_table()


@pytest.mark.parametrize("ts", ["2014-12-31 23:59:59", "2099-01-01 00:00:00", "2400-01-01 00:00:00", "1500-06-01 00:00:00"])
def test_a_timestamp_out_of_range_fails_whether_or_not_it_fits_in_nanoseconds(con, ts):
    """_frame hands GX datetime64[ns] columns (vectorised) when every value fits in nanoseconds
    (1678-2261), and the column as DuckDB gives it otherwise: both ways the bad row is found."""
    add_file(con, 1, "telemetry/requests/t.jsonl")
    add_request(con, 1, 1, "ok")
    add_request(con, 1, 2, "bad", ts=ts)
    res = E.validate_new_rows(con, "stg.requests", 1, now=NOW)
    failed = {r.label: r for r in res.failed}
    assert set(failed) == {"between(ts, 2015-01-01 .. 2026-08-02)"}
    (row,) = failed["between(ts, 2015-01-01 .. 2026-08-02)"].sample_rows
    assert (row["line"], row["ts"][:10]) == (2, ts[:10])


def test_price_suites_catch_unit_mistakes(con):
    add_file(con, 1, "prices/llm/p.csv")
    rows = [  # provider, model, input, output, currency
        ("openai", "ok", 2, 8, "USD"),
        ("openai", "per1k", 2, 8000, "USD"),          # $8 per 1K typed as per 1M -> 8000/M
        ("openai", "pertoken", 0.000002, 8, "USD"),   # $2e-6 per token not scaled by 1e6
        ("openai", "free", 0, 0, "USD"),              # free is fine
        ("acme", "eur", 1, 2, "EUR"),                 # not converted
    ]
    for i, (p, m, inp, out, cur) in enumerate(rows, start=2):
        con.execute("INSERT INTO stg.llm_prices (file_id, line, provider, model, price_kind, effective_from, "
                    "input_usd_per_mtok, output_usd_per_mtok, currency, source_format) "
                    "VALUES (1, ?, ?, ?, 'standard', DATE '2026-01-01', ?, ?, ?, 'thinktax_csv')", [i, p, m, inp, out, cur])
    failed = {r.label: r for r in E.validate_new_rows(con, "stg.llm_prices", 1, now=NOW).failed}
    assert set(failed) == {"between(output_usd_per_mtok, 0 .. 1000)",
                           "between(output_usd_per_mtok, 0.0001 .. 1000) where output_usd_per_mtok > 0",
                           "between(input_usd_per_mtok, 0.0001 .. 1000) where input_usd_per_mtok > 0",
                           "in_set(currency, ['USD'])"}
    assert failed["in_set(currency, ['USD'])"].sample_rows[0]["line"] == 6
    assert failed["between(input_usd_per_mtok, 0.0001 .. 1000) where input_usd_per_mtok > 0"].sample_values == [2e-06]


def test_metric_suite_conditions(con):
    add_file(con, 1, "telemetry/metrics/n1__2026-07-01T10-00-00Z.prom")
    samples = [  # metric, kind, mapped, value
        ("kv_cache_usage", "gauge", True, 0.5),
        ("kv_cache_usage", "gauge", True, 1.5),        # a ratio above 1
        ("gpu_util", "gauge", True, 87.0),             # a DCGM percentage not scaled to 0-1
        ("prompt_tokens_total", "counter", True, -3.0),  # a counter below 0
        ("vendor_thing_total", "counter", False, -1.0),  # not a canonical metric: not judged
        ("power_w", "gauge", True, 350.0),
    ]
    for i, (metric, kind, mapped, value) in enumerate(samples, start=1):
        con.execute("INSERT INTO stg.metric_samples VALUES (1, ?, 'n1', TIMESTAMP '2026-07-01 10:00', 'vllm', ?, ?, ?, ?, "
                    "'{}', '{}', NULL, NULL, ?)", [i, metric, mapped, metric, kind, value])
    failed = {r.label: r for r in E.validate_new_rows(con, "stg.metric_samples", 1, now=NOW).failed}
    assert {k: [row["line"] for row in r.sample_rows] for k, r in failed.items()} == {
        "between(value, 0 .. 1) where metric in ['kv_cache_usage', 'gpu_util']": [2, 3],
        "between(value, 0 .. ) where kind == 'counter' and mapped == True": [4],
    }


def test_large_sets_are_sampled_and_say_so(con):
    add_file(con, 1, "telemetry/requests/big.jsonl")
    con.execute("""INSERT INTO stg.requests (file_id, line, ts, request_id, model, task_id, usage_shape,
                   uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens)
                   SELECT 1, i, TIMESTAMP '2026-06-30' + i * INTERVAL 1 SECOND, 'r' || i, 'o3', 'r' || i, 'anthropic',
                          1, 0, 0, 0, 1 FROM range(1, 501) t(i)""")
    res = E.validate_new_rows(con, "stg.requests", 1, now=NOW, sample_rows=100)
    assert (res.rows_new, res.rows_validated, res.sampled, res.success) == (500, 100, True, True)
    assert res.scope.startswith("validated a random sample of 100 of the 500 new rows")


def test_first_new_file_id_is_after_the_files_of_earlier_runs(con):
    started = dt.datetime(2026, 8, 1, 12)
    con.execute("INSERT INTO ops.runs (build_id, started_at) VALUES ('b2', ?)", [started])
    assert E.first_new_file_id(con, "b2") == 1  # empty warehouse: everything is new
    add_file(con, 1, "a", started - dt.timedelta(days=1))
    add_file(con, 2, "b", started - dt.timedelta(seconds=1))
    add_file(con, 3, "c", started + dt.timedelta(seconds=1))
    assert E.first_new_file_id(con, "b2") == 3
    assert E.run_started_at(con, "b2") == started


# ------------------------------------------------------------------------------------------ Dagster


def ancestors(graph, key: dg.AssetKey) -> set[dg.AssetKey]:
    seen, todo = set(), deque([key])
    while todo:
        for parent in graph.get(todo.popleft()).parent_keys:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def test_every_staging_table_has_a_blocking_gx_check():
    from pipelines.definitions import defs

    # the checks run in the ingest step: they are check specs of its multi_asset
    specs = {(s.asset_key, s.name): s for a in defs.assets for s in getattr(a, "check_specs", ())}
    for table in staging_tables():
        spec = specs.get((dg.AssetKey(table.split(".")), "gx_suite"))
        assert spec is not None and spec.blocking, table


def test_publish_is_downstream_of_every_checked_staging_table():
    # otherwise a failing blocking check on a staging table no SQL table reads would not stop the publish
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    upstream = ancestors(graph, PUBLISHED)
    missing = [t for t in staging_tables() if dg.AssetKey(t.split(".")) not in upstream]
    assert missing == []


def publish_directly(landing: Path, wh: Path) -> None:
    """A published warehouse without Dagster (what a previous good run left)."""
    from services.config import Config
    from warehouse.db import Build
    from warehouse.ingest import Ingestor
    from warehouse.transform import build_all

    b = Build(wh, "first")
    b.start(Config().settings_row())
    with b.connect() as c:
        Ingestor(c, landing).ingest()
        build_all(c)
    b.publish(files_new=len(LANDING), landing=str(landing))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_bad_row_that_reaches_staging_fails_the_run_and_keeps_the_published_file(tmp_path, monkeypatch, capsys):
    """Force a parser to let a bad row through: the blocking check fails, marts are not rebuilt,
    the published file keeps its bytes, and the message names the check and shows the row."""
    from sources.registry import all_specs
    from thinktax.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    landing = write(tmp_path / "landing", LANDING)
    wh = tmp_path / "wh" / "thinktax.duckdb"
    publish_directly(landing, wh)
    before = sha256(wh)

    def leaky(spec):
        def parse(data, name, ctx):
            parsed = spec.parse(data, name, ctx)
            # the parser's own future-date rule "forgotten" for line 2: 2099 reaches staging
            ts = pc.if_else(pc.equal(parsed.rows["line"], 2), pa.scalar(dt.datetime(2099, 1, 1), pa.timestamp("us")),
                            parsed.rows["ts"])
            parsed.rows = parsed.rows.set_column(parsed.rows.schema.get_field_index("ts"), "ts", ts)
            return parsed
        return dataclasses.replace(spec, parse=parse) if spec.folder == "telemetry/requests" else spec

    monkeypatch.setattr("warehouse.ingest.all_specs", lambda: [leaky(s) for s in all_specs()])
    write(landing, {"telemetry/requests/day2.jsonl": "\n".join(
        CALL.format(ts=f"2026-07-01T1{i}:00:00Z", rid=f"s{i}") for i in range(3)) + "\n"})
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh)]) == 1
    err = capsys.readouterr().err
    assert "blocking check failed: stg/requests:gx_suite" in err
    assert "1 offending row(s)" in err
    assert "telemetry/requests/day2.jsonl" in err and "'line': 2" in err and "2099-01-01" in err
    assert sha256(wh) == before
    assert not list(wh.parent.glob("*.build-*"))
    with duckdb.connect(str(wh), read_only=True) as c:
        assert c.sql("SELECT count(*) FROM stg.requests").fetchall() == [(3,)]


def test_check_metadata_shows_each_expectation(tmp_path, monkeypatch):
    """What the Dagster UI shows: the evaluation stored on the instance carries every expectation's result."""
    from thinktax.runner import run_pipeline

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    landing = write(tmp_path / "landing", LANDING)
    outcome = run_pipeline(landing, tmp_path / "wh" / "thinktax.duckdb", None)
    assert outcome.success, outcome.error

    def stored(table: str) -> tuple[bool, dict]:
        key = dg.AssetCheckKey(dg.AssetKey(table.split(".")), "gx_suite")
        with dg.DagsterInstance.get() as instance:
            record = instance.get_latest_asset_check_evaluation_record(key)
        assert record is not None and record.run_id == outcome.run_id
        evaluation = record.event.dagster_event.event_specific_data
        return evaluation.passed, {k: v.value for k, v in evaluation.metadata.items()}

    passed, meta = stored("stg.requests")
    assert passed
    assert (meta["rows_new"], meta["rows_validated"], meta["sampled"], meta["offending_rows"]) == (3, 3, False, 0)
    assert len(meta["results"]) == len(E.suites(utcnow())["stg.requests"].expectations)
    assert all(r["success"] and r["unexpected_count"] == 0 for r in meta["results"])
    assert "| completion_tokens >= thinking_tokens | yes | 0 |" in meta["expectations"]
    passed, nodes = stored("stg.nodes")
    assert passed and nodes["rows_new"] == 0 and "nothing to validate" in nodes["scope"]


WORKER = """
import dataclasses, datetime as dt, json, os, sys
import duckdb
sys.path.insert(0, "tests/pipelines")
from test_gx_checks import NOW, add_file, add_request
from warehouse import expectations as E
from warehouse.db import migrate

con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
migrate(con)
add_file(con, 1, "telemetry/requests/bad.jsonl")
add_request(con, 1, 1, "ok")
add_request(con, 1, 2, "neg", thinking=-5)
add_request(con, 1, 3, "future", ts="2099-01-01 00:00:00")
mode = sys.argv[1]
E.start_worker()
E.start_worker()  # a second call starts nothing
pool = E._WORKER
if mode == "killed":
    pool.submit(int).result()
    for p in pool._processes.values():
        p.kill()
        p.join()
pending = [E.submit(con, t, 1, now=NOW) for t in ("stg.requests", "stg.nodes")]
got = [dataclasses.asdict(f()) for f in pending]
in_worker = "great_expectations" not in sys.modules  # the results were computed elsewhere
E.stop_worker()
for g in got:
    g.pop("seconds")
print(json.dumps({"results": got, "gx_imported_here": not in_worker, "worker": E._WORKER is not None}, default=str))
"""


@pytest.mark.parametrize("mode", ["alive", "killed"])
def test_the_gx_worker_process_validates_as_this_process_does(con, mode):
    """The ingest starts a GX worker process at its first new file; the checks send it the new
    rows. Its results must be those of validating here, row samples included; a worker that died
    is replaced by validating here, with the same results."""
    import json
    import os
    import subprocess
    import sys

    add_file(con, 1, "telemetry/requests/bad.jsonl")
    add_request(con, 1, 1, "ok")
    add_request(con, 1, 2, "neg", thinking=-5)
    add_request(con, 1, 3, "future", ts="2099-01-01 00:00:00")
    here = [E.validate_new_rows(con, t, 1, now=NOW) for t in ("stg.requests", "stg.nodes")]
    want = [{k: v for k, v in dataclasses.asdict(r).items() if k != "seconds"} for r in here]
    assert not here[0].success and len(here[0].failed) == 2 and here[1].rows_new == 0
    env = {**os.environ, "THINKTAX_GX_WORKER": "1"}
    proc = subprocess.run([sys.executable, "-c", WORKER, mode], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["results"] == json.loads(json.dumps(want, default=str))
    assert got["gx_imported_here"] is (mode == "killed")
    assert got["worker"] is False  # stopped
    if mode == "killed":
        assert "worker process died" in proc.stderr


def test_the_ingest_says_once_when_it_meets_its_first_new_file(tmp_path):
    """``on_new`` (the ingest step passes expectations.start_worker): once for a landing with new files,
    never when every file was ingested before (a no-op run does not import GX)."""
    landing = write(tmp_path / "landing", LANDING)
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    migrate(con)
    calls = []
    Ingestor(con, landing).ingest(on_new=lambda: calls.append("new"))
    assert calls == ["new"]
    Ingestor(con, landing).ingest(on_new=lambda: calls.append("again"))
    assert calls == ["new"]
