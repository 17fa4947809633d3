"""The published warehouse is written in DuckDB's v1.4 storage format, so BI tools and CLIs that
bundle a DuckDB older than this library's 2.x can open it (the duckdb-cli on PyPI is 1.5.x)."""

from __future__ import annotations

import duckdb

from tests.conftest import build_warehouse
from warehouse.db import Build


def test_warehouse_storage_version_is_v1_4(mini_landing, tmp_path):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    con, _ = build_warehouse(mini_landing, wh, build_id="s")
    con.close()
    Build(wh, "s").publish(files_new=4, landing=str(mini_landing))
    with duckdb.connect(str(wh), read_only=True) as ro:
        tags = ro.sql("SELECT tags FROM duckdb_databases() WHERE database_name = 'thinktax'").fetchall()[0][0]
    assert tags["storage_version"].startswith("v1.4.0")
