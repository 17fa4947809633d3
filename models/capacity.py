"""Replicas for bursty reasoning load: a FIFO multi-server queue replayed on observed arrivals.

Why a simulation: a reasoning call's service time is its generated tokens (thinking + output), and
thinking is heavy-tailed (five steps or five hundred), while arrivals come in bursts. Peak
concurrency (marts.peak_capacity) sizes for the calls the API held in flight at once; it says
nothing about how long a call would wait for a free KV slot on our own GPUs when a burst of long
thinkers arrives. So the busiest observed hours are replayed through the deployment:

* a replica (one deployment) has ``slots`` KV slots: the calls of the p95 profile it holds at once
  (models.sizing); ``replicas`` replicas are ``servers = replicas x slots`` slots, served first come
  first served from one queue (a router that sends each call to the first free slot);
* a call holds its slot for ``service_seconds = (generated_tokens x t_step + slots x t_prefill) x k``:
  models.throughput's cycle at a full batch (``slots`` calls in flight, the decode step at the p50
  profile's mean context, every call in the batch prefilled once per cycle) for that call's own
  thinking + output tokens; ``k`` = estimated / given calls_per_minute when deployments.csv gives
  one (the p50 call then takes exactly ``slots x 60 / calls_per_minute``), else 1. Conservative: a
  batch less than full decodes faster;
* its queueing delay is ``start - arrival``, start = max(arrival, the earliest time a slot frees):
  the Kiefer-Wolfowitz recursion, one heap of slot free-times (heapq), O(calls x log servers);
* the p95 / p99 delay is the nearest-rank percentile over every replayed call.

``replicas_for`` returns the smallest replica count whose percentile delay is at most the target:
the delay never grows with more slots (same arrivals, same order), so a galloping search (1, 2, 4,
... then bisection) finds it in O(log replicas) replays. The loop is Python over the
replayed calls (a few thousand per hour, ``MAX_CALLS`` at most: the busiest hours are replayed, not
the whole history); there are no random draws, so the same calls give the same plan (deterministic
by construction; a tie in arrival time keeps the calls' order, the call id in the SQL).

Worked (tests/models/test_capacity.py): 8 calls at t = 0 (4 of 100 s, 4 of 10 s, alternating) and 12
isolated 10 s calls, 2 slots per replica, target 15 s at p95: 2 slots give waits up to 210 s (p95 =
the 19th of 20 = 120 s), 4 slots 20 s, 6 slots 10 s -> 3 replicas.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

MAX_CALLS = 200_000
MAX_REPLICAS = 10_000


def queue_waits(arrivals: np.ndarray, service: np.ndarray, servers: int) -> np.ndarray:
    """Queueing delay of each call (arrival order as given, sorted stably by arrival) at ``servers`` FIFO slots."""
    order = np.argsort(arrivals, kind="stable")
    a = np.asarray(arrivals, dtype=float)[order]
    s = np.asarray(service, dtype=float)[order]
    if servers < 1:
        raise ValueError("servers must be >= 1")
    free = [-math.inf] * min(servers, len(a))  # slot free-times (a heap); more slots than calls never matter
    waits = np.empty(len(a))
    for i in range(len(a)):
        f = heapq.heappop(free)
        start = a[i] if a[i] >= f else f
        waits[i] = start - a[i]
        heapq.heappush(free, start + s[i])
    out = np.empty(len(a))
    out[order] = waits
    return out


def nearest_rank(values: np.ndarray, q: float) -> float:
    """The nearest-rank q-quantile: the ceil(q x n)-th smallest value (0 for no values)."""
    if len(values) == 0:
        return 0.0
    v = np.sort(values)
    return float(v[max(math.ceil(q * len(v)), 1) - 1])


def delay_percentile(groups: list[tuple[np.ndarray, np.ndarray]], servers: int, q: float) -> float:
    """The q-quantile delay over every call of every replayed hour (each hour starts empty)."""
    waits = [queue_waits(a, s, servers) for a, s in groups if len(a)]
    return nearest_rank(np.concatenate(waits) if waits else np.array([]), q)


def replicas_for(groups: list[tuple[np.ndarray, np.ndarray]], slots: int, target_seconds: float, q: float
                 ) -> tuple[int, float]:
    """(smallest replicas whose q-quantile delay <= target, that delay); see the module docstring.

    The delay never grows with more slots, so the search gallops (1, 2, 4, ... replicas) to the first
    count that meets the target and bisects back between it and the last that did not: O(log n) replays.
    """
    if slots < 1:
        raise ValueError("slots must be >= 1")
    delays: dict[int, float] = {}

    def delay(n: int) -> float:
        if n not in delays:
            delays[n] = delay_percentile(groups, n * slots, q)
        return delays[n]

    hi = 1
    while delay(hi) > target_seconds and hi < MAX_REPLICAS:
        hi = min(hi * 2, MAX_REPLICAS)
    lo = hi // 2  # fails the target (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delay(mid) <= target_seconds:
            hi = mid
        else:
            lo = mid
    return hi, delay(hi)


# --------------------------------------------------------------------------- the M/G/c cross-check
def erlang_c(servers: int, offered: float) -> float:
    """Probability that a call waits in M/M/c (Erlang C), ``offered`` = arrival rate x mean service
    (in busy servers); 1 when ``offered >= servers`` (the queue grows without bound). Through the
    Erlang B recursion B(k) = a B(k-1) / (k + a B(k-1)), C = B / (1 - rho (1 - B)): stable for any c."""
    if offered <= 0:
        return 0.0
    if offered >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1 - rho * (1 - b))


def mgc_wait_quantile(rate: float, mean_service: float, scv_service: float, servers: int, q: float,
                      scv_arrival: float = 1.0) -> float:
    """The q-quantile of the queueing delay in G/G/c by the Allen-Cunneen approximation: M/M/c's
    P(W > t) = C(c, a) exp(-(c / E[S] - rate) t), its time scale stretched by (ca^2 + cs^2) / 2:

        t_q = 0 when C <= 1 - q, else ln(C / (1 - q)) x (ca^2 + cs^2) / 2 / (c / E[S] - rate)

    (exact for Poisson arrivals and exponential service, ca^2 = cs^2 = 1). inf when the load reaches c."""
    offered = rate * mean_service
    if offered >= servers:
        return math.inf
    c = erlang_c(servers, offered)
    if c <= 1 - q:
        return 0.0
    return math.log(c / (1 - q)) * (scv_arrival + scv_service) / 2 / (servers / mean_service - rate)


def mgc_replicas_for(rate: float, service: np.ndarray, slots: int, target_seconds: float, q: float) -> int:
    """Smallest replicas whose Allen-Cunneen q-quantile delay is at most the target (Poisson arrivals at
    ``rate`` a second, the observed service times' mean and squared coefficient of variation)."""
    if len(service) == 0 or rate <= 0:
        return 1
    mean = float(np.mean(service))
    scv = float(np.var(service) / mean ** 2) if mean > 0 else 0.0
    n = max(1, math.floor(rate * mean / slots))
    while mgc_wait_quantile(rate, mean, scv, n * slots, q) > target_seconds and n < MAX_REPLICAS:
        n += 1
    return n
