"""Every mart figure for the mini landing folder (tests/conftest.py), worked out by hand.

Prices (USD per million tokens): o3 until 2026-07-01: input 2.50, cached 0.625, cache write = input,
output = reasoning 12; from 2026-07-01: 2 / 0.5 / 8. claude-x: 3 / 0.30 / write 3.75 / 15.
Node n1: 2 GPUs x 2.95 USD per GPU-hour for 24 h on 2026-06-30 = 141.60 USD.
"""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from tests.conftest import build_warehouse

# r1: uncached 6000 x 2.5 = 0.015; cached 2000 x 0.625 = 0.00125; thinking 15000 x 12 = 0.18;
#     visible output 500 x 12 = 0.006  -> 0.20225 (thinking 0.18)
R1 = D("0.20225")
# r2 (after the change): 1000 x 2 = 0.002; 100 x 8 = 0.0008 -> 0.0028
R2 = D("0.0028")
# r3: 1000 x 3 = 0.003; 4000 x 0.30 = 0.0012; 2000 x 3.75 = 0.0075; thinking 2500 x 15 = 0.0375;
#     output 500 x 15 = 0.0075 -> 0.0567 (thinking 0.0375)
R3 = D("0.0567")
# n1: hour 10:00 costs 2 x 2.95 = 5.90, split by tokens r4 4000 : r5 1000 -> 4.72 / 1.18;
#     the other 23 hours (135.70) go to the day's calls by tokens -> 108.56 / 27.14.
R4 = D("113.28")   # 4.72 + 108.56; thinking share 2000/4000 -> 56.64
R5 = D("28.32")    # 1.18 + 27.14


@pytest.fixture
def con(mini_landing, tmp_path):
    c, summary = build_warehouse(mini_landing, tmp_path / "wh" / "thinktax.duckdb")
    assert summary.total("rows_quarantined") == 0
    yield c
    c.close()


def q(con, sql):
    return con.sql(sql).fetchall()


def test_buckets_split_without_double_counting(con):
    rows = q(con, "SELECT request_id, uncached_input_tokens, cached_input_tokens, cache_write_tokens, thinking_tokens, output_tokens "
                  "FROM core.calls ORDER BY request_id")
    assert rows == [
        ("r1", 6000, 2000, 0, 15000, 500),
        ("r2", 1000, 0, 0, 0, 100),
        ("r3", 1000, 4000, 2000, 2500, 500),
        ("r4", 1000, 0, 0, 2000, 1000),
        ("r5", 500, 0, 0, 0, 500),
    ]


def test_call_costs_use_price_in_force(con):
    rows = dict(q(con, "SELECT request_id, cost_usd FROM core.call_costs"))
    assert rows == {"r1": R1, "r2": R2, "r3": R3, "r4": R4, "r5": R5}
    versions = q(con, "SELECT request_id, price_version_id FROM core.call_costs WHERE serving = 'api' ORDER BY 1")
    assert versions == [("r1", "openai|o3|standard|2026-01-01"), ("r2", "openai|o3|standard|2026-07-01"),
                        ("r3", "anthropic|claude-x|standard|2026-01-01")]


def test_task_costs(con):
    rows = {r[0]: r[1:] for r in q(con, "SELECT task_id, day::VARCHAR, team, task_type, calls, serving, cost_usd, "
                                         "thinking_cost_usd, tier FROM marts.task_costs")}
    # t1 = r1 + r4: 0.20225 + 113.28; thinking 0.18 + 56.64; highest tier: r1 full (15000 >= 4096)
    assert rows["t1"] == ("2026-06-30", "search", "qa", 2, "mixed", R1 + R4, D("56.82"), "full")
    assert rows["t2"] == ("2026-07-01", "search", "qa", 1, "api", R2, D("0"), "fast")
    assert rows["t3"] == ("2026-06-30", "ops", "review", 1, "api", R3, D("0.0375"), "medium")
    assert rows["t4"] == ("2026-06-30", "ops", "review", 1, "self_hosted", R5, D("0"), "fast")


def test_cost_per_task(con):
    rows = q(con, "SELECT day::VARCHAR, team, task_type, model, serving, tier, tasks, calls, cost_usd, cost_per_task_usd "
                  "FROM marts.cost_per_task ORDER BY ALL")
    assert rows == [
        ("2026-06-30", "ops", "review", "claude-x", "api", "medium", 1, 1, R3, R3),
        ("2026-06-30", "ops", "review", "qwen3-32b", "self_hosted", "fast", 1, 1, R5, R5),
        ("2026-06-30", "search", "qa", "o3", "api", "full", 1, 1, R1, R1),
        # r4 belongs to task t1 (team search, qa, tier full) although the call itself names no team
        ("2026-06-30", "search", "qa", "qwen3-32b", "self_hosted", "full", 1, 1, R4, R4),
        ("2026-07-01", "search", "qa", "o3", "api", "fast", 1, 1, R2, R2),
    ]


def test_daily_spend(con):
    rows = q(con, "SELECT day::VARCHAR, source, provider, model, team, cost_usd, reasoning_cost_usd, calls "
                  "FROM marts.daily_spend ORDER BY ALL")
    assert rows == [
        ("2026-06-30", "api_usage", "anthropic", "claude-x", "ops", R3, D("0.0375"), 1),
        ("2026-06-30", "api_usage", "openai", "o3", "search", R1, D("0.18"), 1),
        ("2026-06-30", "self_hosted", "nebius", "qwen3-32b", "ops", R5, D("0"), 1),
        ("2026-06-30", "self_hosted", "nebius", "qwen3-32b", "search", R4, D("56.64"), 1),
        ("2026-07-01", "api_usage", "openai", "o3", "search", R2, D("0"), 1),
    ]


def test_tier_mix_against_target(con):
    rows = {r[0]: r[1:] for r in q(con, "SELECT tier, calls, share_of_calls, cost_usd, target_share, cost_at_target_mix_usd "
                                         "FROM marts.tier_mix WHERE day = DATE '2026-06-30' AND team = '*'")}
    # 4 calls that day: fast r5 (0 thinking); medium r3 (2500), r4 (2000); full r1 (15000)
    # cost at target mix = 4 calls x target share x the tier's cost per call that day
    assert rows["fast"] == (1, 0.25, R5, 0.80, D("90.624000"))            # 4 x 0.80 x 28.32
    assert rows["medium"] == (2, 0.5, R3 + R4, 0.15, D("34.001010"))       # 4 x 0.15 x (113.3367 / 2)
    assert rows["full"] == (1, 0.25, R1, 0.05, D("0.040450"))              # 4 x 0.05 x 0.20225
    # a tier without calls for a (day, team) still gets a row, priced at the tier's overall average
    ops = {r[0]: r[1:] for r in q(con, "SELECT tier, calls, cost_at_target_mix_usd FROM marts.tier_mix "
                                        "WHERE day = DATE '2026-06-30' AND team = 'ops'")}
    # ops: 2 calls; full tier average over all data = r1 only = 0.20225 -> 2 x 0.05 x 0.20225 = 0.020225
    assert ops["full"] == (0, D("0.020225"))


def test_self_hosted_allocation_adds_up_to_node_cost(con):
    paid = q(con, "SELECT sum(cost_micro_usd) FROM core.node_hours_cost WHERE node_id = 'n1'")[0][0]
    allocated = q(con, "SELECT sum(allocated_micro_usd) FROM core.self_hosted_allocation WHERE node_id = 'n1'")[0][0]
    assert paid == allocated == 141_600_000  # 2 x 2.95 x 24 h in micro-USD


def test_reingest_and_reverse_order_give_same_marts(mini_landing, tmp_path):
    c1, _ = build_warehouse(mini_landing, tmp_path / "a.duckdb")
    first = q(c1, "SELECT * EXCLUDE (build_id) FROM marts.cost_per_task ORDER BY ALL")
    again = __import__("warehouse.ingest", fromlist=["Ingestor"]).Ingestor(c1, mini_landing).ingest()
    assert [f.status for f in again.files] == ["already_ingested"] * len(again.files)
    c1.close()
    # the same sheets ingested newest first give the same price history and costs
    from tests.conftest import NOW
    from services.config import Config
    from warehouse.db import Build
    from warehouse.ingest import Ingestor
    from warehouse.transform import build_all

    b = Build(tmp_path / "b.duckdb", "r")
    b.start(Config().settings_row())
    c2 = b.connect()
    files = sorted((p for p in mini_landing.rglob("*") if p.is_file()), reverse=True)
    Ingestor(c2, mini_landing, now=NOW).ingest(paths=files)
    build_all(c2)
    assert q(c2, "SELECT * EXCLUDE (build_id) FROM marts.cost_per_task ORDER BY ALL") == first
    c2.close()


def test_sub_micro_dollar_call_costs_are_not_rounded_away(tmp_path):
    # 10 calls of 1 output token at $0.10 per million = $0.0000001 each: $0.000001 in all.
    # Rounded per call to the micro-dollar they would add up to $0.
    from tests.conftest import write_files

    calls = "".join(
        f'{{"ts":"2026-06-30T10:00:0{i}Z","request_id":"c{i}","model":"nano","provider":"openai",'
        f'"task_id":"t","usage":{{"prompt_tokens":0,"completion_tokens":1}}}}\n' for i in range(10))
    landing = write_files(tmp_path / "landing", {
        "prices/llm/p.2026-01-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok\nopenai,nano,0.10,0.10\n",
        "telemetry/requests/c.jsonl": calls})
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    assert q(con, "SELECT cost_usd FROM core.call_costs LIMIT 1") == [(D("0.0000001"),)]
    assert q(con, "SELECT cost_usd FROM marts.task_costs") == [(D("0.000001"),)]
    con.close()
