"""The one small-CSV reader (sources/csvutil.py): CsvSheet for the price sheets, read_rows for the
catalog and FX parsers, both with the record's physical line and text."""

from __future__ import annotations

import pytest

from sources.base import SourceFormatError
from sources.csvutil import CsvSheet, read_rows


def test_rows_keep_physical_lines_and_text_through_bom_crlf_quotes_and_blanks():
    data = ("\ufeffNode ID,GPUs,note\r\n"          # line 1: header (BOM, a space in a name)
            "n1,2,\"a, b\"\r\n"                   # line 2
            "\r\n"                                # line 3: blank, skipped
            "n2,4,\"two\r\nlines\"\r\n"           # lines 4-5: one record
            "n3,8\r\n").encode()                  # line 6: short record, note = ''
    header, rows = read_rows(data, required=["node_id", "gpus"])
    assert header == ["node_id", "gpus", "note"]
    got = [(r.line, r.get("node_id"), r.get("gpus"), r.get("note"), r.raw) for r in rows]
    assert got == [
        (2, "n1", "2", "a, b", 'n1,2,"a, b"'),
        (4, "n2", "4", "two\r\nlines", 'n2,4,"two\r\nlines"'),
        (6, "n3", "8", "", "n3,8"),
    ]


def test_text_after_a_closing_quote_is_read_for_catalogs_and_an_error_for_price_sheets():
    data = b'model,note\nm1,"5"2 screen\n'
    _, rows = read_rows(data, required=["model"])
    assert [r.get("note") for r in rows] == ["52 screen"]  # as the csv module reads it (not strict)
    sheet = CsvSheet(data, ("model",))
    with pytest.raises(SourceFormatError, match="bad CSV") as exc:
        list(sheet.records())
    assert exc.value.line == 2


def test_header_errors_name_line_and_field():
    with pytest.raises(SourceFormatError, match="missing required column") as exc:
        read_rows(b"\n\nnode_id,gpu_type\nn1,H100\n", required=["node_id", "gpus"])
    assert (exc.value.line, exc.value.field) == (3, "gpus")  # the header is on line 3, after two blank lines
    with pytest.raises(SourceFormatError, match="'gpus' appears twice") as exc:
        read_rows(b"node_id,gpus,GPUs\nn1,1,2\n", required=["node_id"])
    assert (exc.value.line, exc.value.field) == (1, "gpus")
    with pytest.raises(SourceFormatError, match="empty file"):
        read_rows(b"", required=["model"])
