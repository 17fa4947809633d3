"""Architecture from real Hugging Face configs, and KV bytes per token worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.architecture import (
    FULL,
    SLIDING,
    Architecture,
    ConfigError,
    expected_experts_touched,
)

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "real" / "model_configs"


def load(name: str) -> Architecture:
    return Architecture.from_config(json.loads((CONFIGS / f"{name}_config.json").read_text()))


@pytest.fixture(scope="module")
def llama() -> Architecture:
    return load("llama-3.1-70b-instruct")


@pytest.fixture(scope="module")
def qwen() -> Architecture:
    return load("qwen3-32b")


@pytest.fixture(scope="module")
def deepseek() -> Architecture:
    return load("deepseek-v3")


@pytest.fixture(scope="module")
def gptoss() -> Architecture:
    return load("gpt-oss-120b")


def test_llama_70b_gqa_bytes_per_token(llama: Architecture) -> None:
    # no head_dim key: 8192 / 64 = 128; 2 × 80 layers × 8 kv heads × 128 × 2 B = 327,680
    assert llama.head_dim == 128
    assert (llama.num_layers, llama.num_kv_heads) == (80, 8)
    assert not llama.is_mla and not llama.is_moe
    assert llama.kv_bytes_per_token(2) == 327_680
    assert llama.kv_bytes_per_token(1) == 163_840
    assert llama.kv_bytes_per_token_long_context(2) == 327_680


def test_qwen3_prefers_head_dim_key(qwen: Architecture) -> None:
    # head_dim 128 although 5120 / 64 = 80; 2 × 64 × 8 × 128 × 2 = 262,144
    assert qwen.head_dim == 128
    assert qwen.kv_bytes_per_token(2) == 262_144
    # use_sliding_window: false and sliding_window: null -> all 64 layers full
    assert qwen.num_sliding_layers == 0 and qwen.num_full_layers == 64


def test_deepseek_v3_mla_ignores_kv_heads(deepseek: Architecture) -> None:
    # 61 × (512 + 64) × 2 = 70,272; num_key_value_heads = 128 would give 2×61×128×56×2
    assert deepseek.is_mla
    assert deepseek.kv_elements_per_layer == 576
    assert deepseek.kv_bytes_per_token(2) == 70_272
    assert deepseek.kv_bytes_per_token(1) == 35_136


def test_deepseek_v3_moe_shape(deepseek: Architecture) -> None:
    # 256 routed experts, 8 per token, 1 shared (2048 wide), layers 3..60 are MoE
    assert deepseek.is_moe
    assert deepseek.n_routed_experts == 256 and deepseek.experts_per_token == 8
    assert deepseek.shared_expert_intermediate_size == 2048
    assert deepseek.moe_intermediate_size == 2048
    assert deepseek.num_moe_layers == 58
    assert deepseek.moe_layers[:3] == (False, False, False) and deepseek.moe_layers[3]
    assert deepseek.quant_method == "fp8" and deepseek.torch_dtype == "bfloat16"


def test_gpt_oss_sliding_layers(gptoss: Architecture) -> None:
    # 36 layers alternating sliding (window 128) / full; 2 × 8 kv × 64 head_dim = 1,024 elems
    assert gptoss.sliding_window == 128
    assert gptoss.num_sliding_layers == 18 and gptoss.num_full_layers == 18
    assert gptoss.layer_types[:2] == (SLIDING, FULL)
    # short context: all 36 layers grow: 36 × 1,024 × 2 = 73,728
    assert gptoss.kv_bytes_per_token(2) == 73_728
    # long context: only the 18 full layers grow: 18 × 1,024 × 2 = 36,864
    assert gptoss.kv_bytes_per_token_long_context(2) == 36_864
    assert gptoss.n_routed_experts == 128 and gptoss.experts_per_token == 4
    assert gptoss.moe_intermediate_size == 2880 and gptoss.num_moe_layers == 36
    assert gptoss.quant_method == "mxfp4"


def test_gpt_oss_kv_for_tokens_caps_sliding_layers(gptoss: Architecture) -> None:
    # 100 tokens (inside the window): 100 × 73,728
    assert gptoss.kv_bytes_for_tokens(100, 2) == 7_372_800
    # 128 tokens: exactly at the window: 128 × 73,728 = 9,437,184
    assert gptoss.kv_bytes_for_tokens(128, 2) == 9_437_184
    # 10,000 tokens: (18 × 10,000 + 18 × 128) × 1,024 × 2 = 373,358,592
    assert gptoss.kv_bytes_for_tokens(10_000, 2) == 373_358_592
    # the marginal token past the window costs the long-context rate
    assert (
        gptoss.kv_bytes_for_tokens(10_001, 2) - gptoss.kv_bytes_for_tokens(10_000, 2) == 36_864
    )


def test_llama_kv_for_10k_thinking_tokens_at_fp8(llama: Architecture) -> None:
    # 163,840 × 10,000 = 1,638,400,000 B = 1.64 GB (the article claims 24 GB)
    assert llama.kv_bytes_for_tokens(10_000, 1) == 1_638_400_000


def test_attention_macs(llama: Architecture, deepseek: Architecture) -> None:
    # GQA: 64 heads × (128 + 128) = 16,384
    assert llama.attention_macs_per_context_token() == 16_384
    # MLA decode (absorbed): 128 × (576 + 512) = 139,264; prefill: 128 × (128+64+128)
    assert deepseek.attention_macs_per_context_token(decode=True) == 139_264
    assert deepseek.attention_macs_per_context_token(decode=False) == 40_960
    # Llama at L = 10,000: 2 × 16,384 × 80 × 10,000 = 26,214,400,000
    assert llama.attention_flops_per_token(10_000) == 26_214_400_000
    # prefill 8,000: 2 × 16,384 × 80 × 8,000 × 8,001 / 2
    assert llama.prefill_attention_flops(8_000) == 2 * 16_384 * 80 * 8_000 * 8_001 / 2


def test_gpt_oss_prefill_attention_caps_window(gptoss: Architecture) -> None:
    # heads 64 × 2 × 64 = 8,192 macs; P = 200, W = 128:
    # full pairs 200·201/2 = 20,100; sliding 128·129/2 + 72·128 = 8,256 + 9,216 = 17,472
    expected = 2 * 8_192 * (18 * 20_100 + 18 * 17_472)
    assert gptoss.prefill_attention_flops(200) == expected


def test_missing_fields_raise() -> None:
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        Architecture.from_config({"hidden_size": 10})


def test_layer_types_length_mismatch_raises() -> None:
    cfg = minimal_cfg(layer_types=["full_attention"] * 3, num_hidden_layers=4)
    with pytest.raises(ConfigError, match="layer_types"):
        Architecture.from_config(cfg)


def minimal_cfg(**over: object) -> dict:
    cfg: dict = {
        "num_hidden_layers": 4,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        "intermediate_size": 512,
    }
    cfg.update(over)
    return cfg


def test_sliding_window_variants() -> None:
    # Mistral v0.1: sliding_window with no other hint -> every layer slides
    assert Architecture.from_config(minimal_cfg(sliding_window=64)).num_sliding_layers == 4
    # Gemma 3 style pattern 2: layers 1 and 3 (0-based) are full
    pat = Architecture.from_config(minimal_cfg(sliding_window=64, sliding_window_pattern=2))
    assert pat.layer_types == (SLIDING, FULL, SLIDING, FULL)
    # Qwen2 style: use_sliding_window true from max_window_layers = 3 on
    qw = Architecture.from_config(
        minimal_cfg(sliding_window=64, use_sliding_window=True, max_window_layers=3)
    )
    assert qw.layer_types == (FULL, FULL, FULL, SLIDING)
    # Gemma 2: even layers slide
    g2 = Architecture.from_config(minimal_cfg(sliding_window=64, model_type="gemma2"))
    assert g2.layer_types == (SLIDING, FULL, SLIDING, FULL)


def test_text_config_is_unwrapped() -> None:
    arch = Architecture.from_config({"text_config": minimal_cfg(), "torch_dtype": "bfloat16"})
    assert arch.num_layers == 4 and arch.torch_dtype == "bfloat16"
    # 4 layers × 2 (K, V) × 2 kv heads × 64 head_dim × 2 B = 2,048
    assert arch.kv_bytes_per_token(2) == 2_048


def test_expected_experts_touched() -> None:
    assert expected_experts_touched(256, 8, 1) == pytest.approx(8)
    # 256 × (1 − (248/256)^128) = 251.60
    assert expected_experts_touched(256, 8, 128) == pytest.approx(251.601, abs=1e-3)
    assert expected_experts_touched(0, 0, 10) == 0.0


# ----------------------------------------------------------------- properties
@given(
    layers=st.integers(1, 128),
    kv_heads=st.integers(1, 16),
    head_dim=st.sampled_from([32, 64, 128, 256]),
    n=st.integers(0, 200_000),
    m=st.integers(0, 200_000),
)
def test_kv_linear_in_tokens_without_window(
    layers: int, kv_heads: int, head_dim: int, n: int, m: int
) -> None:
    arch = Architecture.from_config(
        minimal_cfg(num_hidden_layers=layers, num_key_value_heads=kv_heads, num_attention_heads=kv_heads, head_dim=head_dim)
    )
    # additive (hence linear): KV(n + m) = KV(n) + KV(m), and KV(n) = n × per-token
    assert arch.kv_bytes_for_tokens(n + m, 2) == arch.kv_bytes_for_tokens(n, 2) + arch.kv_bytes_for_tokens(m, 2)
    assert arch.kv_bytes_for_tokens(n, 2) == n * arch.kv_bytes_per_token(2)


@given(n=st.integers(0, 128), m=st.integers(0, 128))
def test_gpt_oss_kv_linear_below_window(n: int, m: int) -> None:
    arch = load("gpt-oss-120b")
    if n + m <= 128:
        assert arch.kv_bytes_for_tokens(n + m, 2) == arch.kv_bytes_for_tokens(n, 2) + arch.kv_bytes_for_tokens(m, 2)
    assert arch.kv_bytes_for_tokens(n, 2) == n * 73_728


@given(n=st.integers(0, 1_000_000), name=st.sampled_from(["deepseek-v3", "gpt-oss-120b", "llama-3.1-70b-instruct", "qwen3-32b"]))
def test_fp8_kv_is_half_of_bf16(n: int, name: str) -> None:
    arch = load(name)
    assert arch.kv_bytes_for_tokens(n, 1) * 2 == arch.kv_bytes_for_tokens(n, 2)
    assert arch.kv_bytes_per_token(1) * 2 == arch.kv_bytes_per_token(2)
