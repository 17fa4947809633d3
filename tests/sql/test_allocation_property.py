"""Property: for any calls and node hours, the self-hosted cost allocated adds up to the node cost exactly."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.config import Config
from warehouse.db import migrate, write_settings
from warehouse.transform import build, load_tables

# the columns these rows give: stg.requests before issue 14 appended its pricing-modifier columns (NULL here)
REQUEST_COLUMNS_18 = ("file_id, line, ts, request_id, model, provider, node_id, task_id, task_type, team, latency_ms, "
                      "ttft_ms, usage_shape, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                      "thinking_tokens, output_tokens")

MODELS = {m.table: m for m in load_tables()}
START = dt.datetime(2026, 6, 1)


@st.composite
def scenario(draw):
    nodes = draw(st.lists(st.tuples(st.integers(1, 8), st.decimals("0.01", "40", places=2),
                                    st.integers(0, 40), st.integers(1, 60)), min_size=1, max_size=3))
    calls = draw(st.lists(st.tuples(st.integers(0, len(nodes) - 1), st.integers(0, 72 * 60),
                                    st.integers(0, 50_000), st.integers(0, 20_000)), max_size=40))
    return nodes, calls


@pytest.mark.slow  # 40 generated warehouses, ~34 s: `make test`, not `make check`
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_allocated_equals_node_cost(data):
    nodes, calls = data
    con = duckdb.connect()
    migrate(con)
    write_settings(con, Config().settings_row())
    for i, (gpus, price, start_min, hours) in enumerate(nodes):
        a_from = START + dt.timedelta(minutes=start_min * 17)  # not hour-aligned
        con.execute("INSERT INTO stg.nodes (file_id, line, node_id, provider, gpu_type, gpus, model, precision, "
                    "usd_per_gpu_hour, active_from, active_to) VALUES (1, ?, ?, 'p', 'H100', ?, 'm', NULL, ?, ?, ?)",
                    [i + 2, f"n{i}", gpus, price, a_from, a_from + dt.timedelta(hours=hours)])
    for j, (node, minute, prompt, out) in enumerate(calls):
        con.execute(f"INSERT INTO stg.requests ({REQUEST_COLUMNS_18}) VALUES (2, ?, ?, ?, 'm', NULL, ?, ?, NULL, NULL, NULL, NULL, 'openai_chat', ?, 0, 0, 0, ?)",
                    [j, START + dt.timedelta(minutes=minute), f"r{j}", f"n{node}", f"t{j}", prompt, out])
    con.execute(f"INSERT INTO stg.requests ({REQUEST_COLUMNS_18}) VALUES (2, 999, ?, 'anchor', 'm', 'x', NULL, 'ta', NULL, NULL, NULL, NULL, 'openai_chat', 1, 0, 0, 0, 1)",
                [START + dt.timedelta(days=3)])
    for m in load_tables():
        build(con, m)
    paid = con.sql("SELECT node_id, sum(cost_micro_usd) FROM core.node_hours_cost GROUP BY 1 ORDER BY 1").fetchall()
    allocated = con.sql("SELECT node_id, sum(allocated_micro_usd) FROM core.self_hosted_allocation GROUP BY 1 ORDER BY 1").fetchall()
    assert [p for p in paid if p[1]] == [a for a in allocated if a[1]]
    # and the node cost itself is gpus x price x active hours, to the micro-dollar per node-hour
    for i, (gpus, price, _, hours) in enumerate(nodes):
        total = dict(paid).get(f"n{i}", 0)
        exact = gpus * price * hours * 1_000_000
        n_hours = con.sql(f"SELECT count(*) FROM core.node_hours_cost WHERE node_id = 'n{i}'").fetchall()[0][0]
        assert abs(total - exact) <= n_hours  # each node-hour rounds by at most half a micro-dollar
    con.close()
