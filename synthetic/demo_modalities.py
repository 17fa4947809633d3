"""Calls billed in more than text tokens (issue 44): a voice-agent team and an image step, kept apart
from synthetic/demo.py with their own seed, so that the demo's other draws do not move.

* Team ``voice`` (task type ``voice_agent``): each conversation is a few OpenAI Chat Completions turns
  on ``gpt-4o-audio-preview`` with audio in and out (``modalities: ["text", "audio"]``): the caller's
  audio and the conversation so far in ``usage.prompt_tokens_details.audio_tokens``, the spoken
  answer and its transcript in ``completion_tokens_details.audio_tokens`` / ``text_tokens``.
* Team ``growth``, task type ``creative_image``: Vertex AI Imagen 3 (``imagen-3.0-generate-002``)
  ``predict`` responses, ``predictions[]`` one per generated image (``bytesBase64Encoded``,
  ``mimeType``), priced per image.

Both models are on both LiteLLM sheets of the demo (gpt-4o-audio-preview with audio prices:
$100 / $200 per 1M audio tokens in and out on 2025-05-19, $40 / $80 on 2026-07-24; Imagen 3 $0.04
per image), and the traffic runs on every day of the demo, so it is part of every series' baseline.
The Realtime and Images API shapes are read too (tests/fixtures/real/payloads_modalities/).
Every column is drawn with numpy and written with polars.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl

CONVERSATIONS_PER_DAY = 16
IMAGE_TASKS_PER_DAY = 10


def _ts(day: np.ndarray, seconds: np.ndarray, first: dt.date) -> pl.Series:
    start = dt.datetime.combine(first, dt.time(), dt.UTC).timestamp()
    return pl.Series((start + day * 86400.0 + seconds) * 1000).cast(pl.Int64)


def _iso(col: str) -> pl.Expr:
    return pl.from_epoch(pl.col(col), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")


def voice_calls(first: dt.date, days: int, seed: int) -> pl.DataFrame:
    """The voice team's turns: every turn sends the caller's new audio and the conversation so far."""
    rng = np.random.default_rng(seed + 4400)
    n_conv = CONVERSATIONS_PER_DAY * days
    conv_day = np.repeat(np.arange(days), CONVERSATIONS_PER_DAY)
    start_s = rng.uniform(8 * 3600, 20 * 3600, n_conv)
    turns = rng.integers(2, 7, n_conv)
    n = int(turns.sum())
    conv = np.repeat(np.arange(n_conv), turns)
    turn = np.arange(n) - np.repeat(np.cumsum(turns) - turns, turns)
    new_audio = np.clip(rng.lognormal(np.log(450), 0.5, n), 60, 4000).astype(np.int64)
    audio_out = np.clip(rng.lognormal(np.log(380), 0.5, n), 40, 3000).astype(np.int64)
    text_out = (audio_out * rng.uniform(0.18, 0.3, n)).astype(np.int64)
    # the conversation so far: the earlier turns' audio in and out (a cumulative sum within the conversation)
    spoken = new_audio + audio_out
    before = np.cumsum(spoken) - spoken
    history = before - np.repeat(before[np.cumsum(turns) - turns], turns)
    return pl.DataFrame({
        "epoch_ms": _ts(conv_day[conv], start_s[conv] + turn * 25.0, first),
        "id": np.char.add("chatcmpl-voice-", np.arange(n).astype(str)),
        "task_id": np.char.add("voice-conv-", conv.astype(str)),
        "text_in": 420 + turn * 30, "audio_in": new_audio + history, "text_out": text_out, "audio_out": audio_out,
        "latency_ms": (600 + audio_out * rng.uniform(1.0, 2.0, n)).round(1),
    })


def image_calls(first: dt.date, days: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 4401)
    n = IMAGE_TASKS_PER_DAY * days
    day = np.repeat(np.arange(days), IMAGE_TASKS_PER_DAY)
    images = rng.integers(1, 5, n)
    return pl.DataFrame({
        "epoch_ms": _ts(day, rng.uniform(9 * 3600, 18 * 3600, n), first),
        "request_id": np.char.add("imagen-", np.arange(n).astype(str)),
        "images": images,
        "latency_ms": (4000 + images * rng.uniform(1500, 3000, n)).round(1),
    })


def write(req: Path, first_day: dt.date, seed: int, days: int) -> int:
    """The voice team's and the image step's request files under ``req`` (telemetry/requests), one per
    shape and day of the demo; returns the number of files written."""
    voice = voice_calls(first_day, days, seed)
    images = image_calls(first_day, days, seed)
    chat = voice.select(
        _iso("epoch_ms").alias("ts"), pl.lit("openai").alias("provider"), pl.lit("gpt-4o-audio-preview").alias("model"),
        "id", pl.lit("chat.completion").alias("object"), "task_id", pl.lit("voice").alias("team"),
        pl.lit("voice_agent").alias("task_type"), "latency_ms",
        pl.struct(
            (pl.col("text_in") + pl.col("audio_in")).alias("prompt_tokens"),
            (pl.col("text_out") + pl.col("audio_out")).alias("completion_tokens"),
            (pl.col("text_in") + pl.col("audio_in") + pl.col("text_out") + pl.col("audio_out")).alias("total_tokens"),
            pl.struct(pl.lit(0).alias("cached_tokens"), pl.col("audio_in").alias("audio_tokens"),
                      pl.col("text_in").alias("text_tokens"), pl.lit(0).alias("image_tokens")).alias("prompt_tokens_details"),
            pl.struct(pl.lit(0).alias("reasoning_tokens"), pl.col("audio_out").alias("audio_tokens"),
                      pl.col("text_out").alias("text_tokens"), pl.lit(0).alias("accepted_prediction_tokens"),
                      pl.lit(0).alias("rejected_prediction_tokens")).alias("completion_tokens_details"),
        ).alias("usage"))
    imagen = images.select(
        _iso("epoch_ms").alias("ts"), pl.lit("vertex_ai").alias("provider"), pl.lit("imagen-3.0-generate-002").alias("model"),
        "request_id", pl.col("request_id").str.replace("imagen-", "creative-").alias("task_id"),
        pl.lit("growth").alias("team"), pl.lit("creative_image").alias("task_type"), "latency_ms",
        pl.struct(pl.lit("iVBORw0KGgo=").alias("bytesBase64Encoded"), pl.lit("image/png").alias("mimeType"))
        .repeat_by(pl.col("images")).alias("predictions"))
    files = 0
    for name, df in (("openai_audio_chat", chat), ("vertex_imagen", imagen)):
        for (day,), part in df.with_columns(pl.col("ts").str.slice(0, 10).alias("_day")).sort("ts").group_by(
                ["_day"], maintain_order=True):
            part.drop("_day").write_ndjson(req / f"{name}__{day}.jsonl")
            files += 1
    return files
