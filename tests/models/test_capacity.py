"""models/capacity.py: a hand-built hour of calls whose queueing delays are worked by hand, and the
plan's replica count the smallest that meets the target (one fewer fails it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.capacity import delay_percentile, nearest_rank, queue_waits, replicas_for

# One hour. A burst at t = 0 of 8 calls in this order: long (10,000 generated tokens), short (1,000),
# long, short, ... at 0.01 s a token: 100 s and 10 s. Then 12 isolated short calls (10 s) at t = 300,
# 550, ..., 3,050 s, when every slot is free again: they never wait. 20 calls; nearest-rank p95 =
# the ceil(0.95 x 20) = 19th smallest wait (the 2nd largest), p99 = the 20th (the largest).
ARRIVALS = np.array([0.0] * 8 + [300.0 + 250 * k for k in range(12)])
SERVICE = np.array([100.0, 10.0] * 4 + [10.0] * 12)
# By hand, FIFO, each call to the slot that frees first:
#  2 slots: L1 0-100, S1 0-10, L2 10-110 (waits 10), S2 100-110 (100), L3 110-210 (110), S3 110-120
#           (110), L4 120-220 (120), S4 210-220 (210)             -> p95 = 120, p99 = 210
#  4 slots: L1, S1, L2, S2 at 0; L3 10-110 (10), S3 10-20 (10), L4 20-120 (20), S4 100-110 (100)
#                                                                  -> p95 = 20,  p99 = 100
#  6 slots: six at 0; L4 10-110 (10), S4 10-20 (10)                -> p95 = 10,  p99 = 10
#  8 slots: nobody waits                                           -> 0
BURST_WAITS = {2: [0, 0, 10, 100, 110, 110, 120, 210], 4: [0, 0, 0, 0, 10, 10, 20, 100], 6: [0] * 6 + [10, 10], 8: [0] * 8}
HOUR = [(ARRIVALS, SERVICE)]


@pytest.mark.parametrize("servers", [2, 4, 6, 8])
def test_queue_waits_of_the_burst_match_the_hand_worked_replay(servers):
    waits = queue_waits(ARRIVALS, SERVICE, servers)
    assert waits[:8].tolist() == BURST_WAITS[servers]
    assert waits[8:].tolist() == [0.0] * 12


def test_the_plan_is_the_smallest_replica_count_that_meets_the_target():
    # 2 slots per replica. Target 15 s at p95: 1 replica (2 slots) 120 s, 2 replicas (4 slots) 20 s > 15,
    # 3 replicas (6 slots) 10 s <= 15 -> 3; and 2 fails it.
    n, d = replicas_for(HOUR, slots=2, target_seconds=15, q=0.95)
    assert (n, d) == (3, 10.0)
    assert delay_percentile(HOUR, (n - 1) * 2, 0.95) == 20.0 > 15
    # target 30 s: p95 is met by 2 replicas (20 s; 1 replica: 120 s), p99 needs 3 (4 slots: 100 s)
    assert replicas_for(HOUR, 2, 30, 0.95) == (2, 20.0)
    assert delay_percentile(HOUR, 2, 0.95) == 120.0 > 30
    assert replicas_for(HOUR, 2, 30, 0.99) == (3, 10.0)
    assert delay_percentile(HOUR, 4, 0.99) == 100.0 > 30


def test_the_galloping_search_finds_what_a_linear_search_finds_on_a_bursty_heavy_tailed_hour():
    # 600 calls in bursts (Poisson bursts of 10) with log-normal thinking (median 2,000 tokens, sigma 1.2) at
    # 0.02 s a token, 4 slots a replica: the search must return the first count of 1, 2, 3, ... that meets
    # each target, and the count before it must fail it
    rng = np.random.default_rng(7)
    starts = np.sort(rng.uniform(0, 3600, 60))
    a = np.repeat(starts, 10) + rng.uniform(0, 5, 600)
    s = rng.lognormal(np.log(2000), 1.2, 600) * 0.02
    for target in (0.0, 5.0, 60.0, 600.0):
        n, d = replicas_for([(a, s)], 4, target, 0.95)
        linear = next(k for k in range(1, 1000) if delay_percentile([(a, s)], 4 * k, 0.95) <= target)
        assert n == linear and d <= target
        assert n == 1 or delay_percentile([(a, s)], 4 * (n - 1), 0.95) > target


def test_nearest_rank():
    assert nearest_rank(np.arange(1, 21, dtype=float), 0.95) == 19.0 and nearest_rank(np.array([]), 0.95) == 0.0


def test_erlang_c_by_hand_and_the_mgc_approximation_against_the_replay():
    from models.capacity import erlang_c, mgc_replicas_for, mgc_wait_quantile

    # M/M/2 with a = 1 (rho = 0.5): B(1) = 1/2, B(2) = (1 x 1/2) / (2 + 1/2) = 0.2; C = 0.2 / (1 - 0.5 x 0.8) = 1/3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # p95 wait: C = 1/3 > 0.05 -> ln((1/3) / 0.05) / (2 / 1 - 1) = ln(6.667) = 1.8971 (mean service 1 s, rate 1/s)
    assert mgc_wait_quantile(1.0, 1.0, 1.0, 2, 0.95) == pytest.approx(math.log(20 / 3))
    # Poisson arrivals (0.5 a second, 40,000 calls) and exponential service (mean 10 s) on 8 slots: M/M/8 at
    # a = 5 is exact for the formula; the seeded replay's p95 must agree within 10 %
    rng = np.random.default_rng(28)
    a = np.cumsum(rng.exponential(2.0, 40_000))
    s = rng.exponential(10.0, 40_000)
    sim = delay_percentile([(a, s)], 8, 0.95)
    assert sim == pytest.approx(mgc_wait_quantile(0.5, 10.0, 1.0, 8, 0.95), rel=0.10)
    # the plans agree on the replica count: 2 slots a replica, target twice that p95 (~8 s): 4 replicas (8
    # slots) meet it, 3 (6 slots, rho = 0.83) do not, by the replay and by the formula
    target = 2 * sim
    assert mgc_replicas_for(0.5, s, 2, target, 0.95) == replicas_for([(a, s)], 2, target, 0.95)[0] == 4
    assert delay_percentile([(a, s)], 6, 0.95) > target and mgc_wait_quantile(0.5, 10.0, 1.0, 6, 0.95) > target
