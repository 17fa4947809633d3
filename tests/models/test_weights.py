"""Parameter estimates against published counts, and weights GB by precision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.architecture import Architecture
from models.weights import attention_params_per_layer, bytes_per_param, estimate_params, weights_gb

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "real" / "model_configs"

# Published parameter counts (model cards): DeepSeek-V3 671 B total / 37 B activated
# (excluding the 14 B MTP module); gpt-oss-120b 116.83 B / 5.13 B (OpenAI model card);
# Llama-3.1-70B 70.6 B; Qwen3-32B 32.8 B.
PUBLISHED = {
    "deepseek-v3": (671e9, 37e9),
    "gpt-oss-120b": (116.83e9, 5.13e9),
    "llama-3.1-70b-instruct": (70.6e9, None),
    "qwen3-32b": (32.8e9, None),
}
# Largest |error| measured: DeepSeek-V3 active, −1.0 %; the bound leaves a little room.
ERROR_BOUND = 0.015


def load(name: str) -> Architecture:
    return Architecture.from_config(json.loads((CONFIGS / f"{name}_config.json").read_text()))


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_param_estimate_within_measured_bound(name: str) -> None:
    est = estimate_params(load(name))
    total, active = PUBLISHED[name]
    assert abs(est.total / total - 1) < ERROR_BOUND
    if active is not None:
        assert abs(est.active / active - 1) < ERROR_BOUND


def test_llama_70b_by_hand() -> None:
    est = estimate_params(load("llama-3.1-70b-instruct"))
    assert est.embedding == 128_256 * 8_192 == 1_050_673_152
    assert est.lm_head == est.embedding
    # per layer: 8192·8192 + 2·8192·1024 + 8192·8192 = 150,994,944
    assert est.attention == 80 * 150_994_944
    assert est.dense_mlp == 80 * 3 * 8_192 * 28_672
    assert est.norms == 80 * 2 * 8_192 + 8_192
    assert est.total == 70_553_706_496
    # active excludes the input embedding lookup
    assert est.active == est.total - est.embedding


def test_deepseek_mla_attention_by_hand() -> None:
    arch = load("deepseek-v3")
    # q: 7168·1536 + 1536 + 1536·128·192; kv: 7168·576 + 512 + 512·128·256; o: 128·128·7168
    expected = (
        7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    )
    assert attention_params_per_layer(arch) == expected == 187_107_328


def test_deepseek_moe_counts() -> None:
    est = estimate_params(load("deepseek-v3"))
    per_expert = 3 * 7168 * 2048  # 44,040,192
    assert est.params_per_routed_expert == per_expert
    assert est.routed_experts == 58 * 256 * per_expert
    assert est.routed_experts_active == 58 * 8 * per_expert
    # shared expert (3·7168·2048) + router (7168·256) per MoE layer
    assert est.shared_experts_and_routers == 58 * (per_expert + 7168 * 256)
    assert est.dense_mlp == 3 * 3 * 7168 * 18432
    assert est.always_read == est.active - est.routed_experts_active


def test_tied_embeddings_count_once() -> None:
    cfg = {
        "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 4, "vocab_size": 100, "intermediate_size": 128,
        "tie_word_embeddings": True,
    }
    est = estimate_params(Architecture.from_config(cfg))
    assert est.lm_head == 0 and est.embedding == 6_400
    # tied: the table is the output head, so it is active
    assert est.active == est.total


def test_weights_gb_by_precision() -> None:
    # 70e9 params: bf16 2 B, fp8 1 B, int4 0.5 B, × 1.03 overhead
    assert weights_gb(70e9, "bf16") == pytest.approx(144.2)
    assert weights_gb(70e9, "fp8") == pytest.approx(72.1)
    assert weights_gb(70e9, "int4") == pytest.approx(36.05)
    assert weights_gb(70e9, "fp8", overhead_fraction=0) == pytest.approx(70.0)
    assert bytes_per_param("FP8") == 1.0
    with pytest.raises(ValueError, match="unknown precision"):
        bytes_per_param("fp3")
