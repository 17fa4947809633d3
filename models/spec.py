"""What sizing and throughput need to know about a model and a call.

:class:`ModelSpec` is built either from a ``config.json`` (``from_config``: KV from the
architecture, parameters estimated, both overridable by ``models.csv`` columns) or from the
catalog alone (``from_catalog``: ``params_total_b``, ``params_active_b``,
``kv_bytes_per_token_bf16``), so the pipeline can size models that ship no config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from models.architecture import Architecture, expected_experts_touched
from models.weights import (
    DEFAULT_WEIGHTS_OVERHEAD_FRACTION,
    ParamEstimate,
    bytes_per_param,
    estimate_params,
    weights_gb,
)


@dataclass(frozen=True)
class CallProfile:
    """Tokens of one call: prompt (input), hidden thinking, visible output.

    ``cached_prompt_tokens`` (part of the prompt served from the provider's cache) only
    changes the API price; on a GPU the whole prompt occupies KV.
    """

    prompt_tokens: int
    thinking_tokens: int
    output_tokens: int
    cached_prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if min(self.prompt_tokens, self.thinking_tokens, self.output_tokens) < 0:
            raise ValueError("token counts must be >= 0")
        if not 0 <= self.cached_prompt_tokens <= self.prompt_tokens:
            raise ValueError("cached_prompt_tokens must be between 0 and prompt_tokens")

    @property
    def generated_tokens(self) -> int:
        """Decode steps of the call: thinking + output (8k/15k/500 → 15,500)."""
        return self.thinking_tokens + self.output_tokens

    @property
    def total_tokens(self) -> int:
        """Tokens in context at the end of the call: prompt + thinking + output (23,500)."""
        return self.prompt_tokens + self.generated_tokens


@dataclass(frozen=True)
class ModelSpec:
    """A model's parameters and KV footprint, from a config or from catalog figures."""

    name: str
    params_total: float
    params_active: float
    kv_bytes_per_token_bf16: float
    arch: Architecture | None = None
    estimate: ParamEstimate | None = None
    weights_gb_fp8: float | None = None

    @classmethod
    def from_config(
        cls,
        cfg: Mapping[str, Any],
        *,
        name: str = "",
        params_total_b: float | None = None,
        params_active_b: float | None = None,
        weights_gb_fp8: float | None = None,
    ) -> "ModelSpec":
        """Architecture and parameter estimate from ``config.json``; catalog values win.

        A dense model given only ``params_total_b`` is active = total; a MoE model given
        only a total keeps the estimate's active share (DeepSeek-V3: 36.63 / 671.03).
        """
        arch = Architecture.from_config(cfg)
        est = estimate_params(arch)
        total = params_total_b * 1e9 if params_total_b else float(est.total)
        if params_active_b:
            active = params_active_b * 1e9
        elif params_total_b:
            active = total * est.active / est.total if arch.is_moe else total
        else:
            active = float(est.active)
        return cls(
            name=name,
            params_total=total,
            params_active=active,
            kv_bytes_per_token_bf16=arch.kv_bytes_per_token(2),
            arch=arch,
            estimate=est,
            weights_gb_fp8=weights_gb_fp8,
        )

    @classmethod
    def from_catalog(
        cls,
        *,
        name: str,
        params_total_b: float,
        params_active_b: float | None,
        kv_bytes_per_token_bf16: float,
        weights_gb_fp8: float | None = None,
    ) -> "ModelSpec":
        """A model with no config: KV grows linearly at ``kv_bytes_per_token_bf16``."""
        total = params_total_b * 1e9
        active = params_active_b * 1e9 if params_active_b else total
        return cls(name, total, active, float(kv_bytes_per_token_bf16), None, None, weights_gb_fp8)

    # ------------------------------------------------------------------ KV
    def kv_bytes_per_token(self, kv_dtype_bytes: float) -> float:
        """Marginal KV bytes per token at short context (Llama-3.1-70B, fp8: 163,840)."""
        if self.arch is not None:
            return self.arch.kv_bytes_per_token(kv_dtype_bytes)
        return self.kv_bytes_per_token_bf16 * kv_dtype_bytes / 2

    def kv_bytes_per_token_long_context(self, kv_dtype_bytes: float) -> float:
        """Marginal KV bytes per token past every sliding window (gpt-oss-120b, bf16: 36,864)."""
        if self.arch is not None:
            return self.arch.kv_bytes_per_token_long_context(kv_dtype_bytes)
        return self.kv_bytes_per_token(kv_dtype_bytes)

    def kv_bytes_for_tokens(self, n_tokens: int, kv_dtype_bytes: float) -> float:
        """KV bytes of one call holding ``n_tokens`` (sliding layers capped at the window)."""
        if self.arch is not None:
            return self.arch.kv_bytes_for_tokens(n_tokens, kv_dtype_bytes)
        return n_tokens * self.kv_bytes_per_token(kv_dtype_bytes)

    def kv_replication(self, tensor_parallel: int, attention_dp: bool = False) -> float:
        """How many copies of each token's KV a tensor-parallel group stores.

        Tensor parallelism splits attention by KV head. MLA has a single latent per token
        that every rank needs, so each of the ``tp`` ranks stores it: replication = tp (vLLM
        and SGLang without data-parallel attention). GQA with more ranks than KV heads
        duplicates heads: ``max(1, tp / kv_heads)`` (Llama-3.1-70B, 8 KV heads, on 16 GPUs: 2).
        With data-parallel attention each rank keeps only its own calls' KV: 1.
        """
        if attention_dp or self.arch is None or tensor_parallel <= 1:
            return 1.0
        if self.arch.is_mla:
            return float(tensor_parallel)
        return max(1.0, tensor_parallel / self.arch.num_kv_heads)

    # ------------------------------------------------------------------ weights
    @property
    def attention_params(self) -> float:
        """Attention weights (replicated on every rank under data-parallel attention)."""
        return float(self.estimate.attention) if self.estimate is not None else 0.0

    def stored_params(self, gpus: int, attention_dp: bool = False) -> float:
        """Parameters held across the GPUs: total, plus ``(gpus − 1)`` extra copies of the
        attention weights when attention is data-parallel (DeepSeek-V3 on 8 GPUs:
        671.03 B + 7 × 11.41 B = 750.9 B)."""
        extra = (gpus - 1) * self.attention_params if attention_dp else 0.0
        return self.params_total + extra

    def weights_gb(
        self,
        precision: str,
        *,
        gpus: int = 1,
        attention_dp: bool = False,
        overhead_fraction: float = DEFAULT_WEIGHTS_OVERHEAD_FRACTION,
    ) -> float:
        """Weights GB at ``precision``: the catalog's ``weights_gb_fp8`` scaled by bytes per
        parameter when given (it already includes its overhead), else
        ``stored_params × bytes × (1 + overhead)`` (Llama-3.1-70B at fp8: 72.67 GB)."""
        if self.weights_gb_fp8 is not None:
            scale = self.stored_params(gpus, attention_dp) / self.params_total
            return self.weights_gb_fp8 * bytes_per_param(precision) * scale
        return weights_gb(self.stored_params(gpus, attention_dp), precision, overhead_fraction)

    def params_read_per_step(self, batch: int) -> float:
        """Parameters a decode step of ``batch`` calls reads from HBM (summed over GPUs).

        Dense: the active parameters. MoE: active plus the other routed experts the batch
        touches, ``active + (total − active) × (touched − k) / (E − k)`` with
        ``touched = E × (1 − (1 − k/E)^B)`` (uniform routing). DeepSeek-V3 at B = 1: 36.6 B;
        at B = 1,024: ≈ 671 B, i.e. the whole model.
        """
        arch = self.arch
        if arch is None or not arch.is_moe or batch <= 1:
            return self.params_active
        n, k = arch.n_routed_experts, arch.experts_per_token
        if n <= k:
            return self.params_active
        touched = expected_experts_touched(n, k, batch)
        share = (touched - k) / (n - k)
        return self.params_active + (self.params_total - self.params_active) * share
