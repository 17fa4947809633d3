"""Decode/prefill roofline and calls per minute, worked by hand, and their properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.gpus import GPUS, gpu_spec
from models.sizing import Deployment
from models.spec import CallProfile, ModelSpec
from models.throughput import (
    DEFAULT_EFFICIENCY_DENSE,
    DEFAULT_EFFICIENCY_MOE,
    decode_step,
    default_efficiency,
    estimate_throughput,
    prefill_seconds,
)

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "real" / "model_configs"
NAMES = ["deepseek-v3", "gpt-oss-120b", "llama-3.1-70b-instruct", "qwen3-32b"]
SPECS = {n: ModelSpec.from_config(json.loads((CONFIGS / f"{n}_config.json").read_text())) for n in NAMES}
LLAMA = SPECS["llama-3.1-70b-instruct"]
ACTIVE = 69_503_033_344  # Llama-3.1-70B parameters minus the input embedding
H200_FP8 = Deployment(gpu_spec("H200"), 1, "fp8")


def test_single_call_decode_is_bandwidth_bound() -> None:
    step = decode_step(LLAMA, H200_FP8, batch=1, context_tokens=1_000, efficiency=1.0)
    # weights 69.503e9 B + KV 1,000 × 163,840 B, over 4.8e12 B/s
    expected = (ACTIVE + 163_840_000) / 4.8e12
    assert step.weight_bytes == ACTIVE
    assert step.kv_bytes == 163_840_000
    assert step.memory_seconds == pytest.approx(expected)
    assert step.seconds == pytest.approx(0.014514, abs=1e-6)
    assert step.bound == "memory"
    assert step.tokens_per_second == pytest.approx(68.9, abs=0.1)


def test_large_batch_short_context_is_compute_bound() -> None:
    # B = 2,000, L = 100: flops 2,000 × (2 × 69.5e9 + 2 × 16,384 × 80 × 100) = 2.785e14
    # -> 0.1407 s at 1,979 TFLOP/s; bytes 69.5e9 + 2,000 × 100 × 163,840 = 102.3e9 -> 0.0213 s
    step = decode_step(LLAMA, H200_FP8, batch=2_000, context_tokens=100, efficiency=1.0)
    assert step.flops == pytest.approx(2_000 * (2 * ACTIVE + 2 * 16_384 * 80 * 100))
    assert step.compute_seconds == pytest.approx(step.flops / 1_979e12)
    assert step.bound == "compute"


def test_efficiency_divides_time() -> None:
    full = decode_step(LLAMA, H200_FP8, 8, 2_000, efficiency=1.0)
    half = decode_step(LLAMA, H200_FP8, 8, 2_000, efficiency=0.5)
    assert half.seconds == pytest.approx(2 * full.seconds)


def test_prefill_at_compute_roofline() -> None:
    # (2 × 69.503e9 × 8,000 + 2 × 16,384 × 80 × 8,000 × 8,001 / 2) / 1,979e12 = 0.6043 s
    flops = 2 * ACTIVE * 8_000 + 2 * 16_384 * 80 * 8_000 * 8_001 / 2
    assert prefill_seconds(LLAMA, H200_FP8, 8_000, efficiency=1.0) == pytest.approx(flops / 1_979e12)
    assert prefill_seconds(LLAMA, H200_FP8, 8_000, efficiency=1.0) == pytest.approx(0.6043, abs=1e-4)


def test_moe_weights_read_grow_with_batch() -> None:
    ds = SPECS["deepseek-v3"]
    assert ds.params_read_per_step(1) == ds.params_active
    # 8 experts of 256 per token; a batch of 1,024 touches all but ~0.0 of them
    assert ds.params_read_per_step(1_024) == pytest.approx(ds.params_total, rel=1e-3)
    assert ds.params_active < ds.params_read_per_step(16) < ds.params_read_per_step(64)


def test_calls_per_minute_worked() -> None:
    # Llama-3.1-70B fp8, one H200, 8k + 15k + 500, 13 calls in flight (max that fit), eff 0.6
    t = estimate_throughput(LLAMA, H200_FP8, CallProfile(8_000, 15_000, 500), efficiency=0.6)
    assert t.batch == 13
    context = 8_000 + 15_500 // 2  # 15,750
    mem = (ACTIVE + 13 * context * 163_840) / 4.8e12  # 21.47 ms
    step = mem / 0.6
    prefill = (2 * ACTIVE * 8_000 + 2 * 16_384 * 80 * 8_000 * 8_001 / 2) / (1_979e12 * 0.6)
    cycle = 15_500 * step + 13 * prefill  # 554.6 s + 13.1 s
    assert t.decode is not None and t.decode.bound == "memory"
    assert t.cycle_seconds == pytest.approx(cycle)
    assert t.calls_per_minute == pytest.approx(60 * 13 / cycle)
    assert t.calls_per_minute == pytest.approx(1.374, abs=1e-3)
    assert t.output_tokens_per_second == pytest.approx(13 * 15_500 / cycle)
    assert "calls/min" in t.working


def test_no_fit_means_zero_throughput() -> None:
    t = estimate_throughput(LLAMA, Deployment(gpu_spec("H100"), 1, "bf16"), CallProfile(1_000, 0, 100))
    assert t.batch == 0 and t.calls_per_minute == 0.0 and t.decode is None


def test_default_efficiency() -> None:
    assert default_efficiency(LLAMA) == DEFAULT_EFFICIENCY_DENSE == 0.6
    assert default_efficiency(SPECS["deepseek-v3"]) == DEFAULT_EFFICIENCY_MOE == 0.3
    catalog_moe = ModelSpec.from_catalog(name="m", params_total_b=1200, params_active_b=60, kv_bytes_per_token_bf16=70_272)
    assert default_efficiency(catalog_moe) == 0.3


def test_decode_rejects_empty_batch() -> None:
    with pytest.raises(ValueError):
        decode_step(LLAMA, H200_FP8, 0, 10)


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    gpu=st.sampled_from(["A100-80GB", "H100", "H200", "B200", "B300", "L40S", "MI300X"]),
    gpus=st.integers(1, 16),
    extra=st.integers(1, 16),
    prompt=st.integers(1, 32_000),
    thinking=st.integers(0, 16_000),
    output=st.integers(1, 4_000),
)
def test_more_gpus_never_lower_calls_per_minute(
    name: str, gpu: str, gpus: int, extra: int, prompt: int, thinking: int, output: int
) -> None:
    model, profile = SPECS[name], CallProfile(prompt, thinking, output)
    small = estimate_throughput(model, Deployment(GPUS[gpu], gpus, "fp8"), profile)
    big = estimate_throughput(model, Deployment(GPUS[gpu], gpus + extra, "fp8"), profile)
    assert big.calls_per_minute >= small.calls_per_minute * (1 - 1e-9)
