"""An independent pricer for one model call, written from the LiteLLM price sheet's own field
meanings (issue 24, item 7), not from thinktax's SQL, so the two can check each other.

It reads the real sheet (``data/real/litellm/model_prices_and_context_window.2026-07-24.json``)
with ``json.load(parse_float=Decimal)`` and prices a call given its non-overlapping token buckets
at the sheet entry the caller names (the exact key: ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
``gemini-2.5-pro``, ``azure/o3-2025-04-16``, ...). The fields, as LiteLLM documents them (USD per
token):

* ``input_cost_per_token`` — uncached prompt tokens;
* ``cache_read_input_token_cost`` — prompt tokens read from a cache (absent: the input rate);
* ``cache_creation_input_token_cost`` — prompt tokens written to a cache, 5-minute TTL (absent: the
  input rate);
* ``cache_creation_input_token_cost_above_1hr`` — cache writes with a 1-hour TTL (absent: twice the
  input rate, Anthropic's published multiplier for 1-hour writes);
* ``output_cost_per_token`` — generated tokens; thinking/reasoning tokens are billed as output
  unless the entry has ``output_cost_per_reasoning_token``;
* ``<field>_above_<N>k_tokens`` — long context: when the prompt (uncached + cached + cache write)
  is larger than N thousand tokens, every rate of the call is the ``_above_<N>k_tokens`` one (the
  largest threshold the prompt exceeds), falling back to the plain field where the sheet has no
  long-context variant of it;
* ``<field>_<tier>`` for a service tier (``flex``, ``priority``): used where the sheet has it,
  else the plain field (a tier the sheet has no rate for at all is priced as standard);
* ``provider_specific_entry.<region>`` — a multiplier on every token rate for a processing
  region (Anthropic's ``inference_geo``; only a region the entry names is an uplift).

A call paid by a reservation (Vertex AI ``trafficType = PROVISIONED_THROUGHPUT``) costs nothing per
token: :func:`price` returns 0 for ``billing="provisioned"``; :func:`on_demand_price` is what it
would have cost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

SHEET_PATH = (Path(__file__).resolve().parents[1] / "data" / "real" / "litellm"
              / "model_prices_and_context_window.2026-07-24.json")

BUCKETS = ("uncached_input_tokens", "cached_input_tokens", "cache_write_tokens", "cache_write_1h_tokens",
           "thinking_tokens", "output_tokens")


@dataclass(frozen=True)
class Buckets:
    """Non-overlapping: uncached + cached + cache_write = the whole prompt (cache_write_1h is the
    1-hour part of cache_write); thinking + output = the whole completion."""
    uncached_input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    thinking_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt(self) -> int:
        return self.uncached_input_tokens + self.cached_input_tokens + self.cache_write_tokens


def load_sheet(path: Path = SHEET_PATH) -> dict:
    with open(path) as fh:
        return json.load(fh, parse_float=Decimal)


def _num(entry: dict, key: str) -> Decimal | None:
    v = entry.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        return None
    return Decimal(v)


def long_context_suffix(entry: dict, prompt: int) -> str:
    """``_above_<N>k_tokens`` for the largest N (from the entry's input_cost_per_token_above_<N>k_tokens
    fields) that the prompt exceeds, else ''."""
    best = None
    for key in entry:
        m = re.fullmatch(r"input_cost_per_token_above_(\d+)k_tokens", key)
        if m and _num(entry, key) is not None and prompt > int(m[1]) * 1000:
            n = int(m[1])
            best = n if best is None or n > best else best
    return "" if best is None else f"_above_{best}k_tokens"


def _rate(entry: dict, base: str, lc: str, tier: str) -> Decimal | None:
    """The rate for a field: long-context and tier variants first, then the plain field."""
    t = f"_{tier}" if tier not in ("standard", "default", "") else ""
    for key in ([base + lc + t] if lc and t else []) + ([base + lc] if lc else []) + ([base + t] if t else []) + [base]:
        v = _num(entry, key)
        if v is not None:
            return v
    return None


def _rates(entry: dict, prompt: int, tier: str, region: str | None) -> dict[str, Decimal]:
    """Per-token rates of a call, already multiplied by the regional uplift."""
    if tier not in ("standard", "default", "") and not any(k.endswith(f"_{tier}") for k in entry):
        tier = "standard"  # the sheet has no rate for this tier: standard
    lc = long_context_suffix(entry, prompt)
    i = _rate(entry, "input_cost_per_token", lc, tier)
    if i is None:
        raise KeyError("the entry has no input_cost_per_token")
    o = _rate(entry, "output_cost_per_token", lc, tier)
    cr = _rate(entry, "cache_read_input_token_cost", lc, tier)
    w5 = _rate(entry, "cache_creation_input_token_cost", lc, tier)
    w1 = _rate(entry, "cache_creation_input_token_cost_above_1hr", lc, tier)
    r = _rate(entry, "output_cost_per_reasoning_token", lc, tier)
    cr = i if cr is None else cr
    w5 = i if w5 is None else w5
    w1 = 2 * i if w1 is None else w1
    r = o if r is None else r
    up = Decimal(1)
    if region:
        v = _num(entry.get("provider_specific_entry") or {}, region)
        up = v if v is not None else up
    return {"input": i * up, "cached": cr * up, "write_5m": w5 * up, "write_1h": w1 * up, "reasoning": r * up,
            "output": o * up}


def on_demand_price(entry: dict, b: Buckets, tier: str = "standard", region: str | None = None) -> Decimal:
    x = _rates(entry, b.prompt, tier, region)
    return (b.uncached_input_tokens * x["input"] + b.cached_input_tokens * x["cached"]
            + (b.cache_write_tokens - b.cache_write_1h_tokens) * x["write_5m"] + b.cache_write_1h_tokens * x["write_1h"]
            + b.thinking_tokens * x["reasoning"] + b.output_tokens * x["output"])


def thinking_price(entry: dict, b: Buckets, tier: str = "standard", region: str | None = None,
                   billing: str = "on_demand") -> Decimal:
    """The part of the call's cost that is thinking (the "thinking tax" of one call)."""
    if billing == "provisioned":
        return Decimal(0)
    return b.thinking_tokens * _rates(entry, b.prompt, tier, region)["reasoning"]


def price(entry: dict, b: Buckets, tier: str = "standard", region: str | None = None,
          billing: str = "on_demand") -> Decimal:
    if billing == "provisioned":
        return Decimal(0)
    return on_demand_price(entry, b, tier, region)
