"""marts.gpu_sizing and marts.self_host_breakeven on a tiny landing folder, worked out by hand.

Catalog: llama-3.1-70b from its real config.json (data/real/model_configs; 70,553,706,496
params, 163,840 KV bytes per token at fp8), tiny-model from catalog figures only (8 B params,
131,072 KV bytes per token at bf16), mystery-model with neither (left out).
API prices (USD per Mtok): llama-3.1-70b (together) input 1, output 2; tiny-model (acme) 1 / 2.

Calls (thinking = reasoning tokens, output = completion - reasoning):
  2026-05  m1 llama  prompt 1000, thinking    0, output  500: 1000 x 1 + 500 x 2   = $0.002
  2026-06  c1 llama  prompt 1000, thinking 2000, output 1000: 1000 + 3000 x 2      = $0.007
           c2 llama  prompt 2000, thinking    0, output 1500: 2000 + 1500 x 2      = $0.005
           c3 llama  prompt 3000, thinking 5000, output 1000: 3000 + 6000 x 2      = $0.015
           t1 tiny   prompt 1000, thinking    0, output 1000: 1000 + 1000 x 2      = $0.003
June llama: 3 calls, $0.027, $0.009 per call. Profiles (nearest rank: p50 = 2nd of 3, p95 = 3rd):
  prompt [1000, 2000, 3000] -> 2000 / 3000; thinking [0, 2000, 5000] -> 2000 / 5000;
  output [1000, 1000, 1500] -> 1000 / 1500; so p50 = 5,000 tokens, p95 = 9,500 tokens.
GPU sheets: lambda B200 us-east 2.99 (2026-01-01) then 3.49 (2026-06-01), us-west 4.99, spot 1.50;
nebius H100-SXM 2.95 and 3.10. hours_per_month 730.
d1's $0.000018 per GPU-hour is deliberately tiny so that three calls beat one deployment (a
'self_host' verdict on a handful of calls); the marts are built directly here, without the
staging expectations of a full run (tests/pipelines covers the run).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal as D
from pathlib import Path

import dagster as dg
import pytest

from models.gpus import gpu_spec
from models.sizing import Deployment
from models.spec import CallProfile, ModelSpec
from models.throughput import estimate_throughput
from tests.conftest import REAL, build_warehouse, write_files
from warehouse.economics import Built, build_gpu_sizing, build_self_host_breakeven

LLAMA_CONFIG = (REAL / "model_configs" / "llama-3.1-70b-instruct_config.json").read_text()


def _call(rid: str, ts: str, model: str, provider: str, prompt: int, completion: int, reasoning: int) -> str:
    return (f'{{"ts":"{ts}","request_id":"{rid}","model":"{model}","provider":"{provider}",'
            f'"usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},'
            f'"completion_tokens_details":{{"reasoning_tokens":{reasoning}}}}}}}')


FILES = {
    "catalog/configs/llama-3.1-70b.json": LLAMA_CONFIG,
    "catalog/models.csv": (
        "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
        "llama-3.1-70b,llama,true,,,configs/llama-3.1-70b.json,,\n"
        "tiny-model,tiny,true,8,,,,131072\n"
        "mystery-model,x,true,,,,,\n"
    ),
    "catalog/deployments.csv": (
        "deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,usd_per_gpu_hour\n"
        "d1-h200-fp8,llama-3.1-70b,nebius,H200,1,fp8,,10,0.000018\n"
        "d2-h100-bf16,llama-3.1-70b,nebius,H100,1,bf16,,,\n"
        "d3-b200-fp8,llama-3.1-70b,lambda,B200,2,fp8,,0.00005,\n"
        "d4-tiny-l40s,tiny-model,acme,L40S,1,bf16,,5,0.5\n"
        "d5-mystery,mystery-model,acme,H100,1,bf16,,5,1\n"
        "d6-tpu,llama-3.1-70b,gcp,TPU-v5,8,bf16,,5,1\n"
        "d7-h200-estimated,llama-3.1-70b,nebius,H200,1,fp8,,,2\n"
    ),
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\n"
        "together,llama-3.1-70b,1,2,USD\n"
        "acme,tiny-model,1,2,USD\n"
    ),
    "prices/gpu/gpus.2026-01-01.csv": (
        "provider,gpu_type,gpus_per_node,usd_per_gpu_hour,pricing,effective_from,region\n"
        "lambda,B200,8,2.99,on_demand,2026-01-01,us-east\n"
        "lambda,B200,8,4.99,on_demand,2026-01-01,us-west\n"
        "lambda,B200,8,1.50,spot,2026-01-01,us-east\n"
        "nebius,H100-SXM,8,2.95,on_demand,2026-01-01,eu-north1\n"
        "nebius,H100-SXM,8,3.10,on_demand,2026-01-01,us-central1\n"
    ),
    "prices/gpu/gpus.2026-06-01.csv": (
        "provider,gpu_type,gpus_per_node,usd_per_gpu_hour,pricing,effective_from,region\n"
        "lambda,B200,8,3.49,on_demand,2026-06-01,us-east\n"
    ),
    "telemetry/requests/calls.jsonl": "\n".join([
        _call("m1", "2026-05-20T12:00:00Z", "llama-3.1-70b", "together", 1000, 500, 0),
        _call("c1", "2026-06-01T00:00:00Z", "llama-3.1-70b", "together", 1000, 3000, 2000),
        _call("c2", "2026-06-15T10:00:00Z", "llama-3.1-70b", "together", 2000, 1500, 0),
        _call("c3", "2026-06-30T23:59:59Z", "llama-3.1-70b", "together", 3000, 6000, 5000),
        _call("t1", "2026-06-10T08:00:00Z", "tiny-model", "acme", 1000, 1000, 0),
    ]) + "\n",
}

MAY, JUNE = "2026-05-01", "2026-06-01"
LLAMA_WEIGHTS_FP8 = 70_553_706_496 * 1.03 / 1e9   # 72.6703 GB (1 byte/param + 3 % overhead)
BUILT: dict[str, Built] = {}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("economics")
    landing = write_files(tmp / "landing", FILES)
    c, summary = build_warehouse(landing, tmp / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 0
    BUILT["sizing"] = build_gpu_sizing(c)
    BUILT["breakeven"] = build_self_host_breakeven(c)
    yield c
    c.close()


def rows(con, sql: str) -> list[tuple]:
    return con.sql(sql).fetchall()


def test_call_profiles_are_nearest_rank_percentiles(con):
    got = rows(con, "SELECT model, month::VARCHAR, profile, calls, api_calls, prompt_tokens, thinking_tokens, output_tokens "
                    "FROM core.call_profiles ORDER BY ALL")
    assert got == [
        ("llama-3.1-70b", MAY, "p50", 1, 1, 1000, 0, 500),
        ("llama-3.1-70b", MAY, "p95", 1, 1, 1000, 0, 500),
        ("llama-3.1-70b", JUNE, "p50", 3, 3, 2000, 2000, 1000),
        ("llama-3.1-70b", JUNE, "p95", 3, 3, 3000, 5000, 1500),
        ("tiny-model", JUNE, "p50", 1, 1, 1000, 0, 1000),
        ("tiny-model", JUNE, "p95", 1, 1, 1000, 0, 1000),
    ]


def test_gpu_sizing_hand_worked(con):
    got = {r[:5]: r[5:] for r in rows(con, "SELECT model, gpu_type, gpus, precision, profile, month::VARCHAR, weights_gb, "
                                           "kv_bytes_per_token, kv_gb_per_call, max_concurrent_calls, fits FROM marts.gpu_sizing")}
    # one row per distinct set-up x profile: d1 and d7 share (llama, H200, 1, fp8); d5, d6 are left out
    assert len(got) == 8
    # llama on 1 x H200 fp8, June (the newest month): usable 141 x 0.9 = 126.9 GB; budget 126.9 - 72.6703 - 2 = 52.2297
    # p50: 5,000 x 163,840 B = 0.8192 GB -> floor(52.2297 / 0.8192) = floor(63.76) = 63
    # p95: 9,500 x 163,840 B = 1.55648 GB -> floor(52.2297 / 1.55648) = floor(33.56) = 33
    month, weights, kv_tok, kv_call, calls, fits = got[("llama-3.1-70b", "H200", 1, "fp8", "p50")]
    assert (month, kv_tok, calls, fits) == (JUNE, 163_840, 63, True)
    assert weights == pytest.approx(LLAMA_WEIGHTS_FP8) and kv_call == pytest.approx(0.8192)
    assert got[("llama-3.1-70b", "H200", 1, "fp8", "p95")][3:] == (pytest.approx(1.55648), 33, True)
    # 2 x B200 fp8: 2 x 180 x 0.9 = 324; budget 324 - 72.6703 - 4 = 247.3297 -> p50 floor(301.9) = 301, p95 floor(158.9) = 158
    assert got[("llama-3.1-70b", "B200", 2, "fp8", "p50")][4:] == (301, True)
    assert got[("llama-3.1-70b", "B200", 2, "fp8", "p95")][4:] == (158, True)
    # 1 x H100 bf16: weights 70.5537 x 2 x 1.03 = 145.34 GB > 80 x 0.9 = 72 usable -> nothing fits
    weights, kv_tok, _, calls, fits = got[("llama-3.1-70b", "H100", 1, "bf16", "p95")][1:]
    assert weights == pytest.approx(145.3406, abs=1e-4) and kv_tok == 327_680 and (calls, fits) == (0, False)
    # tiny-model from catalog figures on 1 x L40S bf16: weights 8 x 2 x 1.03 = 16.48 GB; KV 2,000 x 131,072 B
    # = 0.262144 GB; budget 48 x 0.9 - 16.48 - 2 = 24.72 -> floor(24.72 / 0.262144) = floor(94.30) = 94
    month, weights, kv_tok, kv_call, calls, fits = got[("tiny-model", "L40S", 1, "bf16", "p50")]
    assert (month, kv_tok, calls, fits) == (JUNE, 131_072, 94, True)
    assert weights == pytest.approx(16.48) and kv_call == pytest.approx(0.262144)


def test_self_host_breakeven_hand_worked(con):
    cols = ("api_calls, api_spend_usd, api_cost_per_call_usd, usd_per_gpu_hour, usd_per_gpu_hour_source, "
            "self_host_usd_per_month, calls_per_minute_source, capacity_calls_per_month, deployments_needed, "
            "breakeven_calls_per_month, breakeven_api_spend_usd, savings_usd, fits, verdict")
    got = {r[:2]: dict(zip([c.strip() for c in cols.split(",")], r[2:], strict=True))
           for r in rows(con, f"SELECT month::VARCHAR, deployment, {cols} FROM marts.self_host_breakeven")}
    # d1..d3 in May and June, d4 in June; d5 (model cannot be sized), d6 (unknown GPU) left out
    assert sorted(got) == sorted([(m, d) for m in (MAY, JUNE) for d in ("d1-h200-fp8", "d2-h100-bf16", "d3-b200-fp8",
                                                                          "d7-h200-estimated")] + [(JUNE, "d4-tiny-l40s")])

    # d1, June: 1 x 0.000018 x 730 = $0.01314 a month; capacity 10 x 60 x 730 = 438,000 calls
    d1 = got[(JUNE, "d1-h200-fp8")]
    assert d1["api_calls"] == 3 and d1["api_spend_usd"] == D("0.027") and d1["api_cost_per_call_usd"] == D("0.009")
    assert d1["self_host_usd_per_month"] == D("0.013140") and d1["usd_per_gpu_hour_source"] == "deployment"
    assert d1["capacity_calls_per_month"] == 438_000 and d1["deployments_needed"] == 1
    assert d1["breakeven_calls_per_month"] == 2                                   # ceil(0.01314 / 0.009 = 1.46)
    assert isinstance(d1["breakeven_calls_per_month"], int) and isinstance(d1["capacity_calls_per_month"], int)
    assert d1["breakeven_api_spend_usd"] == d1["self_host_usd_per_month"]
    assert d1["savings_usd"] == D("0.013860")                                       # 0.027 - 1 x 0.01314
    assert (d1["fits"], d1["verdict"]) == (True, "self_host")
    # d1, May: 1 call at $0.002 -> break-even ceil(0.01314 / 0.002 = 6.57) = 7; savings 0.002 - 0.01314 = -0.01114
    d1_may = got[(MAY, "d1-h200-fp8")]
    assert d1_may["breakeven_calls_per_month"] == 7
    assert (d1_may["savings_usd"], d1_may["verdict"]) == (D("-0.011140"), "stay_on_api")

    # d2: sheet price, cheapest nebius H100 on demand (H100-SXM 2.95 < 3.10): 2.95 x 730 = $2,153.50; weights do not fit
    d2 = got[(JUNE, "d2-h100-bf16")]
    assert d2["usd_per_gpu_hour"] == D("2.95") and d2["usd_per_gpu_hour_source"] == "gpu_price_sheet"
    assert d2["self_host_usd_per_month"] == D("2153.50")
    assert d2["capacity_calls_per_month"] == 0 and d2["calls_per_minute_source"] == "estimated"
    assert (d2["fits"], d2["verdict"], d2["deployments_needed"], d2["savings_usd"]) == (False, "infeasible", None, None)
    assert d2["breakeven_calls_per_month"] == 239_278                             # ceil(2153.5 / 0.009 = 239,277.8)

    # d3: newest lambda B200 on demand in force = min(3.49 us-east since 2026-06-01, 4.99 us-west); spot 1.50 ignored
    # 2 x 3.49 x 730 = $5,095.40; capacity 0.00005 x 60 x 730 = 2.19 calls (2 whole calls) -> June ceil(3 / 2.19) = 2 deployments
    d3 = got[(JUNE, "d3-b200-fp8")]
    assert d3["usd_per_gpu_hour"] == D("3.49") and d3["self_host_usd_per_month"] == D("5095.40")
    assert d3["capacity_calls_per_month"] == 2 and d3["deployments_needed"] == 2
    assert d3["savings_usd"] == D("-10190.773000")                                   # 0.027 - 2 x 5,095.40
    assert d3["breakeven_api_spend_usd"] == D("5095.40") and d3["verdict"] == "stay_on_api"
    assert got[(MAY, "d3-b200-fp8")]["deployments_needed"] == 1                      # ceil(1 / 2.19)

    # d4 (catalog-only model): 0.5 x 730 = $365; capacity 5 x 60 x 730 = 219,000; 365 / 0.003 = 121,666.67 -> 121,667 calls
    d4 = got[(JUNE, "d4-tiny-l40s")]
    assert (d4["api_calls"], d4["api_cost_per_call_usd"], d4["self_host_usd_per_month"]) == (1, D("0.003"), D("365"))
    assert d4["capacity_calls_per_month"] == 219_000 and d4["breakeven_calls_per_month"] == 121_667
    assert (d4["savings_usd"], d4["verdict"]) == (D("-364.997"), "stay_on_api")


def test_estimated_capacity_is_the_roofline_on_the_p50_profile(con):
    (cpm, source, capacity), = rows(con, "SELECT calls_per_minute, calls_per_minute_source, capacity_calls_per_month "
                                         "FROM marts.self_host_breakeven WHERE deployment = 'd7-h200-estimated' "
                                         "AND month = DATE '2026-06-01'")
    spec = ModelSpec.from_config(json.loads(LLAMA_CONFIG))
    expected = estimate_throughput(spec, Deployment(gpu_spec("H200"), 1, "fp8"), CallProfile(2000, 2000, 1000))
    assert source == "estimated" and expected.calls_per_minute > 0
    assert cpm == pytest.approx(expected.calls_per_minute)
    # whole calls: floor(calls/min x 60 x 730), the same Decimal arithmetic as models.breakeven
    assert capacity == math.floor(D(str(expected.calls_per_minute)) * 60 * 730)


def test_unsizable_inputs_are_left_out_with_a_reason(con):
    skipped = BUILT["sizing"].skipped
    assert any("mystery-model" in s and "no config_json" in s for s in skipped)
    assert any("d5-mystery" in s for s in skipped)
    assert any("d6-tpu" in s and "TPU-v5" in s for s in skipped)
    assert BUILT["breakeven"].rows == 9


def test_money_columns_are_decimal_18_6(con):
    types = dict(rows(con, "SELECT column_name, data_type FROM information_schema.columns "
                           "WHERE table_schema = 'marts' AND table_name = 'self_host_breakeven'"))
    for col in ("api_spend_usd", "api_cost_per_call_usd", "self_host_usd_per_month", "breakeven_api_spend_usd", "savings_usd"):
        assert types[col] == "DECIMAL(18,6)", col
    assert rows(con, "SELECT count(DISTINCT build_id) FROM marts.gpu_sizing") == [(1,)]


def test_empty_catalog_gives_empty_marts(tmp_path: Path):
    landing = write_files(tmp_path / "landing", {"telemetry/requests/calls.jsonl": FILES["telemetry/requests/calls.jsonl"]})
    c, _ = build_warehouse(landing, tmp_path / "wh" / "thinktax.duckdb")
    try:
        assert build_gpu_sizing(c).rows == 0 and build_self_host_breakeven(c).rows == 0
        assert rows(c, "SELECT count(*) FROM marts.self_host_breakeven") == [(0,)]
    finally:
        c.close()


def test_publish_waits_for_the_economics_marts():
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    published = graph.get(dg.AssetKey(["ops", "published_warehouse"])).parent_keys
    assert {dg.AssetKey(["marts", "gpu_sizing"]), dg.AssetKey(["marts", "self_host_breakeven"])} <= published
    parents = {k.to_user_string() for k in graph.get(dg.AssetKey(["marts", "self_host_breakeven"])).parent_keys}
    assert {"core/call_profiles", "core/dim_models", "core/dim_deployments", "core/gpu_price_versions",
            "core/call_costs"} <= parents
