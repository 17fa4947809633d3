"""marts.spend_anomalies after `thinktax run --engine spark` equals the DuckDB build's (issue 42).

The mart is a Python mart: on a Spark run it is built in the DuckDB build from the columns of
core.call_costs Spark hands over (warehouse/spark/economics.py CALL_COSTS_COLUMNS, which take the
scope columns from sources/contract.py ANOMALY_SCOPES), then written back to Spark. The landing is the
spike of tests/commands/test_anomaly_alert.py (a $400.40 excess of team search on 2025-06-04), plus a
second team (ops, task type triage, flat) so that the team and task-type scopes have two values each.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(1200)

from tests.commands.test_anomaly_alert import PRICES, calls, days  # noqa: E402
from tests.conftest import build_warehouse, write_files  # noqa: E402
from tests.warehouse.spark.cli_json import canon, sql_json  # noqa: E402


@pytest.mark.slow
def test_spend_anomalies_on_spark_equal_duckdb(spark, tmp_path, capsys):
    from thinktax.cli import main
    from warehouse.anomalies import build_spend_anomalies

    ops = calls(days(0, 34)).replace('"team": "search"', '"team": "ops"').replace('"task_type": "qa"', '"task_type": "triage"')
    ops = ops.replace('"request_id": "', '"request_id": "ops-')
    landing = write_files(tmp_path / "landing", PRICES | {"telemetry/requests/search.jsonl": calls(days(0, 34, (34,))),
                                                          "telemetry/requests/ops.jsonl": ops})
    ref = tmp_path / "duck" / "thinktax.duckdb"
    con, summary = build_warehouse(landing, ref)
    assert summary.total("rows_quarantined") == 0
    build_spend_anomalies(con)
    con.close()
    (tmp_path / "duck" / "thinktax.duckdb.build-t").rename(ref)

    warehouse = tmp_path / "wh" / "thinktax.duckdb"
    rc = main(["run", "--engine", "spark", "--landing", str(landing), "--warehouse", str(warehouse),
               "--spark-warehouse", str(tmp_path / "spark")])
    assert rc == 0, capsys.readouterr().out
    query = "SELECT * EXCLUDE (build_id) FROM marts.spend_anomalies"
    want = sql_json(capsys, ["sql", "--warehouse", str(ref), "--format", "json", query])
    # the spike is there: the comparison is not of two empty tables
    assert [r["episode_id"] for r in want if r["is_anomaly"] and r["scope"] == "team" and r["metric"] == "cost_usd"] == [
        "cost_usd:team=search:2025-06-04"]
    published = sql_json(capsys, ["sql", "--warehouse", str(warehouse), "--format", "json", query])
    assert canon(published) == canon(want)
    on_spark = sql_json(capsys, ["sql", "--engine", "spark", "--spark-warehouse", str(tmp_path / "spark"),
                                 "--format", "json", query])
    assert canon(on_spark) == canon(want)
