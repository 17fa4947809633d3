"""LLM price-sheet parsers: LiteLLM JSON, OpenRouter models JSON, thinktax price CSV.

Real LiteLLM snapshots: data/real/litellm/ (see data/real/README.md). Hand-written fixtures:
tests/fixtures/prices/ (see its README.md).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sources import prices_llm
from sources.base import ParseContext, SourceFormatError
from sources.prices_llm import (
    SCHEMA,
    SPECS,
    parse_litellm,
    parse_openrouter,
    parse_thinktax_csv,
    sniff_litellm,
    sniff_openrouter,
    sniff_thinktax_csv,
)

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "data" / "real" / "litellm"
FIX = ROOT / "tests" / "fixtures" / "prices"
OLD = REAL / "model_prices_and_context_window.2025-05-19.json"
NEW = REAL / "model_prices_and_context_window.2026-07-24.json"
CTX = ParseContext(ingested_at=dt.datetime(2026, 8, 1, 23, 30))


def rows_by(parsed, *key):
    return {tuple(r[k] for k in key): r for r in parsed.rows.to_pylist()}


def check_contract(parsed):
    """The parser contract of sources/base.py, for every parse in this file."""
    assert parsed.table == "stg.llm_prices"
    assert parsed.rows.schema.equals(SCHEMA)
    assert parsed.rows_in == parsed.rows.num_rows + len(parsed.rejects)
    assert all(r.line is not None and r.line >= 1 for r in parsed.rejects)
    assert None not in parsed.rows.column("line").to_pylist()


@pytest.fixture(scope="module")
def old():
    return parse_litellm(OLD.read_bytes(), OLD.name, CTX)


@pytest.fixture(scope="module")
def new():
    return parse_litellm(NEW.read_bytes(), NEW.name, CTX)


# ---------------------------------------------------------------- sniffing


def test_specs_declare_key_and_folder():
    assert [s.format for s in SPECS] == ["litellm_json", "openrouter_json", "thinktax_csv"]
    assert {s.folder for s in SPECS} == {"prices/llm"}
    assert all(s.key == ("provider", "model", "price_kind", "effective_from") for s in SPECS)


@pytest.mark.parametrize(
    "path, expected",
    [
        (OLD, "litellm_json"),
        (NEW, "litellm_json"),
        (FIX / "litellm_small.2025-06-01.json", "litellm_json"),
        (FIX / "openrouter_models.2025-06-01.json", "openrouter_json"),
        (FIX / "thinktax_prices.2025-06-01.csv", "thinktax_csv"),
        (FIX / "thinktax_prices_bad.csv", "thinktax_csv"),
    ],
)
def test_sniff_from_content_not_name(path, expected):
    data = path.read_bytes()
    # a neutral name: detection must come from the bytes
    found = [s.format for s in SPECS if s.sniff(data, "landing/prices/llm/sheet.dat")]
    assert found == [expected]


def test_sniff_rejects_other_files():
    skypilot = (ROOT / "data" / "real" / "skypilot" / "skypilot_catalog_v7_nebius_vms.csv").read_bytes()
    for data in (skypilot, b"", b"[1, 2]", b'{"data": [{"id": "x"}]}'):
        assert not sniff_litellm(data, "x") and not sniff_thinktax_csv(data, "x")
    assert not sniff_openrouter(b'{"data": [{"id": "x"}]}', "x")


# ---------------------------------------------------------------- LiteLLM, real snapshots


def test_litellm_real_row_counts(old, new):
    # Measured on the real files (1,026 and 2,985 top-level keys). 2025-05-19: 884 standard,
    # 44 batch (43 *_batches + 1 *_batch_requests), 38 above_128k_tokens, 7 above_200k_tokens;
    # 140 entries without a text-token price + sample_spec + last_updated skipped.
    for p in (old, new):
        check_contract(p)
    # Issue 44: entries priced only by modality or unit (per image, per second of video) are rows
    # now, not skipped: 17 such entries in 2025-05-19, 182 in 2026-07-24 plus one more kind
    # (gemini/veo-3.1-lite-generate-preview's output_cost_per_second_1080p -> 'video_1080p'), and 27
    # in each sheet priced per pixel on a key naming the size ('hd/1024-x-1024/dall-e-3', no token
    # price): old 973 + 17 + 27 rows, 142 - 44 skipped; new 3,019 + 182 + 1 + 27 rows, 464 - 209
    # skipped (counted over the raw JSON).
    assert (old.rows.num_rows, len(old.rejects), old.meta["skipped"]) == (973 + 17 + 27, 0, 142 - 44)
    assert old.meta["skipped_reasons"] == {"not_a_model": 2, "no_token_price": 140 - 44}
    # 2026-07-24: 3,019 rows, 16 rejected as implausible (per-1K or per-1M prices typed into
    # LiteLLM's per-token fields: 13 wandb/*, azure_ai/jais-30b-chat, 2 watsonx/*), 464 skipped.
    assert (new.rows.num_rows, len(new.rejects), new.meta["skipped"]) == (3019 + 182 + 1 + 27, 16, 464 - 209)
    assert new.meta["unrecognised_fields"] == {} and old.meta["unrecognised_fields"] == {}


def test_litellm_non_model_keys_skipped(old, new):
    for p in (old, new):
        models = set(p.rows.column("model").to_pylist())
        assert "sample_spec" not in models and "last_updated" not in models
        assert p.meta["skipped_reasons"]["not_a_model"] == 2  # exactly those two keys
    # issue 44: dall-e-3 (2026-07-24 sheet) is priced per image only ($0.04, input_cost_per_image of an
    # image_generation entry)
    dalle = new.rows.filter(pc.equal(new.rows["model"], "dall-e-3")).to_pylist()
    dalle = {r["price_kind"]: (r["input_usd_per_mtok"], r["usd_per_output_image"]) for r in dalle}
    assert dalle["standard"] == (None, Decimal("0.04"))
    # hd/1024-x-1024/dall-e-3: input_cost_per_pixel 7.629e-08 x 1024 x 1024 = 0.07999586304 -> 9 places
    assert dalle["image_hd_1024x1024"] == (None, Decimal("0.079995863"))
    assert len(dalle) == 7  # standard + hd / standard x 1024x1024, 1024x1792, 1792x1024


def test_litellm_effective_from_file_name(old, new):
    assert old.meta["effective_from"] == dt.date(2025, 5, 19)
    assert new.meta["effective_from"] == dt.date(2026, 7, 24)
    assert set(old.rows.column("effective_from").to_pylist()) == {dt.date(2025, 5, 19)}
    assert set(new.rows.column("effective_from").to_pylist()) == {dt.date(2026, 7, 24)}


def test_litellm_o3_price_change(old, new):
    # 2025-05-19: input_cost_per_token 1e-05, output 4e-05, cache read 2.5e-06 -> 10 / 40 / 2.5 per 1M
    o = rows_by(old, "model", "price_kind")
    assert [k for k in o if k[0] == "o3"] == [("o3", "standard")]
    r = o[("o3", "standard")]
    assert (r["provider"], r["input_usd_per_mtok"], r["output_usd_per_mtok"]) == ("openai", Decimal("10"), Decimal("40"))
    assert r["cached_input_usd_per_mtok"] == Decimal("2.5") and r["cache_write_usd_per_mtok"] is None
    assert r["reasoning_usd_per_mtok"] is None and r["supports_reasoning"] is True and r["line"] == 721
    # 2026-07-24: 2e-06 / 8e-06 / 5e-07 -> 2 / 8 / 0.5; plus flex (1e-06 / 4e-06 / 2.5e-07) and
    # priority (3.5e-06 / 1.4e-05 / 8.75e-07) as their own kinds
    n = rows_by(new, "model", "price_kind")
    assert sorted(k[1] for k in n if k[0] == "o3") == ["flex", "priority", "standard"]
    s, f, p = n[("o3", "standard")], n[("o3", "flex")], n[("o3", "priority")]
    assert (s["input_usd_per_mtok"], s["output_usd_per_mtok"], s["cached_input_usd_per_mtok"]) == (2, 8, Decimal("0.5"))
    assert (f["input_usd_per_mtok"], f["output_usd_per_mtok"], f["cached_input_usd_per_mtok"]) == (1, 4, Decimal("0.25"))
    assert (p["input_usd_per_mtok"], p["output_usd_per_mtok"], p["cached_input_usd_per_mtok"]) == (
        Decimal("3.5"), 14, Decimal("0.875"))


def test_litellm_other_real_rows(old, new):
    o = rows_by(old, "model", "price_kind")
    # DeepSeek spells cache read 'input_cost_per_token_cache_hit': 1.4e-07 -> 0.14 per 1M
    r = o[("deepseek/deepseek-reasoner", "standard")]
    assert (r["provider"], r["input_usd_per_mtok"], r["cached_input_usd_per_mtok"], r["output_usd_per_mtok"]) == (
        "deepseek", Decimal("0.55"), Decimal("0.14"), Decimal("2.19"))
    n = rows_by(new, "model", "price_kind")
    kinds = {k for (_m, k) in n}
    assert {"standard", "batch", "priority", "flex", "above_200k_tokens", "above_272k_tokens",
            "above_272k_tokens_priority", "cache_1hr"} <= kinds
    # float noise in the sheet: 2.9999900000000002e-06 per token -> 2.99999000000000002 per 1M,
    # rounded half-even to 9 places -> 2.999990000
    r = n[("databricks/databricks-claude-3-7-sonnet", "standard")]
    assert r["input_usd_per_mtok"] == Decimal("2.999990000")
    # issue 44: + the per-pixel prices x width x height with more than 9 places (20 of the 27
    # per-pixel rows of 2026-07-24, 26 of 2025-05-19's; counted over the raw JSON)
    assert new.meta["rounded"] == 31 + 20 and old.meta["rounded"] == 0 + 26


def test_litellm_real_rejects_are_implausible_prices(new):
    by_model = {r.reason.split("'")[1]: r for r in new.rejects}
    r = by_model["azure_ai/jais-30b-chat"]
    # input_cost_per_token 0.0032 (that is jais' price per 1K tokens) -> 3,200 USD per 1M
    assert r.field == "input_cost_per_token" and "3200 USD per million" in r.reason
    assert "per 1K mistaken for per 1M?" in r.reason and r.line == 9306
    assert sum(m.startswith("wandb/") for m in by_model) == 13


def test_litellm_keys_unique_per_sheet(old, new):
    for p in (old, new):
        keys = list(zip(*(p.rows.column(c).to_pylist() for c in ("provider", "model", "price_kind"))))
        assert len(keys) == len(set(keys))


# ---------------------------------------------------------------- LiteLLM, hand-written fixture


@pytest.fixture(scope="module")
def small():
    path = FIX / "litellm_small.2025-06-01.json"
    return parse_litellm(path.read_bytes(), path.name, CTX)


def test_litellm_small_kinds(small):
    check_contract(small)
    got = rows_by(small, "model", "price_kind")
    assert sorted(got) == sorted([
        ("gpt-4.1", "standard"), ("gpt-4.1", "batch"), ("gpt-4.1", "priority"),
        ("gpt-5.4", "standard"), ("gpt-5.4", "above_272k_tokens"), ("gpt-5.4", "above_272k_tokens_priority"),
        ("gpt-5.4", "flex"),
        ("claude-sonnet-4-20250514", "standard"), ("claude-sonnet-4-20250514", "above_200k_tokens"),
        ("claude-sonnet-4-20250514", "cache_1hr"),
        ("deepseek/deepseek-reasoner", "standard"), ("gemini-2.5-flash-preview-04-17", "standard"),
        ("odd/unknown-suffix", "standard"), ("bad/priority-only", "standard"),
        ("dall-e-3", "standard"),  # issue 44: output_cost_per_image 0.04 -> usd_per_output_image
    ])
    assert got[("dall-e-3", "standard")]["usd_per_output_image"] == Decimal("0.04")
    # sample_spec, last_updated, whisper-1 (per second of audio transcription: not a price thinktax reads)
    assert small.meta["skipped"] == 3
    assert small.meta["unrecognised_fields"] == {"input_cost_per_token_weekend": 1}
    assert small.meta["effective_from"] == dt.date(2025, 6, 1)

    g = got[("gpt-5.4", "above_272k_tokens_priority")]  # 1e-05 / 4.5e-05 per token
    assert (g["provider"], g["input_usd_per_mtok"], g["output_usd_per_mtok"]) == ("openai", 10, 45)
    assert g["cached_input_usd_per_mtok"] is None and g["supports_reasoning"] is True and g["line"] == 19
    b = got[("gpt-4.1", "batch")]  # 1e-06 / 4e-06
    assert (b["input_usd_per_mtok"], b["output_usd_per_mtok"], b["supports_reasoning"]) == (1, 4, None)
    c = got[("claude-sonnet-4-20250514", "standard")]  # 3 / 15, write 3.75, read 0.3
    assert (c["cache_write_usd_per_mtok"], c["cached_input_usd_per_mtok"]) == (Decimal("3.75"), Decimal("0.3"))
    h = got[("claude-sonnet-4-20250514", "cache_1hr")]  # 6e-06 -> 6; the only field of that kind
    assert h["cache_write_usd_per_mtok"] == 6 and h["input_usd_per_mtok"] is None and h["output_usd_per_mtok"] is None
    d = got[("deepseek/deepseek-reasoner", "standard")]
    assert d["cached_input_usd_per_mtok"] == Decimal("0.14")
    gem = got[("gemini-2.5-flash-preview-04-17", "standard")]  # output_cost_per_reasoning_token 3.5e-06
    assert gem["reasoning_usd_per_mtok"] == Decimal("3.5") and gem["supports_reasoning"] is False


def test_litellm_small_rejects(small):
    got = {(r.line, r.field): r.reason for r in small.rejects}
    assert set(got) == {
        (78, "input_cost_per_token_priority"),  # "x": only the priority kind of bad/priority-only
        (84, "input_cost_per_token"),  # "abc"
        (89, "input_cost_per_token"),  # -1e-06
        (94, "input_cost_per_token"),  # NaN
        (99, "input_cost_per_token"),  # 0.0032 per token = 3,200 per 1M
        (104, "litellm_provider"),
    }
    assert "not a number" in got[(84, "input_cost_per_token")]
    assert "negative" in got[(89, "input_cost_per_token")]
    assert "finite" in got[(94, "input_cost_per_token")]
    assert "per 1K mistaken for per 1M?" in got[(99, "input_cost_per_token")]


def test_litellm_unreadable_files():
    with pytest.raises(SourceFormatError, match="truncated") as e:
        parse_litellm((FIX / "litellm_truncated.json").read_bytes(), "litellm_truncated.json", CTX)
    assert e.value.line == 22  # the file stops in the middle of line 22
    with pytest.raises(SourceFormatError, match="empty"):
        parse_litellm(b"", "x.json", CTX)
    with pytest.raises(SourceFormatError, match="object"):
        parse_litellm(b"[1, 2]", "x.json", CTX)
    with pytest.raises(SourceFormatError, match="UTF-8"):
        parse_litellm(b'{"m": {"input_cost_per_token": 1e-06, "litellm_provider": "\xff"}}', "x.json", CTX)


def test_litellm_date_from_ingestion_when_name_has_none(small):
    data = (FIX / "litellm_small.2025-06-01.json").read_bytes()
    p = parse_litellm(data, "prices/llm/litellm.json", CTX)
    assert p.meta["effective_from"] == dt.date(2026, 8, 1)  # CTX.ingested_at's UTC day
    assert set(p.rows.column("effective_from").to_pylist()) == {dt.date(2026, 8, 1)}


def test_litellm_duplicate_key_last_wins():
    data = (b'{"m": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06, "litellm_provider": "x"},\n'
            b' "m": {"input_cost_per_token": 3e-06, "output_cost_per_token": 4e-06, "litellm_provider": "x"}}')
    p = parse_litellm(data, "x.json", CTX)
    assert p.rows.to_pylist()[0]["input_usd_per_mtok"] == 3 and p.rows.num_rows == 1
    assert p.rows.to_pylist()[0]["line"] == 2
    assert p.meta["skipped_reasons"] == {"duplicate_key": 1}


# ---------------------------------------------------------------- thinktax price CSV


def test_thinktax_csv_good_file():
    path = FIX / "thinktax_prices.2025-06-01.csv"  # BOM, CRLF, shuffled and odd-case header, quoted commas
    p = parse_thinktax_csv(path.read_bytes(), path.name, CTX)
    check_contract(p)
    assert p.rejects == [] and p.meta["blank_rows"] == 1
    got = rows_by(p, "model")
    o3 = got[("o3",)]
    assert (o3["line"], o3["provider"], o3["price_kind"], o3["effective_from"]) == (2, "openai", "standard", dt.date(2025, 6, 1))
    assert (o3["input_usd_per_mtok"], o3["cached_input_usd_per_mtok"], o3["output_usd_per_mtok"]) == (2, Decimal("0.5"), 8)
    assert o3["cache_write_usd_per_mtok"] is None and o3["reasoning_usd_per_mtok"] is None  # absent / empty -> NULL
    ds = got[("deepseek-reasoner",)]
    assert ds["effective_from"] == dt.date(2025, 1, 20)  # the column overrides the file-name date
    assert ds["currency"] == "USD"  # empty currency = USD
    mine = got[("my-model",)]
    assert (mine["reasoning_usd_per_mtok"], mine["currency"], mine["line"]) == (Decimal("6.5"), "USD", 4)


def test_thinktax_csv_bad_rows():
    path = FIX / "thinktax_prices_bad.csv"
    p = parse_thinktax_csv(path.read_bytes(), path.name, CTX)
    check_contract(p)
    got = {r.line: (r.field, r.reason) for r in p.rejects}
    assert sorted(got) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17]
    assert got[3] == ("input_usd_per_mtok", "not a number: 'abc'")
    assert got[4][0] == "input_usd_per_mtok" and "decimal comma" in got[4][1]  # "1,23"
    assert got[5][0] == "output_usd_per_mtok" and "not a number" in got[5][1]  # NaN
    assert got[6][0] == "input_usd_per_mtok" and "not a number" in got[6][1]  # Inf
    assert got[7][0] == "input_usd_per_mtok" and "negative" in got[7][1]
    assert got[8][0] == "output_usd_per_mtok" and "per 1K mistaken for per 1M?" in got[8][1]  # 1500
    assert got[9][0] == "currency" and "EUR" in got[9][1]
    assert got[10][0] == "effective_from" and "no such day" in got[10][1]  # 2025-02-30
    assert got[11][0] == "effective_from" and "YYYY-MM-DD" in got[11][1]  # 01/06/2025
    assert got[12] == ("output_usd_per_mtok", "missing output_usd_per_mtok")
    assert got[13][0] is None and "7 fields but the header has 6" in got[13][1]
    assert got[14][0] == "provider"
    assert got[17][0] == "input_usd_per_mtok"  # after a record spanning lines 15-16
    assert [r.raw for r in p.rejects if r.line == 3] == ["openai,abc-price,abc,4.40,USD,"]
    good = rows_by(p, "model")
    assert set(good) == {("ok-model",), ("multi\nline",)}
    assert good[("ok-model",)]["effective_from"] == dt.date(2025, 6, 1)
    assert good[("multi\nline",)]["line"] == 15 and good[("multi\nline",)]["effective_from"] == dt.date(2026, 8, 1)


def test_thinktax_csv_fx_conversion_is_exact():
    path = FIX / "thinktax_prices_bad.csv"
    ctx = ParseContext(ingested_at=CTX.ingested_at, fx_usd_per_unit={"EUR": 1.08})
    p = parse_thinktax_csv(path.read_bytes(), path.name, ctx)
    euro = rows_by(p, "model")[("euro",)]
    # 1 EUR x 1.08 = 1.08 USD; 2 EUR x 1.08 = 2.16 USD (exact: the rate is read as Decimal('1.08'))
    assert (euro["input_usd_per_mtok"], euro["output_usd_per_mtok"], euro["currency"]) == (
        Decimal("1.08"), Decimal("2.16"), "USD")
    assert p.meta["converted_from_other_currency"] == 1
    # a converted price is range-checked in USD: 950 GBP x 1.27 = 1206.5 USD > 1000
    data = b"provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\nx,y,1,950,GBP\n"
    p = parse_thinktax_csv(data, "x.csv", ParseContext(CTX.ingested_at, {"GBP": 1.27}))
    assert p.rows.num_rows == 0 and "1206.5" in p.rejects[0].reason and "per 1K" in p.rejects[0].reason


def test_thinktax_csv_optional_columns():
    data = (b"provider,model,input_usd_per_mtok,output_usd_per_mtok,price_kind,supports_reasoning\n"
            b"openai,o3,1,4,batch,true\nopenai,o3,2,8,,\nopenai,o3,2,8,Bad Kind,\nopenai,o3,2,8,,maybe\n")
    p = parse_thinktax_csv(data, "x.2025-07-01.csv", CTX)
    got = rows_by(p, "price_kind")
    assert got[("batch",)]["supports_reasoning"] is True and got[("standard",)]["supports_reasoning"] is None
    assert {(r.line, r.field) for r in p.rejects} == {(4, "price_kind"), (5, "supports_reasoning")}


def test_thinktax_csv_unreadable():
    with pytest.raises(SourceFormatError, match="output_usd_per_mtok") as e:
        parse_thinktax_csv(b"provider,model,input_usd_per_mtok\nx,y,1\n", "x.csv", CTX)
    assert (e.value.line, e.value.field) == (1, "output_usd_per_mtok")
    with pytest.raises(SourceFormatError, match="empty"):
        parse_thinktax_csv(b"\n\n", "x.csv", CTX)
    with pytest.raises(SourceFormatError, match="twice"):
        parse_thinktax_csv(b"provider,model,Model,input_usd_per_mtok,output_usd_per_mtok\n", "x.csv", CTX)
    with pytest.raises(SourceFormatError, match="UTF-8"):
        parse_thinktax_csv(b"provider,model,input_usd_per_mtok,output_usd_per_mtok\nx,\xe9,1,2\n", "x.csv", CTX)


def test_rows_are_arrow_with_staging_types(small):
    assert small.rows.schema.field("input_usd_per_mtok").type == pa.decimal128(18, 9)
    assert small.rows.schema.field("effective_from").type == pa.date32()
    assert prices_llm.MAX_USD_PER_MTOK == 1000


# ---------------------------------------------------------------- OpenRouter /api/v1/models


@pytest.fixture(scope="module")
def openrouter():
    path = FIX / "openrouter_models.2025-06-01.json"
    return parse_openrouter(path.read_bytes(), path.name, CTX)


def test_openrouter_rows(openrouter):
    p = openrouter
    check_contract(p)
    got = rows_by(p, "model")
    assert sorted(got) == [("anthropic/claude-sonnet-4",), ("deepseek/deepseek-r1:free",),
                           ("google/gemini-2.5-flash-preview:thinking",), ("openai/o3",)]
    assert p.meta["effective_from"] == dt.date(2025, 6, 1)
    o3 = got[("openai/o3",)]
    # prompt "0.000002" -> 2, completion "0.000008" -> 8, input_cache_read "0.0000005" -> 0.5
    assert (o3["line"], o3["provider"], o3["price_kind"], o3["source_format"]) == (1, "openai", "standard", "openrouter_json")
    assert (o3["input_usd_per_mtok"], o3["output_usd_per_mtok"], o3["cached_input_usd_per_mtok"]) == (2, 8, Decimal("0.5"))
    # internal_reasoning "0" next to a paid completion: thinking is billed as output -> NULL
    assert o3["reasoning_usd_per_mtok"] is None and o3["cache_write_usd_per_mtok"] is None
    assert o3["supports_reasoning"] is True
    c = got[("anthropic/claude-sonnet-4",)]  # cache read "0.0000003" -> 0.3, write "0.00000375" -> 3.75
    assert (c["cached_input_usd_per_mtok"], c["cache_write_usd_per_mtok"], c["output_usd_per_mtok"]) == (
        Decimal("0.3"), Decimal("3.75"), 15)
    free = got[("deepseek/deepseek-r1:free",)]  # "0" is a real free price
    assert (free["input_usd_per_mtok"], free["output_usd_per_mtok"], free["reasoning_usd_per_mtok"]) == (0, 0, 0)
    gem = got[("google/gemini-2.5-flash-preview:thinking",)]
    # prompt 1.5e-07 -> 0.15; internal_reasoning "0.0000035" -> 3.5; cache write "0.0000002333" -> 0.2333
    assert (gem["input_usd_per_mtok"], gem["reasoning_usd_per_mtok"], gem["cache_write_usd_per_mtok"]) == (
        Decimal("0.15"), Decimal("3.5"), Decimal("0.2333"))
    assert gem["cached_input_usd_per_mtok"] == Decimal("0.0375") and gem["supports_reasoning"] is None
    assert p.meta["reasoning_zero_as_output"] == 1


def test_openrouter_skips_and_rejects(openrouter):
    p = openrouter
    assert p.meta["skipped"] == 1 and p.meta["skipped_reasons"] == {"variable_pricing": 1}  # openrouter/auto "-1"
    assert "openrouter/auto" not in set(p.rows.column("model").to_pylist())
    got = {(r.line, r.field): r.reason for r in p.rejects}
    assert set(got) == {(6, "pricing.prompt"), (7, "pricing.completion")}
    assert "not a number: 'abc'" in got[(6, "pricing.prompt")]
    # completion "0.06" per token = 60,000 USD per million
    assert "60000 USD per million" in got[(7, "pricing.completion")] and "per 1K" in got[(7, "pricing.completion")]


def test_openrouter_unreadable_and_odd_entries():
    with pytest.raises(SourceFormatError, match="data"):
        parse_openrouter(b'{"models": []}', "x.json", CTX)
    with pytest.raises(SourceFormatError, match="truncated"):
        parse_openrouter(b'{"data": [{"id": "a/b", "pricing": {"prompt": "0.1', "x.json", CTX)
    data = (b'{"data": [{"id": "no-slash", "pricing": {"prompt": "0", "completion": "0"}},'
            b' {"id": "x/y"}, {"id": "x/z", "pricing": {"prompt": "0.000001"}}, 3,'
            b' {"id": "x/w", "pricing": {"prompt": "-0.000001", "completion": "0"}}]}')
    p = parse_openrouter(data, "x.json", CTX)
    check_contract(p)
    assert p.rows.num_rows == 0
    assert [(r.line, r.field) for r in p.rejects] == [
        (1, "id"), (2, "pricing"), (3, "pricing.completion"), (4, "data"), (5, "pricing.prompt")]
    assert "negative" in p.rejects[-1].reason
