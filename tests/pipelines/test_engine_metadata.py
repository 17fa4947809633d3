"""Every engine's results go through the Dagster metadata path as plain Python (issue 46).

`thinktax run --engine spark --spark-remote sc://...` failed at its first materialisation with
``DagsterInvalidMetadata ... "dagster/row_count" ... numpy.int64``: pyspark 3.5's Spark Connect
``DataFrame.count()`` is ``self.agg(count(lit(1))).toPandas().iloc[0, 0]`` (a numpy integer;
pyspark/sql/connect/dataframe.py of the pinned 3.5 client), a classic session's is an ``int``.
Here each adapter's results -- the ingest accounting, a model built or kept, a check's offending
rows -- are fed through the functions the models and ingest steps make their metadata with
(pipelines/defs/warehouse_assets.py: ``built_metadata``, ``late_day_metadata``, ``_check_result``)
into Dagster's own ``AssetMaterialization`` and ``AssetCheckResult``, which
resolve the metadata when made (and raise on a numpy value: the first test shows the path can fail).

DuckDBEngine runs on the mini landing (tests/conftest.py): calls.jsonl has 5 lines (r1..r5),
prices.2026-01-01.csv 2 price rows, prices.2026-07-01.csv 1, nodes.csv 1 node: 9 rows in, all
loaded, none duplicate or quarantined; core.call_costs has one row per call, 5. The Spark Connect
adapter (SparkEngine with a remote) runs here on a stand-in session whose ``count()`` answers as
the Connect client's does (a numpy.int64); tests/warehouse/spark/test_connect.py runs the same
adapter on a real Connect server, and a whole Dagster run through it.
"""

from __future__ import annotations

import dagster as dg
import numpy as np
import pytest

from pipelines.defs.warehouse_assets import (
    MODEL_CHECKS,
    MODELS,
    _check_result,
    built_metadata,
    key_of,
    late_day_metadata,
)
from tests.conftest import MINI_FILES, write_files
from warehouse import incremental
from warehouse.db import Build
from warehouse.engine import DuckDBEngine
from warehouse.ingest import FileResult
from warehouse.rebuild import Rebuilt
from services.config import Config


def _resolved(meta: dict, key: str = "dagster/row_count"):
    """``meta`` through Dagster's resolution (raises DagsterInvalidMetadata on a value it cannot type)."""
    return dg.AssetMaterialization(asset_key="t", metadata=meta).metadata[key]


def test_a_numpy_count_is_what_dagster_refuses_so_this_path_can_fail():
    with pytest.raises(dg.DagsterError, match="numpy.int64"):
        _resolved({"dagster/row_count": np.int64(5)})
    with pytest.raises(dg.DagsterError, match="numpy.int64"):
        dg.AssetCheckResult(asset_key="t", check_name="c", passed=True, metadata={"offending_rows": np.int64(0)})
    assert _resolved({"dagster/row_count": 5}) == dg.MetadataValue.int(5)


def test_the_engines_result_types_convert_any_integer_and_refuse_the_rest():
    done = Rebuilt("core.call_costs", np.int64(5), "incremental", np.int32(2))
    assert (done.rows, done.days) == (5, 2) and type(done.rows) is int and type(done.days) is int
    f = FileResult("telemetry/requests/calls.jsonl", "loaded", rows_in=np.int64(5), rows_loaded=np.int64(4),
                   rows_duplicate=np.int64(1))
    assert [type(getattr(f, k)) for k in ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined")] == [int] * 4
    # no silent rounding of a count that is no integer: the error names the table (or file) and the field
    with pytest.raises(TypeError, match=r"core.call_costs: rows: expected an integer count, got float 5.5"):
        Rebuilt("core.call_costs", 5.5, "full")
    with pytest.raises(TypeError, match=r"calls.jsonl: rows_quarantined: expected an integer count, got NoneType"):
        FileResult("calls.jsonl", "loaded", rows_quarantined=None)


def test_duckdb_engine_results_pass_the_metadata_path(tmp_path):
    landing = write_files(tmp_path / "landing", MINI_FILES)
    b = Build(tmp_path / "thinktax.duckdb", "b1")
    b.start(Config().settings_row())
    engine = DuckDBEngine()
    with b.connect() as con:
        summary = engine.ingest(con, landing)
        totals = {k: summary.total(k) for k in ("rows_in", "rows_loaded", "rows_duplicate", "rows_quarantined")}
        got = dg.AssetMaterialization(asset_key="ops/ingested_files", metadata=totals).metadata
        assert {k: v.value for k, v in got.items()} == {"rows_in": 9, "rows_loaded": 9, "rows_duplicate": 0,
                                                        "rows_quarantined": 0}
        scope = incremental.plan(con, "b1", full=True)
        rows = {}
        for m in MODELS:
            done = engine.build(con, m, scope, "b1")
            rows[m.table] = _resolved(built_metadata(con, m, done, engine.kind)).value
            _resolved(late_day_metadata(done))
        assert rows["core.call_costs"] == 5
        assert rows["marts.task_costs"] == 4  # t1 (r1 + r4), t2, t3, t4
        # every model check on DuckDB: the count and the sample resolve, and the mini landing passes them all
        results = [_check_result(c, con, engine) for c in MODEL_CHECKS]
        assert results and all(r.metadata["offending_rows"] == dg.MetadataValue.int(0) for r in results)


class _ConnectCount:
    """A DataFrame of a stand-in Spark Connect session: ``count()`` as pyspark 3.5's Connect client
    returns it (``toPandas().iloc[0, 0]``, a numpy.int64)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def count(self):
        return np.int64(self.n)

    def limit(self, k: int):
        return self

    def collect(self) -> list:
        return [_Row({"request_id": f"r{i}"}) for i in range(1, self.n + 1)]


class _ConnectSession:
    class catalog:
        @staticmethod
        def tableExists(table: str) -> bool:
            return True

    def table(self, name: str) -> _ConnectCount:
        return _ConnectCount(5)

    def sql(self, query: str) -> _ConnectCount:
        return _ConnectCount(2)


class _Row:
    def __init__(self, d: dict) -> None:
        self.d = d

    def asDict(self) -> dict:
        return self.d


def test_spark_connect_adapter_results_pass_the_metadata_path(tmp_path):
    from warehouse.spark.engine import SparkEngine

    engine = SparkEngine("b1", warehouse=tmp_path / "thinktax.duckdb", spark_warehouse=tmp_path / "spark",
                         remote="sc://127.0.0.1:15002", spark=_ConnectSession())
    scope = incremental.Scope(full=False, reason="nothing new", tables=frozenset())  # every model kept
    model = next(m for m in MODELS if m.table == "core.call_costs")
    done = engine.build(None, model, scope, "b1")
    assert done.mode == "kept" and type(done.rows) is int
    assert _resolved(built_metadata(None, model, done, engine.kind)) == dg.MetadataValue.int(5)
    assert _resolved(late_day_metadata(done)) == dg.MetadataValue.int(5)
    check = MODEL_CHECKS[0]
    res = _check_result(check, None, engine)  # two offending rows, each in the sample
    assert res.asset_key == key_of(check.asset) and not res.passed
    assert res.metadata["offending_rows"] == dg.MetadataValue.int(2)
    assert res.metadata["sample"] == dg.MetadataValue.json([{"request_id": "r1"}, {"request_id": "r2"}])


def test_a_relative_spark_warehouse_reaches_the_engine_absolute(tmp_path, monkeypatch):
    """`--spark-warehouse spark-files` (relative): a Spark Connect server resolves a table's LOCATION
    against its own folder, so the engine gets the path resolved here, where the user typed it
    (found running `thinktax run --spark-remote ... --spark-warehouse spark-files` in issue 46:
    "UNABLE_TO_INFER_SCHEMA" for the server looked in its own folder)."""
    from warehouse.engine import open_engine

    monkeypatch.chdir(tmp_path)
    eng = open_engine("spark", "rel1", warehouse=tmp_path / "wh" / "thinktax.duckdb", spark_remote="sc://127.0.0.1:1",
                      spark_warehouse="spark-files")
    assert eng.spark_warehouse == tmp_path.resolve() / "spark-files"


class _Recorder:
    """An engine that records what its owner asked of it."""

    kind = "duckdb"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def abandon(self) -> None:
        self.calls.append("abandon")


def test_the_resource_owns_the_runs_engine_and_its_teardown_abandons_one_not_published(tmp_path, monkeypatch):
    """Issue 43: no module-global registry; the run's ThinktaxResource makes the engine once per build, every
    step gets the same object, and the end of the run abandons an engine that was not published (once)."""
    import pipelines.defs.resources as resources
    from warehouse.db import Build

    made: list[_Recorder] = []
    monkeypatch.setattr(resources, "open_engine", lambda *a, **k: made.append(_Recorder()) or made[-1])
    res = resources.ThinktaxResource(landing=str(tmp_path / "landing"), warehouse=str(tmp_path / "wh.duckdb"),
                                     engine_kind="duckdb")
    build = Build(tmp_path / "wh.duckdb", "b1")
    first = res.engine(build)
    assert res.engine(build) is first and len(made) == 1  # the ingest and models steps share it
    res.teardown_after_execution(None)
    assert first.calls == ["abandon"]
    res.teardown_after_execution(None)  # already let go: not abandoned twice
    assert first.calls == ["abandon"]

    second = res.engine(build)
    assert second is not first  # a new run's engine
    res.end_engine(published=True)  # the publish step
    res.teardown_after_execution(None)
    assert second.calls == []  # a published engine is never abandoned
