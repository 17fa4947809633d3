"""Self-host versus API: costs, capacity, break-even volume and a verdict. Money is Decimal.

    api_cost_per_call   = (uncached_prompt × input + cached_prompt × cached_input
                           + thinking × reasoning + output × output) / 1e6       [$ per Mtok]
    self_host_per_month = gpus × usd_per_gpu_hour × hours_per_month
    capacity            = calls_per_minute × 60 × hours_per_month                 [one deployment]
    deployments_needed  = max(1, ceil(api_calls / capacity))                      [a step function]
    breakeven_calls     = self_host_per_month / api_cost_per_call                 [one deployment]
    breakeven_api_spend = breakeven_calls × api_cost_per_call  (= self_host_per_month)
    savings             = api_spend − deployments_needed × self_host_per_month
    verdict             = 'infeasible'  if the model does not fit (no call fits the deployment)
                          'self_host'   if it fits and savings > 0 at the observed volume
                          'stay_on_api' otherwise

Worked (DOMAIN.md): 8k input + 15k thinking + 500 output at $2.50 / $12 per Mtok =
0.020 + 0.186 = $0.206 per call; 16 × H200 at $2.02 = $32.32/h = $23,593.60 per 730-h month;
break-even 23,593.60 / 0.206 = 114,532.04 calls per month.

If ``breakeven_calls`` exceeds one deployment's capacity, self-hosting never pays at any
volume: each extra deployment adds its full monthly cost before its calls repay it
(``breakeven_within_capacity`` is then False).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from models.spec import CallProfile

MTOK = Decimal(1_000_000)
DEFAULT_HOURS_PER_MONTH = Decimal(730)
USD = Decimal("0.000001")

Verdict = Literal["self_host", "stay_on_api", "infeasible"]


@dataclass(frozen=True)
class TokenPrices:
    """API prices in USD per million tokens. Cached input defaults to the input price and
    reasoning to the output price (how providers bill thinking)."""

    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal
    cached_input_usd_per_mtok: Decimal | None = None
    reasoning_usd_per_mtok: Decimal | None = None


def api_cost_per_call(profile: CallProfile, prices: TokenPrices) -> Decimal:
    """USD one call of ``profile`` costs through the API.

    (8,000 × 2.50 + 15,000 × 12 + 500 × 12) / 1e6 = 206,000 / 1e6 = $0.206.
    """
    cached_price = prices.cached_input_usd_per_mtok
    reasoning_price = prices.reasoning_usd_per_mtok
    uncached = profile.prompt_tokens - profile.cached_prompt_tokens
    total = (
        uncached * prices.input_usd_per_mtok
        + profile.cached_prompt_tokens * (prices.input_usd_per_mtok if cached_price is None else cached_price)
        + profile.thinking_tokens * (prices.output_usd_per_mtok if reasoning_price is None else reasoning_price)
        + profile.output_tokens * prices.output_usd_per_mtok
    )
    return total / MTOK


def self_host_usd_per_hour(gpus: int, usd_per_gpu_hour: Decimal) -> Decimal:
    """``gpus × usd_per_gpu_hour`` (16 × $2.02 = $32.32)."""
    return gpus * usd_per_gpu_hour


def self_host_usd_per_month(
    gpus: int, usd_per_gpu_hour: Decimal, hours_per_month: Decimal = DEFAULT_HOURS_PER_MONTH
) -> Decimal:
    """``gpus × usd_per_gpu_hour × hours_per_month`` (16 × 2.02 × 730 = $23,593.60).

    Paid whether or not the GPUs are busy.
    """
    return self_host_usd_per_hour(gpus, usd_per_gpu_hour) * Decimal(hours_per_month)


def capacity_calls_per_month(
    calls_per_minute: float | Decimal, hours_per_month: Decimal = DEFAULT_HOURS_PER_MONTH
) -> Decimal:
    """``calls_per_minute × 60 × hours_per_month`` (40/min × 60 × 730 = 1,752,000)."""
    return Decimal(str(calls_per_minute)) * 60 * Decimal(hours_per_month)


def deployments_needed(calls_per_month: int | Decimal, capacity: Decimal) -> int:
    """``max(1, ceil(calls / capacity))``: 1 up to capacity, then a step per capacity.

    Capacity 1,000: 0 → 1, 1,000 → 1, 1,001 → 2.
    """
    if capacity <= 0:
        raise ValueError("capacity must be > 0")
    return max(1, math.ceil(Decimal(calls_per_month) / capacity))


def breakeven_calls_per_month(monthly_cost: Decimal, cost_per_call: Decimal) -> Decimal | None:
    """``monthly_cost / api_cost_per_call`` (23,593.60 / 0.206 = 114,532.04); None when the
    API is free."""
    if cost_per_call <= 0:
        return None
    return monthly_cost / cost_per_call


@dataclass(frozen=True)
class Breakeven:
    """One month × model × deployment row of ``marts.self_host_breakeven``."""

    api_calls: int
    api_spend_usd: Decimal
    api_cost_per_call_usd: Decimal
    self_host_usd_per_month: Decimal
    capacity_calls_per_month: Decimal
    deployments_needed: int | None
    breakeven_calls_per_month: Decimal | None
    breakeven_api_spend_usd: Decimal | None
    breakeven_within_capacity: bool
    savings_usd: Decimal | None
    verdict: Verdict


def evaluate(
    *,
    api_calls: int,
    self_host_usd_per_month: Decimal,
    capacity_calls_per_month: Decimal,
    fits: bool,
    api_spend_usd: Decimal | None = None,
    api_cost_per_call_usd: Decimal | None = None,
) -> Breakeven:
    """Break-even and verdict for one deployment at an observed monthly volume.

    Give the observed ``api_spend_usd`` (then cost per call = spend / calls) or a modelled
    ``api_cost_per_call_usd`` (then spend = calls × cost per call), or both.
    """
    if api_cost_per_call_usd is None:
        if api_spend_usd is None or api_calls <= 0:
            raise ValueError("need api_cost_per_call_usd, or api_spend_usd with api_calls > 0")
        api_cost_per_call_usd = api_spend_usd / api_calls
    if api_spend_usd is None:
        api_spend_usd = api_cost_per_call_usd * api_calls
    breakeven = breakeven_calls_per_month(self_host_usd_per_month, api_cost_per_call_usd)
    feasible = fits and capacity_calls_per_month > 0
    needed = deployments_needed(api_calls, capacity_calls_per_month) if feasible else None
    savings = api_spend_usd - needed * self_host_usd_per_month if needed is not None else None
    verdict: Verdict
    if not feasible:
        verdict = "infeasible"
    elif savings is not None and savings > 0:
        verdict = "self_host"
    else:
        verdict = "stay_on_api"
    return Breakeven(
        api_calls=api_calls,
        api_spend_usd=api_spend_usd,
        api_cost_per_call_usd=api_cost_per_call_usd,
        self_host_usd_per_month=self_host_usd_per_month,
        capacity_calls_per_month=capacity_calls_per_month,
        deployments_needed=needed,
        breakeven_calls_per_month=breakeven,
        breakeven_api_spend_usd=None if breakeven is None else breakeven * api_cost_per_call_usd,
        breakeven_within_capacity=feasible and breakeven is not None and breakeven <= capacity_calls_per_month,
        savings_usd=savings,
        verdict=verdict,
    )


def quantize_usd(amount: Decimal) -> Decimal:
    """Round half-even to 6 places, the warehouse's ``DECIMAL(18,6)`` (0.2060004 → 0.206000)."""
    return amount.quantize(USD)
