"""Peak concurrency, budget status, substitution break-even, the outlook and its alerts on a tiny
landing folder, worked by hand.

Catalog: tiny-model (8 B params, 131,072 KV bytes per token at bf16; weights 8 x 2 x 1.03 = 16.48 GB
at bf16) with one deployment d-tiny (1 x L40S, bf16, 5 calls/min, $0.00005 per GPU-hour); api-model,
a closed reasoning model bought through an API at $1 / $2 per Mtok (input / output).
substitutions.csv: api-model -> tiny-model, thinking x 2, output x 1. budgets.csv: search $0.015 a
month, soft at 50 %.

Calls (all api-model):
  b1..b10  2026-06-01 .. 06-10 12:00:00, team search, prompt 1,000, no output, 1 s: $0.001 each
  p1  ends 10:00:10 after 10 s   (in flight 10:00:00 .. 10:00:10)    team ops, prompt 1,000,
  p2  ends 10:00:15 after 10 s   (10:00:05 .. 10:00:15)               completion 2,000 of which
  p3  ends 10:00:08 after  3 s   (10:00:05 .. 10:00:08), on 06-10     reasoning 1,000: $0.005 each
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal as D

import pytest

from tests.conftest import build_warehouse, write_files
from tests.nightly_helpers import Receiver
from services import alert
from services.config import Alert, Config
from warehouse.outlook import (
    build_breakeven_outlook, build_budget_outlook, build_deployment_offers, build_peak_capacity, build_spend_forecast,
    build_substitution_breakeven,
)


def _call(rid, ts, prompt, completion, reasoning, latency_ms, team):
    return json.dumps({"ts": ts, "request_id": rid, "model": "api-model", "provider": "acme", "team": team,
                       "task_id": rid, "task_type": "qa", "latency_ms": latency_ms,
                       "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "completion_tokens_details": {"reasoning_tokens": reasoning}}})


CALLS = [_call(f"b{i}", f"2026-06-{i:02d}T12:00:00Z", 1000, 0, 0, 1000, "search") for i in range(1, 11)] + [
    _call("p1", "2026-06-10T10:00:10Z", 1000, 2000, 1000, 10000, "ops"),
    _call("p2", "2026-06-10T10:00:15Z", 1000, 2000, 1000, 10000, "ops"),
    _call("p3", "2026-06-10T10:00:08Z", 1000, 2000, 1000, 3000, "ops"),
]
FILES = {
    "catalog/models.csv": (
        "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
        "tiny-model,tiny,true,8,,,,131072\n"
        "api-model,closed,true,,,,,\n"
    ),
    "catalog/deployments.csv": (
        "deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,usd_per_gpu_hour\n"
        "d-tiny,tiny-model,acme,L40S,1,bf16,,5,0.00005\n"
    ),
    "catalog/substitutions.csv": "from_model,to_model,thinking_ratio,output_ratio,note\napi-model,tiny-model,2,1,thinks twice as long\n",
    "catalog/budgets.csv": "team,monthly_usd,soft_pct\nsearch,0.015,50\n",
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\nacme,api-model,1,2,USD\n"
    ),
    "telemetry/requests/calls.jsonl": "\n".join(CALLS) + "\n",
}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outlook")
    landing = write_files(tmp / "landing", FILES)
    c, summary = build_warehouse(landing, tmp / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 0
    for build in (build_spend_forecast, build_budget_outlook, build_deployment_offers, build_peak_capacity,
                  build_substitution_breakeven, build_breakeven_outlook):
        build(c)
    yield c
    c.close()


def test_peak_concurrency_of_overlapping_calls(con):
    got = con.sql("SELECT p50_concurrent_calls, p95_concurrent_calls, p99_concurrent_calls, max_concurrent_calls, "
                  "mean_concurrent_calls, calls_started FROM marts.peak_concurrency "
                  "WHERE model = 'api-model' AND hour = TIMESTAMP '2026-06-10 10:00:00'").fetchall()
    # level 1 for 5 + 5 = 10 s, 3 for 3 s (10:00:05-08), 2 for 2 s (08-10), 0 for 3,585 s:
    # cumulative seconds by level 0: 3,585 >= 0.99 x 3,600 = 3,564, so p50 = p95 = p99 = 0; max 3;
    # mean = (10 x 1 + 2 x 2 + 3 x 3) / 3,600 = 23 / 3,600
    assert got == [(0, 0, 0, 3, pytest.approx(23 / 3600), 3)]
    # each b call holds level 1 for 1 s of its hour
    assert con.sql("SELECT count(*), max(max_concurrent_calls), max(p99_concurrent_calls) FROM marts.peak_concurrency "
                   "WHERE model = 'api-model' AND hour <> TIMESTAMP '2026-06-10 10:00:00'").fetchall() == [(10, 1, 0)]


def test_budget_with_known_daily_burn_runs_out_on_the_day_worked_by_hand(con):
    row = con.sql("SELECT month, budget_usd, soft_usd, spent_usd, days_elapsed, days_remaining, burn_usd_per_day, "
                  "projected_month_end_usd, runs_out_on, runs_out_projected, status FROM marts.budget_status").fetchall()
    # June 1..10 (last day with calls: June 10): $0.001 a day -> spent 0.010, burn 0.001/day, 20 days left;
    # projected 0.010 + 0.001 x 20 = 0.030; runs out June 10 + ceil((0.015 - 0.010) / 0.001) = June 15;
    # 0.010 >= 50 % x 0.015 = 0.0075 -> 'soft'
    assert row == [(dt.date(2026, 6, 1), D("0.015"), D("0.0075"), D("0.010"), 10, 20, D("0.001"), D("0.030"),
                    dt.date(2026, 6, 15), True, "soft")]


def test_budget_outlook_puts_the_chosen_forecast_against_the_budget(con):
    got = con.sql("SELECT month, budget_usd, soft_usd, observed_usd, forecast_usd, lo95_usd, hi95_usd, status_expected, "
                  "over_budget_at_hi95, methods FROM marts.budget_outlook WHERE month <= DATE '2026-07-01' ORDER BY month").fetchall()
    # team search: $0.001 a day June 1..10 (10 days < 14: fallback_mean_rate, m = 0.001, s = 0, so the sd is the
    # floor 20 % x sqrt(h) of the forecast part); June = 0.010 observed + 20 x 0.001 = 0.030 >= the budget 0.015
    # -> over_budget, 95 %: 0.030 -+ 1.959964 x 0.2 x 0.020 = 0.030 -+ 0.00784; July = 31 x 0.001 = 0.031,
    # 95 %: 0.031 -+ 1.959964 x 0.2 x sqrt(2) x 0.031 = 0.031 -+ 0.0171855 (0.01381453, 0.04818547)
    assert got == [
        (dt.date(2026, 6, 1), D("0.015"), D("0.0075"), D("0.010"), D("0.030"), D("0.02216"), D("0.03784"), "over_budget",
         True, "api: fallback_mean_rate"),
        (dt.date(2026, 7, 1), D("0.015"), D("0.0075"), D("0"), D("0.031"), D("0.013815"), D("0.048185"), "over_budget",
         True, "api: fallback_mean_rate"),
    ]
    assert con.sql("SELECT count(*), count(DISTINCT team) FROM marts.budget_outlook").fetchall() == [(12, 1)]


def test_substitution_breakeven_from_the_sizing_numbers(con):
    got = con.sql("SELECT api_calls, api_spend_usd, self_host_usd_per_month, capacity_calls_per_month, "
                  "deployments_needed, breakeven_calls_per_month, savings_usd, fits, verdict "
                  "FROM marts.substitution_breakeven WHERE from_model = 'api-model' AND deployment = 'd-tiny'").fetchall()
    # June: 13 calls, 10 x 0.001 + 3 x (1,000 x 1 + 2,000 x 2) / 1e6 = 0.010 + 0.015 = $0.025
    # d-tiny: 1 x 0.00005 x 730 = $0.0365 a month; capacity 5 x 60 x 730 = 219,000 calls
    # break-even 0.0365 / (0.025 / 13) = 18.98 calls; savings 0.025 - 0.0365 = -0.0115 -> stay_on_api
    assert got == [(13, D("0.025"), D("0.0365"), 219_000, 1, pytest.approx(0.0365 * 13 / 0.025), D("-0.0115"),
                    True, "stay_on_api")]
    cap = con.sql("SELECT prompt_tokens, thinking_tokens, output_tokens, kv_gb_per_call, max_concurrent_calls, "
                  "peak_calls, deployments_needed FROM marts.peak_capacity").fetchall()
    # p95 profile of the 13 calls (nearest rank 13th of 13): prompt 1,000, thinking 1,000 x 2 = 2,000,
    # output 1,000 x 1; KV 4,000 x 131,072 B = 0.524288 GB; budget 48 x 0.9 - 16.48 - 2 = 24.72 GB
    # -> floor(24.72 / 0.524288) = 47 calls; the p99 hour holds 0 calls -> max(1, ceil(0 / 47)) = 1
    assert cap == [(1000, 2000, 1000, pytest.approx(0.524288), 47, 0, 1)]
    assert math.floor(24.72 / 0.524288) == 47


def test_outlook_expects_the_crossing_this_month_and_warns_once(con):
    got = con.sql("SELECT model, to_model, deployment, threshold_usd_per_month, crossing_month_expected, "
                  "status, months_until_expected FROM marts.breakeven_outlook").fetchall()
    # 10 days of history (< 14): mean rate = 0.025 / 10 = 0.0025 a day; June = 0.025 + 20 x 0.0025 = 0.075
    # >= the threshold 1 x 0.0365 -> expected crossing June, 0 months after the first forecast month
    assert got == [("api-model", "tiny-model", "d-tiny", D("0.0365"), dt.date(2026, 6, 1), "within_horizon", 0)]
    method = con.sql("SELECT DISTINCT method FROM marts.spend_forecast WHERE scope = 'model'").fetchall()
    assert method == [("fallback_mean_rate",)]
    with Receiver([500]) as rx:
        cfg = Config(alert=Alert(webhook_url=rx.url, warn_months=3))
        first = alert.evaluate(con, cfg)       # breakeven_ahead + budget_soft: the first POST gets a 500
        assert (first.sent, first.failed) == (2, 1)
        second = alert.evaluate(con, cfg)      # the failed one is retried, the delivered one stays silent
        assert (second.sent, second.delivered) == (1, 1)
        assert alert.evaluate(con, cfg).sent == 0
    kinds = sorted(b["alert"] for b in rx.bodies)
    assert kinds == ["breakeven_ahead", "breakeven_ahead", "budget_soft"] or kinds == ["breakeven_ahead", "budget_soft", "budget_soft"]
    soft = [b for b in rx.bodies if b["alert"] == "budget_soft"][0]
    # the budget alert carries the month's chosen forecast (marts.budget_outlook): June 0.030
    assert soft["forecast_month_end_usd"] == 0.03 and "forecast month end $0.03" in soft["text"]
    ahead = [b for b in rx.bodies if b["alert"] == "breakeven_ahead"][0]
    assert ahead["crossing_month_expected"] == "2026-06-01" and ahead["deployment"] == "d-tiny"
    delivered = con.sql("SELECT alert, model FROM ops.alerts WHERE delivered ORDER BY alert").fetchall()
    assert delivered == [("breakeven_ahead", "api-model -> tiny-model"), ("budget_soft", "search 2026-06")]


def test_report_shows_forecast_outlook_and_budget_burn_down(con):
    from services import report

    html = report.build_html(con)
    assert "Spend forecast" in html and "fallback_mean_rate" in html
    # the outlook row: api-model moved to tiny-model on d-tiny, $0.04 a month (0.0365 rounded), expected 2026-06
    assert "tiny-model (thinking ×2, output ×1)" in html and "2026-06" in html and "within_horizon" in html
    # budget burn-down of June: search runs out on the 15th
    assert "Budget burn-down 2026-06" in html and "runs out 2026-06-15" in html
    assert 'aria-label="Budget burn-down of search, 2026-06"' in html and "runs out on 2026-06-15" in html


def test_offers_rank_every_sheet_row_that_holds_the_deployment_and_use_the_cheapest_on_demand():
    import duckdb

    from models.gpus import gpu_spec
    from models.sizing import Deployment
    from models.spec import ModelSpec
    from warehouse.economics import Candidate, hosts
    from warehouse.outlook import offers

    con = duckdb.connect()
    con.execute("CREATE SCHEMA core")
    con.execute("CREATE TABLE core.gpu_price_versions (provider VARCHAR, gpu_type VARCHAR, gpus_per_node INTEGER, "
                "pricing VARCHAR, region VARCHAR, instance_type VARCHAR, usd_per_gpu_hour DECIMAL(18,6), effective_to DATE)")
    con.execute("""INSERT INTO core.gpu_price_versions VALUES
        ('neb', 'H200', 8, 'on_demand', 'eu', 'h200x8', 3.50, NULL),
        ('neb', 'H200', 1, 'on_demand', 'eu', 'h200x1', 3.20, NULL),   -- cheaper, but 1 GPU cannot hold 8
        ('neb', 'H200', 8, 'spot', 'us', 'h200x8', 1.45, NULL),         -- cheapest, but spot
        ('lam', 'H200', 8, 'on_demand', 'us', 'h200x8', 3.00, NULL),    -- cheapest on demand, other provider
        ('neb', 'H200', 8, 'on_demand', 'eu', 'old', 2.00, DATE '2026-01-01'),  -- no longer in force
        ('neb', 'H100', 8, 'on_demand', 'eu', 'h100x8', 2.95, NULL)""")
    spec = ModelSpec.from_catalog(name="m", params_total_b=8, params_active_b=8, kv_bytes_per_token_bf16=131072)
    cand = Candidate("d8", "m", "m", "neb", spec, Deployment(gpu_spec("H200"), 8, "fp8"), None, None)
    rows, used = offers(con, [cand], D(730), "b")
    # 8 x price x 730: spot 1.45 -> 8,468; lam 3.00 -> 17,520; neb 3.50 -> 20,440 (the 1-GPU row cannot host it)
    assert [(r["offer"], r["self_host_usd_per_month"], r["rank"], r["is_used"]) for r in rows] == [
        ("neb/us/h200x8/spot", D("8468"), 1, False),
        ("lam/us/h200x8/on_demand", D("17520"), 2, False),
        ("neb/eu/h200x8/on_demand", D("20440"), 3, True),   # the deployment names nebius: its cheapest on demand
    ]
    assert used == {"d8": (D("3.5"), "gpu_price_sheet", "neb/eu/h200x8/on_demand")}
    # hosting: one instance holds it, or whole 8-GPU (or larger) nodes do; 16 GPUs on 8-GPU nodes yes, 2 on 1-GPU no
    assert hosts(8, 8) and hosts(8, 16) and hosts(None, 4) and not hosts(1, 2) and not hosts(4, 8)


def test_spend_forecast_rows_scopes_and_the_stated_fallback(con):
    got = con.sql("SELECT scope, scope_value, serving, count(*), min(month), max(month), any_value(method), "
                  "any_value(history_days) FROM marts.spend_forecast GROUP BY ALL ORDER BY ALL").fetchall()
    # last day June 10: twelve months (the default horizon since issue 28) June .. May 2027 per series;
    # history from each series' first day with spend
    twelve = (12, dt.date(2026, 6, 1), dt.date(2027, 5, 1), "fallback_mean_rate")
    assert got == [("all", "*", "api", *twelve, 10), ("model", "api-model", "api", *twelve, 10),
                   ("team", "ops", "api", 12, dt.date(2026, 6, 1), dt.date(2027, 5, 1), "fallback_single_day", 1),
                   ("team", "search", "api", *twelve, 10)]
    june = con.sql("SELECT observed_usd, forecast_days, forecast_usd FROM marts.spend_forecast "
                   "WHERE scope = 'model' AND month = DATE '2026-06-01'").fetchall()
    # observed 0.025 in June 1..10; mean 0.0025 a day x 20 days left = 0.05 -> 0.075
    assert june == [(D("0.025"), 20, D("0.075"))]
    # team ops spent only on June 10 ($0.015): one day -> that day x the days left, no interval (NULL bounds)
    ops = con.sql("SELECT forecast_usd, lo95_usd, hi95_usd FROM marts.spend_forecast "
                  "WHERE scope = 'team' AND scope_value = 'ops' AND month = DATE '2026-07-01'").fetchall()
    assert ops == [(D("0.465"), None, None)]  # 0.015 x 31 days


def test_capacity_plan_replays_the_busiest_hours_and_the_outlook_pays_for_the_larger(con):
    from warehouse.outlook import build_capacity_plan, scale

    build_capacity_plan(con)
    got = con.sql("SELECT hours_replayed, calls_replayed, busiest_hour_calls, slots_per_replica, calls_per_minute, "
                  "seconds_per_generated_token, max_queue_seconds, replicas_p95, p95_queue_seconds, replicas_p99, "
                  "replicas_needed, gpus_needed, peak_deployments_needed, planned_replicas, sizing_basis "
                  "FROM marts.capacity_plan").fetchall()
    # Busiest hours of api-model (most calls started; ties: the later hour): 2026-06-10 10:00 (p1, p2, p3),
    # then 06-10 12:00 and 06-09 12:00 (one b call each): 3 hours, 5 calls. Slots: the 47 p95 calls of
    # peak_capacity. d-tiny gives 5 calls/min: the roofline's decode step at 47 calls in flight is scaled
    # by (estimated / given calls per minute). Whatever the pace, 47 slots hold every call of any replayed
    # hour at once (at most 3 in one hour): nobody waits -> 1 replica, p95 delay 0
    from models.throughput import estimate_throughput
    from warehouse.economics import call_profiles, candidates

    (cand,) = candidates(con, [])
    p50 = call_profiles(con)[("api-model", dt.date(2026, 6, 1))]["p50"]
    est = estimate_throughput(cand.spec, cand.setup, scale(p50, 2, 1), batch=47)
    spt = est.decode.seconds * est.calls_per_minute / 5
    assert got == [(3, 5, 3, 47, 5.0, pytest.approx(spt), 10.0, 1, 0.0, 1, 1, 1, 1, 1, "peak_concurrency")]
    out = con.sql("SELECT deployments_needed, peak_deployments_needed, queue_replicas_needed FROM marts.breakeven_outlook").fetchall()
    assert out == [(1, 1, 1)]
    # a build without the per-call core.calls (a Spark run's DuckDB file): no replay, the peak sizing, said so
    from warehouse.economics import call_profiles, candidates
    from warehouse.outlook import capacity_plan_rows, pairs

    con.execute("ALTER TABLE core.calls RENAME TO calls_hidden")
    try:
        rows, _ = capacity_plan_rows(con, pairs(con, candidates(con, [])), call_profiles(con), "b")
    finally:
        con.execute("ALTER TABLE core.calls_hidden RENAME TO calls")
    assert [(r.get("replicas_needed"), r["planned_replicas"], r["sizing_basis"]) for r in rows] == [
        (None, 1, "peak_concurrency (no replay)")]
    from services import report

    html = report.build_html(con)
    assert "Capacity plan for bursty reasoning load" in html and "peak_concurrency" in html
    assert "runner-up" in html
    assert "Budget outlook" in html and "over_budget" in html
