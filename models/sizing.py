"""How many calls of a profile a GPU set-up can hold at once.

Memory model (GB = 10^9 bytes), tensor-parallel over ``gpus`` GPUs (weights and KV split
evenly, so the set-up behaves as one pool of ``gpus × memory_gb``):

    usable       = gpus × memory_gb × memory_utilization          (default 0.90)
    reserve      = gpus × activation_reserve_gb_per_gpu           (default 2 GB per GPU)
    kv_budget    = usable − weights_gb − reserve
    kv_per_call  = kv_bytes_for_tokens(prompt + thinking + output) × kv_replication
    max_calls    = floor(kv_budget / kv_per_call)
    fits         = max_calls ≥ 1   (weights, reserve and one whole call fit)

Defaults: 0.90 is vLLM's ``gpu_memory_utilization`` default (the rest is CUDA context,
NCCL buffers and fragmentation); 2 GB per GPU covers the activation peak of a forward pass
of ~8k batched tokens plus CUDA graphs (vLLM's profiler typically reports 1-3 GB on 70B-class
models). Calls are sized at their *peak* KV (the whole profile in context), the
conservative choice: an engine that admits calls on demand averages more, and pays for it
with pre-emptions when they all grow at once.

KV dtype follows ``--precision``: bf16 → 2 bytes, fp8 → 1; int4 is weight-only quantisation
(AWQ/GPTQ, W4A16) whose activations and KV cache stay 16-bit, so int4 → bf16 KV (2 bytes)
unless ``kv_dtype`` says otherwise.

Worked example: Llama-3.1-70B, fp8, one H200, 8k + 15k + 500 tokens:
usable 141 × 0.9 = 126.9 GB; weights 72.67 GB; reserve 2 GB; budget 52.23 GB; per call
23,500 × 163,840 B = 3.85 GB; 13 calls fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from models.gpus import GpuSpec
from models.spec import CallProfile, ModelSpec
from models.weights import DEFAULT_WEIGHTS_OVERHEAD_FRACTION, bytes_per_param

DEFAULT_MEMORY_UTILIZATION = 0.90
DEFAULT_ACTIVATION_RESERVE_GB_PER_GPU = 2.0

#: Bytes per KV element by KV dtype.
KV_DTYPE_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
#: KV dtype used for each weight precision when none is given.
DEFAULT_KV_DTYPE: dict[str, str] = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int4": "bf16"}


@dataclass(frozen=True)
class Deployment:
    """A GPU set-up serving one model replica with tensor parallelism over ``gpus``."""

    gpu: GpuSpec
    gpus: int
    precision: str
    kv_dtype: str | None = None
    attention_dp: bool = False
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    activation_reserve_gb_per_gpu: float = DEFAULT_ACTIVATION_RESERVE_GB_PER_GPU
    weights_overhead_fraction: float = DEFAULT_WEIGHTS_OVERHEAD_FRACTION

    def __post_init__(self) -> None:
        if self.gpus < 1:
            raise ValueError("gpus must be >= 1")
        bytes_per_param(self.precision)  # validates the precision
        if self.kv_dtype is not None and self.kv_dtype.lower() not in KV_DTYPE_BYTES:
            raise ValueError(f"unknown kv dtype {self.kv_dtype!r}; expected {sorted(KV_DTYPE_BYTES)}")
        if not 0 < self.memory_utilization <= 1:
            raise ValueError("memory_utilization must be in (0, 1]")

    @property
    def kv_dtype_name(self) -> str:
        """KV dtype in force: the explicit one, else the precision's default (int4 → bf16)."""
        return (self.kv_dtype or DEFAULT_KV_DTYPE[self.precision.lower()]).lower()

    @property
    def kv_dtype_bytes(self) -> float:
        """Bytes per KV element: bf16 2, fp8 1."""
        return KV_DTYPE_BYTES[self.kv_dtype_name]

    @property
    def memory_gb_total(self) -> float:
        """``gpus × memory_gb`` (16 × H200: 2,256 GB)."""
        return self.gpus * self.gpu.memory_gb

    @property
    def usable_gb(self) -> float:
        """``memory_gb_total × memory_utilization`` (8 × H200 × 0.9: 1,015.2 GB)."""
        return self.memory_gb_total * self.memory_utilization

    @property
    def activation_reserve_gb(self) -> float:
        """``gpus × activation_reserve_gb_per_gpu`` (8 GPUs: 16 GB)."""
        return self.gpus * self.activation_reserve_gb_per_gpu


@dataclass(frozen=True)
class Sizing:
    """The memory arithmetic for one model × deployment × call profile."""

    kv_bytes_per_token: float
    kv_bytes_per_token_long_context: float
    kv_dtype: str
    kv_dtype_bytes: float
    kv_replication: float
    kv_gb_per_call: float
    kv_gb_per_call_allocated: float
    weights_gb: float
    memory_gb_total: float
    usable_gb: float
    activation_reserve_gb: float
    kv_budget_gb: float
    max_concurrent_calls: int
    fits: bool
    weights_fit: bool
    working: dict[str, str] = field(default_factory=dict)


def kv_gb_per_call(model: ModelSpec, profile: CallProfile, kv_dtype_bytes: float) -> float:
    """KV GB one call holds at its end: ``kv_bytes_for_tokens(prompt+thinking+output) / 1e9``.

    Llama-3.1-70B, fp8, 8,000 + 15,000 + 500: 23,500 × 163,840 / 1e9 = 3.85 GB.
    """
    return model.kv_bytes_for_tokens(profile.total_tokens, kv_dtype_bytes) / 1e9


def max_concurrent_calls(kv_budget_gb: float, kv_gb_per_call_allocated: float) -> int:
    """``floor(kv_budget / kv_per_call)``, 0 when nothing is left (52.23 / 3.85 → 13)."""
    if kv_budget_gb <= 0:
        return 0
    if kv_gb_per_call_allocated <= 0:
        raise ValueError("a call must hold some KV")
    return math.floor(kv_budget_gb / kv_gb_per_call_allocated)


def size(model: ModelSpec, deployment: Deployment, profile: CallProfile) -> Sizing:
    """Weights, KV per call and the concurrency a deployment holds (module docstring)."""
    d = deployment
    kv_b = d.kv_dtype_bytes
    per_token = model.kv_bytes_per_token(kv_b)
    replication = model.kv_replication(d.gpus, d.attention_dp)
    per_call = kv_gb_per_call(model, profile, kv_b)
    allocated = per_call * replication
    weights = model.weights_gb(
        d.precision,
        gpus=d.gpus,
        attention_dp=d.attention_dp,
        overhead_fraction=d.weights_overhead_fraction,
    )
    budget = d.usable_gb - weights - d.activation_reserve_gb
    calls = max_concurrent_calls(budget, allocated)
    working = {
        "kv_bytes_per_token": _kv_formula(model, kv_b, per_token),
        "kv_gb_per_call": (
            f"kv_bytes_for_tokens({profile.prompt_tokens:,} + {profile.thinking_tokens:,} + "
            f"{profile.output_tokens:,} = {profile.total_tokens:,} tokens) = {per_call:,.4f} GB"
            + (f"; × {replication:g} copies under tensor parallelism = {allocated:,.4f} GB" if replication != 1 else "")
        ),
        "weights_gb": _weights_formula(model, d, weights),
        "usable_gb": f"{d.gpus} × {d.gpu.memory_gb:g} GB × {d.memory_utilization:g} = {d.usable_gb:,.2f} GB",
        "kv_budget_gb": (
            f"{d.usable_gb:,.2f} − {weights:,.2f} weights − {d.gpus} × "
            f"{d.activation_reserve_gb_per_gpu:g} GB activation reserve = {budget:,.2f} GB"
        ),
        "max_concurrent_calls": f"floor({max(budget, 0):,.2f} / {allocated:,.4f}) = {calls:,}",
    }
    return Sizing(
        kv_bytes_per_token=per_token,
        kv_bytes_per_token_long_context=model.kv_bytes_per_token_long_context(kv_b),
        kv_dtype=d.kv_dtype_name,
        kv_dtype_bytes=kv_b,
        kv_replication=replication,
        kv_gb_per_call=per_call,
        kv_gb_per_call_allocated=allocated,
        weights_gb=weights,
        memory_gb_total=d.memory_gb_total,
        usable_gb=d.usable_gb,
        activation_reserve_gb=d.activation_reserve_gb,
        kv_budget_gb=budget,
        max_concurrent_calls=calls,
        fits=calls >= 1,
        weights_fit=weights + d.activation_reserve_gb <= d.usable_gb,
        working=working,
    )


def _kv_formula(model: ModelSpec, kv_b: float, per_token: float) -> str:
    arch = model.arch
    if arch is None:
        return f"catalog {model.kv_bytes_per_token_bf16:,.0f} B at bf16 × {kv_b:g}/2 = {per_token:,.0f} B"
    if arch.is_mla:
        head = (
            f"{arch.num_layers} layers × ({arch.kv_lora_rank} kv_lora_rank + "
            f"{arch.qk_rope_head_dim} qk_rope_head_dim)"
        )
    else:
        head = f"2 (K,V) × {arch.num_layers} layers × {arch.num_kv_heads} kv_heads × {arch.head_dim} head_dim"
    text = f"{head} × {kv_b:g} B = {per_token:,.0f} B"
    if arch.num_sliding_layers:
        long = arch.kv_bytes_per_token_long_context(kv_b)
        text += (
            f"; past the {arch.sliding_window}-token window only the {arch.num_full_layers} "
            f"full-attention layers grow: {long:,.0f} B/token"
        )
    return text


def _weights_formula(model: ModelSpec, d: Deployment, weights: float) -> str:
    params = model.stored_params(d.gpus, d.attention_dp)
    if model.weights_gb_fp8 is not None:
        return f"catalog {model.weights_gb_fp8:g} GB at fp8 × {bytes_per_param(d.precision):g} B/param = {weights:,.2f} GB"
    return (
        f"{params / 1e9:,.2f} B params × {bytes_per_param(d.precision):g} B ({d.precision}) × "
        f"(1 + {d.weights_overhead_fraction:g} overhead) = {weights:,.2f} GB"
    )
