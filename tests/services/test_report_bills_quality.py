"""The report's Bills and invoices and Data quality sections (issue 45 item 5), on the hand-worked BI landing.

Figures worked by hand from tests/bi_landing.py (its OpenAI Costs API page and its calls):
  openai gpt-4.1-mini: billed 2025-06-01 0.80 + 2025-06-02 0.45 = $1.25 against c4 0.80 + c5 0.40 = $1.20:
      +$0.05, one day off by a cent or more (06-02, +0.05); usage no bill covers: the misc calls of 06-03, $0.084
  openai o3: billed 06-01 0.28 + 06-05 0.10 = $0.38 against c3 0.274 + c6 0.10 = $0.374: +$0.006, no day off
      (0.006 < a cent); usage no bill covers: c1 2.00 + c2 4.216 = $6.216 (shown $6.22)
  anthropic claude-sonnet-4: no bill landed; c7 $0.36 unbilled
Accounting per folder: bills/openai 1 file, 7 cost lines; catalog 3 files (4 models + 1 node + 1 deployment = 6
rows); prices/llm 1 file, 3 rows; telemetry/requests 1 file, 9 + 20 = 29 calls; nothing quarantined or unpriced.
"""

from __future__ import annotations

import re

import duckdb
import pytest

from tests import bi_landing
from services import report
from warehouse.db import copy_warehouse


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> bi_landing.Published:
    return bi_landing.published(tmp_path_factory)


def rows_of(html: str, heading: str) -> list[list[str]]:
    """The cells of the table that follows ``<h3>heading...</h3>``, header row left out."""
    start = html.index(f"<h3>{heading}")
    table = html[start:html.index("</table>", start)]
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr>(.*?)</tr>", table) if "<td" in tr]


def test_bills_section_against_the_hand_worked_bill(pub, tmp_path):
    html = report.write_report(pub.warehouse, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<h2>Bills and invoices</h2>" in html and "<h2>Data quality</h2>" in html
    assert rows_of(html, "Provider bills against usage x price") == [
        # largest difference first; a model with no bill last
        ["openai", "gpt-4.1-mini", "2", "$1.25", "$1.20", "$0.0500", "1", "$0.0840"],
        ["openai", "o3", "2", "$0.3800", "$0.3740", "$0.0060", "0", "$6.22"],
        ["anthropic", "claude-sonnet-4", "0", "no bill landed", "—", "—", "0", "$0.3600"],
    ]
    assert "No cloud invoice landed" in html


def test_data_quality_section_accounts_for_every_row(pub, tmp_path):
    html = report.write_report(pub.warehouse, tmp_path / "r.html").read_text(encoding="utf-8")
    assert rows_of(html, "Rows in = loaded + duplicate + quarantined + skipped") == [
        ["bills/openai", "1", "7", "7", "0", "0", "0", "yes"],
        ["catalog", "3", "6", "6", "0", "0", "0", "yes"],
        ["prices/llm", "1", "3", "3", "0", "0", "0", "yes"],
        ["telemetry/requests", "1", "29", "29", "0", "0", "0", "yes"],
    ]
    assert "Nothing quarantined" in html and "No unpriced usage" in html


def test_quarantine_groups_and_a_file_that_does_not_add_up(pub, tmp_path):
    """Two quarantined lines of the request file (one reason twice) and a file whose counts do not add up."""
    wh = tmp_path / "thinktax.duckdb"
    copy_warehouse(pub.warehouse, wh)
    with duckdb.connect(str(wh)) as con:
        fid, name = con.execute("SELECT file_id, file FROM ops.ingested_files WHERE folder = 'telemetry/requests'").fetchone()
        con.execute("INSERT INTO ops.quarantine (file_id, file, line, field, reason, raw, quarantined_at) VALUES "
                    "(?, ?, 31, 'usage', 'matches no known usage shape', '{}', TIMESTAMP '2025-06-11 00:00:00'), "
                    "(?, ?, 30, 'usage', 'matches no known usage shape', '{}', TIMESTAMP '2025-06-11 00:00:00')",
                    [fid, name, fid, name])
        # 31 lines in: 29 loaded + 2 quarantined adds up; prices: 3 in, 2 loaded, nothing else: does not
        con.execute("UPDATE ops.ingested_files SET rows_in = 31, rows_quarantined = 2 WHERE file_id = ?", [fid])
        con.execute("UPDATE ops.ingested_files SET rows_loaded = 2 WHERE folder = 'prices/llm'")
    html = report.write_report(wh, tmp_path / "r.html").read_text(encoding="utf-8")
    acct = {r[0]: r for r in rows_of(html, "Rows in = loaded + duplicate + quarantined + skipped")}
    assert acct["telemetry/requests"] == ["telemetry/requests", "1", "31", "29", "0", "2", "0", "yes"]
    assert acct["prices/llm"][-1] == "NO"
    assert rows_of(html, "Quarantine: 2 records") == [
        ["telemetry/requests", "usage", "matches no known usage shape", "2", f"{name}:30"]]
