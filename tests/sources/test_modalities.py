"""Issue 44: usage by modality from the providers' shapes, and prices by modality and unit from the
three sheet formats. Figures worked by hand in the comments."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D
from pathlib import Path

import pytest

from sources import prices_llm, requests as rq
from sources.base import ParseContext

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "payloads_modalities"
CTX = ParseContext(dt.datetime(2026, 8, 1, tzinfo=dt.timezone.utc))
COLS = ("usage_shape", "uncached_input_tokens", "cached_input_tokens", "output_tokens", "audio_input_tokens",
        "image_input_tokens", "video_input_tokens", "cached_audio_input_tokens", "audio_output_tokens",
        "image_output_tokens", "output_images", "output_video_seconds", "image_size", "image_quality", "video_resolution")


def _line(name: str, **envelope) -> dict:
    return {"ts": "2026-07-30T12:00:00Z", **envelope, **json.loads((FIX / name).read_text())}


def parse(*records: dict):
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    return rq.parse(data, "calls.jsonl", CTX)


def row(record: dict) -> tuple:
    p = parse(record)
    assert not p.rejects, p.rejects
    r = p.rows.to_pylist()[0]
    return tuple(r[c] for c in COLS)


@pytest.mark.parametrize("name, envelope, expected", [
    # prompt 1200 = audio 1000 + text 200; completion 900 = audio 700 + text 200 (reasoning 0)
    ("openai_chat_gpt-4o-audio-preview_audio_in_out.constructed.json", {"provider": "openai"},
     ("openai_chat", 1200, 0, 900, 1000, None, None, None, 700, None, None, None, None, None, None)),
    # input 2250 = text 650 + audio 1600, of which cached 1536 (text 512 + audio 1024): uncached 714,
    # uncached audio 1600 - 1024 = 576; output 700 = text 150 + audio 550
    ("openai_realtime_gpt-realtime_cached_audio.constructed.json", {"provider": "openai"},
     ("openai_responses", 714, 1536, 700, 576, None, None, 1024, 550, None, None, None, None, None, None)),
    # input 50 = text 40 + image 10; the 4160 output tokens are the image's; one image
    ("openai_images_gpt-image-1_high.constructed.json", {"provider": "openai", "request_id": "img-1"},
     ("openai_responses", 50, 0, 4160, None, 10, None, None, None, 4160, 1, None, "1024x1024", "high", None)),
    # no usage: two images, priced per image
    ("openai_images_dall-e-3_hd_no_usage.constructed.json", {"provider": "openai", "request_id": "img-2"},
     ("media_units", 0, 0, 0, None, None, None, None, None, None, 2, None, "1024x1024", "hd", None)),
    # "seconds": "8", "size": "1280x720" -> 8 s at 720p
    ("openai_videos_sora-2_720p.constructed.json", {"provider": "openai"},
     ("media_units", 0, 0, 0, None, None, None, None, None, None, None, D(8), None, None, "720p")),
    ("openai_videos_sora-2-pro_1024p.constructed.json", {"provider": "openai"},
     ("media_units", 0, 0, 0, None, None, None, None, None, None, None, D(4), None, None, "1024p")),
    # promptTokenCount 2000 = TEXT 200 + IMAGE 1290 + AUDIO 510
    ("gemini_generate_gemini-2.5-flash_image_audio_prompt.constructed.json", {"provider": "gemini"},
     ("gemini", 2000, 0, 100, 510, 1290, None, None, None, None, None, None, None, None, None)),
    # prompt 3000 (TEXT 1000, AUDIO 2000) of which cached 1500 (AUDIO): uncached 1500, audio 500
    ("gemini_genai_sdk_snake_case_cached_audio.constructed.json", {"provider": "gemini"},
     ("gemini", 1500, 1500, 50, 500, None, None, 1500, None, None, None, None, None, None, None)),
])
def test_payload_buckets(name, envelope, expected):
    assert row(_line(name, **envelope)) == expected


def test_text_only_calls_unchanged():
    # a plain chat call: no modality columns (NULL = 0), so it is the same row as before issue 44
    r = row({"ts": "2026-07-30T12:00:00Z", "request_id": "t1", "model": "o3", "provider": "openai",
             "usage": {"prompt_tokens": 100, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 0,
                       "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 20, "audio_tokens": 0}}})
    assert r == ("openai_chat", 100, 0, 30, None, None, None, None, None, None, None, None, None, None, None)


def test_gemini_document_and_video_modalities():
    # DOCUMENT is text; VIDEO prompt 700 of which cached 300 -> uncached video 400 (cached video stays in the
    # cached bucket, at the cached rate: Google prices text / image / video caching alike); VIDEO output 64
    r = row({"ts": "2026-07-30T12:00:00Z", "provider": "vertex_ai", "responseId": "v1", "modelVersion": "gemini-2.5-pro",
             "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 300, "candidatesTokenCount": 100,
                               "promptTokensDetails": [{"modality": "DOCUMENT", "tokenCount": 300}, {"modality": "VIDEO", "tokenCount": 700}],
                               "cacheTokensDetails": [{"modality": "VIDEO", "tokenCount": 300}],
                               "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 36}, {"modality": "VIDEO", "tokenCount": 64}]}})
    assert r[:7] == ("gemini", 700, 300, 100, None, None, 400)
    p = parse({"ts": "2026-07-30T12:00:00Z", "provider": "gemini", "responseId": "v2", "modelVersion": "gemini-2.5-flash",
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 100,
                                 "candidatesTokensDetails": [{"modality": "VIDEO", "tokenCount": 64}]}})
    assert p.rows.to_pylist()[0]["video_output_tokens"] == 64


@pytest.mark.parametrize("usage, field, reason", [
    ({"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"audio_tokens": 20}},
     "usage.prompt_tokens_details", "audio + image + video input tokens (20) exceed the uncached prompt tokens they are part of (10)"),
    ({"prompt_tokens": 10, "completion_tokens": 5, "completion_tokens_details": {"audio_tokens": 6}},
     "usage.completion_tokens_details", "audio + image + video output tokens (6) exceed the output tokens they are part of (5)"),
    ({"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"audio_tokens": "x"}},
     "usage.prompt_tokens_details.audio_tokens", "not a non-negative whole number: x"),
])
def test_bad_modality_counts_quarantined(usage, field, reason):
    p = parse({"ts": "2026-07-30T12:00:00Z", "request_id": "b", "model": "gpt-4o-audio-preview", "provider": "openai", "usage": usage})
    assert p.rows.num_rows == 0 and [(r.line, r.field, r.reason) for r in p.rejects] == [(1, field, reason)]


def test_bad_gemini_detail_and_seconds_quarantined():
    p = parse(
        {"ts": "2026-07-30T12:00:00Z", "provider": "gemini", "responseId": "g", "modelVersion": "gemini-2.5-flash",
         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1,
                           "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": "1.5"}]}},
        {"ts": "2026-07-30T12:00:00Z", "provider": "openai", "id": "video_x", "object": "video", "model": "sora-2",
         "status": "completed", "seconds": "eight", "size": "1280x720"})
    assert [(r.line, r.field, r.reason) for r in p.rejects] == [
        (1, "usageMetadata.promptTokensDetails", "not a non-negative whole number: 1.5"),
        (2, "seconds", "not a non-negative number of seconds: eight")]


def test_unfinished_video_is_no_usage():
    # a queued / failed Sora job is not billed; without usage it matches no usage shape and is quarantined
    p = parse({"ts": "2026-07-30T12:00:00Z", "provider": "openai", "id": "video_q", "object": "video", "model": "sora-2",
               "status": "failed", "seconds": "8", "size": "1280x720"})
    assert [(r.field, r.reason) for r in p.rejects] == [("usage", "missing")]


# ---------------------------------------------------------------- prices


def test_csv_modality_and_unit_columns():
    data = (b"provider,model,price_kind,input_usd_per_mtok,output_usd_per_mtok,audio_input_usd_per_mtok,"
            b"audio_output_usd_per_mtok,usd_per_output_image,usd_per_output_video_second\n"
            b"openai,gpt-audio,standard,2.50,10.00,32.00,64.00,,\n"
            b"openai,dall-e-3,image_hd_1024x1024,,,,,0.08,\n"
            b"openai,sora-2-pro,video_1024p,,,,,,0.50\n"
            b"openai,no-price,standard,,,,,,\n")
    p = prices_llm.parse_thinktax_csv(data, "p.2026-07-24.csv", CTX)
    rows = {(r["model"], r["price_kind"]): r for r in p.rows.to_pylist()}
    a = rows[("gpt-audio", "standard")]
    assert (a["input_usd_per_mtok"], a["audio_input_usd_per_mtok"], a["audio_output_usd_per_mtok"]) == (D("2.5"), D(32), D(64))
    assert rows[("dall-e-3", "image_hd_1024x1024")]["usd_per_output_image"] == D("0.08")
    assert rows[("sora-2-pro", "video_1024p")]["usd_per_output_video_second"] == D("0.5")
    # a row with no price at all still needs its text prices
    assert [(r.line, r.field) for r in p.rejects] == [(5, "input_usd_per_mtok")]


def test_openrouter_audio_and_image_output():
    # OpenRouter prices are USD per token (per image for image_output): 0.000032 -> 32 per 1M
    doc = {"data": [{"id": "openai/gpt-audio", "pricing": {"prompt": "0.0000025", "completion": "0.00001",
                                                           "audio": "0.000032", "audio_output": "0.000064",
                                                           "input_audio_cache": "0.0000004"}},
                    {"id": "google/gemini-2.5-flash-image", "pricing": {"prompt": "0.0000003", "completion": "0.0000025",
                                                                       "image_output": "0.039", "image": "0.001238"}}]}
    p = prices_llm.parse_openrouter(json.dumps(doc).encode(), "or.2026-07-24.json", CTX)
    rows = {r["model"]: r for r in p.rows.to_pylist()}
    a = rows["openai/gpt-audio"]
    assert (a["audio_input_usd_per_mtok"], a["audio_output_usd_per_mtok"], a["cached_audio_input_usd_per_mtok"]) == (
        D(32), D(64), D("0.4"))
    g = rows["google/gemini-2.5-flash-image"]
    assert g["usd_per_output_image"] == D("0.039") and g["image_input_usd_per_mtok"] is None  # 'image' is per input image: not read


def test_litellm_real_modality_prices():
    sheet = Path(__file__).resolve().parents[2] / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"
    p = prices_llm.parse_litellm(sheet.read_bytes(), sheet.name, CTX)
    rows = {(r["model"], r["price_kind"]): r for r in p.rows.to_pylist()}
    # gpt-realtime: input_cost_per_audio_token 3.2e-05 -> 32; output 6.4e-05 -> 64;
    # cache_creation_input_audio_token_cost 4e-07 -> 0.4 (OpenAI's cached audio input price)
    r = rows[("gpt-realtime", "standard")]
    assert (r["audio_input_usd_per_mtok"], r["audio_output_usd_per_mtok"], r["cached_audio_input_usd_per_mtok"]) == (
        D(32), D(64), D("0.4"))
    # gpt-image-1: image input 1e-05 -> 10, image output 4e-05 -> 40; high/1024-x-1024/gpt-image-1: 0.167 per image
    assert (rows[("gpt-image-1", "standard")]["image_input_usd_per_mtok"], rows[("gpt-image-1", "standard")]["image_output_usd_per_mtok"]) == (D(10), D(40))
    assert rows[("gpt-image-1", "image_high_1024x1024")]["usd_per_output_image"] == D("0.167")
    # sora-2: output_cost_per_video_per_second 0.1; veo 3.1 lite: 0.05 per second, 0.08 at 1080p
    assert rows[("sora-2", "standard")]["usd_per_output_video_second"] == D("0.1")
    veo = "gemini/veo-3.1-lite-generate-preview"
    assert (rows[(veo, "standard")]["usd_per_output_video_second"], rows[(veo, "video_1080p")]["usd_per_output_video_second"]) == (
        D("0.05"), D("0.08"))
    # gpt-4o-mini-tts: output_cost_per_second is a speech price (mode audio_speech): not a video price
    assert rows[("gpt-4o-mini-tts", "standard")]["usd_per_output_video_second"] is None
