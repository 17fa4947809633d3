"""Parameter counts estimated from a config, and the weights' footprint by precision.

Formula (``h`` hidden, ``L`` layers, ``V`` vocab, ``H`` query heads, ``K`` KV heads, ``d``
head_dim, ``I`` dense intermediate, ``Ie`` expert intermediate; gated MLPs have 3 matrices,
plain ones 2):

* embedding ``V × h``; output head ``V × h`` unless tied;
* attention per layer, GQA: ``h·H·d (q) + 2·h·K·d (k, v) + H·d·h (o)`` (+ biases);
  MLA: ``h·q_lora + q_lora·H·(nope+rope)`` (or ``h·H·(nope+rope)`` without q_lora)
  ``+ h·(kv_lora+rope) + kv_lora·H·(nope+v) + H·v·h`` (+ the two LoRA norms);
* dense MLP per dense layer: ``3·h·I``;
* per MoE layer: routed experts ``E × 3·h·Ie``, shared experts ``3·h·I_shared``, router ``h·E``;
* norms: ``2·h`` per layer + ``h``.

*Active* parameters per token are what one token multiplies through: everything except the
input embedding (a row lookup, not a matmul) and the routed experts it is not sent to
(``k`` of ``E`` per MoE layer). With tied embeddings the table counts once, as the output head.

Measured against published counts (``tests/models/test_weights.py`` asserts |error| < 1.5 %):

===================  ==================  ===============================  =========
model                estimate            published (model card)           error
===================  ==================  ===============================  =========
DeepSeek-V3 total    671.03 B            671 B                            +0.004 %
DeepSeek-V3 active   36.63 B             37 B                             −1.0 %
gpt-oss-120b total   116.79 B            116.83 B                         −0.035 %
gpt-oss-120b active  5.132 B             5.13 B                           +0.03 %
Llama-3.1-70B        70.55 B             70.6 B                           −0.07 %
Qwen3-32B            32.76 B             32.8 B                           −0.12 %
===================  ==================  ===============================  =========

DeepSeek-V3's published 671 B excludes its 14 B multi-token-prediction module (the
checkpoint's 685 B includes it); the config's ``num_nextn_predict_layers`` is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.architecture import Architecture

#: Bytes per parameter for the weight precisions thinktax sizes.
BYTES_PER_PARAM: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int4": 0.5}

#: Extra weight memory on top of ``params × bytes``: quantisation scales, tensors kept at
#: higher precision (norms, routers, often embeddings and the output head), and allocator
#: slack. 3 % is the DOMAIN.md "few %"; it makes Llama-3.1-70B at fp8 70.55 × 1.03 = 72.67 GB,
#: about what an fp8 checkpoint that keeps its embedding and output head in bf16 holds:
#: 68.45 B × 1 B + 2.10 B × 2 B = 72.65 GB.
DEFAULT_WEIGHTS_OVERHEAD_FRACTION = 0.03


@dataclass(frozen=True)
class ParamEstimate:
    """Parameter counts by component (whole model, all layers)."""

    embedding: int
    lm_head: int
    attention: int
    dense_mlp: int
    routed_experts: int
    routed_experts_active: int
    shared_experts_and_routers: int
    norms: int
    #: Parameters of one routed expert in one layer (3·h·Ie): the unit a decode step reads
    #: per distinct expert it touches.
    params_per_routed_expert: int

    @property
    def total(self) -> int:
        """All parameters (Llama-3.1-70B: 70,553,706,496)."""
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts_and_routers
            + self.norms
        )

    @property
    def active(self) -> int:
        """Parameters one token multiplies through (input embedding lookup excluded).

        ``total − embedding − (routed − routed_active)``, plus the embedding back if it is
        tied (then it is the output head). gpt-oss-120b: 5.13 B.
        """
        head = self.lm_head if self.lm_head else self.embedding
        return (
            head
            + self.attention
            + self.dense_mlp
            + self.routed_experts_active
            + self.shared_experts_and_routers
            + self.norms
        )

    @property
    def always_read(self) -> int:
        """Parameters every decode step reads whatever the batch: active minus routed experts."""
        return self.active - self.routed_experts_active


def estimate_params(arch: Architecture) -> ParamEstimate:
    """Estimate parameter counts from the architecture (formula in the module docstring).

    Llama-3.1-70B: embedding 128,256 × 8,192 = 1,050,673,152 (twice, untied); attention
    80 × (8192·8192 + 2·8192·1024 + 8192·8192) = 12,079,595,520; MLP 80 × 3 × 8192 × 28672
    = 56,371,445,760; norms 80 × 2 × 8192 + 8192 = 1,318,912; total 70,553,706,496.
    """
    h = arch.hidden_size
    embedding = arch.vocab_size * h
    lm_head = 0 if arch.tie_word_embeddings else embedding
    mats = 3 if arch.gated_mlp else 2
    attention = arch.num_layers * attention_params_per_layer(arch)
    n_moe = arch.num_moe_layers
    dense_mlp = (arch.num_layers - n_moe) * mats * h * arch.intermediate_size
    per_expert = mats * h * arch.moe_intermediate_size if arch.is_moe else 0
    shared = mats * h * arch.shared_expert_intermediate_size + h * arch.n_routed_experts
    return ParamEstimate(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        dense_mlp=dense_mlp,
        routed_experts=n_moe * arch.n_routed_experts * per_expert,
        routed_experts_active=n_moe * arch.experts_per_token * per_expert,
        shared_experts_and_routers=n_moe * shared,
        norms=arch.num_layers * 2 * h + h,
        params_per_routed_expert=per_expert,
    )


def attention_params_per_layer(arch: Architecture) -> int:
    """Attention weights of one layer.

    GQA (Llama-3.1-70B): 8192·64·128 + 2·8192·8·128 + 64·128·8192 = 150,994,944.
    MLA (DeepSeek-V3): 7168·1536 + 1536 + 1536·128·192 + 7168·576 + 512 + 512·128·256
    + 128·128·7168 = 187,107,328.
    """
    h, heads = arch.hidden_size, arch.num_attention_heads
    if arch.is_mla:
        rank, rope = int(arch.kv_lora_rank or 0), int(arch.qk_rope_head_dim or 0)
        nope, v = int(arch.qk_nope_head_dim or 0), int(arch.v_head_dim or 0)
        q_lora = int(arch.q_lora_rank or 0)
        q = h * q_lora + q_lora + q_lora * heads * (nope + rope) if q_lora else h * heads * (nope + rope)
        kv = h * (rank + rope) + rank + rank * heads * (nope + v)
        return q + kv + heads * v * h
    q_dim, kv_dim = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    weights = h * q_dim + 2 * h * kv_dim + q_dim * h
    bias = (q_dim + 2 * kv_dim + h) if arch.attention_bias else 0
    return weights + bias


def bytes_per_param(precision: str) -> float:
    """Bytes per weight: bf16/fp16 2, fp8 1, int4 0.5."""
    try:
        return BYTES_PER_PARAM[precision.lower()]
    except KeyError:
        raise ValueError(
            f"unknown precision {precision!r}; expected one of {sorted(BYTES_PER_PARAM)}"
        ) from None


def weights_gb(
    params: float,
    precision: str,
    overhead_fraction: float = DEFAULT_WEIGHTS_OVERHEAD_FRACTION,
) -> float:
    """Weights footprint in GB (10^9 bytes): ``params × bytes_per_param × (1 + overhead)``.

    Llama-3.1-70B (70.55 B) at fp8: 70.55e9 × 1 × 1.03 / 1e9 = 72.67 GB; at bf16 145.3 GB;
    at int4 36.3 GB. A 1.2 T-parameter model at fp8: 1,236 GB.
    """
    return params * bytes_per_param(precision) * (1.0 + overhead_fraction) / 1e9
