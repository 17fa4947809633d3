"""The Dagster instance thinktax sets up: Dagster's SQLite storage with an event log that keeps its
connections (pipelines/dagster_storage.py). Everything it writes is what Dagster's own storage
(what the UI, the daemon and `dagster` CLI read) sees."""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from pipelines.dagster_storage import PooledSqliteEventLogStorage
from thinktax.runner import dagster_home


@dg.asset
def first() -> int:
    return 1


@dg.asset(check_specs=[dg.AssetCheckSpec("positive", asset="second")])
def second(first: int):
    yield dg.Output(first + 1)
    yield dg.AssetCheckResult(check_name="positive", passed=True)


def test_runs_are_recorded_where_dagsters_own_storage_reads_them(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    home = dagster_home()
    assert "pipelines.dagster_storage" in (home / "dagster.yaml").read_text()
    run_ids = []
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        for _ in range(2):  # the second run reuses the kept index connection
            result = dg.materialize([first, second], instance=instance)
            assert result.success
            run_ids.append(result.run_id)
    plain = SqliteEventLogStorage(str(home / "history" / "runs"))  # no thinktax code from here on
    for run_id in run_ids:
        kinds = [e.dagster_event.event_type_value for e in plain.get_logs_for_run(run_id) if e.dagster_event]
        assert kinds.count("ASSET_MATERIALIZATION") == 2
        assert kinds.count("ASSET_CHECK_EVALUATION") == 1
        assert kinds[-1] == "PIPELINE_SUCCESS"
    latest = plain.get_latest_materialization_events([dg.AssetKey("first"), dg.AssetKey("second")])
    assert {k.to_user_string(): e.run_id for k, e in latest.items()} == {"first": run_ids[1], "second": run_ids[1]}
    checks = plain.get_latest_asset_check_execution_by_key([dg.AssetCheckKey(dg.AssetKey("second"), "positive")])
    assert [c.run_id for c in checks.values()] == [run_ids[1]]
    plain.dispose()


def test_run_shard_engines_are_bounded(tmp_path):
    storage = PooledSqliteEventLogStorage(str(tmp_path / "runs"))
    for k in range(20):
        with storage.run_connection(f"run{k}") as conn:
            conn.exec_driver_sql("SELECT 1")
    kept = list(storage._engines)
    assert [k for k in kept if k != "index"] == [f"run{k}" for k in range(12, 20)]  # the 8 most recent
    storage.dispose()
