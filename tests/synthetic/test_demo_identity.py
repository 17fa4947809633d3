"""The demo's tables are the same as when tests/fixtures/demo_table_hashes.json was recorded
(issue 17, item 7): the demo is rebuilt with the current code and every stg / core / marts
relation's ordered hash (tests/demo_identity.py says what is hashed and which normalisations --
floats to 9 significant digits, integer widths -- are allowed) is compared with the recorded one.

A relation whose public shape was changed on purpose is compared under its old shape:
RENAMED maps the recorded name to a query over today's warehouse that must give the recorded
rows and columns exactly (a compatibility view under the old name, or the old columns taken from
where they live now). Regenerate the fixture only for a change meant to alter demo figures:
`.venv/bin/python -m tests.demo_identity --write`, and say why in the commit.

Columns added to a public relation since the recording (issue 24: ``billing`` and
``on_demand_cost_usd`` on the per-call tables) are additions, not changes: each relation is
compared on its recorded columns, in their recorded order, so every recorded value must still be
the same; a recorded column that is gone fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.demo_identity import FIXTURE, SPEC, build_demo, columns, relations, table_hash

pytestmark = pytest.mark.slow

RECORDED = json.loads(FIXTURE.read_text())

# recorded relation -> query over the current warehouse that reproduces it (see the module docstring)
RENAMED: dict[str, str] = {
    # issue 17: core.calls became the money-free first table of the per-call chain; until then it was
    # a view of core.call_costs without its money columns but with the API ones. Those rows are
    # core.call_costs' (this is the old view's definition, verbatim)
    "core.calls": "SELECT * EXCLUDE (cost_usd, thinking_cost_usd, allocated_micro_usd, unpriced), "
                  "CASE WHEN serving = 'api' THEN cost_usd END AS api_cost_usd, "
                  "CASE WHEN serving = 'api' THEN thinking_cost_usd END AS api_thinking_cost_usd "
                  "FROM core.call_costs",
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    con = build_demo(Path(tmp_path_factory.mktemp("demo_identity")))
    yield con
    con.close()


def test_the_fixture_is_the_demo_this_module_builds():
    assert RECORDED["demo"] == SPEC
    assert len(RECORDED["tables"]) >= 50  # every stg / core / marts relation, not a handful


def test_every_recorded_table_is_identical(demo):
    present = set(relations(demo))
    differing = {}
    for rel, recorded in sorted(RECORDED["tables"].items()):
        if rel not in RENAMED:
            assert rel in present, f"{rel} is gone (a renamed public name keeps its old name as a view)"
        source = f"({RENAMED[rel]})" if rel in RENAMED else rel
        cols = ", ".join(f'"{c}"' for c in recorded["columns"])
        now = table_hash(demo, rel, f"SELECT {cols} FROM {source} AS r")
        if now != recorded:
            differing[rel] = {"recorded": (recorded["rows"], recorded["md5"]), "now": (now["rows"], now["md5"]),
                              "columns_added": sorted(set(now["columns"]) - set(recorded["columns"])),
                              "columns_gone": sorted(set(recorded["columns"]) - set(now["columns"]))}
    assert differing == {}


def test_core_calls_is_core_call_costs_without_the_money(demo):
    """Every call of core.call_costs is in core.calls and the reverse, with the same values in every
    column the two share (so the RENAMED comparison above also holds core.calls' own rows)."""
    shared = [n for n, _ in columns(demo, "core.calls")]
    assert len(shared) >= 30
    cols = ", ".join(f'"{c}"' for c in shared)
    assert table_hash(demo, "core.calls") == table_hash(demo, "core.calls", f"SELECT {cols} FROM core.call_costs")
    money = {"cost_usd", "thinking_cost_usd", "allocated_micro_usd", "price_version_id", "rate_input_usd_per_mtok"}
    assert not money & set(shared)


def test_a_one_cent_change_changes_the_hash(demo):
    """The comparison can fail: one task's cost_usd raised by 0.01 USD in a copy of
    marts.task_costs no longer matches the recorded hash (and the unchanged copy does)."""
    demo.execute("CREATE TEMP TABLE task_costs_copy AS SELECT * FROM marts.task_costs")
    recorded = RECORDED["tables"]["marts.task_costs"]
    assert table_hash(demo, "task_costs_copy")["md5"] == recorded["md5"]
    demo.execute("UPDATE task_costs_copy SET cost_usd = cost_usd + 0.01 "
                 "WHERE task_id = (SELECT min(task_id) FROM task_costs_copy)")
    changed = table_hash(demo, "task_costs_copy")
    assert changed["rows"] == recorded["rows"] and changed["md5"] != recorded["md5"]


def test_integer_widths_and_float_noise_are_forgiven_but_nothing_else(demo):
    """The two normalisations, worked on a three-row table: INTEGER vs BIGINT print the same;
    0.1 + 0.2 (0.30000000000000004) and 0.3 print the same at 9 significant digits; 0.3000001 does not."""
    demo.execute("CREATE TEMP TABLE n_a AS SELECT * FROM (VALUES (CAST(1 AS INTEGER), 0.1::DOUBLE + 0.2::DOUBLE)) t(n, x)")
    demo.execute("CREATE TEMP TABLE n_b AS SELECT * FROM (VALUES (CAST(1 AS BIGINT), 0.3::DOUBLE)) t(n, x)")
    demo.execute("CREATE TEMP TABLE n_c AS SELECT * FROM (VALUES (CAST(1 AS BIGINT), 0.3000001::DOUBLE)) t(n, x)")
    assert table_hash(demo, "n_a")["md5"] == table_hash(demo, "n_b")["md5"]
    assert table_hash(demo, "n_b")["md5"] != table_hash(demo, "n_c")["md5"]
