"""The spend_anomaly alert (issue 42) from a landing folder to a real receiver on 127.0.0.1: once per
episode across repeated nightly runs; catalog/anomaly_feedback.csv silences an episode, and its bad
lines are quarantined with the field and reason.

Figures. acme/api-model at $10 input / $100 output per Mtok (reasoning at the output price). Every
call: prompt 1,000, completion 100,000 of which reasoning 90,000 ->
1,000 x 10/1e6 + 10,000 x 100/1e6 + 90,000 x 100/1e6 = 0.01 + 1 + 9 = $10.01. Team search, task type
qa: 10 calls a day ($100.10) from Thursday 2025-05-01; 50 calls ($500.50) on Wednesday 2025-06-04
(day 34). Expected (median of the 10 weekdays before, all $100.10; MAD 0) $100.10, so the impact is
500.50 - 100.10 = $400.40, +400 %, above both floors; the thinking per call does not move.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.conftest import NOW, build_warehouse, write_files
from tests.nightly_helpers import Receiver
from services import alert
from services.config import Alert, Config
from warehouse.anomalies import build_spend_anomalies
from warehouse.ingest import Ingestor
from warehouse.transform import build_all

START = dt.date(2025, 5, 1)
PRICES = {"prices/llm/prices.2025-01-01.csv": "provider,model,input_usd_per_mtok,output_usd_per_mtok,currency\n"
                                              "acme,api-model,10,100,USD\n"}


def calls(days: dict[dt.date, int]) -> str:
    out = []
    for d, n in days.items():
        for k in range(n):
            out.append(json.dumps({
                "ts": f"{d.isoformat()}T12:{k // 60:02d}:{k % 60:02d}Z", "request_id": f"{d.isoformat()}-{k}",
                "model": "api-model", "provider": "acme", "team": "search", "task_type": "qa",
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100_000,
                          "completion_tokens_details": {"reasoning_tokens": 90_000}}}))
    return "\n".join(out) + "\n"


def days(first: int, last: int, spikes: tuple[int, ...] = ()) -> dict[dt.date, int]:
    return {START + dt.timedelta(days=i): 50 if i in spikes else 10 for i in range(first, last + 1)}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def nightly(con, landing: Path) -> None:
    """What a night does to the build: ingest the new files, rebuild, the mart."""
    Ingestor(con, landing, now=NOW).ingest()
    build_all(con)
    build_spend_anomalies(con)


def test_one_alert_per_episode_across_nightly_runs(tmp_path: Path):
    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/night1.jsonl": calls(days(0, 34, (34,)))})
    con, summary = build_warehouse(landing, tmp_path / "wh" / "t.duckdb")
    assert summary.total("rows_quarantined") == 0
    build_spend_anomalies(con)
    row = con.execute("SELECT actual, expected, impact_usd, impact_pct, is_anomaly, episode_id, root_cause, root_cause_share "
                      "FROM marts.spend_anomalies WHERE metric = 'cost_usd' AND scope = 'team' AND day = DATE '2025-06-04'"
                      ).fetchone()
    assert row == (500.5, 100.1, D("400.400000"), 400.0, True, "cost_usd:team=search:2025-06-04", "model=api-model", 1.0)
    cfg = Config(alert=Alert(webhook_url=""))
    with Receiver() as rx:
        cfg = Config(alert=Alert(webhook_url=rx.url))
        alert.evaluate(con, cfg)
        sent = [b for b in rx.bodies if b["alert"] == "spend_anomaly"]
        assert [b["episode_id"] for b in sent] == ["cost_usd:team=search:2025-06-04"]
        text = sent[0]["text"]
        for part in ("API spend of team search", "on 2025-06-04 (1 anomalous day)", "$400.40 over the expected",
                     "+400.0 %", "root cause model=api-model (100 % of the excess)", "anomaly_feedback.csv"):
            assert part in text, text
        assert sent[0]["impact_usd"] == 400.4
        # the same night again: nothing new
        alert.evaluate(con, cfg)
        # night 2: the spike goes on (Thursday 06-05): the same episode, now 2 days, is not sent again
        write_files(landing, {"telemetry/requests/night2.jsonl": calls(days(35, 35, (35,)))})
        nightly(con, landing)
        assert con.execute("SELECT count(*) FROM marts.spend_anomalies WHERE episode_id = 'cost_usd:team=search:2025-06-04'"
                           ).fetchone()[0] == 2
        alert.evaluate(con, cfg)
        # night 3: three normal days, then a new spike on Monday 06-09: a new episode, sent once
        write_files(landing, {"telemetry/requests/night3.jsonl": calls(days(36, 39, (39,)))})
        nightly(con, landing)
        alert.evaluate(con, cfg)
        alert.evaluate(con, cfg)
        sent = [b for b in rx.bodies if b["alert"] == "spend_anomaly"]
    assert [b["episode_id"] for b in sent] == ["cost_usd:team=search:2025-06-04", "cost_usd:team=search:2025-06-09"]
    assert con.execute("SELECT count(*), bool_and(delivered) FROM ops.alerts WHERE alert = 'spend_anomaly'").fetchone() == (2, True)
    assert con.execute("SELECT status FROM ops.alert_state WHERE alert = 'spend_anomaly' ORDER BY model").fetchall() == [
        ("fired",), ("fired",)]
    con.close()


def test_feedback_silences_the_episode_and_bad_lines_are_quarantined(tmp_path: Path):
    feedback = ("scope,scope_value,from,to,label\n"
                "team,search,2025-06-04,2025-06-04,planned\n"
                "team,search,2025-06-04,2025-06-01,planned\n"    # line 3: to before from
                "team,search,2025-06-04,2025-06-04,maybe\n"      # line 4: unknown label
                "region,eu,2025-06-04,2025-06-04,planned\n")     # line 5: unknown scope
    landing = write_files(tmp_path / "landing", PRICES | {
        "telemetry/requests/night1.jsonl": calls(days(0, 34, (34,))),
        "catalog/anomaly_feedback.csv": feedback})
    con, _ = build_warehouse(landing, tmp_path / "wh" / "t.duckdb")
    build_spend_anomalies(con)
    assert con.execute("SELECT scope, scope_value, from_day, to_day, label FROM stg.anomaly_feedback").fetchall() == [
        ("team", "search", dt.date(2025, 6, 4), dt.date(2025, 6, 4), "planned")]
    q = con.execute("SELECT line, field FROM ops.quarantine WHERE file LIKE '%anomaly_feedback.csv' ORDER BY line").fetchall()
    assert q == [(3, "to"), (4, "label"), (5, "scope")]
    assert con.execute("SELECT episode_id, feedback FROM marts.spend_anomalies WHERE is_anomaly AND scope = 'team' "
                       "AND metric = 'cost_usd'").fetchall() == [("cost_usd:team=search:2025-06-04", "planned")]
    with Receiver() as rx:
        alert.evaluate(con, Config(alert=Alert(webhook_url=rx.url)))
        assert [b for b in rx.bodies if b["alert"] == "spend_anomaly"] == []
    con.close()


def test_alert_scopes_choose_the_series(tmp_path: Path):
    """With alert_scopes = ['team:calls', 'model'] the spike is sent as a calls episode of team search
    (+40 calls priced at $10.01: $400.40) and a cost episode of model api-model."""
    from services.config import Anomaly

    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/night1.jsonl": calls(days(0, 34, (34,)))})
    con, _ = build_warehouse(landing, tmp_path / "wh" / "t.duckdb")
    build_spend_anomalies(con)
    with Receiver() as rx:
        alert.evaluate(con, Config(alert=Alert(webhook_url=rx.url), anomaly=Anomaly(alert_scopes=("team:calls", "model"))))
        sent = sorted((b["episode_id"], b["impact_usd"]) for b in rx.bodies if b["alert"] == "spend_anomaly")
    assert sent == [("calls:team=search:2025-06-04", 400.4), ("cost_usd:model=api-model:2025-06-04", 400.4)]
    con.close()


def test_report_section_names_the_episode_and_draws_its_band(tmp_path: Path):
    """The report's anomalies section: the spike's episodes ($400.40 each, shown as $400: cost and calls of
    team search, model api-model, task type qa, cost center search (the team's: no catalog/cost_centers.csv)
    and the unreported key and user, 12 in all, of which the table shows the top 10), team first and
    spend before calls, with the root cause; a band chart for each of the top two, each with its one
    anomalous day as a red dot."""
    from services import report

    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/night1.jsonl": calls(days(0, 34, (34,)))})
    con, _ = build_warehouse(landing, tmp_path / "wh" / "t.duckdb")
    build_spend_anomalies(con)
    html = report._anomalies(con)
    charts = html.split("<table")[0]
    assert charts.index("API spend of team search") < charts.index("calls of team search")
    table = html.split("<table")[1]
    assert table.count("<tr>") - 1 == 10 and table.count(">$400<") == 10 and "model=api-model (100%)" in table
    assert charts.count("<circle") == 2  # two charts, one anomalous day each
    con.close()


@pytest.mark.slow  # the whole Dagster graph (~1 min on 2 cores): not in `make check`
def test_the_dagster_check_warns_and_the_run_still_publishes(tmp_path: Path):
    """The whole graph on the spike's landing folder: the run succeeds and publishes, and the
    no_recent_anomaly check of marts.spend_anomalies fails with severity WARN naming the episode."""
    import dagster as dg
    import duckdb

    from pipelines.defs.resources import ThinktaxResource
    from pipelines.definitions import defs

    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/night1.jsonl": calls(days(0, 34, (34,)))})
    wh = tmp_path / "wh" / "thinktax.duckdb"
    (tmp_path / "dh").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dh")) as instance:
        result = dg.materialize(
            [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)] + list(defs.asset_checks or []),
            instance=instance, partition_key="2025-06-04",
            resources={"thinktax": ThinktaxResource(landing=str(landing), warehouse=str(wh))})
        assert result.success
        evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
        check = evals["no_recent_anomaly"]
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        names = [e["episode_id"] for e in check.metadata["episodes"].value]
        assert "cost_usd:team=search:2025-06-04" in names
        assert all(e.passed for name, e in evals.items() if name != "no_recent_anomaly")
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM marts.spend_anomalies WHERE is_anomaly AND scope = 'team' "
                           "AND metric = 'cost_usd'").fetchone()[0] == 1


def test_the_mart_needs_only_the_call_columns_a_spark_run_brings_over(tmp_path: Path):
    """On a Spark run the DuckDB build holds core.call_costs as CALL_COSTS_COLUMNS only
    (warehouse/spark/economics.py, the scope columns included from ANOMALY_SCOPES): the mart built from
    those columns is the same."""
    from warehouse.spark.economics import CALL_COSTS_COLUMNS

    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/night1.jsonl": calls(days(0, 34, (34,)))})
    con, _ = build_warehouse(landing, tmp_path / "wh" / "t.duckdb")
    build_spend_anomalies(con)
    before = con.execute("SELECT * EXCLUDE (build_id) FROM marts.spend_anomalies ORDER BY ALL").fetchall()
    assert any(r for r in before if r[10])  # is_anomaly: not a comparison of quiet tables
    con.execute("CREATE TABLE main.full_call_costs AS SELECT * FROM core.call_costs")
    con.execute("DROP VIEW IF EXISTS core.call_costs")
    con.execute("DROP TABLE IF EXISTS core.call_costs")
    con.execute(f"CREATE TABLE core.call_costs AS SELECT {', '.join(CALL_COSTS_COLUMNS)} FROM main.full_call_costs")
    build_spend_anomalies(con)
    assert con.execute("SELECT * EXCLUDE (build_id) FROM marts.spend_anomalies ORDER BY ALL").fetchall() == before
    con.close()
