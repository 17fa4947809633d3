"""Calls billed in more than text tokens (issue 44): a voice-agent team and an image step, kept apart
from synthetic/demo.py with their own seed, so that the demo's other draws do not move.

* Team ``voice`` (task type ``voice_agent``): each conversation is a few OpenAI Realtime turns on
  ``gpt-realtime`` -- the ``response.done`` response object (``object: realtime.response``) whose
  ``usage`` splits ``input_token_details`` into text / audio tokens and their cached part
  (``cached_tokens_details``), and ``output_token_details`` into text / audio -- then one
  ``gpt-4o-audio-preview`` Chat Completions call that hears the recording and writes the call notes
  (``prompt_tokens_details.audio_tokens``, a text answer).
* Team ``growth``, task type ``creative_image``: OpenAI Images API responses of ``gpt-image-1``
  (``data[]`` one per image, ``size``, ``quality``, ``usage.input_tokens_details.text_tokens`` and
  the image output tokens OpenAI documents per size and quality: 1024x1024 medium 1,056 and high
  4,160; 1024x1536 medium 1,584 and high 6,240).

The calls fall on the demo's last ``min(14, days)`` days, as the agent traces do. gpt-realtime and
gpt-image-1 are on the 2026-07-24 LiteLLM sheet only (with audio, cached audio and image token
prices); gpt-4o-audio-preview on both. Every column is drawn with numpy and written with polars.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl

DAYS = 14
CONVERSATIONS_PER_DAY = 30
IMAGE_TASKS_PER_DAY = 24
# gpt-image-1 output tokens per image (OpenAI image generation guide, "Cost and latency")
IMAGE_TOKENS = {("1024x1024", "medium"): 1056, ("1024x1024", "high"): 4160,
                ("1024x1536", "medium"): 1584, ("1024x1536", "high"): 6240}


def _ts(day: np.ndarray, seconds: np.ndarray, first: dt.date) -> pl.Series:
    start = dt.datetime.combine(first, dt.time(), dt.UTC).timestamp()
    return pl.Series((start + day * 86400.0 + seconds) * 1000).cast(pl.Int64)


def _iso(col: str) -> pl.Expr:
    return pl.from_epoch(pl.col(col), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")


def voice_calls(first: dt.date, days: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(realtime turns, call-notes chat calls) of the voice team."""
    rng = np.random.default_rng(seed + 4400)
    n_conv = CONVERSATIONS_PER_DAY * days
    conv_day = np.repeat(np.arange(days), CONVERSATIONS_PER_DAY)
    start_s = rng.uniform(8 * 3600, 20 * 3600, n_conv)
    turns = rng.integers(3, 9, n_conv)
    n = int(turns.sum())
    conv = np.repeat(np.arange(n_conv), turns)
    turn = np.arange(n) - np.repeat(np.cumsum(turns) - turns, turns)
    # each turn: the caller's new audio, the instructions (text, cached after the first turn) and the
    # conversation so far (audio, cached after the first turn)
    new_audio = np.clip(rng.lognormal(np.log(450), 0.5, n), 60, 4000).astype(np.int64)
    hist_audio = turn * 380
    text_in = 620 + turn * 40
    cached_text = np.where(turn > 0, 512, 0)
    audio_out = np.clip(rng.lognormal(np.log(520), 0.5, n), 40, 4000).astype(np.int64)
    text_out = (audio_out * rng.uniform(0.18, 0.3, n)).astype(np.int64)
    audio_in = new_audio + hist_audio
    turns_df = pl.DataFrame({
        "epoch_ms": _ts(conv_day[conv], start_s[conv] + turn * 21.0, first),
        "id": np.char.add("resp_voice_", np.arange(n).astype(str)),
        "task_id": np.char.add("voice-conv-", conv.astype(str)),
        "text_in": text_in, "audio_in": audio_in, "cached_text": cached_text, "cached_audio": hist_audio,
        "text_out": text_out, "audio_out": audio_out,
        "latency_ms": (300 + audio_out * rng.uniform(0.8, 1.6, n)).round(1),
    })
    notes_audio = np.bincount(conv, weights=new_audio + audio_out, minlength=n_conv).astype(np.int64)
    notes_out = np.clip(rng.lognormal(np.log(260), 0.4, n_conv), 60, 1500).astype(np.int64)
    notes_df = pl.DataFrame({
        "epoch_ms": _ts(conv_day, start_s + turns * 21.0 + 30, first),
        "id": np.char.add("chatcmpl-voice-notes-", np.arange(n_conv).astype(str)),
        "task_id": np.char.add("voice-conv-", np.arange(n_conv).astype(str)),
        "text_in": np.full(n_conv, 180), "audio_in": notes_audio, "text_out": notes_out,
        "latency_ms": (900 + notes_out * rng.uniform(10, 20, n_conv)).round(1),
    })
    return turns_df, notes_df


def image_calls(first: dt.date, days: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 4401)
    n = IMAGE_TASKS_PER_DAY * days
    day = np.repeat(np.arange(days), IMAGE_TASKS_PER_DAY)
    keys = list(IMAGE_TOKENS)
    pick = rng.choice(len(keys), size=n, p=[0.45, 0.2, 0.25, 0.1])
    images = rng.integers(1, 3, n)
    per_image = np.array([IMAGE_TOKENS[k] for k in keys])[pick]
    text_in = rng.integers(25, 160, n)
    return pl.DataFrame({
        "epoch_ms": _ts(day, rng.uniform(9 * 3600, 18 * 3600, n), first),
        "request_id": np.char.add("img-", np.arange(n).astype(str)),
        "size": np.array([k[0] for k in keys])[pick], "quality": np.array([k[1] for k in keys])[pick],
        "images": images, "text_in": text_in, "image_out": per_image * images,
        "latency_ms": (8000 + per_image * images * rng.uniform(4, 9, n)).round(1),
    })


def write(req: Path, last_day: dt.date, seed: int, days: int) -> int:
    """The voice team's and the image step's request files under ``req`` (telemetry/requests) on the
    last ``min(DAYS, days)`` days; returns the number of files written."""
    span = min(DAYS, days)
    first = last_day - dt.timedelta(days=span - 1)
    turns, notes = voice_calls(first, span, seed)
    images = image_calls(first, span, seed)
    common = [_iso("epoch_ms").alias("ts"), pl.lit("openai").alias("provider")]
    realtime = turns.select(
        *common, pl.lit("gpt-realtime").alias("model"), "id", pl.lit("realtime.response").alias("object"),
        pl.lit("completed").alias("status"), "task_id", pl.lit("voice").alias("team"),
        pl.lit("voice_agent").alias("task_type"), "latency_ms",
        pl.struct(
            (pl.col("text_in") + pl.col("audio_in") + pl.col("text_out") + pl.col("audio_out")).alias("total_tokens"),
            (pl.col("text_in") + pl.col("audio_in")).alias("input_tokens"),
            (pl.col("text_out") + pl.col("audio_out")).alias("output_tokens"),
            pl.struct((pl.col("cached_text") + pl.col("cached_audio")).alias("cached_tokens"), pl.col("text_in").alias("text_tokens"),
                      pl.col("audio_in").alias("audio_tokens"), pl.lit(0).alias("image_tokens"),
                      pl.struct(pl.col("cached_text").alias("text_tokens"), pl.col("cached_audio").alias("audio_tokens"),
                                pl.lit(0).alias("image_tokens")).alias("cached_tokens_details")).alias("input_token_details"),
            pl.struct(pl.col("text_out").alias("text_tokens"), pl.col("audio_out").alias("audio_tokens")).alias("output_token_details"),
        ).alias("usage"))
    chat = notes.select(
        *common, pl.lit("gpt-4o-audio-preview").alias("model"), "id", pl.lit("chat.completion").alias("object"),
        "task_id", pl.lit("voice").alias("team"), pl.lit("voice_agent").alias("task_type"), "latency_ms",
        pl.struct(
            (pl.col("text_in") + pl.col("audio_in")).alias("prompt_tokens"), pl.col("text_out").alias("completion_tokens"),
            (pl.col("text_in") + pl.col("audio_in") + pl.col("text_out")).alias("total_tokens"),
            pl.struct(pl.lit(0).alias("cached_tokens"), pl.col("audio_in").alias("audio_tokens"),
                      pl.col("text_in").alias("text_tokens"), pl.lit(0).alias("image_tokens")).alias("prompt_tokens_details"),
            pl.struct(pl.lit(0).alias("reasoning_tokens"), pl.lit(0).alias("audio_tokens"),
                      pl.col("text_out").alias("text_tokens")).alias("completion_tokens_details"),
        ).alias("usage"))
    image = images.select(
        *common, pl.lit("gpt-image-1").alias("model"), "request_id",
        (pl.col("epoch_ms") // 1000).alias("created"),
        pl.struct(pl.lit("iVBORw0KGgo=").alias("b64_json")).repeat_by(pl.col("images")).alias("data"),
        "size", "quality", pl.lit("png").alias("output_format"),
        pl.col("request_id").str.replace("img-", "creative-").alias("task_id"), pl.lit("growth").alias("team"),
        pl.lit("creative_image").alias("task_type"), "latency_ms",
        pl.struct((pl.col("text_in") + pl.col("image_out")).alias("total_tokens"), pl.col("text_in").alias("input_tokens"),
                  pl.col("image_out").alias("output_tokens"),
                  pl.struct(pl.col("text_in").alias("text_tokens"), pl.lit(0).alias("image_tokens")).alias("input_tokens_details"),
                  ).alias("usage"))
    files = 0
    for name, df in (("openai_realtime", realtime), ("openai_audio_chat", chat), ("openai_images", image)):
        for (day,), part in df.with_columns(pl.col("ts").str.slice(0, 10).alias("_day")).sort("ts").group_by(
                ["_day"], maintain_order=True):
            part.drop("_day").write_ndjson(req / f"{name}__{day}.jsonl")
            files += 1
    return files
