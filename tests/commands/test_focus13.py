"""`thinktax export focus --spec 1.3` (the default) and `--spec 1.2` (the files of before 1.3).

Hand-worked on tests/conftest.py MINI_FILES: node n1 (nebius, 2 x H100 at $2.95/GPU-hour, active
2026-06-30) costs 2 x 2.95 x 24 h = $141.60 for 48 GPU-hours. It served r4 (4,000 tokens, task t1
so team 'search') and r5 (1,000 tokens, team 'ops') in the 10:00 hour; core.self_hosted_allocation
gives the 10:00 hour and the day's 23 idle hours to them by token share, 4:1. So in 1.3 the node-day
is two allocated rows: search $113.28 / 38.4 GPU-hours / AllocatedRatio 0.8, ops $28.32 / 9.6
GPU-hours / 0.2; every other row is as in 1.2 with NULL Allocated* columns.
"""

from __future__ import annotations

import argparse
import json
import os
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse
from thinktax.commands import export
from thinktax.commands.export import COMMITMENT_COLUMNS, export_focus

NEW_13 = ["ServiceProviderName", "HostProviderName", "ContractApplied", "AllocatedMethodId",
          "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags"]


def _export_before_13(con: duckdb.DuckDBPyConnection, out: Path, fmt: str) -> list[tuple[Path, int]]:
    """`export_focus` as it was before FOCUS 1.3 (commit 2821d18), kept verbatim as the reference
    the 1.2 files are compared with, byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    months = [r[0] for r in con.execute(
        "SELECT DISTINCT strftime(ChargePeriodStart, '%Y-%m') AS m FROM marts.focus_costs  ORDER BY m", {}
    ).fetchall()]
    written = []
    for m in months:
        path = out / f"focus_costs_{m}.{fmt}"
        tmp = out / f".{path.name}.tmp-{os.getpid()}"
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true, TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%SZ'"
        con.execute(
            f"""COPY (SELECT * EXCLUDE (build_id), build_id AS x_BuildId FROM marts.focus_costs
                      WHERE strftime(ChargePeriodStart, '%Y-%m') = $m
                      ORDER BY ChargePeriodStart, x_Source, ProviderName, ResourceId, SkuPriceId, ChargeDescription)
                TO '{tmp.as_posix()}' ({options})""",
            {"m": m},
        )
        os.replace(tmp, path)
        rows = con.execute("SELECT count(*) FROM marts.focus_costs WHERE strftime(ChargePeriodStart, '%Y-%m') = $m", {"m": m}).fetchone()[0]
        written.append((path, rows))
    return written


@pytest.fixture(scope="module")
def mini_con(tmp_path_factory):
    from tests.conftest import MINI_FILES, write_files

    root = tmp_path_factory.mktemp("focus13")
    con, _ = build_warehouse(write_files(root / "landing", MINI_FILES), root / "w.duckdb")
    return con


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_spec_12_files_are_byte_identical_to_the_export_before_13(mini_con, tmp_path, fmt):
    before = _export_before_13(mini_con, tmp_path / "before", fmt)
    now = export_focus(mini_con, tmp_path / "now", fmt, spec="1.2")
    assert [(p.name, n) for p, n in now] == [(p.name, n) for p, n in before]
    assert [p.name for p, _ in now] == [f"focus_costs_2026-06.{fmt}", f"focus_costs_2026-07.{fmt}"]
    for (a, _), (b, _) in zip(before, now):
        assert a.read_bytes() == b.read_bytes(), b.name
    assert not (tmp_path / "now" / f"focus_contract_commitment.{fmt}").exists()


def test_spec_13_adds_the_13_columns_and_splits_the_node_day_over_teams(mini_con, tmp_path):
    written = export_focus(mini_con, tmp_path / "out", "parquet")  # 1.3 is the default
    assert [(p.name, n) for p, n in written] == [
        ("focus_costs_2026-06.parquet", 11), ("focus_costs_2026-07.parquet", 2), ("focus_contract_commitment.parquet", 0)]
    june = written[0][0]
    cols = duckdb.sql(f"SELECT * FROM '{june}'").columns
    old = duckdb.sql("SELECT * EXCLUDE (build_id) FROM marts.focus_costs LIMIT 0", connection=mini_con).columns
    assert cols == [*old, *NEW_13, "x_CostCenter", "x_BuildId"]
    # the provider columns: every row has both, equal to ProviderName (no reseller in thinktax's data)
    assert duckdb.sql(f"SELECT count(*) FROM '{june}' WHERE ServiceProviderName IS NULL OR HostProviderName IS NULL "
                      "OR ServiceProviderName <> ProviderName OR HostProviderName <> ServiceProviderName").fetchall()[0][0] == 0
    assert duckdb.sql(f"SELECT count(*) FROM '{june}' WHERE ContractApplied IS NOT NULL").fetchall()[0][0] == 0
    rows = duckdb.sql(f"""SELECT AllocatedResourceId, AllocatedResourceName, AllocatedMethodId, AllocatedTags, AllocatedMethodDetails,
                                 BilledCost, EffectiveCost, ListCost, ContractedCost, PricingQuantity, ConsumedQuantity,
                                 ListUnitPrice, ResourceId, SkuId, ChargePeriodStart, ServiceProviderName
                          FROM '{june}' WHERE x_Source = 'self_hosted' ORDER BY AllocatedResourceId""").fetchall()
    assert [r[:4] for r in rows] == [("ops", "ops", "thinktax-token-share", '{"team":"ops"}'),
                                     ("search", "search", "thinktax-token-share", '{"team":"search"}')]
    details = [json.loads(r[4], parse_float=D) for r in rows]
    assert details == [{"Elements": [{"AllocatedRatio": D("0.2"), "UsageQuantity": 1000, "UsageUnit": "Tokens"}]},
                       {"Elements": [{"AllocatedRatio": D("0.8"), "UsageQuantity": 4000, "UsageUnit": "Tokens"}]}]
    assert [r[5:11] for r in rows] == [(D("28.32"),) * 4 + (D("9.6"),) * 2, (D("113.28"),) * 4 + (D("38.4"),) * 2]
    # dimensions and non-aggregatable metrics are the origin row's
    assert {r[11:] for r in rows} == {(D("2.95"), "n1", "H100", __import__("datetime").datetime(2026, 6, 30), "nebius")}
    # every other row: no allocation, and the same money as the 1.2 file
    assert duckdb.sql(f"SELECT count(*) FROM '{june}' WHERE x_Source <> 'self_hosted' AND "
                      "coalesce(AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId, AllocatedResourceName, AllocatedTags) IS NOT NULL"
                      ).fetchall()[0][0] == 0
    old12 = export_focus(mini_con, tmp_path / "v12", "parquet", spec="1.2")
    for (p13, _), (p12, _) in zip(written, old12):
        q = "SELECT x_Source, sum(BilledCost), sum(EffectiveCost), sum(ListCost), sum(ContractedCost), sum(PricingQuantity), sum(ConsumedQuantity) FROM '{}' GROUP BY 1 ORDER BY 1"
        assert duckdb.sql(q.format(p13)).fetchall() == duckdb.sql(q.format(p12)).fetchall()


def test_an_idle_node_day_stays_whole(tmp_path):
    """A node-day without any call has nothing to allocate to: it keeps one row, Allocated* NULL."""
    from tests.conftest import MINI_FILES, write_files

    files = dict(MINI_FILES)
    files["catalog/nodes.csv"] = MINI_FILES["catalog/nodes.csv"] + \
        "n2,nebius,H100,1,qwen3-32b,fp8,2.00,2026-06-30T00:00:00Z,2026-07-01T00:00:00Z\n"
    con, _ = build_warehouse(write_files(tmp_path / "landing", files), tmp_path / "w.duckdb")
    june = export_focus(con, tmp_path / "out", "csv", "2026-06")[0][0]
    got = duckdb.sql(f"SELECT ResourceId, AllocatedResourceId, BilledCost FROM read_csv('{june}') "
                     "WHERE x_Source = 'self_hosted' ORDER BY ResourceId, AllocatedResourceId").fetchall()
    assert got == [("n1", "ops", 28.32), ("n1", "search", 113.28), ("n2", None, 48.0)]


def test_the_contract_commitment_file_has_the_13_columns_and_no_rows(mini_con, tmp_path):
    """A warehouse whose invoices bill no provisioned throughput: the file has the columns, no rows
    (tests/sql/test_commitments.py has one with commitments)."""
    names = [c for c, _ in COMMITMENT_COLUMNS]
    assert names == ["BillingCurrency", "ContractCommitmentCategory", "ContractCommitmentCost", "ContractCommitmentDescription",
                     "ContractCommitmentId", "ContractCommitmentPeriodEnd", "ContractCommitmentPeriodStart",
                     "ContractCommitmentQuantity", "ContractCommitmentType", "ContractCommitmentUnit", "ContractId",
                     "ContractPeriodEnd", "ContractPeriodStart"]
    parquet = export_focus(mini_con, tmp_path / "p", "parquet", "2026-07")
    assert [(p.name, n) for p, n in parquet] == [("focus_costs_2026-07.parquet", 2), ("focus_contract_commitment.parquet", 0)]
    rel = duckdb.sql(f"SELECT * FROM '{parquet[1][0]}'")
    assert rel.columns == names and rel.fetchall() == []
    assert dict(zip(rel.columns, map(str, rel.types)))["ContractCommitmentCost"] == "DECIMAL(18,6)"
    csv = export_focus(mini_con, tmp_path / "c", "csv", "2026-07")
    assert csv[1][0].read_text() == ",".join(names) + "\n"
    assert export_focus(mini_con, tmp_path / "none", "csv", "2025-01") == []  # no month, no file at all


def test_the_cli_defaults_to_13():
    p = argparse.ArgumentParser()
    export.add_arguments(p)
    assert p.parse_args(["focus", "--out", "x"]).spec == "1.3"
    assert p.parse_args(["focus", "--out", "x", "--spec", "1.2"]).spec == "1.2"
    with pytest.raises(SystemExit):
        p.parse_args(["focus", "--out", "x", "--spec", "1.4"])
    with pytest.raises(ValueError):
        export_focus(None, Path("."), spec="1.1")  # type: ignore[arg-type]


def test_allocated_rows_of_the_demo_add_up_to_their_origin(tmp_path):
    """On the 4-day demo: per origin node-day, the allocated rows' costs and quantities add up to
    the 1.2 row exactly, their AllocatedRatio values (decimals) to 1, and AllocatedMethodDetails is
    {"Elements": [objects]} with FOCUS-defined keys only (FOCUS 1.3 requirements model,
    DataGeneratorCalculatedSplitCostAllocationHandling-A-003/-004, AllocatedMethodDetailsObject-O-001..O-014)."""
    from synthetic.demo import DemoSpec, write_landing

    write_landing(tmp_path / "landing", DemoSpec(days=4, tasks_per_day=100, seed=7))
    con, _ = build_warehouse(tmp_path / "landing", tmp_path / "w.duckdb")
    (f13, _), _ = export_focus(con, tmp_path / "v13", "parquet")
    ((f12, _),) = export_focus(con, tmp_path / "v12", "parquet", spec="1.2")
    allocated = duckdb.sql(f"SELECT ResourceId, ChargePeriodStart, BilledCost, EffectiveCost, ListCost, ContractedCost, "
                           f"PricingQuantity, ConsumedQuantity, AllocatedMethodDetails, ListUnitPrice, SkuId "
                           f"FROM '{f13}' WHERE AllocatedMethodId IS NOT NULL").fetchall()
    origins = {(r[0], r[1]): r[2:] for r in duckdb.sql(
        f"SELECT ResourceId, ChargePeriodStart, BilledCost, EffectiveCost, ListCost, ContractedCost, PricingQuantity, "
        f"ConsumedQuantity, ListUnitPrice, SkuId FROM '{f12}' WHERE x_Source = 'self_hosted'").fetchall()}
    assert len(allocated) > len(origins) > 0
    sums: dict = {}
    for node, day, *money_qty, details, unit_price, sku in allocated:
        key = (node, day)
        assert (unit_price, sku) == origins[key][6:]
        doc = json.loads(details, parse_float=D)
        assert list(doc) == ["Elements"] and isinstance(doc["Elements"], list) and len(doc["Elements"]) == 1
        (element,) = doc["Elements"]
        assert set(element) <= {"AllocatedRatio", "UsageQuantity", "UsageUnit"} and isinstance(element["AllocatedRatio"], D)
        acc = sums.setdefault(key, [D(0)] * 7)
        for i, v in enumerate([*money_qty, element["AllocatedRatio"]]):
            acc[i] += v
    assert set(sums) == set(origins)  # every demo node-day has calls: all are allocated
    for key, acc in sums.items():
        assert tuple(acc[:6]) == origins[key][:6], key
        assert acc[6] == 1, key


def test_api_usage_rows_carry_their_cost_center_split_by_largest_remainder(tmp_path):
    """x_CostCenter (issue 41; a FOCUS custom column: the Allocated* columns must be null on a charge
    that no split cost allocation made). Two o3 calls on 2026-06-10 at $2.50 input / $0.625 cached /
    $12 output per 1M tokens: q-alpha (team alpha) 1,001 prompt tokens of which 1 cached, 1 output;
    q-beta (team beta, cost center 'research' by catalog/cost_centers.csv) 2,002 prompt of which 2
    cached, 1 output. The day's rows, split per cost center:

    * input 3,000 tokens $0.0075: alpha 1,000 x 2.5e-6 = $0.0025, research 2,000 -> $0.005 (exact);
    * cached-input 3 tokens at 0.625 micro-dollars = 1.875 micro, the row $0.000002 = 2 micro:
      alpha 2 x 0.625 / 1.875 = 0.667 -> 0 (remainder .667), research 2 x 1.25 / 1.875 = 1.333 -> 1
      (remainder .333); the 1 micro left goes to the larger remainder, alpha: 1 micro each;
    * output 2 tokens $0.000024: 1 token, $0.000012 each.
    """
    from tests.conftest import write_files
    from tests.sources.test_otel import PRICES

    def call(rid, team, prompt, cached):
        return json.dumps({"ts": "2026-06-10T12:00:00Z", "request_id": rid, "provider": "openai", "model": "o3", "team": team,
                           "usage": {"prompt_tokens": prompt, "completion_tokens": 1,
                                     "prompt_tokens_details": {"cached_tokens": cached}}})

    landing = write_files(tmp_path / "landing", {
        **PRICES, "telemetry/requests/q.jsonl": call("q-alpha", "alpha", 1001, 1) + "\n" + call("q-beta", "beta", 2002, 2) + "\n",
        "catalog/cost_centers.csv": "cost_center,field,pattern\nresearch,team,beta\n"})
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    (path, n), _commitments = export_focus(con, tmp_path / "out", "parquet")
    got = duckdb.sql(f"""SELECT string_split(SkuPriceId, '|')[-1], x_CostCenter, ConsumedQuantity, PricingQuantity, BilledCost,
                                EffectiveCost, ListCost, ContractedCost, ChargeDescription, AllocatedMethodId
                         FROM '{path}' ORDER BY 1, 2""").fetchall()
    part = " calls at the standard list price in force (computed by thinktax), cost center "
    assert got == [
        ("cached-input", "alpha", 1, D("0.000001"), *[D("0.000001")] * 4, "API usage of o3, cached-input: 1 tokens in 1" + part + "alpha", None),
        ("cached-input", "research", 2, D("0.000002"), *[D("0.000001")] * 4,
         "API usage of o3, cached-input: 2 tokens in 1" + part + "research", None),
        ("input", "alpha", 1000, D("0.001"), *[D("0.0025")] * 4, "API usage of o3, input: 1000 tokens in 1" + part + "alpha", None),
        ("input", "research", 2000, D("0.002"), *[D("0.005")] * 4, "API usage of o3, input: 2000 tokens in 1" + part + "research", None),
        ("output", "alpha", 1, D("0.000001"), *[D("0.000012")] * 4, "API usage of o3, output: 1 tokens in 1" + part + "alpha", None),
        ("output", "research", 1, D("0.000001"), *[D("0.000012")] * 4, "API usage of o3, output: 1 tokens in 1" + part + "research", None),
    ]
    assert n == 6
    # the 1.2 file keeps one row per token type, the same money and tokens: 0.0075 + 0.000002 + 0.000024
    # = $0.007526 for 3,000 + 3 + 2 = 3,005 tokens
    (p12, n12), = export_focus(con, tmp_path / "v12", "parquet", spec="1.2")
    assert n12 == 3
    q = "SELECT sum(BilledCost), sum(ConsumedQuantity) FROM '{}'"
    assert duckdb.sql(q.format(path)).fetchall() == duckdb.sql(q.format(p12)).fetchall() == [(D("0.007526"), D("3005"))]


def test_audio_rows_carry_their_cost_center_and_the_text_rows_count_only_text(tmp_path):
    """Issue 44's audio charges in a 1.3 file are split per cost center like the text ones (41).
    Two gpt-4o-audio-preview calls on 2026-06-10 at $2.50 text in / $10 text out / $40 audio in /
    $80 audio out per 1M tokens: v-alpha (team alpha) 100 text + 1,000 audio in, 10 text + 500 audio
    out; v-beta (team beta -> cost center 'research') 200 text + 3,000 audio in, 20 text + 1,500 audio
    out. Rows: input 300 text tokens: alpha 100 x 2.5e-6 = $0.00025, research $0.0005; output 30:
    alpha $0.0001, research $0.0002; audio alpha 1,500 tokens: 1,000 x 40e-6 + 500 x 80e-6 = $0.08,
    research 4,500 tokens: 3,000 x 40e-6 + 1,500 x 80e-6 = $0.24."""
    from tests.conftest import write_files

    def call(rid, team, text_in, audio_in, text_out, audio_out):
        return json.dumps({"ts": "2026-06-10T12:00:00Z", "id": rid, "object": "chat.completion", "provider": "openai",
                           "model": "gpt-4o-audio-preview", "team": team,
                           "usage": {"prompt_tokens": text_in + audio_in, "completion_tokens": text_out + audio_out,
                                     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": audio_in},
                                     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": audio_out}}})

    landing = write_files(tmp_path / "landing", {
        "prices/llm/prices.2026-01-01.csv": (
            "provider,model,input_usd_per_mtok,output_usd_per_mtok,audio_input_usd_per_mtok,audio_output_usd_per_mtok,currency\n"
            "openai,gpt-4o-audio-preview,2.5,10,40,80,USD\n"),
        "telemetry/requests/v.jsonl": call("v-alpha", "alpha", 100, 1000, 10, 500) + "\n"
                                      + call("v-beta", "beta", 200, 3000, 20, 1500) + "\n",
        "catalog/cost_centers.csv": "cost_center,field,pattern\nresearch,team,beta\n"})
    con, _ = build_warehouse(landing, tmp_path / "w.duckdb")
    (path, _n), _commitments = export_focus(con, tmp_path / "out", "parquet")
    got = duckdb.sql(f"""SELECT string_split(SkuPriceId, '|')[-1], x_CostCenter, ConsumedQuantity, BilledCost
                         FROM '{path}' ORDER BY 1, 2""").fetchall()
    assert got == [
        ("audio", "alpha", 1500, D("0.08")), ("audio", "research", 4500, D("0.24")),
        ("input", "alpha", 100, D("0.00025")), ("input", "research", 200, D("0.0005")),
        ("output", "alpha", 10, D("0.0001")), ("output", "research", 20, D("0.0002")),
    ]
