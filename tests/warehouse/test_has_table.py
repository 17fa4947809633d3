"""warehouse.parts.table_kind / has_table: the one existence check (issue 43)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from warehouse.parts import has_table, is_view, table_kind


def test_own_database_first_attached_ones_only_when_asked(tmp_path: Path):
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as o:
        o.execute("CREATE SCHEMA marts; CREATE TABLE marts.only_there (x INT); CREATE TABLE marts.both (x INT)")
    con = duckdb.connect(str(tmp_path / "own.duckdb"))
    con.execute("CREATE SCHEMA marts; CREATE VIEW marts.both AS SELECT 1 AS x; CREATE TABLE marts.mine (x INT)")
    con.execute(f"ATTACH '{other}' AS other (READ_ONLY)")

    assert table_kind(con, "marts.mine") == "BASE TABLE"
    assert table_kind(con, "marts.both") == "VIEW"  # the own database's view, not the attached table
    assert table_kind(con, "marts.nothing") is None
    # a table only an attached database holds: found by default, not with attached=False
    assert has_table(con, "marts.only_there")
    assert not has_table(con, "marts.only_there", attached=False)
    assert has_table(con, "marts.mine", attached=False, views=False)
    # views=False: the own database's view is not a table
    assert has_table(con, "marts.both") and not has_table(con, "marts.both", views=False)
    assert is_view(con, "marts.both") and not is_view(con, "marts.mine")
