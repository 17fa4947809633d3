"""Ingest on Spark executors (warehouse/spark/ingest.py) gives what the DuckDB Ingestor gives.

One landing folder with every kind of file the issue names (the mini landing of
tests/conftest.py, the bill and Prometheus fixtures, a currency file with a EUR price sheet, a
LiteLLM spend log with its side table, and bad files: a truncated JSON document, a JSONL with an
invalid line, a price sheet full of rejects, the same bytes under another name, a conflicting
duplicate, gzip files good and corrupt, a Latin-1 file, an empty file, a file outside the known
folders) is ingested by DuckDB and by Spark, then a second batch (a file that repeats and
contradicts stored rows). After each batch the staging tables, ops.quarantine and the per-file
accounting of ops.ingested_files are compared: the same rows (file_id included: files are
numbered in the same order), the same types as the DuckDB-to-Parquet bridge gives Spark
(warehouse/spark/build.load_staging), and a third ingest of the same folder is a no-op.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import MINI_FILES, NOW, REPO, write_files
from tests.warehouse.spark.conftest import rows_equal, _norm

pytestmark = pytest.mark.timeout(1200)

CALL = ('{{"ts":"2026-06-30T10:00:00Z","request_id":"{rid}","model":"o3","provider":"openai",'
        '"usage":{{"prompt_tokens":{p},"completion_tokens":10}}}}')
SPEND = json.dumps({"request_id": "ll-1", "call_type": "acompletion", "spend": 0.25, "prompt_tokens": 8000,
                    "completion_tokens": 15500, "startTime": "2026-06-30T11:00:00", "model": "o3",
                    "custom_llm_provider": "openai", "status": "success", "request_tags": ["qa"]})

FILES: dict[str, str | bytes] = {
    **MINI_FILES,
    "telemetry/requests/copy-of-calls.jsonl": MINI_FILES["telemetry/requests/calls.jsonl"],  # same bytes: skipped
    "telemetry/requests/a.jsonl": "\n".join([CALL.format(rid="a", p=1), CALL.format(rid="b", p=2)]) + "\n",
    # b again exactly (duplicate), a with other values (conflict), c new, c again (duplicate), an invalid line
    "telemetry/requests/b.jsonl": "\n".join([CALL.format(rid="b", p=2), CALL.format(rid="a", p=99),
                                             CALL.format(rid="c", p=3), CALL.format(rid="c", p=3), "{oops"]) + "\n",
    # cut off in the middle of its second record
    "telemetry/requests/truncated.jsonl": CALL.format(rid="t1", p=4) + "\n" + CALL.format(rid="t2", p=5)[:40],
    "telemetry/requests/ok.jsonl.gz": gzip.compress((CALL.format(rid="z", p=5) + "\n").encode()),
    "telemetry/requests/broken.jsonl.gz": b"\x1f\x8b\x08\x00garbage",
    "telemetry/requests/latin1.jsonl": "caf\xe9\n".encode("latin-1"),
    "telemetry/litellm_spendlogs/spendlogs.1.jsonl": SPEND + "\n",
    "prices/llm/empty.csv": "",
    "prices/llm/eur.2026-02-01.csv": ("provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\n"
                                      "mistral,m-eur,2,6,EUR\n"),
    "fx/rates.2026-01-01.csv": "currency,usd_per_unit\nEUR,1.10\n",
    "nowhere/readme.txt": "hello",
}
LATER = {  # the second batch: against rows stored by the first
    "telemetry/requests/later.jsonl": "\n".join([CALL.format(rid="b", p=2), CALL.format(rid="a", p=7),
                                                 CALL.format(rid="d", p=8), CALL.format(rid="d", p=9)]) + "\n",
}


def _landing(root):
    landing = write_files(root, FILES)
    shutil.copy(REPO / "tests/fixtures/prices/litellm_truncated.json", landing / "prices/llm/litellm_truncated.json")
    shutil.copy(REPO / "tests/fixtures/prices/thinktax_prices_bad.csv", landing / "prices/llm/thinktax_prices_bad.csv")
    for sub in ("openai", "anthropic", "focus"):
        shutil.copytree(REPO / "tests/fixtures/bills" / sub, landing / "bills" / sub)
    (landing / "telemetry/metrics").mkdir(parents=True)
    for f in (REPO / "tests/fixtures/metrics").glob("*.prom"):
        shutil.copy(f, landing / "telemetry/metrics" / f.name)
    # the same bytes scraped from another node, and from the same node 30 minutes later: each is a
    # scrape of its own (node, time, bytes: warehouse.ingest.file_identity), on both engines
    a = REPO / "tests/fixtures/metrics/gpu-node-a__2026-11-03T14-05-00Z.prom"
    shutil.copy(a, landing / "telemetry/metrics/gpu-node-c__2026-11-03T14-05-00Z.prom")
    shutil.copy(a, landing / "telemetry/metrics/gpu-node-a__2026-11-03T14-35-00Z.prom")
    return landing


FILE_COLS = ("file_id, file, sha256, folder, format, target_table, status, rows_in, rows_loaded, rows_duplicate, "
             "rows_quarantined, effective_from, bytes")
QUARANTINE_COLS = "file_id, file, line, field, reason, raw"


@pytest.fixture(autouse=True)
def _own_staging_tables(spark):
    """Each test ingests into tables of its own: the staging and ops tables an earlier test of the
    session registered (test_run_cli's run, the scenario's bridge) are unregistered first."""
    for db in ("stg", "ops"):
        if spark.catalog.databaseExists(db):
            for t in spark.catalog.listTables(db):  # a staging table read from DuckDB's files is a view
                spark.sql(f"DROP {'VIEW' if t.tableType == 'VIEW' else 'TABLE'} IF EXISTS {db}.{t.name}")


def _duck(con, sql: str) -> list[tuple]:
    return [tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()]


def _spark(spark, sql: str) -> list[tuple]:
    return [tuple(_norm(v) for v in r) for r in spark.sql(sql).collect()]


def _compare_all(con, spark) -> dict[str, str]:
    """Every staging table, ops.quarantine and ops.ingested_files: DuckDB's rows against Spark's."""
    from sources.contract import TABLES

    differ = {}
    for name, table in TABLES.items():
        cols = ", ".join(f"`{c}`" for c in table.column_names)
        ok, why = rows_equal(_spark(spark, f"SELECT {cols} FROM {name}"), _duck(con, f"SELECT {cols.replace('`', chr(34))} FROM {name}"))
        if not ok:
            differ[name] = why
    for name, cols in (("ops.quarantine", QUARANTINE_COLS), ("ops.ingested_files", FILE_COLS)):
        ok, why = rows_equal(_spark(spark, f"SELECT {cols} FROM {name}"), _duck(con, f"SELECT {cols} FROM {name}"))
        if not ok:
            differ[name] = why
    return differ


@pytest.mark.slow
def test_spark_ingest_equals_the_duckdb_ingest(spark, tmp_path):
    from warehouse.db import connect, migrate
    from warehouse.ingest import Ingestor
    from warehouse.spark.build import Target, load_staging
    from warehouse.spark.ingest import SparkIngest

    landing = _landing(tmp_path / "landing")
    con = connect(tmp_path / "w.duckdb")
    migrate(con)
    duck = Ingestor(con, landing, now=NOW).ingest()
    ing = SparkIngest(spark, str(landing), str(tmp_path / "tables"), str(tmp_path / "scratch"), now=NOW)
    got = ing.ingest()
    ing.close()

    # the same per-file outcome, file by file (already_ingested: the copy of calls.jsonl)
    def outcome(summary):
        return sorted((f.file, f.status, f.format, f.table, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined)
                      for f in summary.files)

    assert outcome(got) == outcome(duck), set(outcome(got)) ^ set(outcome(duck))
    status = {f.file: f.status for f in got.files}
    assert status["telemetry/requests/copy-of-calls.jsonl"] == "already_ingested"
    assert status["telemetry/metrics/gpu-node-c__2026-11-03T14-05-00Z.prom"] == "loaded"
    assert status["telemetry/metrics/gpu-node-a__2026-11-03T14-35-00Z.prom"] == "loaded"
    for bad in ("telemetry/requests/broken.jsonl.gz", "telemetry/requests/latin1.jsonl", "prices/llm/empty.csv",
                "nowhere/readme.txt", "prices/llm/litellm_truncated.json"):
        assert status[bad] == "unreadable", bad
    # hand-counted: b.jsonl has 5 lines: c loaded; b and the 2nd c duplicates; a conflicting, {oops rejected
    b = next(f for f in got.files if f.file == "telemetry/requests/b.jsonl")
    assert (b.rows_in, b.rows_loaded, b.rows_duplicate, b.rows_quarantined) == (5, 1, 2, 2)
    assert _compare_all(con, spark) == {}
    # the comparison is not over empty tables: every table these files feed has rows (hand-counted
    # from FILES: r1-r5, a, b, c, t1, z, ll-1 = 11 calls; the side row of the spend log)
    assert _spark(spark, "SELECT count(*) FROM stg.requests") == [(11,)]
    assert _spark(spark, "SELECT request_id FROM stg.reported_costs") == [("ll-1",)]
    fed = [n for n in ("stg.llm_prices", "stg.nodes", "stg.fx_rates", "stg.openai_usage", "stg.openai_costs",
                       "stg.anthropic_usage", "stg.anthropic_costs", "stg.focus_costs", "stg.metric_samples")
           if _spark(spark, f"SELECT count(*) FROM {n}") == [(0,)]]
    assert fed == []
    # the EUR sheet was converted with the rate of the fx file ingested before it: 2 EUR x 1.10 = 2.20 USD
    assert _spark(spark, "SELECT CAST(input_usd_per_mtok AS STRING) FROM stg.llm_prices WHERE model = 'm-eur'") == [("2.200000000",)]
    # the same column types as the DuckDB -> Parquet bridge gives Spark (what the SQL tables were tested on)
    bridge = Target((("stg", "stg_bridge"), ("ops", "ops_bridge")))
    load_staging(spark, con, str(tmp_path / "bridge"), bridge)
    for name in ("stg.requests", "stg.llm_prices", "stg.focus_costs", "stg.metric_samples", "stg.reported_costs",
                 "ops.quarantine", "ops.ingested_files"):
        ours = {f.name: f.dataType.simpleString() for f in spark.table(name).schema.fields}
        theirs = {f.name: f.dataType.simpleString() for f in spark.table(bridge.table(name)).schema.fields}
        assert ours == theirs, name

    # a second batch: rows stored by the first are duplicates (same values) or conflicts (other values)
    write_files(landing, LATER)
    Ingestor(con, landing, now=NOW).ingest()
    again = SparkIngest(spark, str(landing), str(tmp_path / "tables"), str(tmp_path / "scratch"), now=NOW).ingest()
    later = [f for f in again.new_files]
    # hand-counted: b duplicate of a stored row, a conflicts with the stored a, d loaded, 2nd d conflicts with it
    assert [(f.file, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) for f in later] == [
        ("telemetry/requests/later.jsonl", 4, 1, 1, 2)]
    assert _compare_all(con, spark) == {}

    # the same folder once more, named by a URI (as s3a://, gs://, abfss://): nothing new, nothing added
    counts = _spark(spark, "SELECT (SELECT count(*) FROM stg.requests), (SELECT count(*) FROM ops.quarantine), "
                           "(SELECT count(*) FROM ops.ingested_files)")
    lines: list[str] = []
    third = SparkIngest(spark, f"file://{landing}", str(tmp_path / "tables"), str(tmp_path / "scratch"), now=NOW,
                        progress=lines.append).ingest()
    assert len(third.files) == len(got.files) + 1  # every file listed
    # only the copy of calls.jsonl is read again (its bytes were ingested under the other name, so it has
    # no ops.ingested_files row; DuckDB reads it again too); every other file is known by path, size, mtime
    assert f"{len(third.files)} file(s) listed, 1 to read" in lines[0]
    assert third.new_files == []
    assert _spark(spark, "SELECT (SELECT count(*) FROM stg.requests), (SELECT count(*) FROM ops.quarantine), "
                         "(SELECT count(*) FROM ops.ingested_files)") == counts
    con.close()


@pytest.mark.slow
def test_spark_ingest_equals_the_duckdb_ingest_on_the_whole_bad_input_corpus(spark, tmp_path):
    """Every case of tests/corpus/ (README there: 50+ cases of bad and odd input, each asserted
    file by file against DuckDB's ingest in tests/warehouse/test_corpus.py) landed side by side in one folder
    (each case's files under ``<case>__<name>``), ingested by both: the same outcome for every file
    and the same rows in every staging table, ops.quarantine and ops.ingested_files."""
    import datetime as dt

    from warehouse.db import connect, migrate
    from warehouse.ingest import Ingestor
    from warehouse.spark.ingest import SparkIngest

    landing = tmp_path / "landing"
    # the cloud invoices (bills/aws|azure|gcp, issue 25) and FOCUS Parquet in bills/focus are read by the DuckDB
    # ingest only: the Spark ingest refuses them (test below)
    def duckdb_only(case: Path) -> bool:
        return (any((case / "bills" / c).is_dir() for c in ("aws", "azure", "gcp"))
                or any(f.read_bytes()[:4] == b"PAR1" for f in (case / "bills" / "focus").rglob("*") if f.is_file()))

    cases = sorted(p for p in (REPO / "tests" / "corpus").iterdir() if p.is_dir() and not duckdb_only(p))
    for case in cases:
        for f in case.rglob("*"):
            if f.is_file():
                rel = f.relative_to(case)
                dest = landing / rel.parent / f"{case.name}__{rel.name}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
    now = dt.datetime(2025, 8, 1)  # tests/warehouse/test_corpus.py's "today"
    con = connect(tmp_path / "w.duckdb")
    migrate(con)
    duck = Ingestor(con, landing, now=now).ingest()
    got = SparkIngest(spark, str(landing), str(tmp_path / "tables"), str(tmp_path / "scratch"), now=now).ingest()

    def outcome(summary):
        return sorted((f.file, f.status, f.format, f.table, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined)
                      for f in summary.files)

    assert len(cases) >= 50 and len(got.files) >= 70
    assert outcome(got) == outcome(duck), sorted(set(outcome(got)) ^ set(outcome(duck)))
    statuses = {f.status for f in got.files}
    assert statuses == {"loaded", "unreadable", "already_ingested"}
    assert _compare_all(con, spark) == {}
    # not over empty tables: the corpus quarantines records of every family (hand-counted in
    # tests/warehouse/test_corpus.py; here only that there are many) and loads bills in USD and EUR
    (q,), = _spark(spark, "SELECT count(*) FROM ops.quarantine")
    (eur,), = _spark(spark, "SELECT count(*) FROM stg.openai_costs WHERE currency = 'EUR'")
    assert q > 50 and eur == 2
    con.close()


@pytest.mark.parametrize("case_name", ["bills_cloud_negative_usage", "bills_focus_parquet"])
def test_the_spark_ingest_refuses_cloud_invoices_before_loading_anything(spark, tmp_path, case_name):
    """A cloud invoice (bills/aws, read by path with DuckDB's readers, its non-AI lines counted as skipped)
    or a FOCUS export as Parquet (bills/focus, read by path) is refused by the Spark ingest with the fix
    named, and nothing of the landing is ingested."""
    from sources.base import SourceFormatError
    from warehouse.spark.ingest import SparkIngest

    landing = tmp_path / "landing"
    case = REPO / "tests" / "corpus" / case_name
    for f in case.rglob("*"):
        if f.is_file():
            dest = landing / f.relative_to(case)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
    (landing / "telemetry" / "requests").mkdir(parents=True)
    shutil.copyfile(REPO / "tests" / "corpus" / "req_three_usage_shapes" / "telemetry" / "requests" / "calls.jsonl",
                    landing / "telemetry" / "requests" / "calls.jsonl")
    ingest = SparkIngest(spark, str(landing), str(tmp_path / "tables"), str(tmp_path / "scratch"), now=NOW)
    with pytest.raises(SourceFormatError, match=r'read by the DuckDB ingest only: run with \[engine\] ingest = "duckdb"'):
        ingest.ingest()
    assert not list((tmp_path / "tables").rglob("*.parquet"))  # no table got a row


def test_a_landing_uri_needs_the_spark_ingest(tmp_path, capsys):
    """`--landing s3a://...` is read by the Spark engine's ingest only: the DuckDB engine, or the Spark
    engine with `[engine] ingest = "duckdb"`, refuse it (exit 2) before starting anything; a bad
    `ingest` setting is a config error."""
    from thinktax.cli import main

    wh = str(tmp_path / "wh")
    assert main(["run", "--landing", "s3a://bucket/landing", "--warehouse", wh]) == 2
    assert "read by the Spark engine's ingest only" in capsys.readouterr().err
    cfg = tmp_path / "thinktax.toml"
    cfg.write_text('[engine]\nkind = "spark"\ningest = "duckdb"\n')
    assert main(["run", "--landing", "s3a://bucket/landing", "--warehouse", wh, "--config", str(cfg)]) == 2
    assert "read by the Spark engine's ingest only" in capsys.readouterr().err
    cfg.write_text('[engine]\nkind = "spark"\ningest = "executors"\n')
    assert main(["run", "--landing", str(tmp_path), "--warehouse", wh, "--config", str(cfg)]) == 2
    assert "engine.ingest must be 'spark' or 'duckdb'" in capsys.readouterr().err
