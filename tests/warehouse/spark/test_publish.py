"""The publish guarantee on Spark (docs/operations.md, "Publish guarantee on Spark").

* A session whose catalog outlives the run (Spark Connect, a long-lived session): every change a
  run makes to the Spark tables is journalled (warehouse.spark.build.Journal), so a run that is
  not published is put back exactly as it was. That test needs the scenario of conftest.py and
  lives beside the other scenario tests in test_parity.py: with ``--dist loadfile`` a second file
  using the scenario could land in the other worker and build it a second time (about 5 minutes).
* A local session: each run builds into ``<spark warehouse>/builds/<id>``; ``CURRENT`` names the
  published build and is replaced by one atomic rename at publish; older builds go, the one
  replaced is kept for readers still on it.
"""

from __future__ import annotations

from pathlib import Path

from warehouse.spark import engine as pipeline  # issue 27: warehouse/spark/pipeline.py became the SparkEngine


def test_a_local_build_is_published_by_replacing_current(tmp_path: Path):
    wh = tmp_path / "spark"
    (wh / "core.db" / "calls").mkdir(parents=True)  # the layout before builds had folders
    assert pipeline.current_build(wh) == wh
    for build_id in ("b1", "b2", "b3"):
        (wh / "builds" / build_id / "marts.db").mkdir(parents=True)
        pipeline._publish_local(wh, build_id)
        assert pipeline.current_build(wh) == wh / "builds" / build_id
        assert (wh / "CURRENT").read_text().strip() == build_id
    assert not (wh / "core.db").exists()  # the old layout's model tables went with the first build
    # the build just replaced is kept (a reader may still be on it), older ones are removed
    assert sorted(p.name for p in (wh / "builds").iterdir()) == ["b2", "b3"]
    # a build that failed removes its own folder; CURRENT still names the last published one
    (wh / "builds" / "b4").mkdir()
    pipeline._undo(None, wh / "builds" / "b4", lambda _line: None)
    assert pipeline.current_build(wh) == wh / "builds" / "b3" and not (wh / "builds" / "b4").exists()
    # CURRENT naming a folder that is gone: readers fall back to the Spark warehouse folder itself
    (wh / "CURRENT").write_text("gone\n")
    assert pipeline.current_build(wh) == wh
