"""Runtime data under ./var/ (issue 27 item 2): the default published file, Spark tables and Dagster
home are outside the packages; flags and environment variables still win; the defaults of before
(warehouse/thinktax.duckdb inside the warehouse package, Spark tables among warehouse/spark/'s
sources, .thinktax/dagster_home) are moved once, with a message."""

from __future__ import annotations

from pathlib import Path

from services.config import DEFAULT_WAREHOUSE, move_old_defaults, resolve_paths


def test_the_default_warehouse_is_under_var(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    landing, wh = resolve_paths(None, None)
    assert wh == tmp_path / "var" / "thinktax.duckdb" and DEFAULT_WAREHOUSE == "var/thinktax.duckdb"
    assert landing == tmp_path / "landing"
    monkeypatch.setenv("THINKTAX_WAREHOUSE", str(tmp_path / "elsewhere" / "w.duckdb"))
    assert resolve_paths(None, None)[1] == tmp_path / "elsewhere" / "w.duckdb"
    assert resolve_paths(None, str(tmp_path / "flag.duckdb"))[1] == tmp_path / "flag.duckdb"


def _old_layout(root: Path) -> None:
    (root / "warehouse" / "spark" / "builds" / "b1").mkdir(parents=True)
    (root / "warehouse" / "spark" / "build.py").write_text("# source, stays\n")
    (root / "warehouse" / "spark" / "CURRENT").write_text("b1\n")
    (root / "warehouse" / "spark" / "_staging").mkdir()
    (root / "warehouse" / "thinktax.duckdb").write_bytes(b"db")
    (root / "warehouse" / "report.html").write_text("<html/>")
    (root / "warehouse" / "transform.py").write_text("# source, stays\n")
    (root / ".thinktax" / "dagster_home").mkdir(parents=True)
    (root / ".thinktax" / "dagster_home" / "dagster.yaml").write_text("# Written by thinktax (thinktax/runner.py)\n")
    (root / ".thinktax" / "focus-venv").mkdir()


def test_old_default_paths_are_moved_once_with_a_message(tmp_path, monkeypatch, capsys):
    _old_layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("THINKTAX_WAREHOUSE", raising=False)
    _, wh = resolve_paths(None, None)
    assert wh.read_bytes() == b"db"
    var = tmp_path / "var"
    assert (var / "report.html").is_file() and (var / "spark" / "CURRENT").read_text() == "b1\n"
    assert (var / "spark" / "builds" / "b1").is_dir() and (var / "spark" / "_staging").is_dir()
    assert (var / "dagster_home" / "dagster.yaml").is_file()
    # the sources stay, and so do the tool venvs
    assert (tmp_path / "warehouse" / "spark" / "build.py").is_file() and (tmp_path / "warehouse" / "transform.py").is_file()
    assert not (tmp_path / "warehouse" / "thinktax.duckdb").exists() and (tmp_path / ".thinktax" / "focus-venv").is_dir()
    err = capsys.readouterr().err
    assert "moved warehouse/thinktax.duckdb to var/thinktax.duckdb" in err and "moved .thinktax/dagster_home" in err
    assert move_old_defaults(tmp_path) == []  # once


def test_nothing_is_moved_over_data_already_under_var_or_when_a_path_is_named(tmp_path, monkeypatch):
    _old_layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    resolve_paths(None, str(tmp_path / "named.duckdb"))
    assert (tmp_path / "warehouse" / "thinktax.duckdb").is_file()  # a named warehouse: nothing moved
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "thinktax.duckdb").write_bytes(b"new")
    (tmp_path / "var" / "spark").mkdir()
    moved = move_old_defaults(tmp_path, say=lambda m: None)
    assert [(a.relative_to(tmp_path).as_posix(), b.relative_to(tmp_path).as_posix()) for a, b in moved] == [
        (".thinktax/dagster_home", "var/dagster_home")]
    assert (tmp_path / "var" / "thinktax.duckdb").read_bytes() == b"new"
