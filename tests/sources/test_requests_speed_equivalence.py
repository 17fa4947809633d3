"""The request JSONL parser's shortcuts give what the general path gives (issue 10).

Plain digit counts skip the trim/DECIMAL path, ASCII names skip trim(), a file ending in a newline
is split in place, and the rows come out in line order without an ORDER BY. Each expectation
below is what the parser returned before those shortcuts existed. No timings are asserted.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from sources.base import ParseContext
from sources.requests import parse

CTX = ParseContext(ingested_at=dt.datetime(2026, 8, 1))
NOT_WHOLE = "not a non-negative whole number: "
OUTLIER = "above 10,000,000 tokens, more than any context window (an outlier): "


def _call(**fields) -> str:
    return json.dumps({"ts": "2026-06-30T10:00:00Z", "request_id": "r", "model": "m",
                       "usage": {"input_tokens": 1, "output_tokens": 1}} | fields)


@pytest.mark.parametrize("value, tokens, reason", [
    (12, 12, None), ("12", 12, None), (12.0, 12, None), ("12.0", 12, None), (1e3, 1000, None),
    (" 12 ", 12, None), ("\u00a012\u3000", 12, None), ("00012", 12, None), ("0", 0, None),
    ("0" * 16 + "12", 12, None), ("0" * 17 + "12", 12, None), ("0" * 40 + "12", 12, None),
    (10_000_000, 10_000_000, None), (10_000_001, None, OUTLIER + "10000001"),
    ("1" * 18, None, OUTLIER + "1" * 18), ("9223372036854775808", None, OUTLIER + "9223372036854775808"),
    ("\t12", None, NOT_WHOLE + "\t12"), (-1, None, NOT_WHOLE + "-1"), (12.5, None, NOT_WHOLE + "12.5"),
    ("1e3", None, NOT_WHOLE + "1e3"), ("+5", None, NOT_WHOLE + "+5"), ("1_000", None, NOT_WHOLE + "1_000"),
    ("0x10", None, NOT_WHOLE + "0x10"), ("", None, NOT_WHOLE), ("1,23", None, NOT_WHOLE + "1,23"),
    (True, None, NOT_WHOLE + "true"),
])
def test_token_counts_plain_or_not(value, tokens, reason):
    p = parse((_call(usage={"input_tokens": value, "output_tokens": 1}) + "\n").encode(), "x.jsonl", CTX)
    assert [r["uncached_input_tokens"] for r in p.rows.to_pylist()] == ([tokens] if reason is None else [])
    assert [(r.field, r.reason) for r in p.rejects] == ([] if reason is None else [("usage.input_tokens", reason)])


@pytest.mark.parametrize("team, expected", [
    ("ab", "ab"), (" a ", "a"), ("\u00a0a\u3000", "a"), ("a\t", "a\t"), ("é ", "é"), (" é", "é"),
    ("  ", "alias"), ("\u00a0", "alias"), ("", "alias"),
])
def test_names_trimmed_of_unicode_spaces_only(team, expected):
    p = parse((_call(team=team, metadata={"user_api_key_team_alias": "alias"}) + "\n").encode(), "x.jsonl", CTX)
    assert [r["team"] for r in p.rows.to_pylist()] == [expected]


def test_final_newline_bom_and_crlf_do_not_change_rows():
    lines = [_call(request_id=str(i)) for i in range(3)]
    variants = ["\n".join(lines) + "\n", "\n".join(lines), "\ufeff" + "\r\n".join(lines) + "\r\n",
                "\n".join(lines) + "\n\n \r\n"]
    parsed = [parse(v.encode(), "x.jsonl", CTX) for v in variants]
    assert all(p.rows.equals(parsed[0].rows) and p.rejects == [] for p in parsed)
    assert parsed[0].rows["line"].to_pylist() == [1, 2, 3]


def test_rows_and_rejects_in_line_order_across_many_chunks():
    # more lines than one DuckDB row group (122,880), every 7th one rejected
    n = 130_000
    text = "\n".join(_call(request_id=str(i), usage={"input_tokens": -1 if i % 7 == 0 else i, "output_tokens": 1})
                     for i in range(n)) + "\n"
    p = parse(text.encode(), "x.jsonl", CTX)
    lines = p.rows["line"].to_pylist()
    assert lines == [i + 1 for i in range(n) if i % 7]
    assert p.rows["request_id"].to_pylist() == [str(i) for i in range(n) if i % 7]
    assert [r.line for r in p.rejects] == [i + 1 for i in range(0, n, 7)]
