"""``thinktax size``: KV-cache and GPU sizing for one call profile, without a warehouse."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from models.architecture import ConfigError
from models.gpus import UnknownGpuError, gpu_spec
from models.sizing import KV_DTYPE_BYTES, Deployment, size
from models.spec import CallProfile, ModelSpec
from models.throughput import estimate_throughput
from models.weights import BYTES_PER_PARAM

NAME = "size"
HELP = "KV-cache and GPU sizing for one call profile from a Hugging Face config.json (no warehouse)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-json", required=True, type=Path, help="Hugging Face config.json of the model")
    parser.add_argument("--gpu", required=True, help="GPU name, e.g. H100, H200, 'NVIDIA H100 80GB HBM3', A100-80GB")
    parser.add_argument("--gpus", required=True, type=int, help="GPUs in the tensor-parallel group")
    parser.add_argument(
        "--precision", default="fp8", choices=sorted(BYTES_PER_PARAM),
        help="weight precision; KV follows it (bf16 2 B, fp8 1 B; int4 is weight-only, KV bf16)",
    )
    parser.add_argument("--prompt", required=True, type=int, help="prompt (input) tokens per call")
    parser.add_argument("--thinking", required=True, type=int, help="thinking (reasoning) tokens per call")
    parser.add_argument("--output", required=True, type=int, help="visible output tokens per call")
    parser.add_argument("--format", default="json", choices=["json", "table"], help="output format (default json)")
    parser.add_argument("--params-b", type=float, help="total parameters in billions (overrides the estimate)")
    parser.add_argument("--active-params-b", type=float, help="active parameters per token in billions")
    parser.add_argument("--kv-dtype", choices=sorted(KV_DTYPE_BYTES), help="KV cache dtype (default: from --precision)")
    parser.add_argument("--attention-dp", action="store_true", help="data-parallel attention (no KV replication)")
    parser.add_argument("--memory-utilization", type=float, default=0.90, help="share of GPU memory usable (default 0.90)")


def run(args: argparse.Namespace) -> int:
    try:
        result = compute(args)
    except (OSError, ValueError, ConfigError, UnknownGpuError) as exc:
        print(f"thinktax size: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(render_table(result))
    return 0


def compute(args: argparse.Namespace) -> dict[str, Any]:
    """The sizing of ``args`` as a JSON-ready dict."""
    cfg = json.loads(Path(args.config_json).read_text(encoding="utf-8"))
    if not isinstance(cfg, dict):
        raise ValueError(f"{args.config_json} is not a JSON object")
    model = ModelSpec.from_config(
        cfg, name=model_name(Path(args.config_json)), params_total_b=args.params_b, params_active_b=args.active_params_b
    )
    deployment = Deployment(
        gpu_spec(args.gpu), args.gpus, args.precision, kv_dtype=args.kv_dtype,
        attention_dp=args.attention_dp, memory_utilization=args.memory_utilization,
    )
    profile = CallProfile(args.prompt, args.thinking, args.output)
    s = size(model, deployment, profile)
    t = estimate_throughput(model, deployment, profile)
    working = dict(s.working)
    working["calls_per_minute"] = t.working
    return {
        "model": model.name,
        "gpu": deployment.gpu.name,
        "gpus": deployment.gpus,
        "precision": deployment.precision,
        "kv_dtype": s.kv_dtype,
        "profile": {
            "prompt_tokens": profile.prompt_tokens,
            "thinking_tokens": profile.thinking_tokens,
            "output_tokens": profile.output_tokens,
            "total_tokens": profile.total_tokens,
        },
        "params_total_b": round(model.params_total / 1e9, 3),
        "params_active_b": round(model.params_active / 1e9, 3),
        "kv_bytes_per_token": _num(s.kv_bytes_per_token),
        "kv_bytes_per_token_long_context": _num(s.kv_bytes_per_token_long_context),
        "kv_replication": _num(s.kv_replication),
        "weights_gb": round(s.weights_gb, 3),
        "kv_gb_per_call": round(s.kv_gb_per_call, 4),
        "kv_gb_per_call_allocated": round(s.kv_gb_per_call_allocated, 4),
        "memory_gb_total": _num(s.memory_gb_total),
        "usable_gb": round(s.usable_gb, 3),
        "kv_budget_gb": round(s.kv_budget_gb, 3),
        "max_concurrent_calls": s.max_concurrent_calls,
        "fits": s.fits,
        "weights_fit": s.weights_fit,
        "decode_bound": t.decode.bound if t.decode else None,
        "efficiency": t.efficiency,
        "calls_per_minute": round(t.calls_per_minute, 3),
        "output_tokens_per_second": round(t.output_tokens_per_second, 1),
        "working": working,
    }


def model_name(path: Path) -> str:
    """'qwen3-32b_config.json' → 'qwen3-32b'; 'Qwen3-32B/config.json' → 'Qwen3-32B'."""
    stem = path.stem
    for suffix in ("_config", "-config", ".config"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return path.resolve().parent.name if stem == "config" else stem


def render_table(result: dict[str, Any]) -> str:
    """Two aligned columns: figures first, then the working."""
    rows = [(k, v) for k, v in result.items() if k not in ("working", "profile")]
    rows.insert(4, ("profile", "{prompt_tokens:,} + {thinking_tokens:,} + {output_tokens:,} tokens".format(**result["profile"])))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {_fmt(v)}" for k, v in rows]
    lines.append("")
    lines.append("working")
    lines += [f"  {k}: {v}" for k, v in result["working"].items()]
    return "\n".join(lines)


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v).lower() if isinstance(v, bool) else "-"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1 else f"{v:,.3f}".rstrip("0").rstrip(".")
    return str(v)
