"""docs/bi.md's demo figures are the current demo's (issue 47): the full demo (``make run``'s
defaults) is written and built, and the block between the markers must be what
``tools.bi_figures`` renders from it. When the demo changes on purpose: ``make run``, then
``.venv/bin/python -m tools.bi_figures var/thinktax.duckdb``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import bi_figures

pytestmark = pytest.mark.slow  # the full demo: ~237k calls, a few minutes on 2 cores


def test_the_block_is_found_and_replaced_whole():
    text = f"before\n{bi_figures.BEGIN}\nold figures\n{bi_figures.END}\nafter\n"
    assert bi_figures.replace(text, "NEW") == "before\nNEW\nafter\n"
    with pytest.raises(SystemExit):
        bi_figures.replace("no block here", "NEW")


def test_docs_bi_md_quotes_the_current_demo(tmp_path: Path):
    from services.config import Config
    from synthetic.demo import DemoSpec, write_landing
    from warehouse.db import Build
    from warehouse.ingest import Ingestor
    from warehouse.transform import build_all

    landing = tmp_path / "landing"
    write_landing(landing, DemoSpec())
    b = Build(tmp_path / "wh" / "thinktax.duckdb", "bi")
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, landing).ingest()  # now = the real clock, as `make run` (the demo ends before it)
        build_all(con)
        block = bi_figures.render(bi_figures.figures(con))
    text = bi_figures.DOC.read_text(encoding="utf-8")
    assert bi_figures.replace(text, block) == text, (
        f"docs/bi.md's demo figures are stale; they are now:\n{block}\n"
        "run `make run`, then `.venv/bin/python -m tools.bi_figures var/thinktax.duckdb`")
