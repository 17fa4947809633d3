"""`thinktax sql --engine spark --spark-warehouse DIR` reads the DuckDB file DIR was published with
(issue 40): a local Spark run records it in DIR/CURRENT (``warehouse=<path>`` after the build id).
The Spark end-to-end case is in tests/warehouse/spark/test_run_cli.py; here the choice itself, on
folders laid out as a run leaves them (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from thinktax.commands.sql import WarehouseMismatch, paired_warehouse
from warehouse.spark.engine import _publish_local, built_with, current_build


def _published(tmp_path: Path, warehouse: Path) -> Path:
    folder = tmp_path / "spark"
    (folder / "builds" / "b1").mkdir(parents=True)
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    warehouse.write_bytes(b"x")
    _publish_local(folder, "b1", warehouse)
    return folder


def test_a_local_publish_records_its_duckdb_file_and_keeps_the_build_pointer(tmp_path: Path):
    x = tmp_path / "a" / "thinktax.duckdb"
    folder = _published(tmp_path, x)
    assert (folder / "CURRENT").read_text() == f"b1\nwarehouse={x.resolve()}\n"
    assert current_build(folder) == folder / "builds" / "b1" and built_with(folder) == x.resolve()


def test_the_recorded_file_wins_over_the_default(tmp_path: Path):
    x, y = tmp_path / "a" / "thinktax.duckdb", tmp_path / "var" / "thinktax.duckdb"
    folder = _published(tmp_path, x)
    y.parent.mkdir(parents=True)
    y.write_bytes(b"other data")
    assert paired_warehouse(folder, y, named=False) == x.resolve()  # not the default y
    assert paired_warehouse(folder, x, named=True) == x


def test_naming_another_file_is_an_error_that_names_both(tmp_path: Path):
    x, y = tmp_path / "a" / "thinktax.duckdb", tmp_path / "b" / "thinktax.duckdb"
    folder = _published(tmp_path, x)
    with pytest.raises(WarehouseMismatch, match=f"published with {x.resolve()}, not {y}"):
        paired_warehouse(folder, y, named=True)


def test_a_moved_pair_needs_the_file_named(tmp_path: Path, capsys):
    x, y = tmp_path / "a" / "thinktax.duckdb", tmp_path / "moved" / "thinktax.duckdb"
    folder = _published(tmp_path, x)
    x.unlink()
    with pytest.raises(FileNotFoundError, match="which is gone; name the DuckDB file"):
        paired_warehouse(folder, y, named=False)
    assert paired_warehouse(folder, y, named=True) == y
    assert "which is gone; reading" in capsys.readouterr().err


def test_a_folder_published_before_the_record_uses_the_given_file(tmp_path: Path):
    folder = tmp_path / "spark"
    (folder / "builds" / "b0").mkdir(parents=True)
    (folder / "CURRENT").write_text("b0\n")  # issue 27's CURRENT: the build id only
    y = tmp_path / "var" / "thinktax.duckdb"
    assert built_with(folder) is None and current_build(folder) == folder / "builds" / "b0"
    assert paired_warehouse(folder, y, named=False) == y


def test_the_cli_says_so_and_exits_2_on_a_mismatch(tmp_path: Path, capsys):
    pytest.importorskip("pyspark")
    from thinktax.cli import main

    x, y = tmp_path / "a" / "thinktax.duckdb", tmp_path / "b" / "thinktax.duckdb"
    folder = _published(tmp_path, x)
    assert main(["sql", "--engine", "spark", "--spark-warehouse", str(folder), "--warehouse", str(y), "SELECT 1"]) == 2
    assert f"was published with {x.resolve()}, not {y}" in capsys.readouterr().err
