"""The Dagster code location: the whole graph materialises on a real instance, and its shape is pinned."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.defs.resources import ThinktaxResource
from pipelines.definitions import defs

# Accidental changes to the graph show here. Families that other issues add extend this set.
CORE_ASSETS = {
    "ops/settings", "ops/ingested_files", "ops/quarantine", "ops/published_warehouse",
    "stg/requests", "stg/llm_prices", "stg/gpu_prices", "stg/models", "stg/nodes", "stg/deployments", "stg/model_configs",
    "core/calls", "core/tasks", "core/call_costs", "core/llm_price_versions", "core/gpu_price_versions", "core/model_map",
    "core/node_hours_cost", "core/self_hosted_allocation", "core/dim_models", "core/dim_nodes", "core/dim_deployments",
    "marts/cost_per_task", "marts/task_cost_breakdown", "marts/task_costs", "marts/tier_mix", "marts/daily_spend", "marts/unpriced_usage",
}


def test_asset_graph_has_the_backbone():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert CORE_ASSETS <= keys
    graph = defs.resolve_asset_graph()
    def parents(*key: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(dg.AssetKey(list(key))).parent_keys} - {"ops/settings"}

    # issue 17: calls before costs -- cost_per_task is the old-named view of task_cost_breakdown, which
    # takes the task's attributes from core.tasks; core.calls reads staging, not prices
    assert parents("marts", "cost_per_task") == {"marts/task_cost_breakdown"}
    assert parents("marts", "task_cost_breakdown") == {"core/call_costs", "core/dim_nodes", "core/self_hosted_allocation",
                                                       "core/tasks"}
    assert parents("core", "calls") == {"stg/requests", "core/dim_nodes", "core/reported_models"}  # issue 24: core.calls reads the reported models
    assert parents("core", "tasks") == {"core/calls"}
    assert parents("core", "self_hosted_allocation") == {"core/calls", "core/node_hours_cost"}
    assert defs.resolve_job_def("thinktax") is not None
    assert defs.resolve_schedule_def("nightly").cron_schedule == "0 2 * * *"


def test_materialize_whole_graph_on_a_real_instance(mini_landing: Path, tmp_path: Path):
    wh = tmp_path / "wh" / "thinktax.duckdb"
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    checks = list(defs.asset_checks or [])
    (tmp_path / "dh").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dh")) as instance:
        result = dg.materialize(
            [*assets, *checks],
            instance=instance,
            resources={"thinktax": ThinktaxResource(landing=str(mini_landing), warehouse=str(wh))},
            partition_key="2026-06-30",  # telemetry-derived models are daily-partitioned (UTC)
        )
        assert result.success
        assert all(e.passed for e in result.get_asset_check_evaluations())
        mat = instance.get_latest_materialization_event(dg.AssetKey(["marts", "task_costs"]))
        assert mat.asset_materialization.metadata["dagster/row_count"].value == 4
    import duckdb

    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.sql("SELECT count(*) FROM marts.task_costs").fetchall() == [(4,)]
    assert not list(wh.parent.glob("*.build-*"))  # the build was renamed into place
