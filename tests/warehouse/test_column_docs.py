"""Every marts.* and ops.* column carries a comment with its meaning and unit, and docs/warehouse.md
is generated from those comments and up to date.

The tables are those of a real run (tests/bi_landing.py: `thinktax run`, every asset, SQL and
Python-built marts alike); column types do not depend on the data, so the generated page is the
same as `make docs` writes from an empty landing folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from tests import bi_landing
from tools import docs_gen
from warehouse import comments
from warehouse.db import copy_warehouse

DOCS = Path(__file__).resolve().parents[2] / "docs" / "warehouse.md"


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> bi_landing.Published:
    return bi_landing.published(tmp_path_factory)


@pytest.fixture
def fresh(pub, tmp_path) -> duckdb.DuckDBPyConnection:
    """A writable copy of the published warehouse with every comment removed, as a rebuild leaves it."""
    path = tmp_path / "copy.duckdb"
    copy_warehouse(pub.warehouse, path)
    con = duckdb.connect(str(path))
    for schema, table, column in comments.existing_columns(con):
        con.execute(f'COMMENT ON COLUMN "{schema}"."{table}"."{column}" IS NULL')
    yield con
    con.close()


def test_every_mart_and_ops_column_has_a_comment(fresh):
    assert fresh.execute("SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' AND comment IS NOT NULL"
                         ).fetchall()[0][0] == 0
    missing = comments.apply(fresh)
    assert not missing, (
        f"columns without documentation: {missing}. Add each to COLUMNS in warehouse/comments.py "
        "(meaning and unit), then run `make docs`.")
    undocumented = fresh.execute(
        "SELECT schema_name || '.' || table_name || '.' || column_name FROM duckdb_columns() "
        "WHERE schema_name IN ('marts', 'ops') AND (comment IS NULL OR comment = '')").fetchall()
    assert undocumented == []
    marts = fresh.execute("SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts'").fetchall()[0][0]
    assert marts >= 60  # the five backbone marts alone have 67 columns: the check looked at them
    tables = {r[0] for r in fresh.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'marts'").fetchall()}
    assert {"task_cost_breakdown", "daily_spend", "tier_mix", "unpriced_usage"} <= tables
    views = {r[0] for r in fresh.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'marts'").fetchall()}
    assert "cost_per_task" in views  # the old name of marts.task_cost_breakdown (issue 17), documented too
    assert "task_costs" in views  # a view over its Parquet files (issue 26, warehouse/parts.py), documented too


def test_a_new_undocumented_mart_column_is_caught():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts; CREATE TABLE marts.daily_spend (day DATE, cost_usd DECIMAL(18,6), mystery INTEGER)")
    assert comments.apply(con) == ["marts.daily_spend.mystery"]
    assert con.execute("SELECT comment FROM duckdb_columns() WHERE column_name = 'cost_usd'").fetchall()[0][0] == \
        comments.COLUMNS["marts.daily_spend"]["cost_usd"]


def test_apply_skips_tables_that_do_not_exist_yet():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts; CREATE SCHEMA ops; CREATE TABLE ops.quarantine (file VARCHAR, line BIGINT)")
    assert comments.apply(con) == []  # marts.self_host_breakeven etc. are documented but absent: no error
    assert dict(con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'quarantine'").fetchall()) == {
        "file": comments.COLUMNS["ops.quarantine"]["file"], "line": comments.COLUMNS["ops.quarantine"]["line"]}


def test_views_and_focus_snake_case_are_documented_too():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts; CREATE VIEW marts.focus_costs AS SELECT 1.5 AS billed_cost, 'x' AS BilledCurrency_typo")
    assert comments.apply(con) == ["marts.focus_costs.BilledCurrency_typo"]
    assert con.execute("SELECT comment FROM duckdb_columns() WHERE column_name = 'billed_cost'").fetchall()[0][0].startswith(
        "FOCUS BilledCost")


def test_every_comment_states_meaning_and_a_unit_matching_the_name(fresh):
    comments.apply(fresh)
    rows = fresh.execute(
        "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE schema_name IN ('marts', 'ops')").fetchall()
    for table, col, text in rows:
        assert text, f"{table}.{col} has no comment"
        m = re.fullmatch(r"(.+)\. Unit: (.+)\.", text, flags=re.DOTALL)
        assert m, f"{table}.{col}: comment must read '<meaning>. Unit: <unit>.': {text!r}"
        unit = m[2]
        if col.endswith("_usd") or col.endswith("_usd_per_month"):
            assert "USD" in unit, (table, col, unit)
        if col.endswith("_tokens"):
            assert unit == "tokens", (table, col, unit)
        if col.startswith("share_") or col.endswith("_share") or (col.startswith("target_") and col != "target_table"):
            assert unit == comments.FRACTION, (table, col, unit)
        if col.endswith("_pct"):
            assert unit == "percent", (table, col, unit)
        if col.endswith("_at"):
            assert unit == comments.TS, (table, col, unit)


def test_docs_warehouse_md_is_up_to_date(pub):
    assert DOCS.exists(), "docs/warehouse.md is missing: run `make docs`"
    assert DOCS.read_text(encoding="utf-8") == docs_gen.generate(pub.warehouse), "docs/warehouse.md is stale: run `make docs`"


def test_docs_list_every_mart_column(fresh):
    text = DOCS.read_text(encoding="utf-8")
    for table, col in fresh.execute(
            "SELECT schema_name || '.' || table_name, column_name FROM duckdb_columns() WHERE schema_name = 'marts'").fetchall():
        section = text.split(f"\n## {table}\n", 1)[1].split("\n## ", 1)[0]
        assert f"| `{col}` |" in section, f"{table}.{col} not in docs/warehouse.md"
    assert "**undocumented**" not in text


def test_the_published_warehouse_carries_the_comments(pub):
    """The Dagster job writes the comments into the build before publishing (published_warehouse)."""
    with duckdb.connect(str(pub.warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT schema_name || '.' || table_name, column_name, comment FROM duckdb_columns() "
            "WHERE schema_name IN ('marts', 'ops')").fetchall()
        table_doc = con.execute(
            "SELECT comment FROM duckdb_views() WHERE schema_name = 'marts' AND view_name = 'cost_per_task'").fetchall()[0][0]
    assert rows and all(c is not None for _, _, c in rows), [f"{t}.{c}" for t, c, x in rows if x is None]
    assert {(t, c): x for t, c, x in rows}[("marts.tier_mix", "share_of_calls")] == \
        comments.COLUMNS["marts.tier_mix"]["share_of_calls"]
    assert table_doc.startswith("Cost per task, by day, team, task type, model, serving and tier. grain: ")


# --- Dagster metadata (pipelines/defs/metadata.py) ----------------------------------------------

def test_table_metadata_for_the_dagster_ui(pub):
    from pipelines.defs.metadata import table_metadata

    md = table_metadata(pub.warehouse, "marts.task_costs", read_only=True)
    assert md["dagster/row_count"].value == 28  # tasks t1..t8 and tm01..tm20
    cols = {c.name: c for c in md["dagster/column_schema"].schema.columns}
    assert list(cols)[:4] == ["task_id", "day", "team", "task_type"]
    assert (cols["cost_usd"].type, cols["cost_usd"].description) == ("DECIMAL(18,6)", comments.COLUMNS["marts.task_costs"]["cost_usd"])
    lines = md["preview"].value.splitlines()
    assert lines[0].startswith("| task_id | day | team | task_type | calls |")
    assert len(lines) == 2 + 5  # header, rule, the first five rows


def test_table_metadata_reaches_the_materialization(pub):
    import dagster as dg

    from pipelines.defs.metadata import table_metadata

    @dg.asset(key=["marts", "daily_spend"])
    def daily_spend():
        with duckdb.connect(str(pub.warehouse), read_only=True) as con:
            return dg.MaterializeResult(metadata=table_metadata(con, "marts.daily_spend"))

    result = dg.materialize([daily_spend])
    [mat] = result.asset_materializations_for_node("marts__daily_spend")
    assert isinstance(mat.metadata["dagster/column_schema"], dg.TableSchemaMetadataValue)
    assert isinstance(mat.metadata["preview"], dg.MarkdownMetadataValue)
    # 8 API usage rows (day x model x team), 2 self-hosted (infra's calls, the idle node-day), 4 billed (day x model)
    assert mat.metadata["dagster/row_count"].value == 14


def test_table_metadata_in_a_run_build_file(pub, tmp_path):
    """The way the SQL asset factory would call it: on the run's build file, after building the table."""
    import dagster as dg

    from pipelines.defs.metadata import table_metadata
    from services.config import Config
    from warehouse.db import Build
    from warehouse.transform import build, load_tables

    published = tmp_path / "thinktax.duckdb"
    copy_warehouse(pub.warehouse, published)
    model = next(m for m in load_tables() if m.table == "marts.tier_mix")

    @dg.asset(key=["marts", "tier_mix"])
    def tier_mix():
        build_ = Build(published, "meta")
        build_.start(Config().settings_row())
        with build_.connect() as con:
            rows = build(con, model)
        return dg.MaterializeResult(metadata=table_metadata(build_.path, model.table, rows=rows))

    [mat] = dg.materialize([tier_mix]).asset_materializations_for_node("marts__tier_mix")
    # (day, team) pairs, '*' included: 05-11 search; 05-12 search; 06-01 search, ads; 06-02 ads; 06-03 misc;
    # 06-05 ads; 06-10 infra = 8 teams + 7 '*' = 15, x 3 tiers = 45 rows
    assert mat.metadata["dagster/row_count"].value == 45
    assert [c.name for c in mat.metadata["dagster/column_schema"].schema.columns][:3] == ["day", "team", "tier"]


def test_markdown_head_escapes_cells():
    from pipelines.defs.metadata import markdown_head

    text = markdown_head(["a|b", "c"], [("x|y", None), ("line\nbreak", "z" * 50)])
    assert text.splitlines() == [
        "| a\\|b | c |", "|---|---|", "| x\\|y | NULL |", f"| line break | {'z' * 39}… |"]


def test_apply_writes_only_what_differs_and_restores_what_a_rebuild_dropped():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts; CREATE TABLE marts.daily_spend (day DATE, cost_usd DECIMAL(18,6))")
    comments.apply(con)
    expected = comments.COLUMNS["marts.daily_spend"]["cost_usd"]
    writes: list[str] = []

    class Spy:  # counts the COMMENT ON statements apply issues
        def execute(self, sql, *a):
            if sql.startswith("COMMENT ON"):
                writes.append(sql)
            return con.execute(sql, *a)

    assert comments.apply(Spy()) == [] and writes == []  # everything already in place: nothing written
    con.execute("COMMENT ON COLUMN marts.daily_spend.cost_usd IS 'edited by hand'")
    con.execute("CREATE OR REPLACE TABLE marts.daily_spend AS SELECT * FROM marts.daily_spend")  # a rebuild drops comments
    comments.apply(Spy())
    assert con.execute("SELECT comment FROM duckdb_columns() WHERE column_name = 'cost_usd'").fetchall()[0][0] == expected
    assert len(writes) == 1 + 2  # the table's comment and its two columns', nothing else
