"""bi/superset/: the Superset import files hang together and name real warehouse columns (no Superset needed).

The browser test (tests/bi/test_superset.py) imports and opens them; this one is the fast tier's guard: a
chart whose dataset is missing, a dashboard that places a chart no file defines, a column a mart no longer
has (checked against the documented columns of warehouse/comments.py, the same text stored in the file).
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from tools import superset_bi
from warehouse.comments import COLUMNS

ASSETS = Path(__file__).resolve().parents[2] / "bi" / "superset"


def load(kind: str) -> dict[str, dict]:
    return {p.relative_to(ASSETS).as_posix(): yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in sorted((ASSETS / kind).rglob("*.yaml"))}


DATASETS, CHARTS, DASHBOARDS = load("datasets"), load("charts"), load("dashboards")


def test_every_file_is_a_v1_asset_with_its_own_uuid():
    assert yaml.safe_load((ASSETS / "metadata.yaml").read_text()) | {"timestamp": None} == \
        {"version": "1.0.0", "type": "Dashboard", "timestamp": None}
    docs = [*DATASETS.values(), *CHARTS.values(), *DASHBOARDS.values(), *load("databases").values()]
    assert all(d["version"] == "1.0.0" for d in docs)
    uuids = [d["uuid"] for d in docs]
    assert len(uuids) == len(set(uuids))
    assert len(DASHBOARDS) == 8 and len(CHARTS) == 37 and len(DATASETS) == 20


def test_charts_point_at_datasets_and_dashboards_at_charts():
    by_uuid = {d["uuid"]: d for d in DATASETS.values()}
    assert all(c["dataset_uuid"] in by_uuid for c in CHARTS.values())
    charts = {c["uuid"]: name for name, c in CHARTS.items()}
    placed: list[str] = []
    for name, dash in DASHBOARDS.items():
        assert dash["slug"].startswith("thinktax-"), name
        ids = {}
        for key, item in dash["position"].items():
            if isinstance(item, dict) and item.get("type") == "CHART":
                assert item["meta"]["uuid"] in charts, (name, key)
                placed.append(item["meta"]["uuid"])
                ids[item["meta"]["chartId"]] = item["meta"]["uuid"]
            if isinstance(item, dict) and "children" in item:
                assert all(child in dash["position"] for child in item["children"]), (name, key)
        for f in dash["metadata"]["native_filter_configuration"]:
            for t in f["targets"]:
                assert not t or t["datasetUuid"] in by_uuid, (name, f["id"])
            assert set(f["scope"]["excluded"]) <= set(ids), (name, f["id"])
    # every chart is on exactly one dashboard: adding a dashboard is adding its files
    assert sorted(placed) == sorted(charts)


SQL_WORDS = {"sum", "max", "count", "nullif", "abs", "coalesce"}  # the functions the metrics use; every other word is a column


def _columns_used(params: dict) -> set[str]:
    cols = set(params.get("all_columns") or []) | set(params.get("groupby") or [])
    if params.get("x_axis"):
        cols.add(params["x_axis"])
    return cols


def test_the_columns_charts_use_are_documented_columns_of_their_tables():
    by_uuid = {d["uuid"]: d for d in DATASETS.values()}
    checked = 0
    for name, c in CHARTS.items():
        ds = by_uuid[c["dataset_uuid"]]
        table = f"{ds['schema']}.{ds['table_name']}"
        if ds["sql"]:
            continue  # a query: Superset reads its columns from the query at import
        assert table in COLUMNS, (name, table)
        used = _columns_used(c["params"])
        sql = " ".join(m["sqlExpression"] for m in [*c["params"].get("metrics", []), c["params"].get("metric") or {}]
                       if isinstance(m, dict) and m.get("sqlExpression"))
        used |= set(re.findall(r"[a-z_]+", sql)) - SQL_WORDS
        assert used <= set(COLUMNS[table]), (name, table, used - set(COLUMNS[table]))
        if ds["main_dttm_col"]:
            assert ds["main_dttm_col"] in COLUMNS[table], (name, ds["main_dttm_col"])
        checked += 1
    assert checked == 35  # every chart but the two over the quarantine query


def test_the_bundle_points_the_database_at_the_warehouse_read_only(tmp_path):
    wh = tmp_path / "elsewhere" / "prod.duckdb"
    with zipfile.ZipFile(io.BytesIO(superset_bi.bundle(ASSETS, wh))) as zf:
        names = zf.namelist()
        db = yaml.safe_load(zf.read("thinktax_bi/databases/thinktax.yaml"))
    assert db["sqlalchemy_uri"] == f"duckdb:///{wh.resolve()}?access_mode=read_only"
    assert db["sqlalchemy_uri"].startswith("duckdb:////")  # an absolute path: four slashes (docs/bi.md)
    assert "thinktax_bi/metadata.yaml" in names and len(names) == 1 + 1 + 20 + 37 + 8


def test_a_broken_file_is_named(tmp_path):
    import shutil

    copy = tmp_path / "superset"
    shutil.copytree(ASSETS, copy)
    (copy / "charts" / "spend_total.yaml").write_text("slice_name: [unclosed\n")
    with pytest.raises(SystemExit, match=r"spend_total\.yaml: not valid YAML"):
        superset_bi.bundle(copy, tmp_path / "w.duckdb")
