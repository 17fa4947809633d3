"""Price history from the two real LiteLLM snapshots: o3 costs $10/$40 per million tokens until
2026-07-24 and $2/$8 from then on; the history is the same whichever sheet is ingested first."""

from __future__ import annotations

import shutil
from decimal import Decimal as D

from tests.conftest import NOW, REAL, write_files
from services.config import Config
from warehouse.db import Build
from warehouse.ingest import Ingestor
from warehouse.transform import build_all

OLD = "model_prices_and_context_window.2025-05-19.json"
NEW = "model_prices_and_context_window.2026-07-24.json"


def _run(tmp_path, first, second, tag):
    import pathlib

    landing = tmp_path / tag
    (landing / "prices" / "llm").mkdir(parents=True)
    for name in (OLD, NEW):
        shutil.copyfile(REAL / "litellm" / name, landing / "prices" / "llm" / name)
    write_files(landing, {"telemetry/requests/calls.jsonl":
        '{"ts":"2025-06-01T12:00:00Z","request_id":"before","model":"openai/o3","usage":{"prompt_tokens":0,"completion_tokens":1000000}}\n'
        '{"ts":"2026-08-01T12:00:00Z","request_id":"after","model":"o3-2025-04-16","provider":"openai","usage":{"prompt_tokens":0,"completion_tokens":1000000}}\n'})
    b = Build(pathlib.Path(tmp_path / f"{tag}.duckdb"), tag)
    b.start(Config().settings_row())
    con = b.connect()
    llm = landing / "prices" / "llm"
    Ingestor(con, landing, now=NOW.replace(month=12)).ingest(
        paths=[llm / first, llm / second, landing / "telemetry" / "requests" / "calls.jsonl"])
    build_all(con)
    return con


def test_o3_change_applied_by_date_in_either_order(tmp_path):
    a = _run(tmp_path, OLD, NEW, "old_first")
    b = _run(tmp_path, NEW, OLD, "new_first")
    costs = dict(a.sql("SELECT request_id, cost_usd FROM core.call_costs").fetchall())
    assert costs == {"before": D("40"), "after": D("8")}  # 1M output tokens x $40 / $8 per million
    hist = "SELECT * EXCLUDE (source_file_id) FROM core.llm_price_versions ORDER BY ALL"
    assert a.sql(hist).fetchall() == b.sql(hist).fetchall()
    # "what did o3 cost per million output tokens on 2025-06-01?" in one query
    q = ("SELECT output_usd_per_mtok FROM core.llm_price_versions WHERE provider = 'openai' AND model = 'o3' "
         "AND price_kind = 'standard' AND effective_from <= DATE '2025-06-01' "
         "AND (effective_to IS NULL OR effective_to > DATE '2025-06-01')")
    assert a.sql(q).fetchall() == [(D("40"),)]
    # an unchanged price (o4-mini: 1.1 / 4.4 in both sheets) is one version, not two
    assert a.sql("SELECT count(*) FROM core.llm_price_versions WHERE provider = 'openai' AND model = 'o4-mini' "
                 "AND price_kind = 'standard'").fetchall() == [(1,)]
    versions = a.sql("SELECT count(*) FROM core.llm_price_versions").fetchall()[0][0]
    # 973 + 2,296 new + 58 changed rows (counted from the parsed sheets), + 18 whose token rates did
    # not change but a modifier did (issue 27: gpt-4o / gpt-4.1 lost their web-search fees, Claude 3
    # models gained a 1-hour cache-write price): every price input is versioned. Issue 44: + the rows
    # priced only by modality or unit (44 in the old sheet, 166 more new keys in the new one; counted in
    # tests/sources/test_prices_llm.py) + 6 rows whose only change is a modality or unit price (e.g.
    # gpt-4o-audio-preview's audio input 100 -> 40 per 1M)
    assert versions == 3345 + 44 + 166 + 6
    a.close()
    b.close()
