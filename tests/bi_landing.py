"""A small landing folder whose costs are worked by hand, and one pipeline run over it.

Shared by tests/sql/test_bi.py, tests/services/test_report.py and tests/warehouse/test_column_docs.py (imported as a
plain module: pytest puts tests/ on sys.path). The run goes through the real Dagster job
(`thinktax run`), so the published warehouse is exactly what BI tools would open, column comments
and report included. It runs once per test session and is cached here.

Prices (per million tokens, effective 2025-01-01; reasoning empty = the output price):
    openai    o3               input 2    cached 0.5   output 8
    openai    gpt-4.1-mini     input 0.4  cached 0.1   output 1.6
    anthropic claude-sonnet-4  input 3    cached 0.3   write 3.75  output 15
Self-hosted node-a (lambda, 1 x H100 at $2.00/GPU-hour, qwen3-32b) is active
2025-06-09T23:00 .. 2025-06-10T02:00: 3 paid hours = $6.00. Hour 23 on 06-09 has no call and
06-09 has no call at all, so it stays an 'idle' row ($2.00); hours 00 and 01 on 06-10 each hold
one call, which takes the whole hour ($2.00 each).

Calls (tier: thinking 0 = fast, 1..4095 = medium, >= 4096 = full):
  c1 2025-05-11 search t1 summarize   o3  1,000,000 prompt, 0 completion
       = 1,000,000 x 2 / 1e6 = $2.000000                             fast, thinking $0
  c2 2025-05-12 search t2 code_review o3  100,000 prompt, 502,000 completion (500,000 reasoning)
       = 0.2 + 500,000 x 8/1e6 (4.0) + 2,000 x 8/1e6 (0.016) = $4.216  full, thinking $4.00
  c3 2025-06-01 search t3 code_review o3  200,000 prompt (100,000 cached), 3,000 completion (2,000 reasoning)
       = 100,000 x 2/1e6 (0.2) + 100,000 x 0.5/1e6 (0.05) + 2,000 x 8/1e6 (0.016)
         + 1,000 x 8/1e6 (0.008) = $0.274                             medium, thinking $0.016
  c4 2025-06-01 ads    t4 classify    gpt-4.1-mini 1,000,000 prompt, 250,000 completion
       = 0.4 + 0.4 = $0.80                                           fast
  c5 2025-06-02 ads    t5 classify    gpt-4.1-mini 500,000 prompt, 125,000 completion
       = 0.2 + 0.2 = $0.40                                           fast
  c6 2025-06-05 ads    t6 agent_run   o3  10,000 prompt, 10,000 completion (8,000 reasoning)
       = 0.02 + 0.064 + 0.016 = $0.10                                full, thinking $0.064
  c7 2025-06-05 ads    t6 agent_run   claude-sonnet-4 (Anthropic usage) input 10,000,
       cache_read 100,000, output 20,000 of which thinking 5,000
       = 0.03 + 0.03 + 5,000 x 15/1e6 (0.075) + 15,000 x 15/1e6 (0.225) = $0.36
                                                                     full, thinking $0.075
       task t6 = $0.46, thinking $0.139, tier full (its highest call)
  c8 2025-06-10T00:30 infra t7 eval   qwen3-32b on node-a: 1,000 prompt, 4,000 completion
       (3,000 reasoning) = the whole hour 00: $2.00; thinking 2.00 x 3,000/5,000 = $1.20   medium
  c9 2025-06-10T01:30 infra t8 eval   qwen3-32b on node-a: 4,000 prompt, 1,000 completion
       = the whole hour 01: $2.00                                     fast, thinking $0
  m01..m20 2025-06-03 misc task_type tt01..tt20 gpt-4.1-mini: k x 1,000 prompt tokens
       (k = 1..20), 0 completion = k x 1,000 x 0.4/1e6 = $0.0004 x k  fast
       all twenty: 0.0004 x 210 = $0.084

The latest day with data is 2025-06-10, so "the last 30 days" of the BI queries is
2025-05-12 .. 2025-06-10: c1 (2025-05-11) is just outside, c2 (2025-05-12) just inside.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

PRICES = """\
provider,model,effective_from,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,reasoning_usd_per_mtok,currency
openai,o3,2025-01-01,2,0.5,,8,,USD
openai,gpt-4.1-mini,2025-01-01,0.4,0.1,,1.6,,USD
anthropic,claude-sonnet-4,2025-01-01,3,0.3,3.75,15,,USD
"""

MODELS = """\
model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16
o3,openai,true,32.8,32.8,,,262144
gpt-4.1-mini,openai,false,,,,,
claude-sonnet-4,anthropic,true,,,,,
qwen3-32b,qwen,true,32.8,32.8,,33,262144
"""

# One candidate deployment for o3 (the catalog above pretends o3 is an open 32.8B model with
# 262,144 KV bytes per token at bf16, so the break-even mart has something to size):
#   2 x H100 at $2.00/GPU-hour x 730 h = $2,920.00 a month; 10 calls/minute x 60 x 730 = 438,000 calls a month.
DEPLOYMENTS = """\
deployment,model,provider,gpu_type,gpus,precision,gpu_mem_gb,calls_per_minute,usd_per_gpu_hour
o3-2xh100,o3,lambda,H100,2,fp8,,10,2.00
"""

# What OpenAI billed (Costs API page, amounts in USD), against the usage x price above:
#   2025-06-01 o3            0.25 + 0.03 = 0.28    computed c3 0.274  -> +0.006 (within a cent)
#   2025-06-01 gpt-4.1-mini  0.40 + 0.40 = 0.80    computed c4 0.80   ->  0
#   2025-06-02 gpt-4.1-mini  0.25 + 0.20 = 0.45    computed c5 0.40   -> +0.05
#   2025-06-05 o3            0.10                  computed c6 0.10   ->  0
# Nothing billed for 2025-05-11/12 (c1, c2), 2025-06-03 (misc) or Anthropic (c7).
DAY_S = {"2025-06-01": 1748736000, "2025-06-02": 1748822400, "2025-06-05": 1749081600}
BILLED = {
    "2025-06-01": [("o3-2025-04-16, input", 0.25), ("o3-2025-04-16, output", "0.03"),
                   ("gpt-4.1-mini-2025-04-14, input", 0.4), ("gpt-4.1-mini-2025-04-14, output", "0.40")],
    "2025-06-02": [("gpt-4.1-mini-2025-04-14, input", 0.25), ("gpt-4.1-mini-2025-04-14, output", 0.2)],
    "2025-06-05": [("o3-2025-04-16, input", 0.1)],
}


def costs_page() -> dict:
    return {"object": "page", "has_more": False, "next_page": None, "data": [
        {"object": "bucket", "start_time": DAY_S[day], "end_time": DAY_S[day] + 86400, "results": [
            {"object": "organization.costs.result", "amount": {"value": v, "currency": "usd"},
             "line_item": item, "project_id": "proj_bi"} for item, v in lines]}
        for day, lines in BILLED.items()]}


NODES = """\
node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to
node-a,lambda,H100,1,qwen3-32b,fp8,2.00,2025-06-09T23:00:00Z,2025-06-10T02:00:00Z
"""


def _chat(ts, rid, task, ttype, team, model, prompt, completion, cached=0, reasoning=0, provider="openai"):
    return {
        "ts": ts, "request_id": rid, "task_id": task, "task_type": ttype, "team": team,
        "provider": provider, "model": model,
        "usage": {
            "prompt_tokens": prompt, "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def calls() -> list[dict]:
    rows = [
        _chat("2025-05-11T12:00:00Z", "c1", "t1", "summarize", "search", "o3", 1_000_000, 0),
        _chat("2025-05-12T12:00:00Z", "c2", "t2", "code_review", "search", "o3", 100_000, 502_000, reasoning=500_000),
        _chat("2025-06-01T09:00:00Z", "c3", "t3", "code_review", "search", "o3", 200_000, 3_000, cached=100_000, reasoning=2_000),
        _chat("2025-06-01T10:00:00Z", "c4", "t4", "classify", "ads", "gpt-4.1-mini", 1_000_000, 250_000),
        _chat("2025-06-02T10:00:00Z", "c5", "t5", "classify", "ads", "gpt-4.1-mini", 500_000, 125_000),
        _chat("2025-06-05T10:00:00Z", "c6", "t6", "agent_run", "ads", "o3", 10_000, 10_000, reasoning=8_000),
        {
            "ts": "2025-06-05T10:01:00Z", "request_id": "c7", "task_id": "t6", "task_type": "agent_run", "team": "ads",
            "provider": "anthropic", "model": "claude-sonnet-4",
            "usage": {"input_tokens": 10_000, "cache_read_input_tokens": 100_000, "cache_creation_input_tokens": 0,
                      "output_tokens": 20_000, "thinking_tokens": 5_000},
        },
    ]
    for rid, ts, task, prompt, completion, reasoning in (
        ("c8", "2025-06-10T00:30:00Z", "t7", 1_000, 4_000, 3_000),
        ("c9", "2025-06-10T01:30:00Z", "t8", 4_000, 1_000, 0),
    ):
        row = _chat(ts, rid, task, "eval", "infra", "qwen3-32b", prompt, completion, reasoning=reasoning)
        del row["provider"]
        row["node_id"] = "node-a"
        rows.append(row)
    for k in range(1, 21):
        rows.append(_chat("2025-06-03T08:00:00Z", f"m{k:02d}", f"tm{k:02d}", f"tt{k:02d}", "misc", "gpt-4.1-mini", k * 1_000, 0))
    return rows


def write_landing(root: Path) -> Path:
    """Write the landing folder described in the module docstring under ``root``."""
    for sub in ("prices/llm", "catalog", "telemetry/requests", "bills/openai"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "prices/llm/thinktax_prices.2025-01-01.csv").write_text(PRICES)
    (root / "catalog/models.csv").write_text(MODELS)
    (root / "catalog/nodes.csv").write_text(NODES)
    (root / "catalog/deployments.csv").write_text(DEPLOYMENTS)
    (root / "bills/openai/costs__2025-06__p1.json").write_text(json.dumps(costs_page()))
    (root / "telemetry/requests/calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls()))
    return root


D = Decimal

# Hand-worked figures (see the module docstring).
WINDOW_FIRST_DAY = "2025-05-12"
WINDOW_LAST_DAY = "2025-06-10"
TOTAL_USD = D("14.234")  # 2 + 4.216 + 0.274 + 0.8 + 0.4 + 0.1 + 0.36 + 2 + 2 + 0.084 + idle 2
WINDOW_USD = D("12.234")  # all of it but c1 ($2.00)


# Contract-shaped rows (DESIGN.md section 4) for marts other engineers are building.
BREAKEVEN_ROWS = """
CREATE OR REPLACE TABLE marts.self_host_breakeven AS SELECT * FROM (VALUES
 (DATE '2025-06-01', 'deepseek-r1', 'r1-8xh200', 60000, 12360.00, 0.206, 23593.60, 1752000, 1, 114531.07, 23593.60, -11233.60, 'stay_on_api'),
 (DATE '2025-06-01', 'deepseek-r1', 'r1-8xb200', 60000, 12360.00, 0.206, 19622.40, 1752000, 1, 95254.37, 19622.40, -7262.40, 'stay_on_api'),
 (DATE '2025-06-01', 'deepseek-r1', 'r1-4xh100', 60000, 12360.00, 0.206, NULL, NULL, NULL, NULL, NULL, NULL, 'infeasible'),
 (DATE '2025-06-01', 'o3', 'big-16xh200', 200000, 41200.00, 0.206, 23593.60, 1752000, 1, 114531.07, 23593.60, 17606.40, 'self_host'),
 (DATE '2025-05-01', 'o3', 'big-16xh200', 1000, 206.00, 0.206, 23593.60, 1752000, 1, 114531.07, 23593.60, -23387.60, 'stay_on_api')
) t(month, model, deployment, api_calls, api_spend_usd, api_cost_per_call_usd, self_host_usd_per_month,
    capacity_calls_per_month, deployments_needed, breakeven_calls_per_month, breakeven_api_spend_usd, savings_usd, verdict)
"""
# The DOMAIN.md example: 16 x H200 at $2.02/GPU-hour = $23,593.60 a month; $0.206 per API call;
# break-even 23,593.60 / 0.206 = 114,531.07 calls a month. 8 x B200: $19,622.40 a month.

RECON_ROWS = """
CREATE OR REPLACE TABLE marts.bill_reconciliation AS SELECT * FROM (VALUES
 (DATE '2025-06-01', 'openai', 'o3', 10.00, 10.00, 0.00, 0.0),
 (DATE '2025-06-02', 'openai', 'o3', 5.50, 5.00, 0.50, 9.090909),
 (DATE '2025-05-01', 'openai', 'o3', 100.00, 0.00, 100.00, 100.0),
 (DATE '2025-06-02', 'anthropic', 'claude-sonnet-4', 1.00, 1.005, -0.005, -0.5)
) t(day, provider, model, billed_usd, computed_usd, difference_usd, difference_pct)
"""


@dataclass
class Published:
    landing: Path
    warehouse: Path
    report: Path


_CACHE: dict[str, Published] = {}


def published(tmp_path_factory) -> Published:
    """`thinktax run` (the whole Dagster job, about 10 s) over the landing folder above, once per session.

    Tests must not modify the result: copy the file first.
    """
    if "run" in _CACHE:
        return _CACHE["run"]
    from thinktax.cli import main

    base = tmp_path_factory.mktemp("bi_run")
    landing = write_landing(base / "landing")
    warehouse = base / "warehouse" / "thinktax.duckdb"
    saved = dict(os.environ)
    os.environ["DAGSTER_HOME"] = str(base / "dagster_home")
    try:
        config = base / "thinktax.toml"
        config.write_text("# defaults\n")
        rc = main(["run", "--landing", str(landing), "--warehouse", str(warehouse), "--config", str(config), "--quiet"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert rc == 0, "thinktax run failed on the BI fixture landing folder"
    _CACHE["run"] = Published(landing, warehouse, warehouse.with_name("report.html"))
    return _CACHE["run"]
