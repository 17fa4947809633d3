"""The staging contract (sources/contract.py) against everything that used to restate it.

The migrations are history (append-only), so they are not generated from the declaration; these
tests make the two unable to drift: the DDL the migrations leave behind must equal the
declaration column for column (name, type, NOT NULL, order), and every stg table must be declared.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from sources import contract
from sources.base import ParseContext, SourceFormatError
from sources.contract import TABLES
from sources.registry import all_specs
from warehouse import days, expectations
from warehouse.db import migrate
from warehouse.ingest import _decode, _detect, folder_of


@pytest.fixture(scope="module")
def migrated():
    con = duckdb.connect()
    migrate(con)
    yield con
    con.close()


def _ddl(con, table: str) -> list[tuple[str, str, bool]]:
    schema, name = table.split(".")
    return [(n, t, nullable == "YES") for n, t, nullable in con.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", [schema, name]).fetchall()]


def test_every_migrated_stg_table_is_declared_and_equal(migrated):
    stg = {r[0] for r in migrated.execute(
        "SELECT 'stg.' || table_name FROM information_schema.tables WHERE table_schema = 'stg' "
        "AND table_type = 'BASE TABLE'").fetchall()}
    assert stg == set(TABLES), "a stg table is declared but not migrated, or migrated but not declared"
    for name, t in TABLES.items():
        declared = [(c.name, c.type, c.nullable) for c in t.all_columns]
        assert _ddl(migrated, name) == declared, name


def test_create_sql_builds_the_same_table_as_the_migrations(migrated):
    fresh = duckdb.connect()
    fresh.execute("CREATE SCHEMA stg")
    for name, t in TABLES.items():
        fresh.execute(t.create_sql())
        assert _ddl(fresh, name) == _ddl(migrated, name), name
    # the emitted text is a plain, readable CREATE TABLE (comments carry the docs)
    sql = contract.FX_RATES.create_sql()
    assert sql.splitlines()[1] == "CREATE TABLE IF NOT EXISTS stg.fx_rates ("
    assert "usd_per_unit   DECIMAL(18,9) NOT NULL,  -- USD for one unit of the currency" in sql


def test_add_column_sql_replays_migration_100(migrated):
    # stg.requests as migration 030 created it, then its six pricing-modifier columns added the way
    # a new migration would write them: the result is the migrated table
    import dataclasses

    fresh = duckdb.connect()
    fresh.execute("CREATE SCHEMA stg")
    t = contract.REQUESTS
    fresh.execute(dataclasses.replace(t, columns=t.columns[:-6], rules=(), derived={}).create_sql())
    for c in t.columns[-6:]:
        fresh.execute(t.add_column_sql(c.name))
    assert _ddl(fresh, "stg.requests") == _ddl(migrated, "stg.requests")
    with pytest.raises(ValueError, match="must be nullable"):
        t.add_column_sql("ts")


def test_arrow_schema_is_line_plus_the_columns():
    s = contract.FX_RATES.arrow_schema()
    assert [(f.name, str(f.type)) for f in s] == [
        ("line", "int64"), ("currency", "string"), ("usd_per_unit", "decimal128(18, 9)"), ("effective_from", "date32[day]")]
    assert str(contract.NODES.arrow_schema().field("active_from").type) == "timestamp[us]"
    assert str(contract.NODES.arrow_schema().field("gpus").type) == "int32"


def test_specs_take_their_key_from_the_declaration():
    specs = all_specs()
    assert {s.table for s in specs} <= set(TABLES)
    for s in specs:
        assert s.key == TABLES[s.table].key, s.format
    # by hand, from the migrations' comments: the keys the ingest de-duplicates on
    by_format = {s.format: s.key for s in specs}
    assert by_format["requests_jsonl"] == ("request_id",)
    assert by_format["fx_rates_csv"] == ("currency", "effective_from")
    assert by_format["models_csv"] is None  # catalog snapshot: the newest file wins
    assert by_format["openai_costs_json"] == ("bucket_start", "bucket_end", "project_id", "line_item")
    assert by_format["focus_csv"][-1] == "key_occurrence" and len(by_format["focus_csv"]) == 24


def test_day_sources_come_from_the_declaration():
    assert days.DAY_SOURCES == {
        "stg.requests": ("ts", None),
        "stg.metric_samples": ("scrape_ts", None),
        "stg.openai_usage": ("bucket_start", "bucket_end"),
        "stg.openai_costs": ("bucket_start", "bucket_end"),
        "stg.anthropic_usage": ("bucket_start", "bucket_end"),
        "stg.anthropic_costs": ("bucket_start", "bucket_end"),
        "stg.focus_costs": ("charge_period_start", "charge_period_end"),
        "stg.cloud_bill_lines": ("usage_start", "usage_end"),
    }


def test_suites_are_generated_from_the_declaration(migrated):
    now = dt.datetime(2026, 8, 1)
    suites = expectations.suites(now)
    assert set(suites) == set(TABLES)
    for name in TABLES:
        labels = [e.label for e in suites[name].expectations]
        assert len(labels) == len(set(labels)), name  # labels are unique within a suite
        # every NOT NULL column but file_id has its not_null expectation; line >= 1 everywhere
        not_null = {c for c, _, nullable in _ddl(migrated, name) if not nullable} - {"file_id", "line"}
        assert {f"not_null({c})" for c in not_null} <= set(labels), name
        assert "between(line, 1 .. )" in labels
    req = [e.label for e in suites["stg.requests"].expectations]
    # the run-relative bound resolved: 2026-08-01 + 1 day
    assert "between(ts, 2015-01-01 .. 2026-08-02)" in req
    assert "between(effective_from, 2015-01-01 .. 2027-08-02)" in [e.label for e in suites["stg.llm_prices"].expectations]
    assert "between(output_tokens, 0 .. 10000000)" in req


def test_limits_are_defined_once():
    from sources import prices_gpu, prices_llm, requests

    assert prices_llm.MAX_USD_PER_MTOK is contract.MAX_USD_PER_MTOK
    assert prices_gpu.MAX_USD_PER_GPU_HOUR is contract.MAX_USD_PER_GPU_HOUR
    assert requests.MAX_TOKENS is contract.MAX_TOKENS_PER_CALL
    assert not hasattr(expectations, "MAX_TOKENS_PER_CALL") or expectations.MAX_TOKENS_PER_CALL is contract.MAX_TOKENS_PER_CALL


# ------------------------------------------------------------------------------------------------
# What the parsers return is what the declaration says


CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# formats the corpus has no good file of: small inputs written here
EXTRA = {
    "catalog/deployments.csv": b"deployment,model,gpu_type,gpus,gpu_mem_gb,usd_per_gpu_hour\nd1,qwen3-32b,H100,2,80,2.95\n",
    "catalog/substitutions.csv": b"from_model,to_model,thinking_ratio,output_ratio,note\no3,qwen3-32b,1.2,1,x\n",
    "catalog/budgets.csv": b"team,monthly_usd,soft_pct\nsearch,1000,75\n",
    "catalog/configs/qwen3-32b.json": b'{"num_hidden_layers": 64, "hidden_size": 5120}',
}


def _landed() -> list[tuple[str, bytes]]:
    out = [(p.relative_to(case).as_posix(), p.read_bytes())
           for case in sorted(CORPUS.iterdir()) if case.is_dir()
           for p in sorted(case.rglob("*")) if p.is_file()]
    return out + list(EXTRA.items())


def test_every_parser_returns_the_declared_arrow_types():
    specs = all_specs()
    folders = {s.folder for s in specs}
    ctx = ParseContext(ingested_at=dt.datetime(2025, 8, 1, tzinfo=dt.UTC), fx_usd_per_unit={"EUR": 1.08})
    formats: set[str] = set()
    for rel, data in _landed():
        folder = folder_of(rel, folders)
        if folder is None:
            continue
        try:
            # Parquet is read as bytes by its parser (the ingest reads it by path), never decoded as text
            data = data if data[:4] == b"PAR1" else _decode(data, rel)
            spec = _detect([s for s in specs if s.folder == folder], data, rel)
            parsed = spec.parse(data, rel, ctx)
        except SourceFormatError:
            continue  # unreadable files are the corpus's business (tests/warehouse/test_corpus.py)
        assert parsed.table == spec.table, rel
        for table, rows in [(parsed.table, parsed.rows), *parsed.side.items()]:
            want = TABLES[table].arrow_schema()
            assert "line" in rows.schema.names, rel
            for f in rows.schema:
                assert f.name in want.names, (rel, f.name)
                assert f.type == want.field(f.name).type, (rel, f.name, f.type, want.field(f.name).type)
        if parsed.rows.num_rows:
            formats.add(spec.format)
    # every format a landing folder can hold was seen with good rows
    assert {s.format for s in specs} - formats == set()


def test_docs_staging_md_is_up_to_date():
    doc = Path(__file__).resolve().parents[2] / "docs" / "staging.md"
    assert doc.read_text(encoding="utf-8") == contract.render_markdown(), "stale: run `make docs`"


def test_allowed_sets_cover_what_the_parsers_write():
    from sources import prometheus, requests

    assert set(requests._TIERS.values()) <= set(contract.SERVICE_TIERS)
    assert {e for _, e in prometheus._ENGINE_PREFIXES} | {"other"} == set(contract.METRIC_ENGINES)
    from sources import prices_gpu

    assert prices_gpu.PRICINGS == contract.GPU_PRICINGS
