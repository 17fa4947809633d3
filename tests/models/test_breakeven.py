"""Break-even arithmetic in Decimal, worked by hand, and its properties."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.breakeven import (
    TokenPrices,
    api_cost_per_call,
    breakeven_calls_per_month,
    capacity_calls_per_month,
    deployments_needed,
    evaluate,
    quantize_usd,
    self_host_usd_per_hour,
    self_host_usd_per_month,
)
from models.spec import CallProfile

D = Decimal
PRICES = TokenPrices(input_usd_per_mtok=D("2.50"), output_usd_per_mtok=D("12"))


def test_api_cost_per_call_domain_example() -> None:
    # 8,000 × 2.50 / 1e6 = 0.020; (15,000 + 500) × 12 / 1e6 = 0.186; total 0.206
    cost = api_cost_per_call(CallProfile(8_000, 15_000, 500), PRICES)
    assert cost == D("0.206")
    assert isinstance(cost, Decimal)


def test_cached_and_reasoning_prices() -> None:
    prices = TokenPrices(
        input_usd_per_mtok=D("2.50"), output_usd_per_mtok=D("10"),
        cached_input_usd_per_mtok=D("0.25"), reasoning_usd_per_mtok=D("8"),
    )
    # 6,000 uncached × 2.50 + 2,000 cached × 0.25 + 15,000 × 8 + 500 × 10
    # = 15,000 + 500 + 120,000 + 5,000 = 140,500 / 1e6 = 0.1405
    cost = api_cost_per_call(CallProfile(8_000, 15_000, 500, cached_prompt_tokens=2_000), prices)
    assert cost == D("0.1405")


def test_self_host_cost() -> None:
    # 16 × 2.02 = 32.32 per hour; × 730 = 23,593.60 per month
    assert self_host_usd_per_hour(16, D("2.02")) == D("32.32")
    assert self_host_usd_per_month(16, D("2.02")) == D("23593.60")
    # 8 × 3.36 × 730 = 19,622.40
    assert self_host_usd_per_month(8, D("3.36")) == D("19622.40")
    assert self_host_usd_per_month(1, D("2"), hours_per_month=D("720")) == D("1440")


def test_capacity_and_step_function() -> None:
    # 40 calls/min × 60 × 730 = 1,752,000 calls per month
    assert capacity_calls_per_month(40) == D("1752000")
    cap = D(1000)
    assert [deployments_needed(n, cap) for n in (0, 1, 1000, 1001, 2000, 2001)] == [1, 1, 1, 2, 2, 3]
    with pytest.raises(ValueError):
        deployments_needed(10, D(0))


def test_breakeven_domain_example() -> None:
    # 23,593.60 / 0.206 = 114,532.038834...; DOMAIN.md's "≈ 114,531" is one call short
    be = breakeven_calls_per_month(D("23593.60"), D("0.206"))
    assert be is not None
    assert be.quantize(D("0.01")) == D("114532.04")
    assert breakeven_calls_per_month(D(100), D(0)) is None


def test_evaluate_self_host_when_volume_is_high() -> None:
    # 300,000 calls at 0.206 = 61,800; capacity 1,752,000 -> 1 deployment at 23,593.60
    r = evaluate(
        api_calls=300_000, api_cost_per_call_usd=D("0.206"),
        self_host_usd_per_month=D("23593.60"), capacity_calls_per_month=D(1_752_000), fits=True,
    )
    assert r.api_spend_usd == D("61800.000")
    assert r.deployments_needed == 1
    assert r.savings_usd == D("38206.400")
    assert r.verdict == "self_host"
    assert r.breakeven_within_capacity
    assert r.breakeven_api_spend_usd == pytest.approx(D("23593.60"))


def test_evaluate_stay_on_api_below_breakeven() -> None:
    # 50,000 calls (the article's rule of thumb) × 0.206 = 10,300 < 23,593.60
    r = evaluate(
        api_calls=50_000, api_cost_per_call_usd=D("0.206"),
        self_host_usd_per_month=D("23593.60"), capacity_calls_per_month=D(1_752_000), fits=True,
    )
    assert r.savings_usd == D("10300.000") - D("23593.60")
    assert r.verdict == "stay_on_api"


def test_evaluate_from_observed_spend_and_step_above_capacity() -> None:
    # spend 30,000 over 150,000 calls = 0.2 per call; capacity 100,000 -> 2 deployments
    r = evaluate(
        api_calls=150_000, api_spend_usd=D("30000"),
        self_host_usd_per_month=D("10000"), capacity_calls_per_month=D(100_000), fits=True,
    )
    assert r.api_cost_per_call_usd == D("0.2")
    assert r.deployments_needed == 2
    assert r.savings_usd == D("10000")
    assert r.verdict == "self_host"
    # break-even 10,000 / 0.2 = 50,000 calls, within one deployment's 100,000
    assert r.breakeven_calls_per_month == D("50000")


def test_breakeven_beyond_capacity_never_pays() -> None:
    # one deployment: $10,000 for 10,000 calls = $1/call, API $0.50/call
    r = evaluate(
        api_calls=1_000_000, api_cost_per_call_usd=D("0.5"),
        self_host_usd_per_month=D("10000"), capacity_calls_per_month=D(10_000), fits=True,
    )
    assert r.breakeven_calls_per_month == D("20000")
    assert not r.breakeven_within_capacity
    assert r.deployments_needed == 100
    assert r.savings_usd == D("500000") - D("1000000")
    assert r.verdict == "stay_on_api"


def test_evaluate_infeasible() -> None:
    r = evaluate(
        api_calls=10_000_000, api_cost_per_call_usd=D("0.206"),
        self_host_usd_per_month=D("23593.60"), capacity_calls_per_month=D(0), fits=False,
    )
    assert r.verdict == "infeasible"
    assert r.deployments_needed is None and r.savings_usd is None
    assert not r.breakeven_within_capacity


def test_evaluate_needs_a_price() -> None:
    with pytest.raises(ValueError):
        evaluate(api_calls=0, self_host_usd_per_month=D(1), capacity_calls_per_month=D(1), fits=True)


def test_quantize_usd() -> None:
    assert quantize_usd(D("0.2060004")) == D("0.206000")
    assert str(quantize_usd(D("23593.6"))) == "23593.600000"


# ----------------------------------------------------------------- properties
money = st.decimals(min_value=D("0.01"), max_value=D("100000"), places=2)
per_call = st.decimals(min_value=D("0.000001"), max_value=D("10"), places=6)


@given(gpus=st.integers(1, 64), rate=st.decimals(min_value=D("0.10"), max_value=D("20"), places=2), cost=per_call)
def test_breakeven_times_cost_per_call_is_monthly_cost(gpus: int, rate: Decimal, cost: Decimal) -> None:
    monthly = self_host_usd_per_month(gpus, rate)
    be = breakeven_calls_per_month(monthly, cost)
    assert be is not None
    # Decimal division keeps 28 significant digits
    assert abs(be * cost - monthly) <= monthly * D("1e-25")


@given(
    calls=st.integers(0, 10_000_000),
    more=st.integers(0, 10_000_000),
    cap=st.decimals(min_value=D("1"), max_value=D("5000000"), places=0),
)
def test_deployments_needed_is_a_nondecreasing_step(calls: int, more: int, cap: Decimal) -> None:
    n = deployments_needed(calls, cap)
    assert n >= 1
    assert deployments_needed(calls + more, cap) >= n
    # n deployments serve the volume, n − 1 do not (beyond the first)
    assert n * cap >= calls
    assert n == 1 or (n - 1) * cap < calls


@given(
    tokens=st.tuples(st.integers(0, 200_000), st.integers(0, 100_000), st.integers(0, 20_000)),
    inp=money, out=money,
)
def test_api_cost_is_linear_in_tokens(tokens: tuple[int, int, int], inp: Decimal, out: Decimal) -> None:
    prompt, thinking, output = tokens
    prices = TokenPrices(inp, out)
    one = api_cost_per_call(CallProfile(prompt, thinking, output), prices)
    two = api_cost_per_call(CallProfile(2 * prompt, 2 * thinking, 2 * output), prices)
    assert two == 2 * one
