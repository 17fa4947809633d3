"""marts.node_hours, core.self_hosted_usage_cost, core.call_kv and marts.kv_thinking_share on a
small landing folder worked out by hand, and late request logs re-computing a published day.

The landing (built in tmp_path):
* node gpu-node-a: 2 x H100 at 3.00 USD per GPU-hour, active 2026-11-03 13:00-16:00 UTC ->
  3 paid hours of 2 x 3.00 = 6.00 USD (6,000,000 micro-USD) each, 18.00 in all.
* scrapes of gpu-node-a: the vLLM V1 fixture tests/fixtures/metrics/gpu-node-a__2026-11-03T14-05-00Z.prom
  as is (prompt 48,213,377, generation 61,502,118, e2e count 10,800, KV usage 0.4375) and three more
  made from it by changing the counter/gauge lines:
      time   prompt       generation   e2e count  KV usage
      14:05  48,213,377   61,502,118   10,800     0.4375   (the fixture)
      14:35  48,263,377   61,602,118   10,840     0.5625
      15:10      12,000       30,000        5     0.25     (vLLM restarted: counters start again)
      15:40      20,000       45,000        9     0.75
  and the DCGM fixture (14:05) plus one DCGM scrape at 14:35 (energy +1,080,000,000 mJ on GPU 0 =
  600 W for 1,800 s, +900,000,000 mJ on GPU 1 = 500 W; GPU_UTIL 91 and 89 %).
* request log: c1-c4 self-hosted on gpu-node-a, API calls on deepseek-v3, llama-3.1-70b-instruct,
  gpt-oss-120b and a model whose KV size comes from models.csv only.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REAL, REPO, write_files
from services.config import Config
from warehouse.db import Build, copy_warehouse, read_only
from warehouse.ingest import Ingestor, IngestSummary
from warehouse.transform import build_all

# the columns these rows give: stg.requests before issue 14 appended its pricing-modifier columns (NULL here)
REQUEST_COLUMNS_18 = ("file_id, line, ts, request_id, model, provider, node_id, task_id, task_type, team, latency_ms, "
                      "ttft_ms, usage_shape, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                      "thinking_tokens, output_tokens")

FIX = REPO / "tests" / "fixtures" / "metrics"
VLLM = (FIX / "gpu-node-a__2026-11-03T14-05-00Z.prom").read_text()
DCGM = (FIX / "gpu-node-a__2026-11-03T14-05-00Z.dcgm.prom").read_text()
CONFIGS = REAL / "model_configs"
NOW = dt.datetime(2026, 12, 1)  # ingest time: after the data (requests from the future are rejected)


def _set(text: str, metric: str, value: str, gpu: str | None = None) -> str:
    """The scrape with the sample line(s) of `metric` (optionally of one DCGM gpu) set to `value`."""
    label = rf'[^}}]*gpu="{gpu}"' if gpu is not None else ""
    pattern = re.compile(rf"^({re.escape(metric)}\{{{label}[^\n]*\}}) \S+$", re.MULTILINE)
    out, n = pattern.subn(lambda m: f"{m[1]} {value}", text)
    assert n >= 1, metric
    return out


def vllm_scrape(prompt: int, generation: int, e2e_count: int, usage: float) -> str:
    text = _set(VLLM, "vllm:prompt_tokens_total", f"{float(prompt)!r}")
    text = _set(text, "vllm:generation_tokens_total", f"{float(generation)!r}")
    text = _set(text, "vllm:e2e_request_latency_seconds_count", f"{float(e2e_count)!r}")
    for name in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"):
        text = _set(text, name, repr(usage))
    return text


def _energy(text: str, gpu: str) -> int:
    m = re.search(rf'^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{{gpu="{gpu}"[^\n]*\}} (\d+)$', text, re.MULTILINE)
    assert m
    return int(m[1])


E0, E1 = _energy(DCGM, "0"), _energy(DCGM, "1")  # 1,843,210,554,321 and 1,802,771,033,982 mJ
DCGM_1435 = _set(_set(_set(_set(DCGM,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", str(E0 + 1_080_000_000), gpu="0"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", str(E1 + 900_000_000), gpu="1"),
    "DCGM_FI_DEV_GPU_UTIL", "91", gpu="0"),
    "DCGM_FI_DEV_GPU_UTIL", "89", gpu="1")


def call(ts: str, rid: str, model: str, prompt: int, thinking: int, output: int, *,
         latency_ms: float | None = None, node: str | None = None, provider: str | None = None) -> str:
    rec: dict = {"ts": ts, "request_id": rid, "model": model,
                 "usage": {"prompt_tokens": prompt, "completion_tokens": thinking + output,
                           "completion_tokens_details": {"reasoning_tokens": thinking}}}
    if node:
        rec["node_id"] = node
    if provider:
        rec["provider"] = provider
    if latency_ms is not None:
        rec["latency_ms"] = latency_ms
    return json.dumps(rec)


CALLS = [
    # c1 [14:09:30, 14:10:00] and c2 [14:09:50, 14:10:30] overlap: union 14:09:30-14:10:30 = 60 s
    call("2026-11-03T14:10:00Z", "c1", "qwen3-32b", 1000, 2000, 1000, latency_ms=30_000, node="gpu-node-a"),
    call("2026-11-03T14:10:30Z", "c2", "qwen3-32b", 500, 0, 500, latency_ms=40_000, node="gpu-node-a"),
    # c3 [14:59:30, 15:00:30]: 30 s in hour 14, 30 s in hour 15
    call("2026-11-03T15:00:30Z", "c3", "qwen3-32b", 2000, 0, 1000, latency_ms=60_000, node="gpu-node-a"),
    # c4: no latency reported -> a point at 15:20
    call("2026-11-03T15:20:00Z", "c4", "qwen3-32b", 100, 0, 500, node="gpu-node-a"),
    # API calls (unpriced here: no price sheet; KV does not need a price)
    call("2026-11-03T12:00:00Z", "d1", "deepseek-v3", 1000, 3000, 1000, latency_ms=10_000, provider="deepseek"),
    call("2026-11-03T12:01:00Z", "l1", "llama-3.1-70b-instruct", 100, 0, 100, latency_ms=1_000, provider="together"),
    call("2026-11-03T12:02:00Z", "g1", "gpt-oss-120b", 100, 100, 100, latency_ms=1_000, provider="together"),
    call("2026-11-03T12:03:00Z", "m1", "mystery-7b", 100, 0, 100, latency_ms=2_000, provider="acme"),
    # no model entry at all: no KV row
    call("2026-11-03T12:04:00Z", "u1", "unknown-model", 100, 0, 100, latency_ms=2_000, provider="acme"),
]


def landing_files() -> dict[str, str]:
    files = {
        "catalog/nodes.csv": (
            "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
            "gpu-node-a,nebius,H100,2,qwen3-32b,bf16,3.00,2026-11-03T13:00:00Z,2026-11-03T16:00:00Z\n"
        ),
        "catalog/models.csv": (
            "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
            "qwen3-32b,qwen3,true,32.8,32.8,configs/qwen3-32b_config.json,,\n"
            "deepseek-v3,deepseek,false,671,37,configs/deepseek-v3_config.json,,\n"
            "llama-3.1-70b-instruct,llama,false,70.6,70.6,configs/llama-3.1-70b-instruct_config.json,,\n"
            "gpt-oss-120b,gpt-oss,true,117,5.1,configs/gpt-oss-120b_config.json,,\n"
            "mystery-7b,mystery,false,7,7,,,131072\n"
        ),
        "telemetry/requests/2026-11-03.jsonl": "\n".join(CALLS) + "\n",
        "telemetry/metrics/gpu-node-a__2026-11-03T14-05-00Z.prom": VLLM,
        "telemetry/metrics/gpu-node-a__2026-11-03T14-35-00Z.prom": vllm_scrape(48_263_377, 61_602_118, 10_840, 0.5625),
        "telemetry/metrics/gpu-node-a__2026-11-03T15-10-00Z.prom": vllm_scrape(12_000, 30_000, 5, 0.25),
        "telemetry/metrics/gpu-node-a__2026-11-03T15-40-00Z.prom": vllm_scrape(20_000, 45_000, 9, 0.75),
        "telemetry/metrics/gpu-node-a__2026-11-03T14-05-00Z.dcgm.prom": DCGM,
        "telemetry/metrics/gpu-node-a__2026-11-03T14-35-00Z.dcgm.prom": DCGM_1435,
    }
    for name in ("qwen3-32b", "deepseek-v3", "llama-3.1-70b-instruct", "gpt-oss-120b"):
        files[f"catalog/configs/{name}_config.json"] = (CONFIGS / f"{name}_config.json").read_text()
    return files


def run(landing: Path, published: Path, build_id: str) -> IngestSummary:
    """One pipeline run without Dagster: copy the published file, ingest what is new, rebuild
    core and marts from staging, publish atomically."""
    b = Build(published, build_id)
    b.start(Config().settings_row())
    con = b.connect()
    summary = Ingestor(con, landing, now=NOW).ingest()
    # only the DCGM scrapes hold samples that are not loaded: the exporter's blank-value markers
    # (quarantined with that reason so the file's accounting is complete); the vLLM scrapes' old
    # alias of kv_cache_usage counts as a duplicate
    assert not [f for f in summary.files if f.rows_quarantined and not f.file.endswith(".dcgm.prom")]
    build_all(con)
    con.close()
    b.publish(len(summary.new_files), str(landing))
    return summary


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> tuple[Path, Path]:
    """(landing, published warehouse) after one run on the landing above."""
    root = tmp_path_factory.mktemp("node_hours")
    landing = write_files(root / "landing", landing_files())
    wh = root / "wh" / "thinktax.duckdb"
    run(landing, wh, "b1")
    return landing, wh


@pytest.fixture
def published(first_run) -> Path:
    return first_run[1]


@pytest.fixture
def con(published):
    with read_only(published) as c:
        yield c


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


H13, H14, H15 = (dt.datetime(2026, 11, 3, h) for h in (13, 14, 15))


# -- marts.node_hours: counters, gauges, DCGM ---------------------------------------------------

def test_node_hours_every_paid_hour_even_without_scrapes(con):
    got = rows(con, "SELECT hour, gpu_hours, cost_usd, has_metrics, scrapes FROM marts.node_hours "
                    "WHERE node_id = 'gpu-node-a' ORDER BY hour")
    # 2 GPUs x 1 h = 2 GPU-hours, 2 x 3.00 = 6.00 USD each hour; 14:05 and 14:35 (vLLM and DCGM
    # share the time) are 2 scrape times, 15:10 and 15:40 another 2
    assert got == [
        {"hour": H13, "gpu_hours": 2.0, "cost_usd": D("6.000000"), "has_metrics": False, "scrapes": 0},
        {"hour": H14, "gpu_hours": 2.0, "cost_usd": D("6.000000"), "has_metrics": True, "scrapes": 2},
        {"hour": H15, "gpu_hours": 2.0, "cost_usd": D("6.000000"), "has_metrics": True, "scrapes": 2},
    ]
    types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_schema = 'marts' AND table_name = 'node_hours'").fetchall())
    assert types["cost_usd"] == types["idle_cost_usd"] == types["usage_cost_usd"] == "DECIMAL(18,6)"


def test_node_hours_counters_with_a_reset(con):
    got = {r["hour"]: r for r in rows(con, "SELECT * FROM marts.node_hours WHERE node_id = 'gpu-node-a'")}
    # hour 13: no scrape -> unknown, not 0
    assert [got[H13][k] for k in ("calls", "prompt_tokens", "generation_tokens", "kv_cache_usage_mean",
                                  "gpu_util_mean", "energy_kwh")] == [None] * 6
    # hour 14: 14:05 is each series' first scrape (no delta); 14:35 - 14:05:
    #   prompt 48,263,377 - 48,213,377 = 50,000; generation 61,602,118 - 61,502,118 = 100,000;
    #   finished requests (e2e histogram count) 10,840 - 10,800 = 40
    h14 = got[H14]
    assert (h14["calls"], h14["prompt_tokens"], h14["generation_tokens"]) == (40, 50_000, 100_000)
    assert h14["counter_resets"] == 0 and h14["counter_gaps"] == 0
    # hour 15: 15:10 dropped below 14:35 -> restart, the delta is the new value (12,000 / 30,000 / 5),
    #   not 12,000 - 48,263,377; then 15:40 - 15:10: 8,000 / 15,000 / 4
    #   -> prompt 20,000, generation 45,000, calls 9; 3 counters reset at 15:10
    h15 = got[H15]
    assert (h15["calls"], h15["prompt_tokens"], h15["generation_tokens"]) == (9, 20_000, 45_000)
    assert h15["counter_resets"] == 3
    # KV usage gauges: hour 14 mean (0.4375 + 0.5625) / 2 = 0.5, max 0.5625; hour 15 (0.25 + 0.75) / 2, max 0.75
    assert (h14["kv_cache_usage_mean"], h14["kv_cache_usage_max"]) == (0.5, 0.5625)
    assert (h15["kv_cache_usage_mean"], h15["kv_cache_usage_max"]) == (0.5, 0.75)
    # DCGM: GPU_UTIL (87 + 85 + 91 + 89) / 4 = 88 % -> 0.88; energy (1,080,000,000 + 900,000,000) mJ
    #   / 3.6e9 mJ per kWh = 0.55 kWh (the 14:05 values are first scrapes: no delta)
    assert h14["gpu_util_mean"] == pytest.approx(0.88, abs=1e-12)
    assert h14["energy_kwh"] == pytest.approx(0.55, abs=1e-12)
    assert h15["gpu_util_mean"] is None and h15["energy_kwh"] is None


def test_node_hours_log_side_for_cross_checking(con):
    got = {r["hour"]: r for r in rows(con, "SELECT hour, calls_logged, prompt_tokens_logged, generation_tokens_logged "
                                           "FROM marts.node_hours WHERE node_id = 'gpu-node-a'")}
    # by the hour of ts: 14 -> c1, c2: prompt 1,000 + 500, generation (2,000 + 1,000) + 500
    #                    15 -> c3, c4: prompt 2,000 + 100, generation 1,000 + 500
    assert (got[H13]["calls_logged"], got[H13]["prompt_tokens_logged"], got[H13]["generation_tokens_logged"]) == (0, 0, 0)
    assert (got[H14]["calls_logged"], got[H14]["prompt_tokens_logged"], got[H14]["generation_tokens_logged"]) == (2, 1500, 3500)
    assert (got[H15]["calls_logged"], got[H15]["prompt_tokens_logged"], got[H15]["generation_tokens_logged"]) == (2, 2100, 1500)


# -- usage basis: busy time and idle cost -------------------------------------------------------

def test_usage_basis_busy_seconds_and_idle_cost(con):
    got = {r["hour"]: r for r in rows(con, "SELECT hour, busy_seconds, cost_usd, usage_cost_usd, idle_cost_usd "
                                           "FROM marts.node_hours WHERE node_id = 'gpu-node-a'")}
    # hour 13: nothing ran -> all 6.00 idle
    # hour 14: union c1 u c2 = 14:09:30-14:10:30 = 60 s, plus c3's 14:59:30-15:00:00 = 30 s -> 90 s;
    #          usage = 6,000,000 x 90 / 3,600 = 150,000 micro-USD = 0.15, idle 5.85
    # hour 15: c3's 15:00:00-15:00:30 = 30 s (c4 has no latency: no time) -> usage 0.05, idle 5.95
    assert [(got[h]["busy_seconds"], got[h]["usage_cost_usd"], got[h]["idle_cost_usd"]) for h in (H13, H14, H15)] == [
        (0.0, D("0"), D("6")), (90.0, D("0.15"), D("5.85")), (30.0, D("0.05"), D("5.95"))]
    for h in (H13, H14, H15):
        assert got[h]["usage_cost_usd"] + got[h]["idle_cost_usd"] == got[h]["cost_usd"]


def test_usage_cost_per_call_by_tokens_and_time_in_the_hour(con):
    got = {r["request_id"]: r for r in rows(con, "SELECT * FROM core.self_hosted_usage_cost WHERE kind = 'call'")}
    # hour 14 (150,000 micro-USD): weights = tokens x share of the call's interval inside the hour:
    #   c1 4,000 x 1, c2 1,000 x 1, c3 3,000 x 30/60 = 1,500 -> of 6,500:
    #   c1 92,307.69, c2 23,076.92, c3 34,615.38 -> floors 92,307 + 23,076 + 34,615 = 149,998;
    #   the 2 left go to the largest remainders (c2 .92, c1 .69) -> 92,308 / 23,077 / 34,615
    # hour 15 (50,000): c3 1,500, c4 600 (a point call weighs its tokens) -> 35,714.29 / 14,285.71
    #   -> 35,714 / 14,286
    # c3 = 34,615 + 35,714 = 70,329
    assert {k: v["usage_micro_usd"] for k, v in got.items()} == {
        "c1": 92_308, "c2": 23_077, "c3": 70_329, "c4": 14_286}
    assert got["c1"]["usage_cost_usd"] == D("0.092308")
    # c1's thinking share 2,000 / 4,000 of its usage cost: 92,308 x 0.5 = 46,154 micro-USD
    assert got["c1"]["thinking_usage_cost_usd"] == D("0.046154")
    # allocation basis on the same calls: the whole 18.00 lands on c1-c4
    assert sum(v["allocation_cost_usd"] for v in got.values()) == D("18")
    # nothing lost: usage + idle = what the node was paid, to the micro-dollar
    paid, usage, idle = con.execute(
        "SELECT (SELECT sum(cost_micro_usd) FROM core.node_hours_cost), sum(usage_micro_usd), sum(idle_micro_usd) "
        "FROM core.self_hosted_usage_cost").fetchall()[0]
    assert paid == usage + idle == 18_000_000
    assert usage == 200_000


# -- KV bytes per token from the real configs, and KV byte-seconds ------------------------------

def test_kv_bytes_per_token_from_real_configs(con):
    got = {r["model"]: r for r in rows(con, "SELECT DISTINCT model, kv_bytes_per_token_bf16, kv_bytes_per_token_held_bf16, "
                                            "kv_bytes_source, is_mla FROM core.call_kv")}
    # Qwen3-32B: 2 x 64 layers x 8 KV heads x head_dim 128 (given; 5120/64 would be 80) x 2 B = 262,144
    assert got["qwen3-32b"]["kv_bytes_per_token_bf16"] == 262_144
    # Llama-3.1-70B: no head_dim in the config -> 8192 / 64 = 128: 2 x 80 x 8 x 128 x 2 = 327,680
    assert got["llama-3.1-70b-instruct"]["kv_bytes_per_token_bf16"] == 327_680
    # DeepSeek-V3 (MLA): 61 x (512 + 64) x 2 = 70,272 (the 128 KV heads are ignored)
    assert (got["deepseek-v3"]["kv_bytes_per_token_bf16"], got["deepseek-v3"]["is_mla"]) == (70_272, True)
    # gpt-oss-120b: 2 x 36 x 8 x 64 x 2 = 73,728; 18 of its 36 layers slide (window 128), so the
    #   tokens held over a call are counted on the 18 full layers: 36,864
    assert (got["gpt-oss-120b"]["kv_bytes_per_token_bf16"], got["gpt-oss-120b"]["kv_bytes_per_token_held_bf16"]) == (73_728, 36_864)
    # no config: models.csv's figure
    assert (got["mystery-7b"]["kv_bytes_per_token_bf16"], got["mystery-7b"]["kv_bytes_source"]) == (131_072, "models_csv")
    assert got["qwen3-32b"]["kv_bytes_source"] == "config_json"
    assert "unknown-model" not in got


def test_kv_byte_seconds_split_prompt_thinking_output(con):
    got = {r["request_id"]: r for r in rows(con, "SELECT * FROM core.call_kv")}
    c1 = got["c1"]
    # Qwen3-32B, P 1,000, T 2,000, O 1,000, 30 s: prompt 262,144 x 30 x 1,000 = 7,864,320,000;
    # thinking 262,144 x 30 x 2,000 x (2,000 + 2 x 1,000) / (2 x 3,000) = 10,485,760,000;
    # output 262,144 x 30 x 1,000^2 / 6,000 = 1,310,720,000; total 262,144 x 30 x 2,500 = 19,660,800,000
    assert c1["prompt_kv_byte_s"] == pytest.approx(7_864_320_000)
    assert c1["thinking_kv_byte_s"] == pytest.approx(10_485_760_000)
    assert c1["output_kv_byte_s"] == pytest.approx(1_310_720_000)
    assert c1["kv_byte_s"] == pytest.approx(19_660_800_000)
    assert c1["kv_peak_bytes"] == 262_144 * 4_000
    # DeepSeek-V3, P 1,000, T 3,000, O 1,000, 10 s: thinking 70,272 x 10 x 3,000 x 5,000 / 8,000
    #   = 1,317,600,000; output 70,272 x 10 x 1,000^2 / 8,000 = 87,840,000; prompt 702,720,000
    d1 = got["d1"]
    assert (d1["prompt_kv_byte_s"], d1["thinking_kv_byte_s"], d1["output_kv_byte_s"]) == pytest.approx(
        (702_720_000, 1_317_600_000, 87_840_000))
    # a call without latency has no byte-seconds
    assert got["c4"]["kv_byte_s"] is None


def test_kv_thinking_share_per_day_and_model(con):
    (r,) = rows(con, "SELECT * FROM marts.kv_thinking_share WHERE model = 'qwen3-32b'")
    # in units of 262,144 B.s: c1 prompt 30,000 thinking 40,000 output 5,000;
    #   c2 (500/0/500, 40 s) prompt 20,000 output 40 x 500^2 / 1,000 = 10,000;
    #   c3 (2,000/0/1,000, 60 s) prompt 120,000 output 60 x 1,000^2 / 2,000 = 30,000
    #   -> prompt 170,000, thinking 40,000, output 45,000, total 255,000
    assert (r["day"], r["calls"], r["calls_without_latency"]) == (dt.date(2026, 11, 3), 4, 1)
    assert r["prompt_kv_gb_s"] == pytest.approx(262_144 * 170_000 / 1e9)   # 44.56448
    assert r["thinking_kv_gb_s"] == pytest.approx(262_144 * 40_000 / 1e9)  # 10.48576
    assert r["output_kv_gb_s"] == pytest.approx(262_144 * 45_000 / 1e9)    # 11.79648
    assert r["kv_gb_s"] == pytest.approx(262_144 * 255_000 / 1e9)          # 66.84672
    assert (r["prompt_share"], r["thinking_share"], r["output_share"]) == pytest.approx((2 / 3, 8 / 51, 3 / 17))
    # tokens of the calls with latency: thinking 2,000 of 3,500 + 2,000 + 2,500 = 0.25
    assert r["thinking_token_share"] == 0.25


# -- late data ----------------------------------------------------------------------------------

def _snapshot(published: Path) -> dict[str, list]:
    with read_only(published) as c:
        return {t: c.execute(f"SELECT * EXCLUDE (build_id) FROM {t} ORDER BY ALL").fetchall()
                for t in ("marts.node_hours", "marts.kv_thinking_share", "marts.daily_spend")}


def test_late_log_file_recomputes_published_day_and_counts_nothing_twice(first_run, tmp_path):
    # a copy of the landing folder and of the warehouse published by the first run
    landing = Path(shutil.copytree(first_run[0], tmp_path / "landing"))
    wh = tmp_path / "wh" / "thinktax.duckdb"
    wh.parent.mkdir()
    copy_warehouse(first_run[1], wh)
    before = _snapshot(wh)

    # a log file for 2026-11-03 (already published) lands later: c5 on gpu-node-a, 13:29:00-13:30:00,
    # 2,000 prompt + 1,000 thinking + 1,000 output tokens
    late = call("2026-11-03T13:30:00Z", "c5", "qwen3-32b", 2000, 1000, 1000, latency_ms=60_000, node="gpu-node-a")
    write_files(landing, {"telemetry/requests/late/2026-11-03.part2.jsonl": late + "\n"})
    late_run = run(landing, wh, "b2")
    assert [(f.file, f.rows_loaded) for f in late_run.new_files] == [("telemetry/requests/late/2026-11-03.part2.jsonl", 1)]
    after = _snapshot(wh)
    with read_only(wh) as c:
        h13 = rows(c, f"SELECT * FROM marts.node_hours WHERE hour = TIMESTAMP '{H13}'")[0]
        # hour 13 now has 1 logged call and 60 s busy: usage 6,000,000 x 60 / 3,600 = 100,000 micro-USD
        assert (h13["calls_logged"], h13["prompt_tokens_logged"], h13["generation_tokens_logged"]) == (1, 2000, 2000)
        assert (h13["busy_seconds"], h13["usage_cost_usd"], h13["idle_cost_usd"]) == (60.0, D("0.1"), D("5.9"))
        (kv,) = rows(c, "SELECT calls, calls_without_latency FROM marts.kv_thinking_share WHERE model = 'qwen3-32b'")
        assert kv == {"calls": 5, "calls_without_latency": 1}
        # the other hours of the day are unchanged, and the node's cost is still 18.00 on both bases
        assert c.execute("SELECT sum(cost_usd), sum(usage_cost_usd) + sum(idle_cost_usd) FROM marts.node_hours").fetchall()[0] \
            == (D("18"), D("18"))
        spend = c.execute("SELECT sum(cost_usd) FROM marts.daily_spend WHERE source = 'self_hosted'").fetchall()[0][0]
        assert spend == D("18")
    assert after["marts.node_hours"] != before["marts.node_hours"]
    assert [r for r in after["marts.node_hours"] if r[1] != H13] == [r for r in before["marts.node_hours"] if r[1] != H13]

    # the late file landed again: byte for byte under another name (a file already ingested: no-op),
    # and re-written with its keys in another order (a new file whose call duplicates c5 by
    # request_id, the ingest's key); the next run changes nothing
    resent = json.dumps(json.loads(late), sort_keys=True)
    write_files(landing, {"telemetry/requests/late/copy-of-part2.jsonl": late + "\n",
                          "telemetry/requests/late/2026-11-03.part2.resent.jsonl": resent + "\n"})
    again = run(landing, wh, "b3")
    assert {f.file: (f.status, f.rows_loaded, f.rows_duplicate) for f in again.files if "late/" in f.file} == {
        "telemetry/requests/late/2026-11-03.part2.jsonl": ("already_ingested", 0, 0),
        "telemetry/requests/late/copy-of-part2.jsonl": ("already_ingested", 0, 0),
        "telemetry/requests/late/2026-11-03.part2.resent.jsonl": ("loaded", 0, 1),
    }
    assert _snapshot(wh) == after
    with read_only(wh) as c:
        assert c.execute("SELECT count(*), count(DISTINCT request_id) FROM core.calls").fetchall()[0] == (10, 10)


def test_paid_matches_check_passes_and_catches_a_lost_micro_dollar(published, tmp_path):
    from warehouse.checks import load_checks

    (check,) = [c for c in load_checks() if c.name == "node_hours_paid_matches"]
    assert check.asset == "marts.node_hours"
    copy = tmp_path / "copy.duckdb"
    copy_warehouse(published, copy)
    c = duckdb.connect(str(copy))
    assert check.run(c) == (0, [])
    # one micro-dollar of idle cost lost in hour 13 -> the node no longer adds up
    c.execute(f"UPDATE marts.node_hours SET idle_cost_usd = idle_cost_usd - 0.000001 WHERE hour = TIMESTAMP '{H13}'")
    n, bad = check.run(c)
    assert n == 1 and bad[0]["node_id"] == "gpu-node-a" and bad[0]["usage_plus_idle_usd"] == D("17.999999")
    c.close()


# -- property: the usage basis loses nothing, and busy time is the union of the call intervals --

START = dt.datetime(2026, 6, 1)


def _needed(target: str) -> list:
    """The SQL tables `target` reads, transitively, in build order (and target itself)."""
    from warehouse.transform import load_tables

    models = load_tables()
    by_table = {m.table: m for m in models}
    need, todo = set(), [target]
    while todo:
        t = todo.pop()
        if t in by_table and t not in need:
            need.add(t)
            todo.extend(by_table[t].deps)
    return [m for m in models if m.table in need]


@st.composite
def usage_scenario(draw):
    nodes = draw(st.lists(st.tuples(st.integers(1, 8), st.decimals("0.01", "40", places=2),
                                    st.integers(0, 50), st.integers(1, 8)), min_size=1, max_size=2))
    calls = draw(st.lists(st.tuples(st.integers(0, len(nodes) - 1), st.integers(0, 12 * 3600),
                                    st.one_of(st.none(), st.integers(0, 2 * 3600 * 1000)),
                                    st.integers(0, 20_000), st.integers(0, 5_000)), max_size=25))
    return nodes, calls


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(usage_scenario())
def test_usage_basis_adds_up_and_busy_time_is_the_interval_union(data):
    from warehouse.db import migrate, write_settings
    from warehouse.transform import build

    nodes, calls = data
    con = duckdb.connect()
    migrate(con)
    write_settings(con, Config().settings_row())
    spans = {}
    for i, (gpus, price, start_min, hours) in enumerate(nodes):
        a_from = START + dt.timedelta(minutes=start_min * 7)  # not hour-aligned
        spans[f"n{i}"] = (a_from, a_from + dt.timedelta(hours=hours))
        con.execute("INSERT INTO stg.nodes (file_id, line, node_id, provider, gpu_type, gpus, model, precision, "
                    "usd_per_gpu_hour, active_from, active_to) VALUES (1, ?, ?, 'p', 'H100', ?, 'm', NULL, ?, ?, ?)",
                    [i + 2, f"n{i}", gpus, price, *spans[f"n{i}"]])
    for j, (node, second, latency, prompt, out) in enumerate(calls):
        con.execute(f"INSERT INTO stg.requests ({REQUEST_COLUMNS_18}) VALUES (2, ?, ?, ?, 'm', NULL, ?, ?, NULL, NULL, ?, NULL, 'openai_chat', ?, 0, 0, 0, ?)",
                    [j, START + dt.timedelta(seconds=second), f"r{j}", f"n{node}", f"t{j}", latency, prompt, out])
    for m in _needed("core.self_hosted_usage_cost"):
        build(con, m)

    paid = dict(con.sql("SELECT node_id, sum(cost_micro_usd) FROM core.node_hours_cost GROUP BY 1").fetchall())
    basis = dict(con.sql("SELECT node_id, sum(usage_micro_usd) + sum(idle_micro_usd) FROM core.self_hosted_usage_cost "
                         "WHERE kind = 'idle' OR usage_micro_usd IS NOT NULL GROUP BY 1").fetchall())
    assert basis == paid
    assert con.execute("SELECT count(*) FROM core.self_hosted_usage_cost WHERE kind = 'call'").fetchall()[0][0] == len(calls)

    # busy seconds per node-hour against a plain-Python union of [ts - latency, ts], clipped to the hour
    hours = con.sql("SELECT node_id, hour, busy_seconds, active_seconds, idle_micro_usd FROM core.self_hosted_usage_cost "
                    "WHERE kind = 'idle'").fetchall()
    for node_id, hour, busy_s, active_s, idle in hours:
        h0, h1 = hour, hour + dt.timedelta(hours=1)
        pieces = sorted(
            (max(START + dt.timedelta(seconds=s) - dt.timedelta(milliseconds=lat), h0),
             min(START + dt.timedelta(seconds=s), h1))
            for n, s, lat, _, _ in calls if f"n{n}" == node_id and lat)
        union, cur_s, cur_e = dt.timedelta(0), None, None
        for s, e in pieces:
            if e <= s:
                continue
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    union += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            union += cur_e - cur_s
        assert busy_s == pytest.approx(min(union.total_seconds(), active_s), abs=1e-6)
        assert idle >= 0
    con.close()


def test_node_hours_from_the_real_sglang_scrape(tmp_path):
    # data/real/telemetry/sglang_metrics_sample_llama31_8b.prom as the 14:00:00 scrape of node sg-1
    # (prompt 8,128,902, generation 7,557,572, e2e count 11,228, token_usage 0.28), and the same
    # scrape 30 s later with prompt 8,228,902, generation 7,657,572, e2e count 11,328, token_usage 0.32
    real = (REAL / "telemetry" / "sglang_metrics_sample_llama31_8b.prom").read_text()
    later = _set(_set(_set(_set(real,
        "sglang:prompt_tokens_total", "8.228902e+06"),
        "sglang:generation_tokens_total", "7.657572e+06"),
        "sglang:e2e_request_latency_seconds_count", "11328.0"),
        "sglang:token_usage", "0.32")
    landing = write_files(tmp_path / "landing", {
        "catalog/nodes.csv": ("node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
                              "sg-1,lambda,A10,1,llama-3.1-8b-instruct,bf16,0.75,2026-11-03T14:00:00Z,2026-11-03T15:00:00Z\n"),
        "telemetry/requests/r.jsonl": call("2026-11-03T14:00:20Z", "s1", "llama-3.1-8b-instruct", 900, 0, 100,
                                           latency_ms=1_500, node="sg-1") + "\n",
        "telemetry/metrics/sg-1__2026-11-03T14-00-00Z.prom": real,
        "telemetry/metrics/sg-1__2026-11-03T14-00-30Z.prom": later,
    })
    wh = tmp_path / "wh" / "thinktax.duckdb"
    run(landing, wh, "s1")
    with read_only(wh) as c:
        (r,) = rows(c, "SELECT * FROM marts.node_hours")
    # deltas: 100,000 prompt, 100,000 generated, 100 finished requests; token_usage (0.28 + 0.32) / 2
    assert (r["node_id"], r["hour"], r["calls"], r["prompt_tokens"], r["generation_tokens"]) == (
        "sg-1", H14, 100, 100_000, 100_000)
    assert r["kv_cache_usage_mean"] == pytest.approx(0.30) and r["kv_cache_usage_max"] == 0.32
    # no DCGM exporter on this node; 1 x 0.75 USD; the one logged call ran 1.5 s of the hour:
    # usage 750,000 x 1.5 / 3,600 = 312.5 -> 313 micro-USD (half up), idle 749,687
    assert (r["gpu_util_mean"], r["energy_kwh"], r["cost_usd"]) == (None, None, D("0.75"))
    assert (r["calls_logged"], r["busy_seconds"], r["usage_cost_usd"], r["idle_cost_usd"]) == (
        1, 1.5, D("0.000313"), D("0.749687"))


def test_a_node_without_active_to_is_paid_to_the_end_of_the_latest_day_with_calls():
    """An empty active_to: until the end of the latest day with calls (core.calls' last day + 1),
    from any call, API or self-hosted. Node from 2026-11-03 22:30; calls on 11-03 and, last, an API
    call at 11-05 07:00, so the node is paid 22:30-24:00 on the 3rd (1.5 h), all of the 4th and 5th
    (48 h): 49.5 h x 2 GPUs x 3.00 USD = 297.00 USD, in 2 + 48 = 50 node-hours (22:00 .. 11-05 23:00)."""
    from warehouse.db import migrate, write_settings
    from warehouse.transform import build

    con = duckdb.connect()
    migrate(con)
    write_settings(con, Config().settings_row())
    con.execute("INSERT INTO stg.nodes (file_id, line, node_id, provider, gpu_type, gpus, model, precision, "
                "usd_per_gpu_hour, active_from, active_to) VALUES (1, 2, 'n0', 'p', 'H100', 2, 'm', NULL, 3.00, "
                "TIMESTAMP '2026-11-03 22:30:00', NULL)")
    calls = [("2026-11-03 23:00:00", "n0"), ("2026-11-04 12:00:00", "n0"), ("2026-11-05 07:00:00", None)]
    for j, (ts, node) in enumerate(calls):
        con.execute(f"INSERT INTO stg.requests ({REQUEST_COLUMNS_18}) VALUES (2, ?, ?, ?, 'm', ?, ?, 't', NULL, NULL, "
                    "1000, NULL, 'openai_chat', 100, 0, 0, 0, 10)",
                    [j, dt.datetime.fromisoformat(ts), f"r{j}", None if node else "openai", node])
    for m in _needed("core.node_hours_cost"):
        build(con, m)
    hours, first, last, micro = con.sql("SELECT count(*), min(hour), max(hour), sum(cost_micro_usd) "
                                        "FROM core.node_hours_cost WHERE node_id = 'n0'").fetchall()[0]
    assert (hours, first, last) == (50, dt.datetime(2026, 11, 3, 22), dt.datetime(2026, 11, 5, 23))
    assert micro == 297_000_000
