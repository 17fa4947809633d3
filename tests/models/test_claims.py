"""The DOMAIN.md claims recomputed by the code, and the docs showing exactly those figures."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from models.claims import ClaimsFigures, claims_table, compute_claims
from models.spec import ModelSpec

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "data" / "real" / "model_configs"
DOC = REPO / "docs" / "economics.md"
D = Decimal


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_config(json.loads((CONFIGS / f"{name}_config.json").read_text()))


@pytest.fixture(scope="module")
def figures() -> ClaimsFigures:
    return compute_claims(spec("llama-3.1-70b-instruct"), spec("deepseek-v3"))


def test_kv_70b_10k_tokens(figures: ClaimsFigures) -> None:
    # 2 × 80 × 8 × 128 × 1 B × 10,000 = 1,638,400,000 B = 1.64 GB
    assert figures.kv_70b_10k_fp8_bytes == 1_638_400_000
    # every query head with its own K, V at bf16: 2 × 80 × 64 × 128 × 2 × 10,000 = 26.2144 GB
    assert figures.kv_70b_10k_all_heads_bf16_bytes == 26_214_400_000
    assert figures.kv_70b_10k_all_heads_bf16_bytes / 2**30 == pytest.approx(24.41, abs=0.01)


def test_money_claims(figures: ClaimsFigures) -> None:
    # 16 × 2.02 = 32.32; × 730 = 23,593.60
    assert figures.h200x16_usd_per_hour == D("32.32")
    assert figures.h200x16_usd_per_month == D("23593.60")
    # (8,000 × 2.5 + 15,500 × 12) / 1e6 = 0.206
    assert figures.api_cost_per_call_usd == D("0.206")
    # 23,593.60 / 0.206 = 114,532.038...
    assert figures.breakeven_calls_per_month.quantize(D("0.01")) == D("114532.04")
    assert figures.api_spend_at_50k_calls_usd == D("10300")
    # 32.32 × 24 / 57,600 = 0.0134666...; 0.206 / that = 15.297
    assert figures.cost_per_call_at_40_per_min_usd.quantize(D("0.0000001")) == D("0.0134667")
    assert figures.api_to_self_host_cost_ratio.quantize(D("0.001")) == D("15.297")
    # 8 × 3.36 = 26.88; × 730 = 19,622.40; saving 23,593.60 − 19,622.40 = 3,971.20
    assert figures.b200x8_usd_per_hour == D("26.88")
    assert figures.b200x8_usd_per_month == D("19622.40")
    assert figures.b200_saving_usd_per_month == D("3971.20")


def test_1_2t_moe_fit(figures: ClaimsFigures) -> None:
    # 1.2e12 × 1 B × 1.03 = 1,236 GB
    assert figures.moe_1_2t_weights_gb == pytest.approx(1236.0)
    # usable: 8 × 141 × 0.9 = 1,015.2; 16 × 141 × 0.9 = 2,030.4; 8 × 180 × 0.9 = 1,296; 8 × 288 × 0.9 = 2,073.6
    assert figures.moe_1_2t_usable_gb == pytest.approx(
        {"8×H200": 1015.2, "16×H200": 2030.4, "8×B200": 1296.0, "8×B300": 2073.6}
    )
    # budget = usable − 1,236 − gpus × 2
    assert figures.moe_1_2t_kv_budget_gb == pytest.approx(
        {"8×H200": -236.8, "16×H200": 762.4, "8×B200": 44.0, "8×B300": 821.6}
    )


def test_deepseek_call_rates(figures: ClaimsFigures) -> None:
    c = figures.deepseek_calls_per_minute
    assert c["16×H200 TP"] == pytest.approx(5.75, abs=0.01)
    assert c["16×H200 attention-DP"] == pytest.approx(69.39, abs=0.01)
    assert c["8×B200 attention-DP"] == pytest.approx(39.87, abs=0.01)


def test_doc_shows_every_claim_row(figures: ClaimsFigures) -> None:
    doc = DOC.read_text(encoding="utf-8")
    rows = claims_table(figures)
    assert len(rows) == 8
    for row in rows:
        assert f"| {row.claim} | {row.claimed} | {row.computed} | {row.verdict} |" in doc, row.claim
