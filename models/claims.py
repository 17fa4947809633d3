"""The industry claims quoted in DOMAIN.md, recomputed from first principles.

:func:`compute_claims` works every figure from the models (configs passed in, no I/O) and
:func:`claims_table` turns them into the rows of ``docs/economics.md``'s claims-check table;
``tests/models/test_claims.py`` asserts both the figures and that the doc shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from models.breakeven import (
    TokenPrices,
    api_cost_per_call,
    breakeven_calls_per_month,
    self_host_usd_per_hour,
    self_host_usd_per_month,
)
from models.gpus import gpu_spec
from models.sizing import Deployment, size
from models.spec import CallProfile, ModelSpec
from models.throughput import estimate_throughput

REASONING_CALL = CallProfile(prompt_tokens=8_000, thinking_tokens=15_000, output_tokens=500)
PRICES = TokenPrices(input_usd_per_mtok=Decimal("2.50"), output_usd_per_mtok=Decimal("12"))
H200_USD_PER_GPU_HOUR = Decimal("2.02")
B200_USD_PER_GPU_HOUR = Decimal("3.36")
#: The claim's hypothetical model: 1.2 T parameters, 60 B active. Its KV is not claimed;
#: DeepSeek-V3's MLA figure (70,272 B/token at bf16) stands in where one call must fit.
MOE_1_2T = ModelSpec.from_catalog(
    name="1.2T MoE", params_total_b=1200, params_active_b=60, kv_bytes_per_token_bf16=70_272
)
SETUPS_1_2T = (("8×H200", "H200", 8), ("16×H200", "H200", 16), ("8×B200", "B200", 8), ("8×B300", "B300", 8))


@dataclass(frozen=True)
class ClaimsFigures:
    """Every number of the claims check, computed."""

    kv_70b_10k_fp8_bytes: float
    kv_70b_10k_all_heads_bf16_bytes: float
    h200x16_usd_per_hour: Decimal
    h200x16_usd_per_month: Decimal
    api_cost_per_call_usd: Decimal
    breakeven_calls_per_month: Decimal
    api_spend_at_50k_calls_usd: Decimal
    cost_per_call_at_40_per_min_usd: Decimal
    api_to_self_host_cost_ratio: Decimal
    b200x8_usd_per_hour: Decimal
    b200x8_usd_per_month: Decimal
    b200_saving_usd_per_month: Decimal
    moe_1_2t_weights_gb: float
    moe_1_2t_usable_gb: dict[str, float]
    moe_1_2t_kv_budget_gb: dict[str, float]
    deepseek_calls_per_minute: dict[str, float]


def compute_claims(llama_70b: ModelSpec, deepseek_v3: ModelSpec) -> ClaimsFigures:
    """Work each claim (hand-worked values in the test and in docs/economics.md)."""
    arch = llama_70b.arch
    heads = arch.num_attention_heads if arch else 64
    # the KV a 70B model would hold if every query head had its own K and V, at bf16
    all_heads = llama_70b.kv_bytes_for_tokens(10_000, 2) * heads / (arch.num_kv_heads if arch else 8)
    month = self_host_usd_per_month(16, H200_USD_PER_GPU_HOUR)
    cost = api_cost_per_call(REASONING_CALL, PRICES)
    per_call_40 = self_host_usd_per_hour(16, H200_USD_PER_GPU_HOUR) * 24 / (40 * 60 * 24)
    b200_month = self_host_usd_per_month(8, B200_USD_PER_GPU_HOUR)
    usable, budget = {}, {}
    for label, gpu, n in SETUPS_1_2T:
        s = size(MOE_1_2T, Deployment(gpu_spec(gpu), n, "fp8"), REASONING_CALL)
        usable[label], budget[label] = s.usable_gb, s.kv_budget_gb
    calls = {}
    for label, gpu, n, dp in (
        ("16×H200 TP", "H200", 16, False),
        ("16×H200 attention-DP", "H200", 16, True),
        ("8×B200 attention-DP", "B200", 8, True),
    ):
        d = Deployment(gpu_spec(gpu), n, "fp8", attention_dp=dp)
        calls[label] = estimate_throughput(deepseek_v3, d, REASONING_CALL).calls_per_minute
    be = breakeven_calls_per_month(month, cost)
    assert be is not None
    return ClaimsFigures(
        kv_70b_10k_fp8_bytes=llama_70b.kv_bytes_for_tokens(10_000, 1),
        kv_70b_10k_all_heads_bf16_bytes=all_heads,
        h200x16_usd_per_hour=self_host_usd_per_hour(16, H200_USD_PER_GPU_HOUR),
        h200x16_usd_per_month=month,
        api_cost_per_call_usd=cost,
        breakeven_calls_per_month=be,
        api_spend_at_50k_calls_usd=cost * 50_000,
        cost_per_call_at_40_per_min_usd=per_call_40,
        api_to_self_host_cost_ratio=cost / per_call_40,
        b200x8_usd_per_hour=self_host_usd_per_hour(8, B200_USD_PER_GPU_HOUR),
        b200x8_usd_per_month=b200_month,
        b200_saving_usd_per_month=month - b200_month,
        moe_1_2t_weights_gb=MOE_1_2T.weights_gb("fp8"),
        moe_1_2t_usable_gb=usable,
        moe_1_2t_kv_budget_gb=budget,
        deepseek_calls_per_minute=calls,
    )


@dataclass(frozen=True)
class ClaimRow:
    claim: str
    claimed: str
    computed: str
    verdict: str


def claims_table(f: ClaimsFigures) -> list[ClaimRow]:
    """Rows for docs/economics.md; ``computed`` strings are what the test looks for there."""
    b = f.moe_1_2t_kv_budget_gb
    c = f.deepseek_calls_per_minute
    return [
        ClaimRow(
            "KV of a 70B model (Llama-3.1-70B) for 10,000 thinking tokens at fp8",
            "24 GB",
            f"{f.kv_70b_10k_fp8_bytes / 1e9:.2f} GB (163,840 B/token × 10,000)",
            f"disagrees, {24e9 / f.kv_70b_10k_fp8_bytes:.1f}× too high: 24 GB matches "
            f"{f.kv_70b_10k_all_heads_bf16_bytes / 1e9:.1f} GB = "
            f"{f.kv_70b_10k_all_heads_bf16_bytes / 2**30:.1f} GiB, the KV if all 64 query heads had "
            "their own K and V at bf16: it ignores GQA (8 KV heads, 8×) and fp8 (2×)",
        ),
        ClaimRow(
            "16×H200 at $2.02/GPU-hour",
            "$32.32/hour = $23,593.60/month",
            f"${f.h200x16_usd_per_hour:,.2f}/hour = ${f.h200x16_usd_per_month:,.2f}/month (730 h)",
            "agrees",
        ),
        ClaimRow(
            "8k input + 15k thinking + 500 output at $2.50/$12 per Mtok",
            "$0.206",
            f"${f.api_cost_per_call_usd:.3f} = $0.020 input + $0.186 thinking and output",
            "agrees",
        ),
        ClaimRow(
            "Break-even volume for that deployment and call",
            "≈ 114,531 calls/month; rule of thumb \"above 50,000\"",
            f"{f.breakeven_calls_per_month:,.2f} calls/month; at 50,000 calls the API costs "
            f"${f.api_spend_at_50k_calls_usd:,.2f} < ${f.h200x16_usd_per_month:,.2f}",
            "agrees (114,531 is one call short by rounding); the 50,000 rule of thumb disagrees: "
            "below ~114.5k calls the API is cheaper",
        ),
        ClaimRow(
            "At 40 calls/minute a self-hosted call costs",
            "$0.0135, ~15× cheaper than $0.206",
            f"${f.cost_per_call_at_40_per_min_usd:.4f}, {f.api_to_self_host_cost_ratio:.1f}× cheaper",
            "agrees, if the GPUs are busy every hour",
        ),
        ClaimRow(
            "16×H200 sustains 30-50 reasoning calls/minute",
            "30-50 calls/min",
            f"DeepSeek-V3 (as a stand-in) at fp8, 8k+15k+500: {c['16×H200 TP']:.1f}/min with plain "
            f"tensor parallelism, {c['16×H200 attention-DP']:.1f}/min with attention data parallelism",
            "depends on the serving set-up: plain TP replicates the MLA cache on all 16 GPUs",
        ),
        ClaimRow(
            "8×B200 at $3.36/GPU-hour replaces two 8×H200 nodes",
            "$26.88/hour = $19,622.40/month, saving ~$3,971/month",
            f"${f.b200x8_usd_per_hour:,.2f}/hour = ${f.b200x8_usd_per_month:,.2f}/month, saving "
            f"${f.b200_saving_usd_per_month:,.2f}/month; DeepSeek-V3 attention-DP: "
            f"{c['8×B200 attention-DP']:.1f} calls/min on 8×B200",
            "arithmetic agrees; capacity does not: 8×B200 (1,440 GB, 64 TB/s) holds fewer calls "
            "than 16×H200 (2,256 GB, 76.8 TB/s), so per call it is dearer on this profile",
        ),
        ClaimRow(
            "1.2T-parameter MoE at fp8 needs ~1,200 GB; 8×H200 cannot hold it",
            "~1,200 GB; 8×H200 no; 16×H200, 8×B200, 8×B300 yes",
            f"weights {f.moe_1_2t_weights_gb:,.0f} GB; KV budget 8×H200 {b['8×H200']:,.0f} GB, "
            f"16×H200 {b['16×H200']:,.0f} GB, 8×B200 {b['8×B200']:,.0f} GB, 8×B300 {b['8×B300']:,.0f} GB",
            "agrees; 8×B200 fits only barely (180 GB per GPU, not 192)",
        ),
    ]
