"""Cross-check (issue 14): a few hundred generated calls, in every usage shape, tier and size, priced
by the pipeline (core.call_costs) and by an independent Python implementation of the published
rules that reads the same real LiteLLM snapshot JSON directly (no SQL, no thinktax code). Every
call must agree to 1e-9 USD (the issue asks for 1e-6).

The rules, as implemented below (docs/economics.md "Exact API cost" gives the providers' wording):
* tokens split into uncached / cached / cache write (5-minute and 1-hour) / thinking / output;
* long context: the largest ``input_cost_per_token_above_<N>k_tokens`` the prompt (uncached + cached
  + cache write) exceeds prices the whole call (xAI: from the threshold on);
* service tier flex / priority: the ``_<tier>`` field, else the field without it (LiteLLM's
  fallback); a tier with no field at all is standard; under long context ``_above_<N>k_tokens_<tier>``,
  else ``_above_<N>k_tokens``, else the tier's, else the standard field;
* batch: the ``_batches`` field (at standard context size), else 50% of the standard-tier rate at the
  call's context size;
* cached / cache-write default to the input rate, reasoning to the output rate; a 1-hour cache write
  without a price is 2 x the input rate;
* regional uplift (``regional_processing_uplift_multiplier_<region>``, else Anthropic's
  ``provider_specific_entry.<region>``) multiplies every token rate; web search: queries x the per-query price of the
  context size (medium when not given).
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import build_warehouse, real_sheet_landing

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"
SHEET = json.loads(REAL.read_text(), parse_float=D)
N_CALLS = 480

MODELS = [  # (sheet key, request provider, usage shapes)
    ("o3", "openai", ("chat", "responses")), ("o4-mini", "openai", ("chat", "responses")),
    ("gpt-5", "openai", ("chat", "responses")), ("gpt-5-mini", "openai", ("responses",)),
    ("gpt-5.4", "openai", ("chat", "responses")), ("gpt-4.1", "openai", ("chat",)),
    ("gpt-4o-search-preview", "openai", ("responses",)),
    ("claude-sonnet-4-5", "anthropic", ("anthropic",)), ("claude-sonnet-4-20250514", "anthropic", ("anthropic",)),
    ("claude-opus-4-1", "anthropic", ("anthropic",)), ("claude-haiku-4-5", "anthropic", ("anthropic",)),
    ("claude-opus-4-6", "anthropic", ("anthropic",)),
    ("gemini/gemini-2.5-pro", "gemini", ("gemini",)), ("gemini/gemini-2.5-flash", "gemini", ("gemini",)),
    ("deepseek/deepseek-reasoner", "deepseek", ("chat",)), ("xai/grok-4-1-fast-reasoning", "xai", ("chat",)),
]
TIER_SUFFIX = {"flex": "_flex", "priority": "_priority"}


# ------------------------------------------------------------------ the independent pricer

def _get(e, key):
    v = e.get(key)
    return D(v) if isinstance(v, (int, D)) and not isinstance(v, bool) else None


def _first(e, keys):
    for k in keys:
        v = _get(e, k)
        if v is not None:
            return v
    return None


def expected_cost(e: dict, provider: str, c: dict) -> D:
    prompt = c["uncached"] + c["cached"] + c["write"]
    lcs = sorted(((int(m[1]) * 1000, f"_above_{m[1]}k_tokens") for k in e
                  if (m := re.fullmatch(r"input_cost_per_token_above_(\d+)k_tokens", k)) and _get(e, k) is not None),
                 reverse=True)
    lc = next((s for n, s in lcs if prompt > n or (provider == "xai" and prompt == n)), "")
    tier = c["tier"]
    if tier in TIER_SUFFIX and not any(k.endswith(TIER_SUFFIX[tier]) and "cost" in k for k in e):
        tier = "standard"  # the sheet has no rate for the tier
    t = TIER_SUFFIX.get(tier, "")
    orders = [lc + t, lc, t, ""] if tier in TIER_SUFFIX else [lc, ""]

    def rate(base):
        return _first(e, [base + s for s in orders])

    def cached_field():
        v = rate("cache_read_input_token_cost")
        return v if v is not None else rate("input_cost_per_token_cache_hit")

    i = rate("input_cost_per_token")
    o = rate("output_cost_per_token")
    cr = cached_field()
    cr = i if cr is None else cr
    w = rate("cache_creation_input_token_cost")
    w = i if w is None else w
    r = None
    for s in orders:
        r = _first(e, ["output_cost_per_reasoning_token" + s, "output_cost_per_token" + s])
        if r is not None:
            break
    w1 = (_first(e, [f"cache_creation_input_token_cost_above_1hr{lc}" + t] if t else []) if lc else None)
    if lc:
        w1 = w1 if w1 is not None else _get(e, f"cache_creation_input_token_cost_above_1hr{lc}")
    else:
        w1 = _first(e, [f"cache_creation_input_token_cost_above_1hr{t}", "cache_creation_input_token_cost_above_1hr"] if t
                    else ["cache_creation_input_token_cost_above_1hr"])
    w1 = 2 * i if w1 is None else w1
    if tier == "batch":
        def batch(base, standard):
            v = _get(e, base + lc + "_batches") if lc else _get(e, base + "_batches")
            return v if v is not None else standard / 2
        i, cr, w, o = (batch("input_cost_per_token", i), batch("cache_read_input_token_cost", cr),
                       batch("cache_creation_input_token_cost", w), batch("output_cost_per_token", o))
        r = batch("output_cost_per_reasoning_token", r)
        w1 = (_get(e, f"cache_creation_input_token_cost_above_1hr{lc}_batches") if lc
              else _get(e, "cache_creation_input_token_cost_above_1hr_batches")) or w1 / 2
    up = None
    if c["region"]:
        up = _get(e, f"regional_processing_uplift_multiplier_{c['region']}") or _get(e.get("provider_specific_entry") or {}, c["region"])
    up = up or D(1)
    tokens = (c["uncached"] * i + c["cached"] * cr + (c["write"] - c["write_1h"]) * w + c["write_1h"] * w1
              + c["thinking"] * r + c["output"] * o) * up
    fee = D(0)
    if c["searches"]:
        sizes = e.get("search_context_cost_per_query") or {}  # none on the sheet: no fee (the call is flagged)
        per_query = sizes.get(f"search_context_size_{c['size'] or 'medium'}", sizes.get("search_context_size_medium"))
        fee = D(per_query or 0) * c["searches"]
    return tokens + fee


# ------------------------------------------------------------------ the generated calls

def generate(rng: random.Random) -> list[tuple[dict, dict, str, str]]:
    out = []
    for n in range(N_CALLS):
        key, provider, shapes = MODELS[n % len(MODELS)]
        shape = rng.choice(shapes)
        size = rng.choice(["small", "small", "medium", "large", "edge"])
        if size == "edge":  # exactly at a threshold of the model, or 200k
            lcs = [int(m[1]) * 1000 for k in SHEET[key] if (m := re.fullmatch(r"input_cost_per_token_above_(\d+)k_tokens", k))]
            prompt = rng.choice(lcs or [200_000]) + rng.choice([0, 1])
        else:
            prompt = {"small": rng.randint(50, 5_000), "medium": rng.randint(5_000, 120_000),
                      "large": rng.randint(150_000, 400_000)}[size]
        cached = rng.randint(0, prompt // 2) if rng.random() < 0.6 else 0
        write = rng.randint(0, (prompt - cached) // 2) if shape == "anthropic" and rng.random() < 0.5 else 0
        write_1h = rng.randint(0, write) if write and rng.random() < 0.5 else 0
        thinking = rng.randint(0, 20_000) if rng.random() < 0.7 else 0
        output = rng.randint(1, 5_000)
        searches = rng.randint(1, 3) if (shape == "anthropic" or key == "gpt-4o-search-preview") and rng.random() < 0.4 else 0
        ctx_size = rng.choice([None, "low", "medium", "high"]) if key == "gpt-4o-search-preview" and searches else None
        region, tier, top = None, "standard", {}
        rid = f"x{n:04d}"
        if provider == "openai":
            choice = rng.choice([None, "default", "auto", "flex", "priority", "batch"])
            if choice == "batch":
                top["batch"], tier = True, "batch"
            elif choice:
                top["service_tier"] = choice
                tier = choice if choice in ("flex", "priority") else "standard"
            region = rng.choice([None, None, "eu", "us"])
            if region:
                top["region"] = region
        elif provider == "anthropic":
            choice = rng.choice([None, "standard", "batch", "batch_flag"])
            tier = "batch" if choice in ("batch", "batch_flag") else "standard"
            if choice == "batch_flag":
                top["batch"] = True
        elif provider == "gemini":
            choice = rng.choice([None, "priority", "batch"])
            if choice == "priority":
                top["service_tier"], tier = "priority", "priority"
            elif choice == "batch":
                top["batch"], tier = True, "batch"
        ts = "2026-07-30T12:00:00Z"
        if shape == "chat":
            line = {"ts": ts, "request_id": rid, "model": key, "provider": provider, **top,
                    "usage": {"prompt_tokens": prompt, "completion_tokens": thinking + output,
                              "prompt_tokens_details": {"cached_tokens": cached},
                              "completion_tokens_details": {"reasoning_tokens": thinking}}}
            buckets = (prompt - cached, cached, 0, 0)
        elif shape == "responses":
            line = {"ts": ts, "request_id": rid, "model": key, "provider": provider, **top,
                    "usage": {"input_tokens": prompt, "output_tokens": thinking + output,
                              "input_tokens_details": {"cached_tokens": cached},
                              "output_tokens_details": {"reasoning_tokens": thinking}}}
            if searches:
                line["output"] = [{"type": "web_search_call"}] * searches + [{"type": "message"}]
                if ctx_size:
                    line["tools"] = [{"type": "web_search_preview", "search_context_size": ctx_size}]
            buckets = (prompt - cached, cached, 0, 0)
        elif shape == "anthropic":
            uncached = prompt - cached - write
            usage = {"input_tokens": uncached, "cache_read_input_tokens": cached, "cache_creation_input_tokens": write,
                     "output_tokens": thinking + output, "thinking_tokens": thinking}
            if write:
                usage["cache_creation"] = {"ephemeral_5m_input_tokens": write - write_1h, "ephemeral_1h_input_tokens": write_1h}
            if choice in ("standard", "batch"):
                usage["service_tier"] = choice
            geo = rng.choice([None, "us", "global"])
            if geo:
                usage["inference_geo"] = geo
                region = geo
            if searches:
                usage["server_tool_use"] = {"web_search_requests": searches}
            line = {"ts": ts, "request_id": rid, "model": key, "provider": provider, **top, "usage": usage}
            buckets = (uncached, cached, write, write_1h)
        else:  # gemini: promptTokenCount includes cached; tool-use prompt on top; candidates exclude thoughts
            tool = rng.randint(0, min(500, prompt - cached)) if rng.random() < 0.3 else 0  # promptTokenCount >= cached
            line = {"ts": ts, "request_id": rid, "model": key, "provider": provider, **top,
                    "usageMetadata": {"promptTokenCount": prompt - tool, "cachedContentTokenCount": cached,
                                      "candidatesTokenCount": output, "thoughtsTokenCount": thinking,
                                      "toolUsePromptTokenCount": tool}}
            buckets = (prompt - cached, cached, 0, 0)
        call = {"uncached": buckets[0], "cached": buckets[1], "write": buckets[2], "write_1h": buckets[3],
                "thinking": thinking, "output": output, "tier": tier, "region": region,
                "searches": searches, "size": ctx_size}
        out.append((line, call, key, provider))
    return out


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    root = tmp_path_factory.mktemp("crosscheck")
    calls = generate(random.Random(14))
    landing = real_sheet_landing(root, {"calls.jsonl": [c[0] for c in calls]}, REAL)
    con, summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    bad = con.sql("SELECT line, field, reason FROM ops.quarantine q JOIN ops.ingested_files f USING (file_id) "
                  "WHERE f.file LIKE 'telemetry/%'").fetchall()
    assert bad == []
    got = {r[0]: r[1:] for r in con.sql(
        "SELECT request_id, cost_usd, price_model, price_basis FROM core.call_costs").fetchall()}
    plain = con.sql(
        "SELECT c.request_id, c.uncached_input_tokens, c.cached_input_tokens, c.cache_write_tokens, c.thinking_tokens, "
        "c.output_tokens, c.cost_usd, v.input_usd_per_mtok, v.cached_input_usd_per_mtok, v.cache_write_usd_per_mtok, "
        "v.reasoning_usd_per_mtok, v.output_usd_per_mtok FROM core.call_costs c "
        "JOIN core.llm_price_versions v USING (price_version_id) "
        "WHERE c.price_basis = 'standard' AND c.cache_write_1h_tokens = 0 AND c.web_search_requests = 0").fetchall()
    con.close()
    return calls, got, plain


def test_pipeline_matches_the_published_rules_call_by_call(priced):
    calls, got, _ = priced
    assert len(got) == N_CALLS
    wrong = []
    for line, call, key, _provider in calls:
        cost, price_model, _basis = got[line["request_id"]]
        # the sheet entry the pipeline priced with has the same rates as the requested key
        entry = SHEET[price_model]
        want = expected_cost(entry, entry["litellm_provider"], call)
        if cost is None or abs(cost - want) > D("1e-9"):
            wrong.append((line["request_id"], key, call, cost, want))
    assert wrong == [], f"{len(wrong)} of {N_CALLS} calls differ, e.g. {wrong[:3]}"


def test_the_generated_set_covers_every_modifier(priced):
    # not a vacuous check: the calls do exercise every basis the issue names
    _, got, _ = priced
    bases = {b for _, _, b in got.values()}
    for want in ("standard", "batch", "flex", "priority", "above_200k_tokens", "above_272k_tokens",
                 "above_128k_tokens", "above_200k_tokens+priority", "regional_eu", "regional_us"):
        assert want in bases, (want, sorted(bases))
    assert any(b.startswith("batch+regional_") for b in bases), sorted(bases)
    assert any(b.startswith("above_") and "+batch" in b for b in bases), sorted(bases)
    calls = [c for _, c, _, _ in priced[0]]
    assert sum(c["write_1h"] > 0 for c in calls) >= 20
    assert sum(c["searches"] > 0 for c in calls) >= 20


def test_a_call_without_modifiers_costs_its_buckets_at_the_standard_version(priced):
    # the property of before: uncached x input + cached x cached + write x write + thinking x reasoning
    # + output x output, at the standard price version in force (core.llm_price_versions), per million
    _, _, plain = priced
    assert len(plain) >= 100
    for rid, unc, cac, wr, th, out, cost, i, c, w, r, o in plain:
        want = (unc * i + cac * c + wr * w + th * r + out * o) / 1_000_000
        assert cost == want, rid
