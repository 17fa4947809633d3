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

import datetime as dt
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.defs.economics_assets import ECONOMICS
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
    for e in ECONOMICS:  # the marts Python builds (spend_anomalies, break-even, ...), as `thinktax run` does
        e.builder(con)
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
    # the only unpriced usage: the three calls of the node missing from nodes.csv (synthetic/demo_sources.py)
    assert con.execute("SELECT node_id, calls_or_hours, reason FROM marts.unpriced_usage").fetchall() == [
        ("qwen-c", 3, "node not in nodes.csv")]


# --- issue 45: the demo's bills, spend logs and scrapes (synthetic/demo_sources.py) ------------------
# Planted differences, counted back from this demo's last day 2026-07-29:
#   API_PLANT  2026-07-20 (9 days back): OpenAI bills project proj-sandbox, which no gateway logs, for o3
#              1,500,000 input + 250,000 output tokens; before the price cut of 07-24 o3 is $10 / $40 per 1M:
#              1.5 x 10 = 15.00 + 0.25 x 40 = 10.00 -> $25.000000 billed and not tracked.
#   CLOUD_PLANT 2026-07-24 (5 days back): the CUR bills 200,000 Bedrock output tokens the logs do not
#              hold: 0.2 x $15 per 1M = $3.000000, explained as missing calls (the invoice's own unit price).
API_PLANT = dt.date(2026, 7, 20)
CLOUD_PLANT = dt.date(2026, 7, 24)
MICRO = Decimal("0.000001")


def test_every_mart_has_rows(demo):
    con, _ = demo
    marts = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'marts' "
                                        "ORDER BY 1").fetchall()]
    empty = [t for t in marts if con.execute(f"SELECT count(*) FROM marts.{t}").fetchone()[0] == 0]
    assert len(marts) >= 30 and empty == [], f"empty marts after the demo: {empty}"


def test_every_demo_file_is_read_by_its_parser(demo):
    con, _ = demo
    folders = dict(con.execute("SELECT folder, count(*) FROM ops.ingested_files GROUP BY folder").fetchall())
    for folder in ("bills/openai", "bills/anthropic", "bills/aws", "bills/azure", "bills/gcp",
                   "telemetry/litellm_spendlogs", "telemetry/metrics", "telemetry/otel"):
        assert folders.get(folder, 0) > 0, folder
    # nothing of the new sources is quarantined (the demo's only rejects are its two broken request lines)
    assert con.execute("SELECT count(*) FROM ops.quarantine WHERE file LIKE 'bills/%' OR file LIKE 'telemetry/litellm%' "
                       "OR file LIKE 'telemetry/metrics%'").fetchone()[0] == 0


def test_the_api_bills_match_the_logs_but_for_the_planted_project(demo):
    con, _ = demo
    rows = con.execute("SELECT day, provider, model, billed_usd, computed_usd, difference_usd FROM marts.bill_reconciliation "
                       "WHERE provider IN ('openai', 'anthropic')").fetchall()
    assert {(p, m) for _, p, m, *_ in rows} == {("openai", "o3"), ("openai", "o4-mini"), ("openai", "gpt-4.1-mini"),
                                                ("openai", "gpt-4.1-nano"), ("anthropic", "claude-3-7-sonnet"),
                                                ("openai", "gpt-4o-audio-preview")}  # issue 44's voice team, audio billed apart
    off = [r for r in rows if abs(r[5]) > MICRO]
    assert [(d, p, m, diff) for d, p, m, _, _, diff in off] == [(API_PLANT, "openai", "o3", Decimal("25.000000"))]
    assert all(r[3] is not None and r[4] is not None for r in rows)  # every day billed and tracked


def test_the_invoice_shows_the_planted_missing_calls_and_nothing_unexplained(demo):
    con, _ = demo
    planted = con.execute("SELECT difference_usd, explained_usd, explained_by, unexplained_usd, invoice_tokens - log_tokens "
                          "FROM marts.invoice_reconciliation WHERE provider = 'bedrock' AND day = ? AND bucket = 'output'",
                          [CLOUD_PLANT]).fetchone()
    assert planted == (Decimal("3.000000"), Decimal("3.000000"), "missing_calls", Decimal("0.000000"), 200_000)
    # every other token row agrees to the micro-dollar; the credits and the unattributed line explain themselves
    others = con.execute("SELECT provider, bucket, difference_usd, unexplained_usd FROM marts.invoice_reconciliation "
                         "WHERE NOT (provider = 'bedrock' AND day = ? AND bucket = 'output')", [CLOUD_PLANT]).fetchall()
    assert {p for p, *_ in others} == {"bedrock", "azure", "vertex_ai"}
    assert all(u == 0 for *_, u in others)
    assert all(abs(d) <= MICRO for _, b, d, _ in others if b not in ("credit", "unattributed"))
    # two months of Bedrock in this demo (06, 07): one $10 credit each
    assert sorted(d for _, b, d, _ in others if b == "credit") == [Decimal("-10.000000")] * 2
    assert con.execute("SELECT count(*), sum(amount_usd) FROM marts.unattributed_invoice_lines").fetchone() == (
        1, Decimal("4.000000"))  # one Vertex AI Search line a month: July only in this demo (Vertex from 07-24)


def test_litellm_reports_deepseek_at_its_old_price_after_the_cut(demo):
    con, _ = demo
    rows = con.execute("SELECT day, model, calls, differing_calls, difference_usd FROM marts.cost_crosscheck").fetchall()
    # 120 tasks a day x 150 / 1,700 = 10.59, rounded: 11 calls a day through the proxy, 45 days
    assert sum(r[2] for r in rows) == 11 * 45
    cut = dt.date(2026, 7, 24)
    assert all(r[3] == 0 and abs(r[4]) <= MICRO for r in rows if r[0] < cut or r[1] == "gpt-4.1-mini")
    after = [r for r in rows if r[0] >= cut and r[1] == "deepseek-reasoner"]
    # from the cut LiteLLM's map still says $0.55 / $0.14 / $2.19, thinktax $0.28 / $0.028 / $0.42: every call over
    assert len(after) == 6 and all(r[3] == r[2] and r[4] > 0 for r in after)


def test_the_scrapes_count_what_the_logs_hold_hour_by_hour(demo):
    con, _ = demo
    rows = con.execute("SELECT node_id, hour, calls, calls_logged, prompt_tokens, prompt_tokens_logged, generation_tokens, "
                       "generation_tokens_logged FROM marts.node_hours WHERE has_metrics AND prompt_tokens IS NOT NULL "
                       "ORDER BY 1, 2").fetchall()
    # the last day (07-29), 24 hours, both nodes
    assert len(rows) == 48 and {r[1].date() for r in rows} == {dt.date(2026, 7, 29)}
    assert all(r[2] == r[3] and r[4] == r[5] and r[6] == r[7] for r in rows), [r for r in rows if r[2] != r[3]][:3]
