"""Concurrency that fits a GPU set-up, worked by hand, and its properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.gpus import GPUS, gpu_spec
from models.sizing import Deployment, size
from models.spec import CallProfile, ModelSpec

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "real" / "model_configs"
NAMES = ["deepseek-v3", "gpt-oss-120b", "llama-3.1-70b-instruct", "qwen3-32b"]
SPECS = {n: ModelSpec.from_config(json.loads((CONFIGS / f"{n}_config.json").read_text()), name=n) for n in NAMES}
REASONING = CallProfile(prompt_tokens=8_000, thinking_tokens=15_000, output_tokens=500)


def test_llama_70b_fp8_on_one_h200() -> None:
    s = size(SPECS["llama-3.1-70b-instruct"], Deployment(gpu_spec("H200"), 1, "fp8"), REASONING)
    assert s.kv_dtype == "fp8" and s.kv_dtype_bytes == 1
    assert s.kv_bytes_per_token == 163_840
    # 23,500 tokens × 163,840 B = 3,850,240,000 B
    assert s.kv_gb_per_call == pytest.approx(3.85024)
    # 70,553,706,496 × 1 B × 1.03 = 72.670 GB
    assert s.weights_gb == pytest.approx(72.67031769)
    # 141 × 0.9 = 126.9; 126.9 − 72.670 − 2 = 52.2297 GB; / 3.85024 = 13.57 -> 13
    assert s.usable_gb == pytest.approx(126.9)
    assert s.kv_budget_gb == pytest.approx(52.22968231)
    assert s.max_concurrent_calls == 13
    assert s.fits and s.weights_fit
    assert "163,840" in s.working["kv_bytes_per_token"]
    assert s.working["max_concurrent_calls"].endswith("= 13")


def test_tensor_parallel_pools_memory() -> None:
    # 4 × H100: 320 GB × 0.9 = 288; − 72.670 − 8 = 207.33 GB; / 3.85024 = 53.8 -> 53
    s = size(SPECS["llama-3.1-70b-instruct"], Deployment(gpu_spec("H100"), 4, "fp8"), REASONING)
    assert s.memory_gb_total == 320
    assert s.kv_replication == 1
    assert s.max_concurrent_calls == 53


def test_gqa_kv_duplicated_when_ranks_exceed_kv_heads() -> None:
    # 16 ranks, 8 KV heads: each head stored twice
    s = size(SPECS["llama-3.1-70b-instruct"], Deployment(gpu_spec("H100"), 16, "fp8"), REASONING)
    assert s.kv_replication == 2
    assert s.kv_gb_per_call_allocated == pytest.approx(2 * 3.85024)


def test_mla_latent_replicated_on_every_rank() -> None:
    ds = SPECS["deepseek-v3"]
    profile = CallProfile(1_024, 0, 2_048)
    tp = size(ds, Deployment(gpu_spec("H200"), 8, "fp8", kv_dtype="bf16"), profile)
    # 3,072 × 70,272 B = 215,875,584 B per call, × 8 ranks = 1.727 GB
    assert tp.kv_replication == 8
    assert tp.kv_gb_per_call_allocated == pytest.approx(8 * 0.215875584)
    # 8 × 141 × 0.9 = 1,015.2; − 691.157 (671.03 B × 1.03) − 16 = 308.04; / 1.727 = 178.4
    assert tp.weights_gb == pytest.approx(691.1572, abs=1e-3)
    assert tp.max_concurrent_calls == 178
    dp = size(ds, Deployment(gpu_spec("H200"), 8, "fp8", kv_dtype="bf16", attention_dp=True), profile)
    # attention DP: 7 extra copies of 11.41 B attention weights; KV not replicated
    # (671.03 + 7 × 11.4135) B × 1.03 = 773.45 GB; 1,015.2 − 773.45 − 16 = 225.75; / 0.21588 = 1,045
    assert dp.kv_replication == 1
    assert dp.weights_gb == pytest.approx(773.4489, abs=1e-3)
    assert dp.max_concurrent_calls == 1_045


def test_int4_keeps_bf16_kv_and_kv_dtype_override() -> None:
    llama = SPECS["llama-3.1-70b-instruct"]
    s = size(llama, Deployment(gpu_spec("H100"), 1, "int4"), REASONING)
    assert s.kv_dtype == "bf16" and s.kv_bytes_per_token == 327_680
    # 70.5537 B × 0.5 × 1.03 = 36.335 GB
    assert s.weights_gb == pytest.approx(36.3352, abs=1e-3)
    s8 = size(llama, Deployment(gpu_spec("H100"), 1, "int4", kv_dtype="fp8"), REASONING)
    assert s8.kv_bytes_per_token == 163_840


def test_does_not_fit() -> None:
    # 70B at bf16 (145.3 GB) on one H100 (72 GB usable)
    s = size(SPECS["llama-3.1-70b-instruct"], Deployment(gpu_spec("H100"), 1, "bf16"), REASONING)
    assert not s.fits and not s.weights_fit and s.max_concurrent_calls == 0
    assert s.kv_budget_gb < 0


def test_weights_fit_but_no_whole_call() -> None:
    # Qwen3-32B at bf16 on one H100: 65.5e9 × 1.03 = 67.49 GB; 72 − 67.49 − 2 = 2.51 GB
    # but one 23,500-token call needs 23,500 × 262,144 = 6.16 GB
    s = size(SPECS["qwen3-32b"], Deployment(gpu_spec("H100"), 1, "bf16"), REASONING)
    assert s.weights_fit and not s.fits and s.max_concurrent_calls == 0


def test_catalog_only_model() -> None:
    m = ModelSpec.from_catalog(
        name="x", params_total_b=70, params_active_b=None, kv_bytes_per_token_bf16=327_680
    )
    s = size(m, Deployment(gpu_spec("H200"), 1, "fp8"), REASONING)
    assert s.kv_bytes_per_token == 163_840
    # 70e9 × 1.03 = 72.1 GB
    assert s.weights_gb == pytest.approx(72.1)
    assert "catalog" in s.working["kv_bytes_per_token"]


def test_weights_gb_fp8_override_scales_by_precision() -> None:
    cfg = json.loads((CONFIGS / "llama-3.1-70b-instruct_config.json").read_text())
    m = ModelSpec.from_config(cfg, weights_gb_fp8=75.0)
    assert size(m, Deployment(gpu_spec("H200"), 1, "fp8"), REASONING).weights_gb == 75.0
    assert size(m, Deployment(gpu_spec("H200"), 2, "bf16"), REASONING).weights_gb == 150.0


def test_params_override_keeps_moe_active_share() -> None:
    cfg = json.loads((CONFIGS / "deepseek-v3_config.json").read_text())
    m = ModelSpec.from_config(cfg, params_total_b=700)
    est = SPECS["deepseek-v3"]
    assert m.params_total == 700e9
    assert m.params_active == pytest.approx(700e9 * est.params_active / est.params_total)
    dense = ModelSpec.from_config(
        json.loads((CONFIGS / "qwen3-32b_config.json").read_text()), params_total_b=33
    )
    assert dense.params_active == 33e9


def test_deployment_validation() -> None:
    with pytest.raises(ValueError):
        Deployment(gpu_spec("H100"), 0, "fp8")
    with pytest.raises(ValueError):
        Deployment(gpu_spec("H100"), 1, "fp4")
    with pytest.raises(ValueError):
        Deployment(gpu_spec("H100"), 1, "fp8", kv_dtype="int2")
    with pytest.raises(ValueError):
        CallProfile(-1, 0, 0)


# ----------------------------------------------------------------- properties
@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    gpu=st.sampled_from(sorted(GPUS)),
    gpus=st.integers(1, 32),
    extra=st.integers(1, 32),
    precision=st.sampled_from(["bf16", "fp8", "int4"]),
    attention_dp=st.booleans(),
    prompt=st.integers(0, 100_000),
    thinking=st.integers(0, 50_000),
    output=st.integers(1, 10_000),
)
def test_more_gpus_never_lower_concurrency(
    name: str, gpu: str, gpus: int, extra: int, precision: str, attention_dp: bool,
    prompt: int, thinking: int, output: int,
) -> None:
    model, profile = SPECS[name], CallProfile(prompt, thinking, output)
    small = size(model, Deployment(GPUS[gpu], gpus, precision, attention_dp=attention_dp), profile)
    big = size(model, Deployment(GPUS[gpu], gpus + extra, precision, attention_dp=attention_dp), profile)
    assert big.max_concurrent_calls >= small.max_concurrent_calls
    assert big.fits or not small.fits


@given(name=st.sampled_from(NAMES), tokens=st.integers(1, 200_000))
def test_fp8_kv_per_call_is_half_of_bf16(name: str, tokens: int) -> None:
    model, profile = SPECS[name], CallProfile(tokens, 0, 0)
    bf16 = size(model, Deployment(GPUS["H200"], 8, "bf16"), profile)
    fp8 = size(model, Deployment(GPUS["H200"], 8, "fp8"), profile)
    assert fp8.kv_gb_per_call * 2 == pytest.approx(bf16.kv_gb_per_call, rel=1e-12)
    assert fp8.kv_bytes_per_token * 2 == bf16.kv_bytes_per_token
