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


def test_deepseek_cache_hits_are_the_cached_bucket_and_must_add_up():
    """DeepSeek (api-docs.deepseek.com, context caching): prompt_cache_hit_tokens + prompt_cache_miss_tokens
    = prompt_tokens; the hits are the cached bucket unless prompt_tokens_details.cached_tokens says it."""
    line = ('{{"ts":"2026-06-30T10:00:00Z","request_id":"{rid}","model":"deepseek-reasoner","provider":"deepseek",'
            '"usage":{{"prompt_tokens":1200,"completion_tokens":950,"total_tokens":2150,{extra}'
            '"completion_tokens_details":{{"reasoning_tokens":610}}}}}}')
    text = "\n".join([
        line.format(rid="a", extra='"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":176,'),
        line.format(rid="b", extra='"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":176,'
                                   '"prompt_tokens_details":{"cached_tokens":1024},'),
        line.format(rid="c", extra='"prompt_cache_hit_tokens":1024,'),  # misses not given: nothing to add up
        line.format(rid="d", extra='"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":100,'),
        line.format(rid="e", extra='"prompt_cache_hit_tokens":1024,"prompt_tokens_details":{"cached_tokens":1000},'),
        line.format(rid="f", extra='"prompt_cache_hit_tokens":1300,'),
        line.format(rid="g", extra='"prompt_cache_hit_tokens":"many",'),
    ]) + "\n"
    p, good = rows(text)
    assert [(r["request_id"], r["uncached_input_tokens"], r["cached_input_tokens"], r["thinking_tokens"], r["output_tokens"])
            for r in good] == [("a", 176, 1024, 610, 340), ("b", 176, 1024, 610, 340), ("c", 176, 1024, 610, 340)]
    assert [(r.line, r.field, r.reason if r.line < 7 else None) for r in p.rejects] == [
        (4, "usage.prompt_cache_miss_tokens", "prompt_cache_miss_tokens = 100 is not prompt_tokens - prompt_cache_hit_tokens = 176"),
        (5, "usage.prompt_cache_hit_tokens", "disagrees with usage.prompt_tokens_details.cached_tokens: 1024 vs 1000"),
        (6, "usage.cached_tokens", "cached tokens exceed the prompt tokens they are part of"),
        (7, "usage.prompt_cache_hit_tokens", None),
    ]
