"""The demo's cloud teams (issue 24, item 8): Bedrock, Vertex AI and Azure traffic in the shapes those
clouds return, ingested and priced like any user's.

The expected figures are computed here from the generator's own frame (synthetic.demo.generate_cloud_calls:
the tokens each call was drawn with, before they were written in a provider's shape) and the rates of the
two real LiteLLM sheets shipped in data/real/litellm/, which price these models identically:
    us.anthropic.claude-3-7-sonnet-20250219-v1:0 (bedrock_converse) and anthropic.claude-3-7-sonnet-...:
        3.00 input, 0.30 cache read, 3.75 cache write, 15.00 output (USD per million tokens); no 1-hour
        write price on the sheet: 2 x the input price = 6.00 (Anthropic's multiplier, docs/economics.md 12)
    azure/o4-mini: 1.10 input, 0.275 cached, 4.40 output
    gemini-2.5-pro (vertex_ai-language-models, 2026-07-24 sheet only): 1.25 input, 0.125 cached, 10.00 output
Prompts stay under 60k tokens, so no long-context rate applies. Thinking is billed at the output price.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.conftest import build_warehouse
from synthetic.demo import DemoSpec, generate_cloud_calls, write_landing

pytestmark = pytest.mark.slow

# 45 days: 2026-06-15 .. 2026-07-29, all before the harness's "now" (tests.conftest.NOW = 2026-08-01);
# Vertex AI runs from 2026-07-24, so 6 of these days
SPEC = DemoSpec(days=45, tasks_per_day=120)
# USD per million tokens x 1000 (integers, so the sums below are exact)
CLAUDE = {"in": 3000, "read": 300, "write": 3750, "write_1h": 6000, "out": 15000}
O4_MINI = {"in": 1100, "read": 275, "out": 4400}
GEMINI = {"in": 1250, "read": 125, "out": 10000}
TEAMS = ("platform", "analytics", "ops")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[duckdb.DuckDBPyConnection, pl.DataFrame]:
    root = Path(tmp_path_factory.mktemp("demo_clouds"))
    write_landing(root / "landing", SPEC)
    con, _ = build_warehouse(root / "landing", root / "w.duckdb")
    yield con, generate_cloud_calls(SPEC)
    con.close()


def _micro_nano(frame: pl.DataFrame, expr: pl.Expr) -> Decimal:
    """sum(tokens x rate in mUSD per million) / 1e9 = USD, exactly."""
    return Decimal(int(frame.select(expr.sum()).item())) / Decimal(10**9)


def test_every_cloud_call_is_loaded_and_priced(demo):
    con, calls = demo
    got = con.execute("SELECT count(*), count(*) FILTER (WHERE unpriced), count(DISTINCT team) FROM core.call_costs "
                      f"WHERE team IN {TEAMS}").fetchone()
    assert got == (calls.height, 0, 3)
    assert con.execute("SELECT count(*) FROM ops.quarantine WHERE file LIKE 'telemetry/requests/bedrock%' "
                       "OR file LIKE 'telemetry/requests/vertex%' OR file LIKE 'telemetry/requests/azure%'").fetchone()[0] == 0


def test_the_buckets_are_the_tokens_drawn(demo):
    con, calls = demo
    for gateway, team, provider in (("bedrock_converse", "platform", "aws.bedrock"), ("bedrock_invoke", "platform", "bedrock"),
                                    ("vertex_gemini", "analytics", "vertex_ai"), ("azure_chat", "ops", "azure")):
        part = calls.filter(pl.col("gateway") == gateway)
        want = part.select(pl.len(), pl.col("prompt").sum(), pl.col("cached").sum(), pl.col("cache_write").sum(),
                           pl.col("write_1h").sum(), pl.col("thinking").sum(), pl.col("output").sum()).row(0)
        got = con.execute(
            "SELECT count(*), sum(prompt_tokens), sum(cached_input_tokens), sum(cache_write_tokens), "
            "sum(cache_write_1h_tokens), sum(thinking_tokens), sum(output_tokens) FROM core.calls "
            "WHERE team = ? AND reported_provider = ?", [team, provider]).fetchone()
        if gateway == "bedrock_converse":
            # Converse reports no thinking count: the thinking is in the output
            want = (*want[:5], 0, want[5] + want[6])
        assert tuple(int(x) for x in got) == tuple(int(x) for x in want), gateway


def test_the_cloud_costs_match_the_sheet_rates(demo):
    con, calls = demo
    claude = calls.filter(pl.col("gateway").str.starts_with("bedrock"))
    expect_claude = _micro_nano(claude, (pl.col("prompt") - pl.col("cached") - pl.col("cache_write")) * CLAUDE["in"]
                                + pl.col("cached") * CLAUDE["read"]
                                + (pl.col("cache_write") - pl.col("write_1h")) * CLAUDE["write"]
                                + pl.col("write_1h") * CLAUDE["write_1h"]
                                + (pl.col("thinking") + pl.col("output")) * CLAUDE["out"])
    azure = calls.filter(pl.col("gateway") == "azure_chat")
    expect_azure = _micro_nano(azure, (pl.col("prompt") - pl.col("cached")) * O4_MINI["in"] + pl.col("cached") * O4_MINI["read"]
                               + (pl.col("thinking") + pl.col("output")) * O4_MINI["out"])
    vertex = calls.filter((pl.col("gateway") == "vertex_gemini") & ~pl.col("provisioned"))
    expect_vertex = _micro_nano(vertex, (pl.col("prompt") - pl.col("cached")) * GEMINI["in"] + pl.col("cached") * GEMINI["read"]
                                + (pl.col("thinking") + pl.col("output")) * GEMINI["out"])
    got = dict(con.execute("SELECT provider, sum(cost_usd) FROM core.call_costs WHERE team IN ('platform', 'analytics', 'ops') "
                           "GROUP BY provider").fetchall())
    assert got == {"bedrock": expect_claude, "azure": expect_azure, "vertex_ai": expect_vertex}
    assert expect_claude > 0 and expect_azure > 0 and expect_vertex > 0


def test_provisioned_vertex_calls_cost_nothing_and_show_their_on_demand_price(demo):
    con, calls = demo
    prov = calls.filter(pl.col("provisioned"))
    on_demand = _micro_nano(prov, (pl.col("prompt") - pl.col("cached")) * GEMINI["in"] + pl.col("cached") * GEMINI["read"]
                            + (pl.col("thinking") + pl.col("output")) * GEMINI["out"])
    assert prov.height > 0
    mart = con.execute("SELECT sum(calls), sum(thinking_tokens), sum(on_demand_usd) FROM marts.provisioned_usage").fetchone()
    assert mart[0] == prov.height and mart[1] == prov["thinking"].sum()
    # the mart rounds each day's sum to the micro-dollar
    assert abs(mart[2] - on_demand) <= Decimal("0.000001") * 6
    assert con.execute("SELECT count(*), sum(cost_usd) FROM core.call_costs WHERE price_basis = 'provisioned'").fetchone() == (
        prov.height, Decimal(0))
    assert con.execute("SELECT count(*) FROM marts.unpriced_usage").fetchone()[0] == 0
