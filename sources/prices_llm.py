"""LLM API price sheets (``landing/prices/llm/``) -> ``stg.llm_prices``.

Three formats, told apart by content (:data:`SPECS`, in sniffing order):

``litellm_json`` -- LiteLLM ``model_prices_and_context_window.json``
    A JSON object ``{model: {field: value}}`` with prices in USD **per token**. Numbers are read
    with ``parse_float=Decimal``, so ``price x 1e6`` is exact. Not models: ``sample_spec`` (the
    schema doc), ``last_updated`` (added by mirrors), any value that is not an object. An entry
    without a text-token price (image, audio, per-second, per-query pricing only) is skipped
    and counted in ``meta["skipped"]`` (by reason in ``meta["skipped_reasons"]``), not rejected.
    ``provider`` = ``litellm_provider`` lower-cased; ``model`` = the key as written.

    Token-price fields map to columns; suffixes on them make separate **price kinds**::

        input_cost_per_token             -> input_usd_per_mtok
        output_cost_per_token            -> output_usd_per_mtok
        cache_read_input_token_cost      -> cached_input_usd_per_mtok
        input_cost_per_token_cache_hit   -> cached_input_usd_per_mtok (DeepSeek's spelling;
                                            used only when cache_read_... is absent)
        cache_creation_input_token_cost  -> cache_write_usd_per_mtok
        output_cost_per_reasoning_token  -> reasoning_usd_per_mtok

        (no suffix) -> 'standard';  _batches / _batch_requests -> 'batch';  _priority; _flex;
        _above_200k_tokens (any _above_<N>k_tokens) -> 'above_200k_tokens';
        combined in the order context tier, cache TTL, service tier:
        _above_272k_tokens_priority -> 'above_272k_tokens_priority';
        cache_creation_input_token_cost_above_1hr -> kind 'cache_1hr' (Anthropic's 1-hour cache
        write price; that row carries only cache_write_usd_per_mtok).

    A kind row holds only the fields the sheet gives for that kind (NULL otherwise; the staging
    table's NULL rule applies: cached/cache-write NULL = the input price, reasoning NULL = the
    output price). Issue 44: the token prices by modality (``input_cost_per_audio_token``,
    ``cache_read_input_audio_token_cost`` -- else ``cache_creation_input_audio_token_cost``,
    LiteLLM's field for gpt-realtime's cached audio input --, ``input_cost_per_image_token``,
    ``input_cost_per_video_token``, ``output_cost_per_audio_token``, ``output_cost_per_image_token``,
    ``output_cost_per_video_token``) take the same suffixes; per-unit prices are USD per image
    (``output_cost_per_image``; ``input_cost_per_image`` of an ``image_generation`` entry) and per
    second of video (``output_cost_per_video_per_second``; ``output_cost_per_second`` of a
    ``video_generation`` entry; ``output_cost_per_second_<res>`` -> kind ``video_<res>``). A key
    naming quality and size (``[prefix/][quality/]W-x-H/model`` without token prices) is the
    model's kind ``image_[<quality>_]<W>x<H>`` (its per-image price, else ``input_cost_per_pixel`` x
    W x H). Other fields (per input image or second, Databricks DBUs, text-to-speech seconds...)
    are ignored; a field that looks like a token price with a suffix we do not know is counted in
    ``meta["unrecognised_fields"]`` rather than guessed.
    ``line`` is the physical line of the model's key in the file (rows of one model share it).

``openrouter_json`` -- OpenRouter ``GET /api/v1/models`` response
    ``{"data": [{"id": "openai/o3", "pricing": {"prompt": "0.000002", ...}}, ...]}``; prices are
    strings of USD per token. ``provider`` = the id's prefix before ``/``, ``model`` = the id.
    ``prompt``, ``completion``, ``internal_reasoning``, ``input_cache_read``, ``input_cache_write``
    map to input, output, reasoning, cached input, cache write; ``audio``, ``audio_output``,
    ``input_audio_cache`` to the audio prices and ``image_output`` (USD per image) to
    usd_per_output_image (issue 44); one 'standard' row per model.
    ``"-1"`` marks router / variable pricing (e.g. ``openrouter/auto``): skipped, counted in
    ``meta["skipped"]``. ``"0"`` is a real free price -- except ``internal_reasoning = "0"`` next
    to a non-zero completion price, which OpenRouter lists for models that bill thinking as
    completion tokens: it is stored as NULL (= the output price) so thinking is never costed at
    $0 by accident (counted in ``meta["reasoning_zero_as_output"]``).
    ``supports_reasoning`` = ``"reasoning"`` in ``supported_parameters`` (NULL when that list is
    absent). ``line`` is the 1-based position of the model in ``data`` (API responses are
    usually one line).

``thinktax_csv`` -- the thinktax price CSV (DESIGN.md section 2)
    Columns by header name (case and whitespace ignored, any order, extra columns ignored).
    Required: ``provider, model, input_usd_per_mtok, output_usd_per_mtok``. Optional:
    ``effective_from`` (overrides the file-name date), ``cached_input_usd_per_mtok``,
    ``cache_write_usd_per_mtok``, ``reasoning_usd_per_mtok`` (empty -> NULL), ``currency``
    (empty -> USD; another currency needs a rate in ``ctx.fx_usd_per_unit`` and is converted
    exactly), ``price_kind`` (default 'standard'), ``supports_reasoning`` (true/false); issue 44:
    the prices by modality (``audio_input_usd_per_mtok``, ``cached_audio_input_usd_per_mtok``,
    ``image_input_usd_per_mtok``, ``video_input_usd_per_mtok``, ``audio_output_usd_per_mtok``,
    ``image_output_usd_per_mtok``, ``video_output_usd_per_mtok``) and per unit
    (``usd_per_output_image``, ``usd_per_output_video_second``); a row giving any of them may leave
    the text-token prices empty.
    ``line`` is the physical line (header = line 1).

Every format rejects a price that is not a finite number, is negative, or is above
:data:`MAX_USD_PER_MTOK` per million tokens (a per-1K price typed as per-1M). Per-million prices
are rounded half-even to 9 decimals (DECIMAL(18,9)) only where the sheet has more digits than
that (float noise such as ``2.9999900000000002e-06``); ``meta["rounded"]`` counts them.

The effective date is the first ISO date in the file name, else the UTC day of ingestion;
``meta["effective_from"]`` holds it (a ``datetime.date``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from decimal import Decimal
from json.decoder import scanstring
from typing import Any

from sources._price_common import (
    RowsBase,
    default_effective_from,
    parse_day,
    parse_decimal,
    quantize,
    usd_rate,
)
from sources import contract
from sources.csvutil import CsvSheet, decode_text, header_names
from sources.base import ParseContext, Parsed, Reject, SourceFormatError, head_text
from sources.contract import MAX_UPLIFT, MAX_USD_PER_MTOK, MAX_USD_PER_REQUEST
from sources.base import SourceSpec

TABLE = "stg.llm_prices"
_MTOK = 6  # per token -> per million tokens: scaleb(6)
_SCALE = 9  # DECIMAL(18,9)

PRICE_COLUMNS = (
    "input_usd_per_mtok",
    "cached_input_usd_per_mtok",
    "cache_write_usd_per_mtok",
    "output_usd_per_mtok",
    "reasoning_usd_per_mtok",
)
# Pricing modifiers of a price kind (migration 100): the 1-hour cache-write price per million
# tokens, per-request fees in USD per request (web search: the medium / only context size, and
# low / high where they differ) and regional-processing uplift multipliers.
MTOK_EXTRAS = ("cache_write_1h_usd_per_mtok",)
FEE_COLUMNS = ("usd_per_request_fee", "web_search_usd_per_query_low", "web_search_usd_per_query_high")
UPLIFT_COLUMNS = ("regional_uplift_eu", "regional_uplift_us")
# issue 44: prices by modality (per million tokens) and per unit (USD per image / second of video)
MODALITY_COLUMNS = tuple(c for c, _ in contract.MODALITY_PRICE_COLUMNS)
UNIT_COLUMNS = ("usd_per_output_image", "usd_per_output_video_second")
SCHEMA = contract.table(TABLE).arrow_schema()


class _Rows(RowsBase):
    """Accumulates good rows, rejects and counters for one file."""

    schema = SCHEMA
    table = TABLE

    def price(self, value: Any, field: str) -> tuple[Decimal | None, str | None]:
        """Validate a per-million price; returns (value rounded to 9 places, None) or (None, reason)."""
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return None, f"not a number: {value!r}"
        value = Decimal(value)
        if not value.is_finite():
            return None, f"not a finite number: {value}"
        if value < 0:
            return None, f"negative price {value} USD per million tokens"
        if value > MAX_USD_PER_MTOK:
            return None, (
                f"{value.normalize():f} USD per million tokens is above the plausible maximum "
                f"{MAX_USD_PER_MTOK} (price per 1K mistaken for per 1M?)"
            )
        q, changed = quantize(value, _SCALE)
        self.rounded += changed
        return q, None

    def fee(self, value: Any) -> tuple[Decimal | None, str | None]:
        """Validate a per-request fee in USD (already converted to USD)."""
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return None, f"not a number: {value!r}"
        value = Decimal(value)
        if not value.is_finite() or value < 0:
            return None, f"not a non-negative finite number: {value}"
        if value > MAX_USD_PER_REQUEST:
            return None, f"{value.normalize():f} USD per request is above the plausible maximum {MAX_USD_PER_REQUEST}"
        q, changed = quantize(value, _SCALE)
        self.rounded += changed
        return q, None

    def uplift(self, value: Any) -> tuple[Decimal | None, str | None]:
        """Validate a regional-processing multiplier (1.1 = +10%)."""
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return None, f"not a number: {value!r}"
        value = Decimal(value)
        if not value.is_finite() or value < 1 or value > MAX_UPLIFT:
            return None, f"a multiplier between 1 and {MAX_UPLIFT} expected, got {value}"
        q, changed = quantize(value, 6)
        if changed:
            return None, f"more than 6 decimals: {value}"
        return q, None

    def add(self, line: int, provider: str, model: str, kind: str, prices: dict[str, Decimal | None],
            supports_reasoning: bool | None, effective_from: dt.date | None = None, currency: str = "USD") -> None:
        c = self.cols
        c["line"].append(line)
        c["provider"].append(provider)
        c["model"].append(model)
        c["price_kind"].append(kind)
        c["effective_from"].append(effective_from or self.effective_from)
        for col in PRICE_COLUMNS:
            c[col].append(prices.get(col))
        c["currency"].append(currency)
        c["supports_reasoning"].append(supports_reasoning)
        c["source_format"].append(self.fmt)
        for col in MTOK_EXTRAS + FEE_COLUMNS + UPLIFT_COLUMNS + MODALITY_COLUMNS + UNIT_COLUMNS:
            c[col].append(prices.get(col))


# --------------------------------------------------------------------------------------------
# JSON scanning with positions (the json module gives values, not where they start)

_WS = re.compile(r"[ \t\n\r]*")


def _json_error(text: str, pos: int, msg: str) -> SourceFormatError:
    line = text.count("\n", 0, pos) + 1
    msg = f"invalid JSON: {msg.removesuffix(' starting at')}"
    if pos >= len(text) or not text.rstrip().endswith(("}", "]")):
        msg = f"truncated JSON (the document is not closed): {msg}"
    return SourceFormatError(msg, line=line)


def _object_members(text: str, decoder: json.JSONDecoder):
    """Yield ``(key, value_start_offset, value)`` for each member of the top-level JSON object."""
    i = _WS.match(text, 0).end()
    if i >= len(text):
        raise SourceFormatError("empty file", line=1)
    if text[i] != "{":
        raise _json_error(text, i, "expected a JSON object at the top level")
    i = _WS.match(text, i + 1).end()
    if text.startswith("}", i):
        i += 1
    else:
        while True:
            if not text.startswith('"', i):
                raise _json_error(text, i, "expected a quoted key")
            try:
                key, i = scanstring(text, i + 1)
                i = _WS.match(text, i).end()
                if not text.startswith(":", i):
                    raise _json_error(text, i, f"expected ':' after key {key!r}")
                start = _WS.match(text, i + 1).end()
                value, i = decoder.raw_decode(text, start)
            except json.JSONDecodeError as exc:
                raise _json_error(text, exc.pos, exc.msg) from None
            yield key, start, value
            i = _WS.match(text, i).end()
            if text.startswith(",", i):
                i = _WS.match(text, i + 1).end()
                continue
            if text.startswith("}", i):
                i += 1
                break
            raise _json_error(text, i, "expected ',' or '}'")
    i = _WS.match(text, i).end()
    if i < len(text):
        raise _json_error(text, i, "extra data after the JSON object")


def _decimal_constant(name: str) -> Decimal:
    return Decimal(name.replace("Infinity", "Inf"))  # NaN/Infinity -> non-finite Decimal, rejected per row


_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_decimal_constant)

# --------------------------------------------------------------------------------------------
# LiteLLM

_LITELLM_BASE = {
    "input_cost_per_token": "input_usd_per_mtok",
    "output_cost_per_token": "output_usd_per_mtok",
    "cache_read_input_token_cost": "cached_input_usd_per_mtok",
    "cache_creation_input_token_cost": "cache_write_usd_per_mtok",
    "output_cost_per_reasoning_token": "reasoning_usd_per_mtok",
    # issue 44: token prices by modality (the same suffixes make price kinds)
    "input_cost_per_audio_token": "audio_input_usd_per_mtok",
    "cache_read_input_audio_token_cost": "cached_audio_input_usd_per_mtok",
    # LiteLLM's gpt-realtime entry gives OpenAI's cached audio input price ($0.40/M,
    # openai.com/api/pricing) under this name; OpenAI bills no cache writes
    "cache_creation_input_audio_token_cost": "cached_audio_input_usd_per_mtok@creation",
    "input_cost_per_image_token": "image_input_usd_per_mtok",
    "input_cost_per_video_token": "video_input_usd_per_mtok",
    "output_cost_per_audio_token": "audio_output_usd_per_mtok",
    "output_cost_per_image_token": "image_output_usd_per_mtok",
    "output_cost_per_video_token": "video_output_usd_per_mtok",
}
# per-unit prices (USD per image / per second, not scaled): field -> column; ``None`` = only for
# an entry whose ``mode`` is the one named (LiteLLM spells an image model's per-image price
# input_cost_per_image, and output_cost_per_second is also a text-to-speech price)
_LITELLM_UNITS = {
    # an image model's per-pixel price, on a key that names the size ('hd/1024-x-1024/dall-e-3'):
    # x width x height is its price per image (LiteLLM's own rule for these keys)
    "input_cost_per_pixel": ("usd_per_output_image@pixel", "image_generation"),
    "output_cost_per_image": ("usd_per_output_image", None),
    "input_cost_per_image": ("usd_per_output_image", "image_generation"),
    "output_cost_per_video_per_second": ("usd_per_output_video_second", None),
    "output_cost_per_second": ("usd_per_output_video_second", "video_generation"),
}
_UNIT_FIELD = re.compile(r"(" + "|".join(sorted(_LITELLM_UNITS, key=len, reverse=True)) + r")(?:_([0-9]+p))?")
# an image model priced per image by quality and size: LiteLLM keys '[prefix/][quality/]W-x-H/model'
_IMAGE_KEY = re.compile(r"((?:[a-z0-9_.-]+/)*?)(?:(low|medium|high|standard|hd)/)?([0-9]+)-x-([0-9]+)/([^/]+)")
_LITELLM_FIELD = re.compile(r"(" + "|".join(_LITELLM_BASE) + r")((?:_[a-z0-9]+)*)")
_QUALIFIER = re.compile(r"_(above_\d+k_tokens|above_1hr|batch_requests|batches|priority|flex|cache_hit)")
_SERVICE = {"batches": "batch", "batch_requests": "batch", "priority": "priority", "flex": "flex"}
_NOT_MODELS = {"sample_spec"}


def _litellm_field(field: str) -> tuple[str, str] | None | bool:
    """``field`` -> (column, price_kind); None if not a text-token price; False if unrecognised."""
    m = _LITELLM_FIELD.fullmatch(field)
    if not m:
        return None
    base, rest = m[1], m[2]
    column = _LITELLM_BASE[base]
    context: list[str] = []
    ttl: list[str] = []
    service: list[str] = []
    pos = 0
    while pos < len(rest):
        q = _QUALIFIER.match(rest, pos)
        if not q:
            return False
        pos = q.end()
        tag = q[1]
        if tag == "cache_hit":
            if base != "input_cost_per_token" or context or ttl or service:
                return False
            column = "cached_input_usd_per_mtok@cache_hit"
        elif tag == "above_1hr":
            if base != "cache_creation_input_token_cost":
                return False
            ttl.append("cache_1hr")
        elif tag in _SERVICE:
            service.append(_SERVICE[tag])
        else:
            context.append(tag)
    if len(context) > 1 or len(ttl) > 1 or len(service) > 1:
        return False
    return column, "_".join(context + ttl + service) or "standard"


def _litellm_unit(field: str, mode: Any) -> tuple[str, str] | None:
    """A per-unit price field -> (column, price_kind): ``output_cost_per_second_1080p`` is kind
    'video_1080p' (per second by resolution); None for any other field, or one of another mode."""
    m = _UNIT_FIELD.fullmatch(field)
    if not m:
        return None
    column, only_mode = _LITELLM_UNITS[m[1]]
    if only_mode is not None and mode != only_mode:
        return None
    if m[2] and column != "usd_per_output_video_second":
        return None
    return column, f"video_{m[2]}" if m[2] else "standard"


def sniff_litellm(data: bytes, name: str) -> bool:
    head = head_text(data, 65536)
    return (
        head.startswith("{")
        and re.search(r'"(?:input_cost_per_token|litellm_provider)"\s*:', head) is not None
        and re.match(r'\{\s*"data"\s*:\s*\[', head) is None
    )


def parse_litellm(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    text = decode_text(data)
    out = _Rows("litellm_json", default_effective_from(name, ctx))
    unrecognised: Counter[str] = Counter()
    seen: dict[str, int] = {}
    entries: list[tuple[str, int, Any]] = []
    line, last = 1, 0
    for key, start, value in _object_members(text, _DECODER):
        line += text.count("\n", last, start)
        last = start
        if key in seen:  # json.loads semantics: the last one wins
            entries[seen[key]] = (key, entries[seen[key]][1], None)
            out.skipped["duplicate_key"] += 1
        seen[key] = len(entries)
        entries.append((key, line, value))

    for model, line, entry in entries:
        if entry is None:
            continue  # superseded duplicate
        if model in _NOT_MODELS:
            out.skipped["not_a_model"] += 1
            continue
        if not isinstance(entry, dict):
            out.skipped["not_a_model"] += 1
            continue
        kinds: dict[str, dict[str, tuple[str, Any]]] = {}
        sized = _IMAGE_KEY.fullmatch(model)
        if sized and any(_litellm_field(f) for f, v in entry.items() if v is not None):
            sized = None  # a sized key with token prices (azure/hd/1024-x-1024/dall-e-3) stays a model of its own
        for field, value in entry.items():
            target = _litellm_field(field)
            if target is None and value is not None:
                target = _litellm_unit(field, entry.get("mode"))
                if target and target[0] == "usd_per_output_image@pixel":
                    if (not sized or not isinstance(value, (int, Decimal)) or isinstance(value, bool)
                            or entry.get("input_cost_per_image") is not None or entry.get("output_cost_per_image") is not None):
                        continue  # a per-image price given beside it wins
                    target, value = ("usd_per_output_image", target[1]), Decimal(value) * int(sized[3]) * int(sized[4])
                if target and sized:  # 'low/1024-x-1024/gpt-image-1.5': the model's per-image kind
                    if target[0] != "usd_per_output_image":
                        continue
                    target = (target[0], "image_" + (f"{sized[2]}_" if sized[2] else "") + f"{sized[3]}x{sized[4]}")
            if target is None or value is None:
                continue
            if target is False:
                unrecognised[field] += 1
                continue
            column, kind = target
            kinds.setdefault(kind, {})[column] = (field, value)
        if not kinds:
            out.skipped["no_token_price"] += 1
            continue
        if sized:
            model = sized[1] + sized[5]
        provider = entry.get("litellm_provider")
        if not isinstance(provider, str) or not provider.strip():
            out.rejects.append(Reject(line, "litellm_provider", f"model {model!r}: missing litellm_provider", _raw(entry)))
            continue
        provider = provider.strip().lower()
        sr = entry.get("supports_reasoning")
        supports_reasoning = sr if isinstance(sr, bool) else None
        extras, bad_extra = _litellm_extras(out, entry, kinds)
        for kind in sorted(kinds, key=lambda k: (k != "standard", k)):
            fields = kinds[kind]
            hit = fields.pop("cached_input_usd_per_mtok@cache_hit", None)
            if hit is not None and "cached_input_usd_per_mtok" not in fields:
                fields["cached_input_usd_per_mtok"] = hit
            audio_hit = fields.pop("cached_audio_input_usd_per_mtok@creation", None)
            if audio_hit is not None and "cached_audio_input_usd_per_mtok" not in fields:
                fields["cached_audio_input_usd_per_mtok"] = audio_hit
            prices: dict[str, Decimal | None] = {}
            bad: Reject | None = None
            for column, (field, value) in fields.items():
                numeric = isinstance(value, (int, Decimal)) and not isinstance(value, bool)
                if column in UNIT_COLUMNS:
                    price, reason = out.fee(value)
                else:
                    per_mtok = Decimal(value).scaleb(_MTOK) if numeric else value
                    price, reason = out.price(per_mtok, field)
                if reason:
                    bad = Reject(line, field, f"model {model!r} ({kind}): {field}: {reason}", _raw({field: value}))
                    break
                prices[column] = price
            if bad is None and kind in bad_extra:
                field, value, reason = bad_extra[kind]
                bad = Reject(line, field, f"model {model!r} ({kind}): {field}: {reason}", _raw({field: value}))
            if bad:
                out.rejects.append(bad)
                continue
            out.add(line, provider, model, kind, {**prices, **extras.get(kind, {})}, supports_reasoning)
    return out.parsed(unrecognised_fields=dict(unrecognised))


_SEARCH_SIZES = {"search_context_size_medium": "usd_per_request_fee",
                 "search_context_size_low": "web_search_usd_per_query_low",
                 "search_context_size_high": "web_search_usd_per_query_high"}


def _litellm_extras(out: _Rows, entry: dict, kinds: dict) -> tuple[dict[str, dict[str, Decimal]], dict[str, tuple]]:
    """Modifier columns per price kind: the 1-hour cache write price of a kind also goes on that
    kind's row (its 'cache_1hr' row is still written as before), and the standard row carries the
    web-search per-query fees (``search_context_cost_per_query``; medium, else the only size given,
    is ``usd_per_request_fee``) and the regional uplifts ``regional_processing_uplift_multiplier_<eu|us>``
    (OpenAI), else ``provider_specific_entry.<eu|us>`` (Anthropic's inference_geo multiplier).
    Returns (columns by kind, bad field by kind)."""
    extras: dict[str, dict[str, Decimal]] = {}
    bad: dict[str, tuple] = {}
    for kind, fields in kinds.items():
        if "cache_1hr" not in kind or "cache_write_usd_per_mtok" not in fields:
            continue
        base = re.sub(r"_?cache_1hr_?", "_", kind).strip("_") or "standard"
        if base not in kinds:
            continue
        field, value = fields["cache_write_usd_per_mtok"]
        numeric = isinstance(value, (int, Decimal)) and not isinstance(value, bool)
        price, reason = out.price(Decimal(value).scaleb(_MTOK) if numeric else value, field)
        if reason:
            bad.setdefault(base, (field, value, reason))
        else:
            extras.setdefault(base, {})["cache_write_1h_usd_per_mtok"] = price
    if "standard" not in kinds:
        return extras, bad
    std = extras.setdefault("standard", {})
    search = entry.get("search_context_cost_per_query")
    if isinstance(search, dict):
        for key, column in _SEARCH_SIZES.items():
            if search.get(key) is None:
                continue
            fee, reason = out.fee(search[key])
            if reason:
                bad.setdefault("standard", (f"search_context_cost_per_query.{key}", search[key], reason))
            else:
                std[column] = fee
        if "usd_per_request_fee" not in std:  # only low / high given: the lowest is the fee
            given = [std[c] for c in FEE_COLUMNS[1:] if c in std]
            if given:
                std["usd_per_request_fee"] = min(given)
    specific = entry.get("provider_specific_entry")
    specific = specific if isinstance(specific, dict) else {}
    for region in ("eu", "us"):
        # OpenAI data residency: regional_processing_uplift_multiplier_<region>; Anthropic
        # (usage.inference_geo): provider_specific_entry.<region> (LiteLLM reads both)
        field = f"regional_processing_uplift_multiplier_{region}"
        if entry.get(field) is None and specific.get(region) is not None:
            field = f"provider_specific_entry.{region}"
            value = specific[region]
        elif entry.get(field) is None:
            continue
        else:
            value = entry[field]
        mult, reason = out.uplift(value)
        if reason:
            bad.setdefault("standard", (field, value, reason))
        else:
            std[f"regional_uplift_{region}"] = mult
    return extras, bad


def _raw(obj: Any, limit: int = 500) -> str:
    s = json.dumps(obj, default=str, ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# OpenRouter

_OPENROUTER_FIELDS = {
    "prompt": "input_usd_per_mtok",
    "completion": "output_usd_per_mtok",
    "internal_reasoning": "reasoning_usd_per_mtok",
    "input_cache_read": "cached_input_usd_per_mtok",
    "input_cache_write": "cache_write_usd_per_mtok",
    # issue 44 (openrouter.ai/docs, models API "Pricing": audio = per audio input token,
    # audio_output = per audio output token, input_audio_cache = per cached audio input token,
    # image_output = per output image). Not read: image (per input image) -- no request shape
    # reports a count of input images, their tokens are in the prompt -- and image_token, whose
    # side (input or output) the reference does not say.
    "audio": "audio_input_usd_per_mtok",
    "audio_output": "audio_output_usd_per_mtok",
    "input_audio_cache": "cached_audio_input_usd_per_mtok",
    "image_output": "usd_per_output_image",
}


def sniff_openrouter(data: bytes, name: str) -> bool:
    head = head_text(data, 65536)
    return (
        head.startswith("{")
        and re.search(r'"data"\s*:\s*\[', head) is not None
        and re.search(r'"pricing"\s*:\s*\{', head) is not None
    )


def parse_openrouter(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    text = decode_text(data)
    doc = None
    for key, _start, value in _object_members(text, json.JSONDecoder()):
        if key == "data":
            doc = value
    if not isinstance(doc, list):
        raise SourceFormatError("no 'data' list of models", field="data")
    out = _Rows("openrouter_json", default_effective_from(name, ctx))
    reasoning_zero = 0
    for n, item in enumerate(doc, start=1):
        if not isinstance(item, dict):
            out.rejects.append(Reject(n, "data", "model entry is not an object", _raw(item)))
            continue
        model = item.get("id")
        if not isinstance(model, str) or "/" not in model.strip("/"):
            out.rejects.append(Reject(n, "id", f"model id {model!r} has no 'provider/' prefix", _raw(item)))
            continue
        model = model.strip()
        pricing = item.get("pricing")
        if not isinstance(pricing, dict):
            out.rejects.append(Reject(n, "pricing", f"model {model!r}: no pricing object", _raw(item)))
            continue
        if any(str(pricing.get(f, "")).strip() == "-1" for f in _OPENROUTER_FIELDS):
            out.skipped["variable_pricing"] += 1  # routers: the price is the routed model's
            continue
        prices: dict[str, Decimal | None] = {}
        bad: Reject | None = None
        for field, column in _OPENROUTER_FIELDS.items():
            value = pricing.get(field)
            if value is None or (isinstance(value, str) and not value.strip()):
                if field in ("prompt", "completion"):
                    bad = Reject(n, f"pricing.{field}", f"model {model!r}: missing pricing.{field}", _raw(pricing))
                    break
                continue
            try:
                per_token = parse_decimal(value.strip()) if isinstance(value, str) else _number(value)
            except ValueError as exc:
                bad = Reject(n, f"pricing.{field}", f"model {model!r}: {exc}", _raw(pricing))
                break
            if column in UNIT_COLUMNS:
                price, reason = out.fee(per_token)
            else:
                price, reason = out.price(per_token.scaleb(_MTOK), field)
            if reason:
                bad = Reject(n, f"pricing.{field}", f"model {model!r}: pricing.{field}: {reason}", _raw(pricing))
                break
            prices[column] = price
        if bad:
            out.rejects.append(bad)
            continue
        if prices.get("reasoning_usd_per_mtok") == 0 and prices["output_usd_per_mtok"]:
            prices["reasoning_usd_per_mtok"] = None
            reasoning_zero += 1
        params = item.get("supported_parameters")
        supports_reasoning = ("reasoning" in params) if isinstance(params, list) else None
        provider = model.split("/", 1)[0].strip().lower()
        out.add(n, provider, model, "standard", prices, supports_reasoning)
    return out.parsed(reasoning_zero_as_output=reasoning_zero)


def _number(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return Decimal(repr(value))


# --------------------------------------------------------------------------------------------
# thinktax price CSV

_CSV_REQUIRED = ("provider", "model", "input_usd_per_mtok", "output_usd_per_mtok")
_KIND = re.compile(r"[a-z0-9_]+")
_BOOL = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def sniff_thinktax_csv(data: bytes, name: str) -> bool:
    return "input_usd_per_mtok" in header_names(data)


def parse_thinktax_csv(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    sheet = CsvSheet(data, _CSV_REQUIRED)
    out = _Rows("thinktax_csv", default_effective_from(name, ctx))
    converted = 0
    for line, fields, raw in sheet.records():
        if len(fields) > sheet.width:
            out.rejects.append(Reject(
                line, None,
                f"{len(fields)} fields but the header has {sheet.width} (an unquoted comma, e.g. a decimal comma?)",
                raw,
            ))
            continue
        reject = lambda field, reason: out.rejects.append(Reject(line, field, reason, raw))  # noqa: B023, E731
        provider = sheet.get(fields, "provider").lower()
        model = sheet.get(fields, "model")
        if not provider or not model:
            reject("provider" if not provider else "model", "empty provider or model")
            continue
        kind = sheet.get(fields, "price_kind").lower() or "standard"
        if not _KIND.fullmatch(kind):
            reject("price_kind", f"bad price_kind {kind!r}: use lower-case letters, digits, '_'")
            continue
        effective = None
        day = sheet.get(fields, "effective_from")
        if day:
            try:
                effective = parse_day(day)
            except ValueError as exc:
                reject("effective_from", str(exc))
                continue
        currency = sheet.get(fields, "currency").upper() or "USD"
        rate = usd_rate(currency, ctx.fx_usd_per_unit)
        if rate is None:
            reject("currency", f"currency {currency!r} without an FX rate (only USD, or a currency with a rate)")
            continue
        flag = sheet.get(fields, "supports_reasoning").lower()
        if flag and flag not in _BOOL:
            reject("supports_reasoning", f"not true/false: {flag!r}")
            continue
        prices: dict[str, Decimal | None] = {}
        bad = False
        for column in PRICE_COLUMNS:
            text = sheet.get(fields, column)
            if not text:
                # issue 44: a row that gives a modality or per-unit price (an image / video model, a
                # per-size / per-resolution kind) may leave the text-token prices empty (not priced)
                if column in _CSV_REQUIRED and not any(sheet.get(fields, u) for u in UNIT_COLUMNS + MODALITY_COLUMNS):
                    reject(column, f"missing {column}")
                    bad = True
                    break
                prices[column] = None
                continue
            try:
                value = parse_decimal(text)
            except ValueError as exc:
                reject(column, str(exc))
                bad = True
                break
            price, reason = out.price(value * rate, column)
            if reason:
                if currency != "USD":
                    reason += f" (after converting {text} {currency} at {rate} USD/{currency})"
                reject(column, reason)
                bad = True
                break
            prices[column] = price
        for column in MTOK_EXTRAS + FEE_COLUMNS + UPLIFT_COLUMNS + MODALITY_COLUMNS + UNIT_COLUMNS:
            if bad:
                break
            text = sheet.get(fields, column)
            if not text:
                continue
            try:
                value = parse_decimal(text)
            except ValueError as exc:
                reject(column, str(exc))
                bad = True
                break
            if column in UPLIFT_COLUMNS:
                result, reason = out.uplift(value)
            elif column in FEE_COLUMNS or column in UNIT_COLUMNS:
                result, reason = out.fee(value * rate)
            else:
                result, reason = out.price(value * rate, column)
            if reason:
                reject(column, reason)
                bad = True
                break
            prices[column] = result
        if bad:
            continue
        converted += currency != "USD"
        out.add(line, provider, model, kind, prices, _BOOL.get(flag), effective)
    return out.parsed(converted_from_other_currency=converted, blank_rows=sheet.blank_rows)


SPECS = [
    SourceSpec("prices/llm", "litellm_json", sniff_litellm, parse_litellm, TABLE),
    SourceSpec("prices/llm", "openrouter_json", sniff_openrouter, parse_openrouter, TABLE),
    SourceSpec("prices/llm", "thinktax_csv", sniff_thinktax_csv, parse_thinktax_csv, TABLE),
]
