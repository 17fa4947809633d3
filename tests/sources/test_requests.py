"""The per-request JSONL parser: three usage shapes, timestamps, and rejects with line and field."""

from __future__ import annotations

import datetime as dt

from sources.base import ParseContext
from sources.requests import parse

CTX = ParseContext(ingested_at=dt.datetime(2026, 8, 1))


def rows(text: str):
    p = parse(text.encode(), "x.jsonl", CTX)
    return p, p.rows.to_pylist()


def test_openai_responses_shape_and_epoch_ms():
    p, r = rows('{"ts":1782817200000,"request_id":"a","model":"o4-mini","usage":{"input_tokens":100,"output_tokens":50,'
                '"input_tokens_details":{"cached_tokens":40},"output_tokens_details":{"reasoning_tokens":30}}}\n')
    assert r[0]["usage_shape"] == "openai_responses"
    # 100 input of which 40 cached; 50 output of which 30 reasoning
    assert (r[0]["uncached_input_tokens"], r[0]["cached_input_tokens"], r[0]["thinking_tokens"], r[0]["output_tokens"]) == (60, 40, 30, 20)
    assert r[0]["ts"] == dt.datetime(2026, 6, 30, 11, 0)  # epoch milliseconds read as ms


def test_offsets_and_naive_iso_are_utc():
    _, r = rows('{"ts":"2026-06-30T12:00:00+02:00","request_id":"a","model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}\n'
                '{"ts":"2026-06-30T10:00:00","request_id":"b","model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}\n')
    assert [x["ts"] for x in r] == [dt.datetime(2026, 6, 30, 10), dt.datetime(2026, 6, 30, 10)]


def test_reasoning_reported_as_zero_or_null_counts_as_reported():
    _, r = rows('{"ts":"2026-06-30T10:00:00Z","request_id":"a","model":"m","usage":{"prompt_tokens":5,"completion_tokens":900,'
                '"completion_tokens_details":{"reasoning_tokens":null}}}\n')
    assert (r[0]["thinking_tokens"], r[0]["output_tokens"]) == (0, 900)


def test_rejects_name_line_and_field():
    text = "\n".join([
        '{"ts":"2026-06-30T10:00:00Z","request_id":"a","model":"m","usage":{"prompt_tokens":-1,"completion_tokens":1}}',
        '{"ts":"yesterday","request_id":"b","model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}',
        '{"ts":"2026-06-30T10:00:00Z","model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"d","model":"m","usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":11}}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"e","model":"m","usage":{"prompt_tokens":"1,23","completion_tokens":1}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"f","model":"m","latency_ms":"NaN","usage":{"prompt_tokens":1,"completion_tokens":1}}',
        '{"ts":"2026-06-30T10:00:00Z","request_id":"g","model":"m","usage":"lots"}',
    ]) + "\n"
    p, good = rows(text)
    assert good == []
    got = [(r.line, r.field) for r in p.rejects]
    assert got == [(1, "usage.prompt_tokens"), (2, "ts"), (3, "request_id"), (4, "usage.cached_tokens"),
                   (5, "usage.prompt_tokens"), (6, "latency_ms"), (7, "usage")]
    assert p.rows_in == 7
