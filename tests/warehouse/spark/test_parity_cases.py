"""Spark against DuckDB on the hand-worked landings, not only on the demo.

The demo has none of issue 14's pricing modifiers (service tiers, batch, long context, 1-hour
cache writes, regional uplift, per-request fees, Gemini's usage shape) and none of the bad-input
corpus's oddities, so the demo parity (test_parity.py) leaves those branches of the SQL
unexercised on Spark. Here one landing is ingested by DuckDB, built by both engines from the
same staging, and compared table by table (conftest.compare: DECIMAL and integers exact, floats
within 1e-9). It holds:

* every case of the bad-input corpus (tests/corpus/, README there) side by side (each case's
  files under its own name; its LLM price sheets left out, see below), so quarantines, conflicts, re-exports, bills in USD and EUR, FOCUS,
  Prometheus counter resets, OTel spans and catalog rows all reach the models;
* the pricing-rules files of tests/sql/test_pricing_rules.py (the real LiteLLM snapshot of
  2026-07-24, one call per published rule), whose per-call costs are also asserted on Spark's
  own core.call_costs against the figures worked by hand there. The corpus's own LLM price
  sheets are left out of this landing: some name the same models and would re-price the calls.

Its tables live in their own Spark databases (``cx_stg``, ``cx_core``, ...), beside the
session-wide scenario of conftest.py.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.warehouse.spark.conftest import compare

REPO = Path(__file__).resolve().parents[3]

# Spark builds on local[2]: minutes on a loaded 2-core machine (the scenario fixture alone took >600 s at load 9)
pytestmark = pytest.mark.timeout(1800)


def _targets(prefix: str):
    from warehouse.spark.build import Target

    return Target(tuple((s, f"{prefix}_{s}") for s in ("stg", "ops", "core", "marts")))


def _both_engines(spark, landing: Path, root: Path, prefix: str):
    """DuckDB ingests and builds ``landing``; Spark builds every model from the same staging.
    Returns (open DuckDB connection, Spark target, {table: (equal, why)})."""
    from tests.conftest import build_warehouse
    from warehouse.spark.build import build_all, load_staging

    con, _summary = build_warehouse(landing, root / "wh" / "thinktax.duckdb")
    target = _targets(prefix)
    load_staging(spark, con, str(root / "staging"), target)
    built = build_all(spark, None, target)
    return con, target, {m: compare(con, spark, m, target.table(m)) for m in built}


@pytest.fixture(scope="module")
def landed(spark, tmp_path_factory):
    """One landing: every corpus case side by side (each file renamed ``<case>__<name>``) plus the
    pricing-rules files. One Spark build serves both (a build of the 26 models is ~1 min of fixed
    cost on local[2])."""
    from tests.sql import test_pricing_rules as pr

    root = tmp_path_factory.mktemp("spark_cases")
    landing = root / "landing"
    cases = sorted(p for p in (REPO / "tests" / "corpus").iterdir() if p.is_dir())
    for case in cases:
        for f in case.rglob("*"):
            rel = f.relative_to(case)
            # the corpus's LLM price sheets would re-price the hand-worked calls (its sheets name
            # some of the same models); the real snapshot prices every call instead
            if f.is_file() and rel.parts[:2] != ("prices", "llm"):
                dest = landing / rel.parent / f"{case.name}__{rel.name}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
    llm, req = landing / "prices" / "llm", landing / "telemetry" / "requests"
    llm.mkdir(parents=True)
    shutil.copyfile(pr.REAL, llm / pr.REAL.name)
    (llm / "acme.2026-07-01.csv").write_text(pr.CSV)
    (req / "pricing_calls.jsonl").write_text("\n".join(json.dumps(c) for c in pr.CALLS) + "\n")
    (req / "pricing_batch_output.jsonl").write_text(json.dumps(pr.OPENAI_BATCH) + "\n")
    (req / "pricing_msgbatch_results.2026-07-30.jsonl").write_text(json.dumps(pr.ANTHROPIC_BATCH) + "\n")
    # issue 24: Bedrock / Vertex AI / Gemini / Azure calls and their endpoints.csv (the newest catalog file of its
    # kind, so it is the one in force): the provider families, profile ids, ARNs, data zones and provisioned calls
    from tests.sql import test_cloud_pricing as cp

    (req / "zz_cloud_calls.jsonl").write_text("\n".join(json.dumps(c) for c in cp.CALLS) + "\n")
    (landing / "catalog" / "zz_endpoints.csv").write_text(cp.ENDPOINTS)
    # issue 41: principals from every call source, a secret-looking key, cost-center rules (the newest
    # catalog file of its kind), nested agent traces: core.call_costs.cost_center, marts.chargeback,
    # marts.agent_runs / run_costs / session_costs on Spark
    from tests.sql import test_agent_runs as ar, test_principals as tp

    (req / "zz_principals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tp.REQUESTS))
    (landing / "telemetry" / "litellm_spendlogs").mkdir(parents=True, exist_ok=True)
    (landing / "telemetry" / "litellm_spendlogs" / "zz_principals.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in tp.SPENDLOGS))
    (landing / "telemetry" / "otel").mkdir(parents=True, exist_ok=True)
    (landing / "telemetry" / "otel" / "zz_agents.jsonl").write_text(ar.OTLP + tp.OTLP)
    (landing / "catalog" / "zz_cost_centers.csv").write_text(tp.COST_CENTERS)
    con, target, equal = _both_engines(spark, landing, root, "cx")
    yield con, target, equal, len(cases)
    con.close()


def test_every_table_equals_duckdb_on_spark(landed):
    con, _target, equal, n_cases = landed
    assert n_cases >= 45
    # the landing reached the models: quarantined rows, calls and bill lines are there
    (quarantined, calls, bill_lines), = con.execute(
        "SELECT (SELECT count(*) FROM ops.quarantine), (SELECT count(*) FROM core.calls), "
        "(SELECT count(*) FROM stg.openai_costs) + (SELECT count(*) FROM stg.anthropic_costs) "
        "+ (SELECT count(*) FROM stg.focus_costs)").fetchall()
    assert quarantined > 50 and calls > 50 and bill_lines > 10, (quarantined, calls, bill_lines)
    # issue 41's tables have rows to compare: cost centers from the rules, agents, runs, sessions
    (centers, agents, runs, sessions), = con.execute(
        "SELECT (SELECT count(DISTINCT cost_center) FROM marts.chargeback), (SELECT count(*) FROM marts.agent_runs), "
        "(SELECT count(*) FROM marts.run_costs), (SELECT count(*) FROM marts.session_costs)").fetchall()
    assert centers >= 5 and agents >= 4 and runs >= 2 and sessions >= 3, (centers, agents, runs, sessions)
    bad = {t: why for t, (ok, why) in equal.items() if not ok}
    assert not bad, (sorted(bad), bad)


def test_pricing_rules_hand_worked_costs_come_out_of_spark(landed, spark):
    from tests.sql.test_pricing_rules import EXPECTED

    _con, target, _equal, _n = landed
    calls = target.table("core.call_costs")
    ids = ", ".join(f"'{r}'" for r in EXPECTED)
    got = {r[0]: tuple(r[1:]) for r in spark.sql(
        f"SELECT request_id, cost_usd, price_basis, cost_at_standard_usd FROM {calls} WHERE request_id IN ({ids})").collect()}
    assert set(got) == set(EXPECTED)
    for rid, (cost, basis, std) in EXPECTED.items():
        assert got[rid] == (D(cost), basis, D(std)), rid
    # flags travel too: scale has no rate on the sheet (priced at standard, flagged)
    (flag, note), = spark.sql(f"SELECT tier_priced_as_standard, price_note FROM {calls} "
                              "WHERE request_id = 'scale_tier'").collect()
    assert (flag, note) == (True, "service tier scale has no rate on the sheet: priced at standard")
    # marts.price_basis_mix on Spark: o3 flex (pricing_calls.jsonl's only flex o3 call on 2026-07-30)
    # saved 0.038 - 0.019 = 0.019
    (row,) = spark.sql(f"SELECT calls, cost_usd, cost_at_standard_usd, premium_usd FROM {target.table('marts.price_basis_mix')} "
                       "WHERE model = 'o3' AND price_basis = 'flex' AND day = DATE '2026-07-30'").collect()
    assert tuple(row) == (1, D("0.019"), D("0.038"), D("-0.019"))


def test_cloud_calls_are_priced_the_same_on_spark(landed, spark):
    """The hand-worked costs of tests/sql/test_cloud_pricing.py (Bedrock profile ids and ARNs, Vertex AI, the
    Gemini API, Azure data zones and deployments, provisioned calls) out of Spark's own core.call_costs."""
    from tests.sql.test_cloud_pricing import EXPECTED

    _con, target, _equal, _n = landed
    ids = ", ".join(f"'{r}'" for r in EXPECTED)
    got = {r[0]: tuple(r[1:]) for r in spark.sql(
        f"SELECT request_id, provider, price_model, cost_usd, price_basis FROM {target.table('core.call_costs')} "
        f"WHERE request_id IN ({ids})").collect()}
    assert set(got) == set(EXPECTED)
    for rid, (provider, price_model, cost, basis) in EXPECTED.items():
        assert got[rid][:2] == (provider, price_model), rid
        assert abs(got[rid][2] - D(cost)) <= D("1e-9") and got[rid][3] == basis, rid
