"""The unknown-field guard (issue 44, item 3): ops.unknown_fields, partially_priced, the warnings.

The files here are written by hand; the real payloads are the recorded bodies of
tests/fixtures/real/payloads and tests/fixtures/real/otel_bodies, landed as request lines the way
tests/sources/test_real_payloads.py lands them."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import duckdb
import pytest

from sources import fieldguard, requests
from sources.fieldguard import SMALL_BYTES, known_fields, scan, token_like

BIG = 8 << 20  # a file sampled first (more than SMALL_BYTES)
from tests.conftest import build_warehouse, real_sheet_landing  # noqa: E402
from warehouse.db import migrate  # noqa: E402
from warehouse.ingest import Ingestor  # noqa: E402

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
MODEL = "claude-sonnet-4-5-20250929"  # on the real 2026-07-24 LiteLLM sheet (anthropic)


def call(rid: str, ts: str = "2026-07-30T12:00:00Z", **extra) -> dict:
    usage = {"input_tokens": 100, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 20}}
    for k, v in extra.pop("usage", {}).items():
        usage[k] = {**usage.get(k, {}), **v} if isinstance(v, dict) else v
    return {"ts": ts, "request_id": rid, "model": MODEL, "provider": "anthropic", "usage": usage, **extra}


FOO = {"output_tokens_details": {"foo_tokens": 7}}
FOO_ZERO = {"output_tokens_details": {"foo_tokens": 0}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("unknown_fields")
    landing = real_sheet_landing(root, {
        # 3 calls: foo_tokens 7, 0 and 7 -> the path on 3 records, 2 of them non-zero
        "new_token_field.jsonl": [call("r1", usage=FOO), call("r2", usage=FOO_ZERO),
                                  call("r3", "2026-07-30T12:00:02Z", usage=FOO)],
        # 2 calls, the second with a top-level key no parser reads
        "new_top_level.jsonl": [call("t1"), call("t2", shiny_new_flag=True)],
        "clean.jsonl": [call("c1")],
    })
    con, summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    yield con, summary, landing
    con.close()


def test_new_token_field_is_recorded_with_count_first_line_and_example(built):
    con, _s, _l = built
    rows = con.sql("""SELECT source, file, path, first_line, records, token_like, nonzero_records, example
                      FROM ops.unknown_fields ORDER BY file, path""").fetchall()
    assert rows == [
        ("requests_jsonl", "telemetry/requests/new_token_field.jsonl", "usage.output_tokens_details.foo_tokens",
         1, 3, True, 2, "7"),
        ("requests_jsonl", "telemetry/requests/new_top_level.jsonl", "shiny_new_flag", 2, 1, False, 0, "true"),
    ]


def test_token_field_makes_its_non_zero_calls_partially_priced(built):
    con, _s, _l = built
    # r1 and r3 carry foo_tokens 7; r2 carries 0 (nothing unpriced); the top-level flag is not a count
    rows = con.sql("""SELECT provider, reported_model, reason, field, calls_or_hours, first_line,
                             (SELECT file FROM ops.ingested_files f WHERE f.file_id = u.first_file_id)
                      FROM marts.unpriced_usage u""").fetchall()
    assert rows == [("anthropic", MODEL, "partially_priced", "usage.output_tokens_details.foo_tokens", 2, 1,
                     "telemetry/requests/new_token_field.jsonl")]
    lines = con.sql("SELECT line, path FROM ops.unknown_field_lines ORDER BY line").fetchall()
    assert lines == [(1, "usage.output_tokens_details.foo_tokens"), (3, "usage.output_tokens_details.foo_tokens")]
    # the calls are still priced (the tokens read are costed); only the unknown count is not
    costs = con.sql("SELECT count(*) FROM core.call_costs WHERE request_id IN ('r1', 'r3') AND cost_usd > 0").fetchall()
    assert costs == [(2,)]


def test_ingest_summary_carries_the_findings_and_the_run_summary_warns(built):
    con, summary, _l = built
    by_file = {f.file.rsplit("/", 1)[-1]: f.unknown_fields for f in summary.files}
    assert [u["path"] for u in by_file["new_token_field.jsonl"]] == ["usage.output_tokens_details.foo_tokens"]
    assert [u["path"] for u in by_file["new_top_level.jsonl"]] == ["shiny_new_flag"]
    assert by_file["clean.jsonl"] == []
    from thinktax.console import _unknown_fields_line

    assert _unknown_fields_line(con) == (
        "unknown fields: 2 paths in 2 files (usage.output_tokens_details.foo_tokens: 3 calls, token-looking -> 2 "
        "partially priced; shiny_new_flag: 1 call)")


def test_report_data_quality_section_lists_them(built):
    con, _s, _l = built
    from services.report import _quality

    html = _quality(con)
    assert "Unknown fields" in html
    assert "usage.output_tokens_details.foo_tokens" in html and "shiny_new_flag" in html
    assert "partially_priced (usage.output_tokens_details.foo_tokens not priced)" in html


def test_reingest_writes_no_second_row(built):
    con, _s, landing = built
    before = con.sql("SELECT count(*) FROM ops.unknown_fields").fetchall()
    summary = Ingestor(con, landing).ingest()
    assert {f.status for f in summary.files} == {"already_ingested"}
    assert con.sql("SELECT count(*) FROM ops.unknown_fields").fetchall() == before == [(2,)]
    assert con.sql("SELECT count(*) FROM ops.unknown_field_lines").fetchall() == [(2,)]


def test_warning_in_the_log(tmp_path, caplog):
    landing = tmp_path / "landing" / "telemetry" / "requests"
    landing.mkdir(parents=True)
    (landing / "a.jsonl").write_text(json.dumps(call("w1", usage=FOO)) + "\n")
    con = duckdb.connect()
    migrate(con)
    with caplog.at_level(logging.WARNING, logger="thinktax.ingest"):
        Ingestor(con, tmp_path / "landing").ingest()
    assert any("a.jsonl: unknown fields" in r.message and "usage.output_tokens_details.foo_tokens" in r.message
               for r in caplog.records)


# ------------------------------------------------------------------ the known paths

def test_every_path_the_request_parser_reads_is_known():
    """The paths the query reads (``j.a.b`` in its SQL text, written independently of _STRUCTURE)
    are all in the guard's known set, which is derived from _STRUCTURE."""
    text = Path(requests.__file__).read_text()
    read = set(re.findall(r"\bj0?\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", text))
    read = {p for p in read if not p.startswith(("usage.cacheDetails.",))}  # struct fields of a list's elements
    assert len(read) > 30  # the query reads the usage shapes, principals, tiers, ...
    missing = sorted(read - requests.KNOWN_FIELDS.paths)
    assert missing == []
    # and the fields the module docstring names as read
    for path in ("usage.output_tokens_details.thinking_tokens", "usage.thinking_tokens", "usage.cache_creation.ephemeral_1h_input_tokens",
                 "usageMetadata.thoughtsTokenCount", "usage.cacheWriteInputTokens", "usage.prompt_cache_hit_tokens",
                 "usage.server_tool_use.web_search_requests", "serviceTier.type", "ResponseMetadata.RequestId"):
        assert path in requests.KNOWN_FIELDS.paths, path


def test_ignored_fields_are_not_read_and_a_read_one_cannot_be_ignored():
    assert not set(requests._IGNORED) & requests.KNOWN_FIELDS.paths
    with pytest.raises(ValueError, match="declared ignored but read"):
        known_fields("x", {"usage": {"a_tokens": "VARCHAR"}}, ignored={"usage.a_tokens": "no"})


def test_token_like_names():
    assert token_like("usage.output_tokens_details.foo_tokens")
    assert token_like("usage.output_tokens_details")  # a details object
    assert token_like("usageMetadata.fooTokenCount")
    assert token_like("usage.fooTokens")
    assert not token_like("shiny_new_flag")
    assert not token_like("usage.serverToolUsage")
    assert not token_like("usage.tokens_note")


# ------------------------------------------------------------------ real payloads

def _real_bodies() -> list[Path]:
    return sorted(p for folder in ("payloads", "otel_bodies", "payloads_modalities") for p in (REAL / folder).glob("*.json")
                  if p.name != "manifest.json" and not p.name.endswith(".headers.json"))


# (payloads_modalities: issue 44's audio / image / video bodies, in the providers' shapes.)
# Fields of the recorded bodies the request parser does not read (the point of the guard: they show),
# each zero or a breakdown priced at its count's rate, so none makes a call partially priced:
# OpenAI Chat's audio_tokens (0 in every body here; audio is priced apart: issue 44 items 1-2),
# Gemini's per-modality lists (TEXT / DOCUMENT / IMAGE input, priced as the prompt), Bedrock Converse's
# serverToolUsage (a tool-use count, not a token count).
# The modality issue's parser reads OpenAI's audio_tokens and Gemini's prompt / candidates / cache
# details lists (sources/requests.py _oa, _gsum); what stays unread in the recorded bodies:
EXPECTED_UNREAD = {
    "gemini": {"usageMetadata.toolUsePromptTokensDetails"},
    "converse": {"usage.serverToolUsage"},
}


@pytest.mark.parametrize("body", _real_bodies(), ids=lambda p: p.name)
def test_real_payload_has_no_unknown_read_field_and_nothing_partially_priced(body):
    line = {**json.loads(body.read_text()), "ts": "2026-07-30T12:00:00Z", "request_id": "x", "provider": "p"}
    found = scan((json.dumps(line) + "\n").encode(), requests.KNOWN_FIELDS)
    rows = found.rows if found else []
    paths = {r["path"] for r in rows}
    assert not paths & requests.KNOWN_FIELDS.known
    assert paths <= set().union(*EXPECTED_UNREAD.values()), paths
    assert [r["path"] for r in rows if r["nonzero_records"]] == []
    assert found is None or found.lines.num_rows == 0


def test_real_payloads_show_the_unread_fields_they_carry():
    """Over all the bodies, each expected unread field does show (the guard sees real fields)."""
    seen = set()
    for body in _real_bodies():
        line = {**json.loads(body.read_text()), "ts": "2026-07-30T12:00:00Z", "request_id": "x"}
        found = scan((json.dumps(line) + "\n").encode(), requests.KNOWN_FIELDS)
        seen |= {r["path"] for r in (found.rows if found else [])}
    assert seen == set().union(*EXPECTED_UNREAD.values())


def test_gemini_modality_lists_the_parser_reads_are_known_an_unread_one_is_judged_by_modality():
    """The modality parser (issue 44 items 1-2) reads promptTokensDetails / candidatesTokensDetails, so
    they are no unknown field; toolUsePromptTokensDetails it does not read: a list of it is a
    breakdown of a count already read (text: harmless), but AUDIO in it has a price of its own
    (LiteLLM input_cost_per_audio_token), so that line is partially priced."""
    base = {"ts": "2026-07-30T12:00:00Z", "responseId": "g", "modelVersion": "gemini-2.5-flash"}
    text = {**base, "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 10}],
                                      "toolUsePromptTokenCount": 4,
                                      "toolUsePromptTokensDetails": [{"modality": "TEXT", "tokenCount": 4}]}}
    audio = {**base, "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 5,
                                       "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 10},
                                                               {"modality": "AUDIO", "tokenCount": 20}],
                                       "toolUsePromptTokenCount": 20,
                                       "toolUsePromptTokensDetails": [{"modality": "AUDIO", "tokenCount": 20}]}}
    image_out = {**base, "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1290,
                                           "candidatesTokensDetails": [{"modality": "IMAGE", "tokenCount": 1290}]}}
    data = "".join(json.dumps(x) + "\n" for x in (text, audio, image_out)).encode()
    found = scan(data, requests.KNOWN_FIELDS)
    assert {r["path"]: (r["records"], r["nonzero_records"]) for r in found.rows} == {
        "usageMetadata.toolUsePromptTokensDetails": (2, 1),  # line 1 TEXT (harmless), line 2 AUDIO 20
    }
    assert found.lines.to_pylist() == [{"line": 2, "path": "usageMetadata.toolUsePromptTokensDetails"}]


# ------------------------------------------------------------------ large files: sample, then full pass

def test_large_file_a_field_that_starts_mid_file_is_counted_exactly(monkeypatch):
    plain = json.dumps(call("p")) + "\n"
    with_foo = json.dumps(call("q", usage=FOO)) + "\n"
    n = BIG // len(plain)
    half = n // 2
    data = (plain * half + with_foo * (n - half)).encode()
    assert len(data) > SMALL_BYTES
    found = scan(data, requests.KNOWN_FIELDS)
    assert found is not None and found.sampled
    # lines half+1 .. n carry it, all non-zero
    assert found.rows == [{"path": "usage.output_tokens_details.foo_tokens", "records": n - half,
                           "first_line": half + 1, "example": "7", "token_like": True, "nonzero_records": n - half}]
    assert found.lines.num_rows == n - half


def test_large_clean_file_is_clean():
    plain = json.dumps(call("p")) + "\n"
    data = (plain * (BIG // len(plain))).encode()
    assert scan(data, requests.KNOWN_FIELDS) is None


def test_sample_is_whole_lines_from_head_and_spread():
    lines = [json.dumps(call(f"id{i:07d}")) for i in range(BIG // 150)]
    data = ("\n".join(lines) + "\n").encode()
    s = fieldguard.sample(data)
    assert len(s) < len(data) and s.endswith(b"\n")
    got = s.decode().splitlines()
    whole = set(lines)
    assert all(g in whole for g in got)  # every sampled line is a whole line of the file
    index = [int(json.loads(g)["request_id"][2:]) for g in got]
    assert index[0] == 0 and max(index) >= len(lines) * 0.95  # the head, and slices up to the end


# ------------------------------------------------------------------ OTel (usage attributes) and batch files

def _span(span_id: str, op: str, attrs: dict, parent: str = "") -> dict:
    kv = [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
          for k, v in {"gen_ai.operation.name": op, **attrs}.items()]
    return {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": span_id, "parentSpanId": parent, "name": op,
            "kind": 3, "startTimeUnixNano": "1785412799000000000", "endTimeUnixNano": "1785412800000000000",
            "attributes": kv}


def test_otel_unknown_usage_attribute_partially_prices_only_its_own_span(tmp_path, caplog):
    chat = {"gen_ai.provider.name": "anthropic", "gen_ai.request.model": MODEL,
            "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 50}
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [
        _span("aaaaaaaaaaaaaaaa", "invoke_agent", {"gen_ai.usage.foo_tokens": 9}),
        _span("0000000000000001", "chat", {**chat, "gen_ai.response.id": "o1", "gen_ai.usage.foo_tokens": 9}, "aaaaaaaaaaaaaaaa"),
        _span("0000000000000002", "chat", {**chat, "gen_ai.response.id": "o2", "gen_ai.usage.foo_tokens": 0}, "aaaaaaaaaaaaaaaa"),
        _span("0000000000000003", "chat", {**chat, "gen_ai.response.id": "o3", "http.status": "ok"}, "aaaaaaaaaaaaaaaa"),
    ]}]}]}
    landing = real_sheet_landing(tmp_path, {})
    (landing / "telemetry" / "otel").mkdir(parents=True)
    (landing / "telemetry" / "otel" / "spans.jsonl").write_text(json.dumps(doc) + "\n")
    with caplog.at_level(logging.WARNING, logger="thinktax.ingest"):
        con, summary = build_warehouse(landing, tmp_path / "wh" / "thinktax.duckdb")
    assert any("spans.jsonl: unknown fields" in r.message for r in caplog.records)
    otel_file = [f for f in summary.files if f.file.endswith("spans.jsonl")][0]
    assert [u["path"] for u in otel_file.unknown_fields] == ["gen_ai.usage.foo_tokens"]
    # 3 spans carry it (the agent's 9, o1's 9, o2's 0); http.status is outside the usage namespaces
    assert con.sql("SELECT source, path, first_line, records, token_like, nonzero_records, example "
                   "FROM ops.unknown_fields").fetchall() == [("otlp_json", "gen_ai.usage.foo_tokens", 1, 3, True, 2, "9")]
    # every span is on line 1: only o1 is partially priced (the agent span is not a call, o2's is 0)
    assert con.sql("SELECT reason, field, calls_or_hours FROM marts.unpriced_usage").fetchall() == [
        ("partially_priced", "gen_ai.usage.foo_tokens", 1)]
    assert con.sql("SELECT first_line FROM marts.unpriced_usage").fetchall() == [(1,)]
    con.close()


def test_otel_known_fields_are_the_names_it_reads():
    from sources import otel

    for name in ("gen_ai.usage.input_tokens", "gen_ai.usage.reasoning.output_tokens", "llm.token_count.prompt",
                 "gen_ai.usage.details.cache_write_tokens", "gen_ai.response.model"):
        assert name in otel.KNOWN_FIELDS.paths
    assert all(k in otel.KNOWN_FIELDS.paths for names in otel._COUNTS.values() for k in names.values())


def test_openai_batch_line_with_a_new_usage_field(tmp_path):
    from sources import requests_batch

    body = {"id": "chatcmpl-b1", "object": "chat.completion", "created": 1785412800, "model": "gpt-4o-2024-08-06",
            "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                                     "completion_tokens_details": {"reasoning_tokens": 0, "foo_tokens": 3}}}
    line = {"id": "batch_req_1", "custom_id": "c1", "response": {"status_code": 200, "request_id": "r", "body": body},
            "error": None}
    found = scan((json.dumps(line) + "\n").encode(), requests_batch._OPENAI_KNOWN)
    assert [(r["path"], r["records"], r["nonzero_records"]) for r in found.rows] == [
        ("response.body.usage.completion_tokens_details.foo_tokens", 1, 1)]


@pytest.mark.parametrize("case", ["req_openai_batch_output", "req_anthropic_batch_results"])
def test_batch_corpus_files_have_no_unknown_fields(case):
    from sources import requests_batch

    known = {"req_openai_batch_output": requests_batch._OPENAI_KNOWN,
             "req_anthropic_batch_results": requests_batch._ANTHROPIC_KNOWN}[case]
    files = list((Path(__file__).resolve().parents[1] / "corpus" / case).rglob("*.jsonl"))
    assert files
    for f in files:
        assert scan(f.read_bytes(), known) is None, f


# ------------------------------------------------------------------ LiteLLM spend logs

def test_spendlogs_every_usage_object_path_read_is_known():
    from sources import litellm_spendlogs as sl

    text = Path(sl.__file__).read_text()
    read = set(re.findall(r"json_extract_string\(u, '\$\.([\w.]+)'\)", text))
    assert len(read) >= 6
    assert sorted(f"metadata.usage_object.{p}" for p in read if f"metadata.usage_object.{p}" not in sl.KNOWN_FIELDS.paths) == []
    assert all(k in sl.KNOWN_FIELDS.paths for k in sl._STRUCTURE)


def test_spendlogs_new_usage_object_field_and_the_corpus_file():
    from sources import litellm_spendlogs as sl

    row = {"request_id": "s1", "call_type": "acompletion", "spend": 0.01, "total_tokens": 15, "prompt_tokens": 10,
           "completion_tokens": 5, "startTime": "2026-07-30T12:00:00Z", "endTime": "2026-07-30T12:00:01Z",
           "model": "gpt-4o", "custom_llm_provider": "openai", "api_base": "https://api.openai.com",
           "metadata": {"anything": {"goes": 1}, "usage_object": {
               "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
               "completion_tokens_details": {"reasoning_tokens": 0, "foo_tokens": 2}}}}
    found = scan((json.dumps(row) + "\n").encode(), sl.KNOWN_FIELDS)
    assert [(r["path"], r["nonzero_records"]) for r in found.rows] == [
        ("metadata.usage_object.completion_tokens_details.foo_tokens", 1)]
    corpus = Path(__file__).resolve().parents[1] / "corpus" / "spendlogs_bad_rows"
    files = list(corpus.rglob("*.jsonl"))
    assert files
    for f in files:
        got = scan(f.read_bytes(), sl.KNOWN_FIELDS)
        assert got is None or [r["path"] for r in got.rows if r["nonzero_records"]] == [], f
