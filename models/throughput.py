"""Decode and prefill rooflines, and the calls per minute a deployment sustains.

Decode step (one token for each of ``B`` running calls, mean context ``L`` tokens):

    bytes  = params_read(B) × bytes_per_param  +  B × kv_bytes_for_tokens(L) × kv_replication
    flops  = B × (2 × active_params + attention_flops_per_token(L))
    t_step = max(bytes / (gpus × HBM bandwidth), flops / (gpus × dense TFLOP/s)) / efficiency
    tokens/s = B / t_step

``params_read(B)`` is the active parameters for a dense model; for a MoE model it grows
with the batch towards all experts (see :meth:`ModelSpec.params_read_per_step`). Prefill runs
at the compute roofline: ``(2 × active × P + causal attention FLOPs(P)) / (gpus × TFLOP/s ×
efficiency)``.

Calls per minute for a profile (prompt ``P``, ``G`` = thinking + output tokens), with
``B`` calls in flight (default: :func:`models.sizing.size`'s ``max_concurrent_calls``) and
the decode step taken at the mean context ``P + G/2``: a batch of ``B`` calls costs
``G × t_step`` of decode plus ``B × t_prefill`` of prefill, so

    calls/min = 60 × B / (G × t_step + B × t_prefill)

Efficiency: the share of the roofline real engines reach, calibrated on published
TensorRT-LLM benchmarks (``docs/economics.md``, "Roofline against measurements"): dense
Llama-3.3-70B at fp8 on 1 × H200 and 2 × H100 reaches 0.45-0.77 of the efficiency-1 roofline
over 20 input/output lengths (median 0.62), so the dense default is 0.6; held out,
Llama-3.1-8B at 0.6 lands at 0.71-1.28 × the estimate (median 1.05). DeepSeek-R1 (MoE + MLA)
on 8 × H200 reaches 0.29, so the MoE default is 0.3 (one measurement: treat it as rough).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.sizing import Deployment, size
from models.spec import CallProfile, ModelSpec
from models.weights import bytes_per_param

DEFAULT_EFFICIENCY_DENSE = 0.6
DEFAULT_EFFICIENCY_MOE = 0.3


def default_efficiency(model: ModelSpec) -> float:
    """0.3 for mixture-of-experts models (per the config; without one, active < 90 % of
    total), 0.6 otherwise."""
    is_moe = model.arch.is_moe if model.arch is not None else model.params_active < model.params_total * 0.9
    return DEFAULT_EFFICIENCY_MOE if is_moe else DEFAULT_EFFICIENCY_DENSE


@dataclass(frozen=True)
class DecodeStep:
    """One decode step's traffic, work and time."""

    batch: int
    context_tokens: int
    weight_bytes: float
    kv_bytes: float
    flops: float
    memory_seconds: float
    compute_seconds: float
    seconds: float
    bound: str
    tokens_per_second: float


def decode_step(
    model: ModelSpec,
    deployment: Deployment,
    batch: int,
    context_tokens: int,
    efficiency: float | None = None,
) -> DecodeStep:
    """Roofline time of one decode step (module docstring).

    Llama-3.1-70B fp8 on one H200, B = 1, L = 1,000: reads 69.50 GB of weights + 0.16 GB
    of KV in 69.66e9 / 4.8e12 = 14.5 ms at efficiency 1: 69 tokens/s for a single call.
    """
    if batch < 1:
        raise ValueError("batch must be >= 1")
    eff = efficiency if efficiency is not None else default_efficiency(model)
    d = deployment
    params_read = model.params_read_per_step(batch)
    if d.attention_dp:
        params_read += (d.gpus - 1) * model.attention_params
    weight_bytes = params_read * bytes_per_param(d.precision)
    kv_call = model.kv_bytes_for_tokens(context_tokens, d.kv_dtype_bytes)
    kv_bytes = batch * kv_call * model.kv_replication(d.gpus, d.attention_dp)
    attention = model.arch.attention_flops_per_token(context_tokens) if model.arch else 0.0
    flops = batch * (2.0 * model.params_active + attention)
    memory_s = (weight_bytes + kv_bytes) / (d.gpus * d.gpu.hbm_tb_s * 1e12)
    compute_s = flops / (d.gpus * d.gpu.tflops(d.precision) * 1e12)
    seconds = max(memory_s, compute_s) / eff
    return DecodeStep(
        batch=batch,
        context_tokens=context_tokens,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        flops=flops,
        memory_seconds=memory_s,
        compute_seconds=compute_s,
        seconds=seconds,
        bound="memory" if memory_s >= compute_s else "compute",
        tokens_per_second=batch / seconds,
    )


def prefill_seconds(
    model: ModelSpec,
    deployment: Deployment,
    prompt_tokens: int,
    efficiency: float | None = None,
) -> float:
    """Compute-roofline time to prefill one prompt.

    Llama-3.1-70B fp8, P = 8,000 on one H200: (2 × 69.50e9 × 8,000 + 83.9e12) FLOP /
    1,979e12 = 0.604 s at efficiency 1.
    """
    eff = efficiency if efficiency is not None else default_efficiency(model)
    d = deployment
    attention = model.arch.prefill_attention_flops(prompt_tokens) if model.arch else 0.0
    flops = 2.0 * model.params_active * prompt_tokens + attention
    return flops / (d.gpus * d.gpu.tflops(d.precision) * 1e12 * eff)


@dataclass(frozen=True)
class Throughput:
    """Sustained throughput of one deployment on one call profile."""

    batch: int
    efficiency: float
    decode: DecodeStep | None
    prefill_seconds_per_call: float
    cycle_seconds: float
    calls_per_minute: float
    output_tokens_per_second: float
    working: str


def estimate_throughput(
    model: ModelSpec,
    deployment: Deployment,
    profile: CallProfile,
    *,
    batch: int | None = None,
    efficiency: float | None = None,
) -> Throughput:
    """Calls per minute at ``batch`` calls in flight (default: as many as memory holds).

    A deployment that holds no call has throughput 0.
    """
    eff = efficiency if efficiency is not None else default_efficiency(model)
    b = batch if batch is not None else size(model, deployment, profile).max_concurrent_calls
    t_prefill = prefill_seconds(model, deployment, profile.prompt_tokens, eff)
    if b < 1:
        return Throughput(0, eff, None, t_prefill, 0.0, 0.0, 0.0, "no call fits: 0 calls/min")
    g = max(profile.generated_tokens, 1)
    mean_context = profile.prompt_tokens + g // 2
    step = decode_step(model, deployment, b, mean_context, eff)
    cycle = g * step.seconds + b * t_prefill
    per_minute = 60.0 * b / cycle
    working = (
        f"60 × {b} calls / ({g:,} decode steps × {step.seconds * 1e3:,.2f} ms "
        f"[{step.bound}-bound at context {mean_context:,}] + {b} × {t_prefill:,.3f} s prefill) "
        f"= {per_minute:,.2f} calls/min at efficiency {eff:g}"
    )
    return Throughput(
        batch=b,
        efficiency=eff,
        decode=step,
        prefill_seconds_per_call=t_prefill,
        cycle_seconds=cycle,
        calls_per_minute=per_minute,
        output_tokens_per_second=b * g / cycle,
        working=working,
    )
