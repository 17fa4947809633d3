"""Issue 44: calls billed in audio, image and video tokens, per image and per second, priced by hand.

Three warehouses over the same seven calls (the response bodies as the providers return them, plus the
thinktax envelope ts / request_id / provider, and size / quality where the Images API does not echo them):

* ``typed``: a thinktax price CSV with every modality price, typed from the providers' price pages
  (OpenAI: openai.com/api/pricing -- gpt-4o-audio-preview text 2.50 / 10.00, audio 40 / 80 per 1M;
  gpt-image-1 text input 5.00 (cached 1.25), image input 10.00, image output 40.00 per 1M; DALL-E 3
  $0.040 per standard 1024x1024 image, $0.080 per HD 1024x1024 image; Sora 2 $0.10 per second, Sora 2
  Pro $0.30 per second at 720p and $0.50 at 1024p. Google: ai.google.dev/gemini-api/docs/pricing --
  Gemini 2.5 Flash input $0.30 (text / image / video) and $1.00 (audio) per 1M, output $2.50,
  context caching $0.03 (text / image / video) and $0.10 (audio)).
* ``litellm``: the real LiteLLM sheet of 2026-07-24 (data/real/litellm), trimmed to these models.
* ``text_only``: a CSV with the same text prices and no modality or unit price: every non-text part
  is unpriced (named in unpriced_modalities and marts.unpriced_usage), never priced at the text rate.
"""

from __future__ import annotations

import json
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import build_warehouse

ROOT = Path(__file__).resolve().parents[2]
SHEET = ROOT / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"
TS = "2026-07-30T12:00:00Z"

CALLS = [
    # OpenAI Chat Completions, gpt-4o-audio-preview: audio in and out (usage as the API returns it)
    {"ts": TS, "provider": "openai", "id": "chatcmpl-audio-1", "object": "chat.completion", "model": "gpt-4o-audio-preview",
     "usage": {"prompt_tokens": 1200, "completion_tokens": 900, "total_tokens": 2100,
               "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 1000, "text_tokens": 200, "image_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 700, "text_tokens": 200,
                                             "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}},
    # Gemini generateContent: IMAGE and AUDIO prompt tokens (usageMetadata.promptTokensDetails)
    {"ts": TS, "provider": "gemini", "responseId": "gem-image-audio-1", "modelVersion": "gemini-2.5-flash",
     "usageMetadata": {"promptTokenCount": 2000, "candidatesTokenCount": 100, "totalTokenCount": 2100,
                       "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 200}, {"modality": "IMAGE", "tokenCount": 1290},
                                               {"modality": "AUDIO", "tokenCount": 510}],
                       "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 100}]}},
    # the same as google-genai's model_dump() writes it (snake_case), with cached audio
    {"ts": TS, "provider": "gemini", "response_id": "gem-snake-cached-audio-1", "model_version": "gemini-2.5-flash",
     "usage_metadata": {"prompt_token_count": 3000, "cached_content_token_count": 1500, "candidates_token_count": 50,
                        "total_token_count": 3050,
                        "prompt_tokens_details": [{"modality": "TEXT", "token_count": 1000}, {"modality": "AUDIO", "token_count": 2000}],
                        "cache_tokens_details": [{"modality": "AUDIO", "token_count": 1500}],
                        "candidates_tokens_details": [{"modality": "TEXT", "token_count": 50}]}},
    # OpenAI Images API, gpt-image-1: image input and output tokens (input_tokens_details, no output details)
    {"ts": TS, "provider": "openai", "request_id": "img-gpt-image-1", "model": "gpt-image-1", "created": 1785412800,
     "data": [{"b64_json": "iVBORw0KGgo="}], "size": "1024x1024", "quality": "high", "output_format": "png",
     "usage": {"total_tokens": 4210, "input_tokens": 50, "output_tokens": 4160,
               "input_tokens_details": {"text_tokens": 40, "image_tokens": 10}}},
    # OpenAI Images API, dall-e-3: no usage, two images, priced per image (size / quality from the request)
    {"ts": TS, "provider": "openai", "request_id": "img-dall-e-3", "model": "dall-e-3", "created": 1785412800,
     "size": "1024x1024", "quality": "hd",
     "data": [{"url": "https://example.invalid/1.png", "revised_prompt": "a"}, {"url": "https://example.invalid/2.png"}]},
    # OpenAI Videos API (Sora): the video object, seconds and size as strings
    {"ts": TS, "provider": "openai", "id": "video_sora2_1", "object": "video", "model": "sora-2", "status": "completed",
     "progress": 100, "created_at": 1785412800, "seconds": "8", "size": "1280x720", "quality": "standard"},
    {"ts": TS, "provider": "openai", "id": "video_sora2pro_1", "object": "video", "model": "sora-2-pro", "status": "completed",
     "progress": 100, "created_at": 1785412800, "seconds": "4", "size": "1792x1024"},
    # Vertex AI Imagen 3 predict: predictions[] one per image, no usage (the demo's image step)
    {"ts": TS, "provider": "vertex_ai", "request_id": "imagen-1", "model": "imagen-3.0-generate-002",
     "predictions": [{"bytesBase64Encoded": "iVBORw0KGgo=", "mimeType": "image/png"}] * 3},
]

TYPED_CSV = """provider,model,price_kind,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,audio_input_usd_per_mtok,cached_audio_input_usd_per_mtok,image_input_usd_per_mtok,video_input_usd_per_mtok,audio_output_usd_per_mtok,image_output_usd_per_mtok,usd_per_output_image,usd_per_output_video_second
openai,gpt-4o-audio-preview,standard,2.50,,10.00,40.00,,,,80.00,,,
gemini,gemini-2.5-flash,standard,0.30,0.03,2.50,1.00,0.10,0.30,0.30,,,,
openai,gpt-image-1,standard,5.00,1.25,,,,10.00,,,40.00,,
openai,dall-e-3,standard,,,,,,,,,,0.04,
openai,dall-e-3,image_hd_1024x1024,,,,,,,,,,0.08,
openai,sora-2,standard,,,,,,,,,,,0.10
openai,sora-2-pro,standard,,,,,,,,,,,0.30
openai,sora-2-pro,video_1024p,,,,,,,,,,,0.50
"""
TEXT_ONLY_CSV = """provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok
openai,gpt-4o-audio-preview,2.50,,10.00
gemini,gemini-2.5-flash,0.30,0.03,2.50
openai,gpt-image-1,5.00,1.25,40.00
"""
LITELLM_KEYS = ("gpt-4o-audio-preview", "gemini/gemini-2.5-flash", "gpt-image-1", "high/1024-x-1024/gpt-image-1",
                "dall-e-3", "hd/1024-x-1024/dall-e-3", "sora-2", "sora-2-pro", "vertex_ai/imagen-3.0-generate-002")


def _landing(root: Path, sheet_name: str, sheet_text: str) -> Path:
    landing = root / "landing"
    (landing / "prices" / "llm").mkdir(parents=True)
    (landing / "telemetry" / "requests").mkdir(parents=True)
    (landing / "prices" / "llm" / sheet_name).write_text(sheet_text)
    (landing / "telemetry" / "requests" / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    return landing


def _build(tmp_path_factory, name: str, sheet_name: str, sheet_text: str):
    root = tmp_path_factory.mktemp(name)
    con, summary = build_warehouse(_landing(root, sheet_name, sheet_text), root / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 0
    return con


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    con = _build(tmp_path_factory, "typed", "typed.2026-07-24.csv", TYPED_CSV)
    yield con
    con.close()


@pytest.fixture(scope="module")
def litellm(tmp_path_factory):
    full = json.loads(SHEET.read_text())
    trimmed = {k: full[k] for k in LITELLM_KEYS}
    con = _build(tmp_path_factory, "litellm", SHEET.name, json.dumps(trimmed, indent=2))
    yield con
    con.close()


@pytest.fixture(scope="module")
def text_only(tmp_path_factory):
    con = _build(tmp_path_factory, "text_only", "text.2026-07-24.csv", TEXT_ONLY_CSV)
    yield con
    con.close()


COLS = "cost_usd, audio_cost_usd, image_cost_usd, video_cost_usd, unpriced_modalities, unpriced"


def costs(con) -> dict:
    return {r[0]: r[1:] for r in con.sql(f"SELECT request_id, {COLS} FROM core.call_costs").fetchall()}


def test_modality_buckets(typed):
    rows = {r[0]: r[1:] for r in typed.sql(
        "SELECT request_id, uncached_input_tokens, cached_input_tokens, output_tokens, audio_input_tokens, image_input_tokens, "
        "cached_audio_input_tokens, audio_output_tokens, image_output_tokens, output_images, output_video_seconds, "
        "image_size, image_quality, video_resolution FROM core.calls").fetchall()}
    # prompt 1200 = audio 1000 + text 200; completion 900 = audio 700 + text 200
    assert rows["chatcmpl-audio-1"] == (1200, 0, 900, 1000, 0, 0, 700, 0, 0, D(0), None, None, None)
    assert rows["gem-image-audio-1"] == (2000, 0, 100, 510, 1290, 0, 0, 0, 0, D(0), None, None, None)
    # prompt 3000 of which 1500 cached (all audio): uncached 1500 = text 1000 + audio 2000 - 1500
    assert rows["gem-snake-cached-audio-1"] == (1500, 1500, 50, 500, 0, 1500, 0, 0, 0, D(0), None, None, None)
    assert rows["img-gpt-image-1"] == (50, 0, 4160, 0, 10, 0, 0, 4160, 1, D(0), "1024x1024", "high", None)
    assert rows["img-dall-e-3"] == (0, 0, 0, 0, 0, 0, 0, 0, 2, D(0), "1024x1024", "hd", None)
    assert rows["video_sora2_1"] == (0, 0, 0, 0, 0, 0, 0, 0, 0, D(8), None, None, "720p")
    assert rows["video_sora2pro_1"] == (0, 0, 0, 0, 0, 0, 0, 0, 0, D(4), None, None, "1024p")


def test_typed_sheet_hand_worked(typed):
    got = costs(typed)
    # audio chat: text in 200 x 2.50 = 0.0005, audio in 1000 x 40 = 0.04, text out 200 x 10 = 0.002,
    # audio out 700 x 80 = 0.056 (per 1M) -> 0.0985, of which audio 0.096
    assert got["chatcmpl-audio-1"] == (D("0.0985"), D("0.096"), D(0), D(0), None, False)
    # Gemini: text 200 x 0.30 = 0.00006, image 1290 x 0.30 = 0.000387, audio 510 x 1.00 = 0.00051,
    # output 100 x 2.50 = 0.00025 -> 0.001207
    assert got["gem-image-audio-1"] == (D("0.001207"), D("0.00051"), D("0.000387"), D(0), None, False)
    # snake case: text 1000 x 0.30 = 0.0003, audio 500 x 1.00 = 0.0005, cached audio 1500 x 0.10 = 0.00015,
    # output 50 x 2.50 = 0.000125 -> 0.001075, of which audio 0.00065
    assert got["gem-snake-cached-audio-1"] == (D("0.001075"), D("0.00065"), D(0), D(0), None, False)
    # gpt-image-1 (priced per image token): text 40 x 5 = 0.0002, image in 10 x 10 = 0.0001,
    # image out 4160 x 40 = 0.1664 -> 0.1667, of which image 0.1665
    assert got["img-gpt-image-1"] == (D("0.1667"), D(0), D("0.1665"), D(0), None, False)
    # dall-e-3 HD 1024x1024 (per image, the size and quality's own kind): 2 x 0.08 = 0.16
    assert got["img-dall-e-3"] == (D("0.16"), D(0), D("0.16"), D(0), None, False)
    # Sora 2, per second: 8 x 0.10 = 0.80; Sora 2 Pro at 1024p (1792x1024): 4 x 0.50 = 2.00
    assert got["video_sora2_1"] == (D("0.8"), D(0), D(0), D("0.8"), None, False)
    assert got["video_sora2pro_1"] == (D("2"), D(0), D(0), D("2"), None, False)


def test_real_litellm_sheet(litellm):
    got = costs(litellm)
    # LiteLLM gpt-4o-audio-preview: the same four prices as the typed sheet -> 0.0985
    assert got["chatcmpl-audio-1"] == (D("0.0985"), D("0.096"), D(0), D(0), None, False)
    # gemini/gemini-2.5-flash gives input_cost_per_audio_token 1e-06 and no image price: the image
    # tokens are unpriced, not priced at the text rate: 0.00006 + 0.00051 + 0.00025 = 0.00082
    assert got["gem-image-audio-1"] == (D("0.00082"), D("0.00051"), None, D(0), "image_input_tokens", False)
    # no cached audio price on the sheet: text 0.0003 + audio 0.0005 + output 0.000125 = 0.000925; the
    # audio part priced is 0.0005 and the 1500 cached audio tokens are named unpriced
    assert got["gem-snake-cached-audio-1"] == (D("0.000925"), D("0.0005"), D(0), D(0), "cached_audio_input_tokens", False)
    # gpt-image-1: input 5e-06, image input 1e-05, image output 4e-05 per token: as typed, 0.1667
    assert got["img-gpt-image-1"] == (D("0.1667"), D(0), D("0.1665"), D(0), None, False)
    # hd/1024-x-1024/dall-e-3: 7.629e-08 per pixel x 1024 x 1024 = 0.079995863 (9 places) per image, x 2
    assert got["img-dall-e-3"] == (D("0.159991726"), D(0), D("0.159991726"), D(0), None, False)
    # sora-2 output_cost_per_video_per_second 0.1: 8 s -> 0.8
    assert got["video_sora2_1"] == (D("0.8"), D(0), D(0), D("0.8"), None, False)
    # sora-2-pro gives one per-second price (0.30; sora-2-pro-high-res is a model of its own): 4 x 0.30
    # = 1.20, and the note says the 1024p video had no price of its own
    assert got["video_sora2pro_1"] == (D("1.2"), D(0), D(0), D("1.2"), None, False)
    # vertex_ai/imagen-3.0-generate-002 (litellm_provider vertex_ai-image-models): 3 images x 0.04 = 0.12
    assert got["imagen-1"] == (D("0.12"), D(0), D("0.12"), D(0), None, False)
    note = litellm.execute("SELECT price_note FROM core.call_costs WHERE request_id = 'video_sora2pro_1'").fetchone()[0]
    assert note == "no price for 1024p video on the sheet: the model's own per-second price"


def test_text_only_sheet_leaves_modalities_unpriced(text_only):
    got = costs(text_only)
    # text parts at the text rates only: 200 x 2.50 + 200 x 10 = 0.0025 (the audio is not text-priced:
    # at the text rates the call would be 1200 x 2.50 + 900 x 10 = 0.012)
    assert got["chatcmpl-audio-1"] == (D("0.0025"), None, D(0), D(0), "audio_input_tokens, audio_output_tokens", False)
    # 200 x 0.30 + 100 x 2.50 = 0.00031
    assert got["gem-image-audio-1"] == (D("0.00031"), None, None, D(0), "audio_input_tokens, image_input_tokens", False)
    # 1000 x 0.30 + 50 x 2.50 = 0.000425
    assert got["gem-snake-cached-audio-1"] == (D("0.000425"), None, D(0), D(0),
                                               "audio_input_tokens, cached_audio_input_tokens", False)
    # 40 x 5 = 0.0002 (the 4160 image output tokens are not priced at the 40.00 text output rate)
    assert got["img-gpt-image-1"] == (D("0.0002"), D(0), None, D(0), "image_input_tokens, image_output_tokens", False)
    # no sheet names dall-e-3 / sora: unpriced as before
    for rid in ("img-dall-e-3", "video_sora2_1", "video_sora2pro_1", "imagen-1"):
        assert got[rid][0] is None and got[rid][-1] is True


def test_unpriced_usage_names_the_modality(text_only):
    rows = text_only.sql(
        "SELECT reported_model, field, reason, calls_or_hours, first_line FROM marts.unpriced_usage "
        "WHERE field <> 'model' ORDER BY reported_model, field").fetchall()
    assert rows == [
        ("gemini-2.5-flash", "audio_input_tokens", "no audio input price on the sheet", 2, 2),
        ("gemini-2.5-flash", "cached_audio_input_tokens", "no cached audio input price on the sheet", 1, 3),
        ("gemini-2.5-flash", "image_input_tokens", "no image input price on the sheet", 1, 2),
        ("gpt-4o-audio-preview", "audio_input_tokens", "no audio input price on the sheet", 1, 1),
        ("gpt-4o-audio-preview", "audio_output_tokens", "no audio output price on the sheet", 1, 1),
        ("gpt-image-1", "image_input_tokens", "no image input price on the sheet", 1, 4),
        ("gpt-image-1", "image_output_tokens", "no image output price on the sheet", 1, 4),
    ]


def test_marts_carry_the_split(typed):
    # marts.task_costs: one task per call here; the chat call's audio 0.096 of 0.0985
    row = typed.execute("SELECT cost_usd, audio_cost_usd, image_cost_usd, video_cost_usd FROM marts.task_costs "
                    "WHERE task_id = 'chatcmpl-audio-1'").fetchone()
    assert row == (D("0.0985"), D("0.096"), D(0), D(0))
    # marts.daily_spend (api_usage, openai): audio 0.096; image 0.1665 + 0.16; video 0.8 + 2
    row = typed.execute("SELECT sum(cost_usd), sum(audio_cost_usd), sum(image_cost_usd), sum(video_cost_usd) FROM marts.daily_spend "
                    "WHERE source = 'api_usage' AND provider = 'openai'").fetchone()
    assert row == (D("0.0985") + D("0.1667") + D("0.16") + D("0.8") + D("2"), D("0.096"), D("0.3265"), D("2.8"))
    # marts.cost_per_task carries them for its (day, team, task type, model, serving, tier) groups
    row = typed.execute("SELECT sum(audio_cost_usd), sum(image_cost_usd), sum(video_cost_usd) FROM marts.cost_per_task").fetchone()
    # audio: 0.096 + 0.00051 + 0.00065; image: 0.000387 + 0.1665 + 0.16; video: 2.8
    assert row == (D("0.09716"), D("0.326887"), D("2.8"))


def test_focus_rows_per_charge(typed):
    rows = typed.execute(
        "SELECT ResourceId, split_part(SkuPriceId, '|', -1) AS t, ConsumedQuantity, ConsumedUnit, BilledCost, ListUnitPrice "
        "FROM marts.focus_costs WHERE x_Source = 'api_usage' ORDER BY ALL").fetchall()
    got = {(r[0], r[1]): r[2:] for r in rows}
    # gpt-4o-audio-preview: text input 200 (0.0005 -> 2.50 per 1M), text output 200 (0.002 -> 10.00),
    # audio 1000 + 700 = 1700 tokens for 0.096 (0.096 / 0.0017 = 56.470588 USD per 1M, the blended rate)
    assert got[("gpt-4o-audio-preview", "input")] == (D(200), "Tokens", D("0.0005"), D("2.5"))
    assert got[("gpt-4o-audio-preview", "output")] == (D(200), "Tokens", D("0.002"), D("10"))
    assert got[("gpt-4o-audio-preview", "audio")] == (D(1700), "Tokens", D("0.096"), D("56.470588"))
    # dall-e-3: 2 images for 0.16; sora-2: 8 seconds for 0.80 (per-unit prices as ListUnitPrice)
    assert got[("dall-e-3", "image")] == (D(2), "Images", D("0.16"), D("0.08"))
    assert got[("sora-2", "video")] == (D(8), "Seconds", D("0.8"), D("0.1"))
    # core.daily_call_totals: the text buckets at the text rates + fees + the modality parts = cost_usd, exactly
    exact = typed.execute("""SELECT sum(cost_usd), sum(uncached_input_cost_usd + cached_input_cost_usd + cache_write_5m_cost_usd
                                 + cache_write_1h_cost_usd + thinking_cost_usd + output_cost_usd + request_fees_usd
                                 + audio_cost_usd + image_cost_usd + video_cost_usd)
                             FROM core.daily_call_totals WHERE serving = 'api' AND priced""").fetchone()
    # 0.0985 + 0.001207 + 0.001075 + 0.1667 + 0.16 + 0.8 + 2 = 3.227482
    assert exact[0] == exact[1] and exact[0] == D("3.227482")
    # every API call's cost is in the FOCUS rows (to the micro-dollar per row)
    total = typed.execute("SELECT sum(BilledCost) FROM marts.focus_costs WHERE x_Source = 'api_usage'").fetchone()[0]
    calls = typed.execute("SELECT sum(cost_usd) FROM core.call_costs").fetchone()[0]
    assert abs(total - calls) <= D("0.000001") * len(rows)
