"""A transformer's shape, read from a Hugging Face ``config.json``, and its KV-cache bytes.

Only the fields that drive memory and compute are kept. The KV cache holds, for every token
in context and every layer, what later tokens attend to:

* standard / grouped-query attention (MHA/GQA): keys and values,
  ``2 × kv_heads × head_dim`` elements per layer per token;
* multi-head latent attention (MLA, DeepSeek V2/V3/R1): one compressed latent plus the
  decoupled RoPE key, ``kv_lora_rank + qk_rope_head_dim`` elements per layer per token
  (no ×2, and ``num_key_value_heads`` is ignored);
* sliding-window layers (gpt-oss, Gemma, Mistral v0.1) keep at most ``sliding_window`` tokens,
  so past the window only the full-attention layers grow.

Worked numbers at bf16 (2 bytes per element), checked in ``tests/models/test_architecture.py``:

============================  =================================================  ==========
model                         working                                            bytes/token
============================  =================================================  ==========
Llama-3.1-70B                 2 × 80 layers × 8 kv heads × 128 × 2 B             327,680
Qwen3-32B                     2 × 64 × 8 × 128 (``head_dim`` key, not 5120/64) × 2   262,144
DeepSeek-V3 (MLA)             61 × (512 + 64) × 2 B                              70,272
gpt-oss-120b, short context   2 × 36 × 8 × 64 × 2 B (all 36 layers grow)         73,728
gpt-oss-120b, long context    2 × 18 full layers × 8 × 64 × 2 B                  36,864
============================  =================================================  ==========
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

FULL = "full_attention"
SLIDING = "sliding_attention"

# Families whose MLP is a plain up/down projection (2 matrices) rather than a gated
# (SwiGLU/GeGLU: gate, up, down = 3 matrices) one.
_UNGATED_MLP_TYPES = frozenset(
    {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "phi", "starcoder2", "gpt_bigcode"}
)


class ConfigError(ValueError):
    """The config lacks a field needed to describe the model."""


@dataclass(frozen=True)
class Architecture:
    """The memory- and compute-relevant shape of a decoder-only transformer."""

    model_type: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    gated_mlp: bool = True
    # Multi-head latent attention (None = not MLA)
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    q_lora_rank: int | None = None
    # One entry per layer: FULL or SLIDING
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    # Mixture of experts (n_routed_experts == 0 means dense)
    n_routed_experts: int = 0
    experts_per_token: int = 0
    shared_expert_intermediate_size: int = 0
    moe_intermediate_size: int = 0
    moe_layers: tuple[bool, ...] = ()
    # Stored precision of the checkpoint (information only)
    torch_dtype: str | None = None
    quant_method: str | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "Architecture":
        """Read a Hugging Face ``config.json`` dict (multimodal ``text_config`` is unwrapped).

        ``head_dim`` is the config's ``head_dim`` when present (Qwen3-32B: 128, although
        hidden/heads = 5120/64 = 80), else ``hidden_size // num_attention_heads``
        (Llama-3.1-70B: 8192/64 = 128).
        """
        if "num_hidden_layers" not in cfg and isinstance(cfg.get("text_config"), Mapping):
            cfg = {**cfg["text_config"], **{k: v for k, v in cfg.items() if k == "torch_dtype"}}
        layers = _req_int(cfg, "num_hidden_layers")
        hidden = _req_int(cfg, "hidden_size")
        heads = _req_int(cfg, "num_attention_heads")
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or hidden // heads)
        model_type = str(cfg.get("model_type") or "")
        is_mla = cfg.get("kv_lora_rank") is not None and cfg.get("qk_rope_head_dim") is not None
        n_experts = _first_int(cfg, "n_routed_experts", "num_local_experts", "num_experts")
        quant = cfg.get("quantization_config")
        return cls(
            model_type=model_type,
            num_layers=layers,
            hidden_size=hidden,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=_req_int(cfg, "vocab_size"),
            intermediate_size=int(cfg.get("intermediate_size") or 4 * hidden),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            attention_bias=bool(cfg.get("attention_bias", False)),
            gated_mlp=model_type not in _UNGATED_MLP_TYPES,
            kv_lora_rank=int(cfg["kv_lora_rank"]) if is_mla else None,
            qk_rope_head_dim=int(cfg["qk_rope_head_dim"]) if is_mla else None,
            qk_nope_head_dim=_opt_int(cfg, "qk_nope_head_dim") if is_mla else None,
            v_head_dim=_opt_int(cfg, "v_head_dim") if is_mla else None,
            q_lora_rank=_opt_int(cfg, "q_lora_rank") if is_mla else None,
            layer_types=_layer_types(cfg, layers, model_type),
            sliding_window=_opt_int(cfg, "sliding_window"),
            n_routed_experts=n_experts,
            experts_per_token=_first_int(cfg, "num_experts_per_tok", "experts_per_token") if n_experts else 0,
            shared_expert_intermediate_size=_shared_intermediate(cfg) if n_experts else 0,
            moe_intermediate_size=_first_int(cfg, "moe_intermediate_size", "intermediate_size") if n_experts else 0,
            moe_layers=_moe_layers(cfg, layers, n_experts),
            torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
            quant_method=quant.get("quant_method") if isinstance(quant, Mapping) else None,
        )

    # ------------------------------------------------------------------ shape facts
    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    @property
    def num_sliding_layers(self) -> int:
        """Layers that keep at most ``sliding_window`` tokens (gpt-oss-120b: 18 of 36)."""
        return sum(1 for t in self.layer_types if t == SLIDING) if self.sliding_window else 0

    @property
    def num_full_layers(self) -> int:
        """Layers whose KV grows with every token (gpt-oss-120b: 18; Llama-3.1-70B: 80)."""
        return self.num_layers - self.num_sliding_layers

    @property
    def num_moe_layers(self) -> int:
        """Layers with routed experts (DeepSeek-V3: 61 − first_k_dense_replace 3 = 58)."""
        return sum(self.moe_layers)

    @property
    def kv_elements_per_layer(self) -> int:
        """KV elements one token adds to one layer.

        MLA: ``kv_lora_rank + qk_rope_head_dim`` (DeepSeek-V3: 512 + 64 = 576);
        MHA/GQA: ``2 × kv_heads × head_dim`` (Llama-3.1-70B: 2 × 8 × 128 = 2,048).
        """
        if self.is_mla:
            return int(self.kv_lora_rank or 0) + int(self.qk_rope_head_dim or 0)
        return 2 * self.num_kv_heads * self.head_dim

    # ------------------------------------------------------------------ KV bytes
    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2) -> float:
        """Marginal KV bytes of one token while the context is shorter than any window.

        ``layers × kv_elements_per_layer × bytes`` — every layer grows. Llama-3.1-70B at bf16:
        80 × 2,048 × 2 = 327,680 B; gpt-oss-120b: 36 × 1,024 × 2 = 73,728 B.
        """
        return self.num_layers * self.kv_elements_per_layer * kv_dtype_bytes

    def kv_bytes_per_token_long_context(self, kv_dtype_bytes: float = 2) -> float:
        """Marginal KV bytes of one more token once the context exceeds the sliding window.

        Only full-attention layers still grow: ``full_layers × kv_elements_per_layer × bytes``.
        gpt-oss-120b at bf16 past 128 tokens: 18 × 1,024 × 2 = 36,864 B. Without sliding
        layers this equals :meth:`kv_bytes_per_token`.
        """
        return self.num_full_layers * self.kv_elements_per_layer * kv_dtype_bytes

    def kv_bytes_for_tokens(self, n_tokens: int, kv_dtype_bytes: float = 2) -> float:
        """KV bytes held by one call with ``n_tokens`` in context.

        ``(full_layers × n + sliding_layers × min(n, window)) × kv_elements_per_layer × bytes``.
        gpt-oss-120b, 10,000 tokens, bf16: (18 × 10,000 + 18 × 128) × 1,024 × 2
        = 373,358,592 B (≈ 0.373 GB), not 10,000 × 73,728 = 737 MB.
        """
        if n_tokens < 0:
            raise ValueError("n_tokens must be >= 0")
        windowed = min(n_tokens, self.sliding_window or n_tokens)
        token_layers = self.num_full_layers * n_tokens + self.num_sliding_layers * windowed
        return token_layers * self.kv_elements_per_layer * kv_dtype_bytes

    # ------------------------------------------------------------------ attention FLOPs
    def attention_macs_per_context_token(self, *, decode: bool = True) -> int:
        """Multiply-adds one query token spends per context token, per layer (QKᵀ plus AV).

        MHA/GQA: ``heads × (head_dim + head_dim)`` (Llama-3.1-70B: 64 × 256 = 16,384).
        MLA in decode uses the absorbed form over the latent: ``heads × (kv_lora_rank + rope
        + kv_lora_rank)`` (DeepSeek-V3: 128 × (576 + 512) = 139,264); in prefill the expanded
        form: ``heads × (nope + rope + v_head_dim)`` (128 × (128 + 64 + 128) = 40,960).
        """
        if self.is_mla:
            rank, rope = int(self.kv_lora_rank or 0), int(self.qk_rope_head_dim or 0)
            if decode:
                return self.num_attention_heads * (rank + rope + rank)
            nope, v = int(self.qk_nope_head_dim or 0), int(self.v_head_dim or 0)
            return self.num_attention_heads * (nope + rope + v)
        return self.num_attention_heads * 2 * self.head_dim

    def attention_flops_per_token(self, context_tokens: int) -> float:
        """Attention FLOPs of one decode token with ``context_tokens`` in context.

        ``2 × macs_per_context_token × (full_layers × L + sliding_layers × min(L, window))``.
        Llama-3.1-70B at L = 10,000: 2 × 16,384 × 80 × 10,000 = 26.2 GFLOP (against
        2 × 70.6 G = 141 GFLOP for the weight matmuls).
        """
        windowed = min(context_tokens, self.sliding_window or context_tokens)
        layer_tokens = self.num_full_layers * context_tokens + self.num_sliding_layers * windowed
        return 2.0 * self.attention_macs_per_context_token(decode=True) * layer_tokens

    def prefill_attention_flops(self, prompt_tokens: int) -> float:
        """Causal attention FLOPs to prefill ``prompt_tokens`` (token i attends to i tokens).

        ``2 × macs × (full_layers × P(P+1)/2 + sliding_layers × Σ min(i, window))``.
        Llama-3.1-70B, P = 8,000: 2 × 16,384 × 80 × 32,004,000 = 83.9 TFLOP.
        """
        p = prompt_tokens
        full_pairs = p * (p + 1) / 2
        w = self.sliding_window or p
        if p <= w:
            sliding_pairs = full_pairs
        else:
            sliding_pairs = w * (w + 1) / 2 + (p - w) * w
        pairs = self.num_full_layers * full_pairs + self.num_sliding_layers * sliding_pairs
        return 2.0 * self.attention_macs_per_context_token(decode=False) * pairs


# ---------------------------------------------------------------------- config helpers
def _req_int(cfg: Mapping[str, Any], key: str) -> int:
    value = cfg.get(key)
    if value is None:
        raise ConfigError(f"config.json has no {key!r}")
    return int(value)


def _first_int(cfg: Mapping[str, Any], *keys: str) -> int:
    """The first of ``keys`` with a truthy value, as int; 0 when none has one."""
    return next((int(cfg[k]) for k in keys if cfg.get(k)), 0)


def _opt_int(cfg: Mapping[str, Any], key: str) -> int | None:
    value = cfg.get(key)
    return None if value is None else int(value)


def _layer_types(cfg: Mapping[str, Any], layers: int, model_type: str) -> tuple[str, ...]:
    """Per-layer attention type, in order of precedence:

    1. an explicit ``layer_types`` list (gpt-oss, newer Gemma/Qwen configs);
    2. no ``sliding_window`` (or ``use_sliding_window: false``, as in Qwen3-32B): all full;
    3. ``sliding_window_pattern`` N (Gemma 3): every N-th layer is full, the rest sliding;
    4. Qwen2-style ``use_sliding_window: true``: layers from ``max_window_layers`` on slide;
    5. Gemma 2: even layers slide, odd layers are full;
    6. otherwise (Mistral v0.1): every layer slides.
    """
    explicit = cfg.get("layer_types")
    if isinstance(explicit, list) and explicit:
        if len(explicit) != layers:
            raise ConfigError(f"layer_types has {len(explicit)} entries for {layers} layers")
        return tuple(SLIDING if "sliding" in str(t) else FULL for t in explicit)
    if cfg.get("sliding_window") is None or cfg.get("use_sliding_window") is False:
        return (FULL,) * layers
    pattern = cfg.get("sliding_window_pattern")
    if pattern:
        n = int(pattern)
        return tuple(FULL if (i + 1) % n == 0 else SLIDING for i in range(layers))
    if cfg.get("use_sliding_window") is True:
        start = int(cfg.get("max_window_layers") or 0)
        return tuple(SLIDING if i >= start else FULL for i in range(layers))
    if model_type == "gemma2":
        return tuple(SLIDING if i % 2 == 0 else FULL for i in range(layers))
    return (SLIDING,) * layers


def _moe_layers(cfg: Mapping[str, Any], layers: int, n_experts: int) -> tuple[bool, ...]:
    """Which layers carry routed experts.

    DeepSeek: layers ``i >= first_k_dense_replace`` with ``i % moe_layer_freq == 0``
    (V3: layers 3..60, 58 MoE layers). Qwen-MoE: ``mlp_only_layers`` are dense and
    ``decoder_sparse_step`` spaces MoE layers. Mixtral/gpt-oss: every layer.
    """
    if not n_experts:
        return (False,) * layers
    first_dense = int(cfg.get("first_k_dense_replace") or 0)
    freq = int(cfg.get("moe_layer_freq") or 1)
    step = int(cfg.get("decoder_sparse_step") or 1)
    dense_only = {int(i) for i in cfg.get("mlp_only_layers") or []}
    return tuple(
        i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in dense_only
        for i in range(layers)
    )


def _shared_intermediate(cfg: Mapping[str, Any]) -> int:
    """Total intermediate width of always-active shared experts.

    DeepSeek: ``n_shared_experts × moe_intermediate_size`` (V3: 1 × 2,048);
    Qwen2-MoE: ``shared_expert_intermediate_size``; Mixtral/gpt-oss: 0.
    """
    if cfg.get("shared_expert_intermediate_size"):
        return int(cfg["shared_expert_intermediate_size"])
    n_shared = int(cfg.get("n_shared_experts") or 0)
    return n_shared * int(cfg.get("moe_intermediate_size") or 0)


def expected_experts_touched(n_experts: int, experts_per_token: int, batch: int) -> float:
    """Expected distinct routed experts a decode step reads in one layer, under uniform routing.

    ``E × (1 − (1 − k/E)^B)``. DeepSeek-V3 (E = 256, k = 8): B = 1 → 8; B = 128 →
    256 × (1 − (248/256)^128) = 251.6, i.e. a large batch reads nearly all experts.
    """
    if n_experts <= 0 or batch <= 0:
        return 0.0
    k = min(experts_per_token, n_experts)
    return n_experts * (1.0 - math.pow(1.0 - k / n_experts, batch))
