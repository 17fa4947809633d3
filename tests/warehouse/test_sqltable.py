"""The SQL table layer: structured headers, dependencies from the syntax tree, Spark rendering rules."""

from __future__ import annotations

import pytest

from warehouse import sqltable
from warehouse.spark import render
from warehouse.sqltable import HeaderError, load_tables, parse_header

GOOD = "-- What it is.\n-- @kind: incremental_by_day\n-- @grain: one row per call\n--   (request_id)\n-- @closure: task_id\nSELECT 1\n"


def test_header_parsed_with_continuation_lines():
    h = parse_header(GOOD, "sql/core/x.sql")
    assert (h.kind, h.grain, h.closure, h.halo) == ("incremental_by_day", "one row per call (request_id)", "task_id", False)


@pytest.mark.parametrize(("text", "message"), [
    ("-- just prose\nSELECT 1", "sql/core/x.sql: no structured header"),
    ("-- @kind: table\n-- @grain: g\nSELECT 1", "@kind 'table' is not one of"),
    ("-- @kind: full\nSELECT 1", "no '-- @grain:' line"),
    ("-- @kind: full\n-- @grain: g\n-- @halo: true\nSELECT 1", "@halo is for @kind incremental_by_day"),
    ("-- @kind: full\n-- @grain: g\n-- @closure: task_id\nSELECT 1", "@closure is for incremental models"),
    ("-- @kind: incremental_by_day\n-- @grain: g\n-- @closure: team\nSELECT 1", "@closure 'team' is not one of"),
    ("-- @kind: full\n-- @grain: g\n-- @owner: me\nSELECT 1", "sql/core/x.sql:3: unknown header key '@owner'"),
    ("-- @kind: full\n-- @kind: view\n-- @grain: g\nSELECT 1", "given twice"),
])
def test_bad_headers_fail_with_the_file_named(text, message):
    with pytest.raises(HeaderError, match=message.replace("(", r"\(").replace("'", "'")):
        parse_header(text, "sql/core/x.sql")


def test_every_model_has_a_valid_header_and_a_grain():
    models = load_tables()
    assert len(models) >= 26
    kinds = {m.table: m.kind for m in models}
    # issue 17: calls before costs -- core.calls is the first per-call table, marts.cost_per_task
    # the compatibility view of marts.task_cost_breakdown (the task's attributes named task_*)
    assert kinds["core.calls"] == "incremental_by_day" and kinds["core.tasks"] == "incremental_by_day"
    assert kinds["marts.cost_per_task"] == "view"
    assert kinds["core.call_profiles"] == "incremental_by_month"
    assert {m.table for m in models if m.halo} == {"core.self_hosted_usage_cost", "marts.node_hours", "marts.peak_concurrency"}
    assert all(m.grain for m in models)


def test_dependencies_come_from_the_syntax_tree_not_string_literals():
    deps = {m.table: m.deps for m in load_tables()}
    # the per-call chain runs one way: calls -> tasks / self_hosted_allocation -> call_costs -> marts
    assert deps["core.calls"] == {"stg.requests", "ops.settings", "core.dim_nodes", "core.reported_models"}
    # what a logged name stands for reads the calls and catalog/endpoints.csv, never a price sheet, so a new
    # sheet does not rebuild core.calls (issue 24)
    assert deps["core.reported_models"] == {"stg.requests", "stg.endpoints"}
    assert deps["core.tasks"] == {"core.calls"}
    assert deps["core.self_hosted_allocation"] == {"core.calls", "core.node_hours_cost"}
    assert "core.calls" in deps["core.call_costs"] and "stg.requests" not in deps["core.call_costs"]
    assert deps["marts.task_costs"] == {"core.tasks", "core.call_costs", "ops.settings"}
    assert deps["marts.cost_per_task"] == {"marts.task_cost_breakdown"}
    # focus_costs writes 'stg.focus_costs' as a string literal (x_Source); it reads core.billed_lines
    assert "stg.focus_costs" not in deps["marts.focus_costs"]
    assert "core.billed_lines" in deps["marts.focus_costs"]
    # billed_lines reads it as a table, and its CTE names (openai, focus, lines, ...) are not tables
    assert deps["core.billed_lines"] == {"stg.openai_costs", "stg.anthropic_costs", "stg.focus_costs"}
    # macros are functions: core.model_key(...) is no dependency on a table core.model_key
    assert not any("model_key" in d for ds in deps.values() for d in ds)


def test_a_model_without_the_header_fails_at_load(monkeypatch):
    with pytest.raises(HeaderError, match=r"sql/marts/new\.sql: no structured header"):
        sqltable._table("marts", "new", "-- grain: old style\nSELECT 1 AS x", "sql/marts/new.sql")


def test_description_keeps_the_prose_with_the_grain_after_the_first_sentence():
    m = next(m for m in load_tables() if m.table == "marts.cost_per_task")
    assert m.description.startswith("Cost per task, by day, team, task type, model, serving and tier.\ngrain: day x team")
    assert "@kind" not in m.description


# -- Spark rendering rules (no Spark needed) ------------------------------------------------------

def _spark(sql: str, schema: dict | None = None) -> str:
    return render.to_spark(sql, path="t.sql", schema=schema)


def test_macros_are_inlined_from_the_migrations():
    out = _spark("SELECT core.model_key(m) AS k, core.in_build_days(day) AS b FROM t")
    assert "model_key" not in out.lower() and "REGEXP_REPLACE(REGEXP_REPLACE(LOWER(TRIM((m)))" in out
    assert "(TRUE) AS b" in out


def test_a_macro_called_inside_a_macro_is_inlined_too():
    # core.cloud_model_key (migration 160) calls core.model_key and core.bedrock_base_model: Spark
    # has no SQL macros, so the rendered text must name none of them (the CI failure of stop 29:
    # UNRESOLVED_ROUTINE core.model_key in marts.bill_reconciliation on Spark)
    out = _spark("SELECT core.cloud_model_key(m) AS k FROM t")
    assert "core." not in out.lower() and "model_key" not in out.lower(), out
    # bedrock_base_model's prefix rule, inside model_key's lower(trim(...)), inside cloud_model_key
    assert "'^(us|eu|apac|jp|au|global|us-gov|ca|sa|me|mx)[.]'" in out and "LOWER(TRIM((m)))" in out


def test_no_rendered_model_calls_a_core_macro():
    import re

    for m in load_tables():
        out = re.sub(r"/\*.*?\*/", "", render.to_spark(m.sql, path=m.path), flags=re.DOTALL)  # not the comments
        assert not re.search(r"\bcore\.\w+\s*\(", out, re.IGNORECASE), (m.table, out[:200])


def test_hugeint_becomes_decimal_38_0():
    assert "CAST(x AS DECIMAL(38, 0))" in _spark("SELECT CAST(x AS HUGEINT) AS y FROM t")


def test_materialized_cte_hint_is_dropped_for_spark():
    out = _spark("WITH e AS MATERIALIZED (SELECT 1 AS a), f AS NOT MATERIALIZED (SELECT 2 AS b) "
                 "SELECT * FROM e CROSS JOIN f")
    assert "MATERIALIZED" not in out.upper(), out
    assert "WITH e AS (SELECT 1 AS a), f AS (SELECT 2 AS b)" in out, out


def test_case_insensitive_regex_flag_is_kept():
    assert "RLIKE '(?i)^a'" in _spark("SELECT regexp_matches(x, '^a', 'i') AS y FROM t")
    # regexp_full_match has no Spark function: an anchored RLIKE (core.call_costs uses it for above_<N>k_tokens)
    assert "RLIKE '^(?:above_[0-9]+k_tokens)$'" in _spark("SELECT regexp_full_match(k, 'above_[0-9]+k_tokens') AS y FROM t")
    assert "REGEXP_EXTRACT(x, '(?i)^(.+)-input$'" in _spark("SELECT regexp_extract(x, '^(.+)-input$', 1, 'i') AS y FROM t")
    with pytest.raises(render.RenderError, match="t.sql: regexp_matches option 'm'"):
        _spark("SELECT regexp_matches(x, '^a', 'm') AS y FROM t")


def test_ordered_list_aggregate_is_sorted_collect_list_and_grouped_as_an_aggregate():
    # core.call_costs: list(struct_pack(...) ORDER BY n DESC) under GROUP BY ALL
    out = _spark("SELECT a, list(struct_pack(n := x, kind := k) ORDER BY x DESC) AS t FROM z GROUP BY ALL")
    assert "REVERSE(ARRAY_SORT(COLLECT_LIST(STRUCT(x AS k, STRUCT(x AS n, k AS kind) AS v))))" in out
    assert out.endswith("GROUP BY a")


def test_epoch_us_make_timestamp_len_list_json_type():
    out = _spark("SELECT epoch_us(ts) a, make_timestamp(us) b, len(list_filter(l, x -> x > 1)) c, "
                 "list_sort(list_distinct(list(m))) d, json_type(cfg, '$.k') e FROM t")
    assert "UNIX_MICROS(CAST(ts AS TIMESTAMP_LTZ))" in out
    assert "CAST(TIMESTAMP_MICROS(us) AS TIMESTAMP_NTZ)" in out
    assert "SIZE(FILTER(l, x -> x > 1))" in out
    assert "ARRAY_DISTINCT(COLLECT_LIST(m))" in out
    assert "WHEN SUBSTRING(LTRIM(GET_JSON_OBJECT(cfg, '$.k')), 1, 1) = '[' THEN 'ARRAY'" in out


def test_nulls_sort_last_as_in_duckdb():
    assert "ORDER BY a NULLS LAST" in _spark("SELECT a FROM t ORDER BY a")


def test_group_by_all_lists_the_keys_without_constants():
    out = _spark("SELECT day, 0 AS calls, 'x' AS src, sum(c) AS s FROM t GROUP BY ALL")
    assert out.endswith("GROUP BY day")


SCHEMA = {"stg": {"a": {"k": "int", "x": "int", "y": "string"}, "b": {"k": "int", "z": "double"}}}


def test_star_exclude_and_union_by_name_are_expanded_with_a_schema():
    out = _spark("WITH u AS (SELECT * EXCLUDE (y) FROM stg.a UNION ALL BY NAME SELECT * FROM stg.b) SELECT * FROM u", SCHEMA)
    # the union lists k, x, z on both sides, NULL where a side lacks one
    assert "SELECT _bn.k AS k, _bn.x AS x, NULL AS z FROM (SELECT a.k AS k, a.x AS x FROM stg.a AS a)" in out
    assert "SELECT _bn.k AS k, NULL AS x, _bn.z AS z FROM (SELECT b.k AS k, b.z AS z FROM stg.b AS b)" in out
    assert "EXCLUDE" not in out and "BY NAME" not in out
    assert out.split(" FROM u")[0].endswith("u.k AS k, u.x AS x, u.z AS z")


def test_qualify_over_star_exclude_leaves_no_helper_column():
    out = _spark("SELECT * EXCLUDE (x) FROM stg.a QUALIFY row_number() OVER (PARTITION BY k ORDER BY x) = 1", SCHEMA)
    outer = out.split(" FROM (")[0]
    assert outer == "SELECT k, y" or "_w" not in outer, out


def test_every_model_renders_for_spark():
    from warehouse.spark.render import load_spark_tables

    models = load_spark_tables()  # raises RenderError naming the file and construct otherwise
    assert {m.table for m in models} == {m.table for m in load_tables()}


def test_model_refs_are_cached_by_text_and_equal_a_fresh_parse(tmp_path, monkeypatch):
    """The refs cache (a JSON file, so a process need not re-parse ~30 files with sqlglot) gives
    exactly what a fresh parse gives, and a changed text is parsed again."""
    monkeypatch.setenv("THINKTAX_CACHE_DIR", str(tmp_path))
    sqltable._load.cache_clear()
    try:
        first = {m.table: m.deps for m in sqltable._load()}  # parses, writes the cache
        cache_file = tmp_path / "sql_table_refs.json"
        assert cache_file.exists()
        sqltable._load.cache_clear()
        second = {m.table: m.deps for m in sqltable._load()}  # read from the cache
    finally:
        sqltable._load.cache_clear()
    assert second == first
    for m in load_tables():  # each entry is what sqlglot finds in the file now
        fresh = sqltable.table_refs(sqltable.parse(m.sql, m.path)) - {m.table}
        assert first[m.table] == fresh, m.table
    # an entry is used only for the exact text it was made from
    sql = "-- @kind: full\n-- @grain: g\nSELECT * FROM stg.requests"
    cached: dict[str, list[str]] = {}
    assert sqltable.sql_refs(sql, "x.sql", cached) == {"stg.requests"}
    (key,) = cached
    cached[key] = ["core.poisoned"]  # a stored answer is trusted for the same text ...
    assert sqltable.sql_refs(sql, "x.sql", cached) == {"core.poisoned"}
    changed = sql.replace("stg.requests", "stg.llm_prices")  # ... and never for another
    assert sqltable.sql_refs(changed, "x.sql", cached) == {"stg.llm_prices"}


def test_division_is_duckdbs_double_division():
    # DuckDB: 91.270935 / 6 is DOUBLE 15.211822499999998 (usd6 -> 15.211822); Spark's exact DECIMAL
    # division gives 15.2118225 (-> 15.211823): the rendered division casts the dividend to DOUBLE
    out = _spark("SELECT spent_usd / days AS burn, INTERVAL 1 HOUR / 2 AS half FROM t")
    assert "CAST(spent_usd AS DOUBLE) / days AS burn" in out
    assert "INTERVAL '1' HOUR / 2 AS half" in out  # an interval operand is left alone
    # to_microseconds' own division stays exact (a day-time interval of whole micro-seconds)
    assert "CAST(CAST(n AS DECIMAL(38, 6)) / 1000000 AS DECIMAL(18, 6))" in _spark("SELECT to_microseconds(n) FROM t")


def test_epoch_keeps_the_micro_seconds():
    # DuckDB's epoch(ts) is a DOUBLE with fractions; sqlglot's UNIX_TIMESTAMP is whole seconds in Spark
    out = _spark("SELECT epoch(b) - epoch(a) AS s FROM t")
    assert "UNIX_TIMESTAMP" not in out
    assert "UNIX_MICROS(CAST(b AS TIMESTAMP_LTZ)) AS DOUBLE) / CAST(1000000.0 AS DOUBLE)" in out


def test_a_model_spark_cannot_run_fails_at_load_naming_file_and_construct(monkeypatch):
    """load_spark_tables renders every model once at load: a construct without a Spark rendering
    stops it there, naming the model's file and the construct (not mid-build)."""
    good = load_tables()
    bad = sqltable._table("marts", "bad_regex", "-- Bad.\n-- @kind: full\n-- @grain: one row\n"
                          "SELECT regexp_matches(model, 'x', 'm') AS hit FROM core.call_costs", "sql/marts/bad_regex.sql")
    monkeypatch.setattr(sqltable, "load_tables", lambda engine="duckdb": (*good, bad))
    render.load_spark_tables.cache_clear()
    try:
        with pytest.raises(render.RenderError, match=r"sql/marts/bad_regex\.sql: regexp_matches option 'm'"):
            render.load_spark_tables()
    finally:
        render.load_spark_tables.cache_clear()


def test_the_duckdb_path_does_not_import_pyspark():
    import subprocess
    import sys

    code = ("import sys\nfrom thinktax.cli import main\nimport warehouse.transform, warehouse.sqltable, thinktax.commands.run, "
            "thinktax.commands.sql\nwarehouse.sqltable.load_tables()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_star_keeps_the_spelling_of_the_columns_read():
    # `thinktax sql --engine spark "SELECT * EXCLUDE (build_id) FROM marts.focus_costs"`: FOCUS names keep their case
    out = _spark("SELECT * EXCLUDE (build_id) FROM marts.f", {"marts": {"f": {"BilledCost": "decimal(18,6)", "build_id": "string"}}})
    assert out == "SELECT f.BilledCost AS BilledCost FROM marts.f AS f"


def test_the_old_names_still_resolve_with_a_warning():
    """issue 27: SqlModel -> SqlTable, load_models -> load_tables, warehouse.sqlmodel -> sqltable;
    the old names stay as deprecated aliases of the very same objects."""
    import importlib
    import sys

    import warehouse.transform as transform

    sys.modules.pop("warehouse.sqlmodel", None)
    with pytest.warns(DeprecationWarning, match="import warehouse.sqltable"):
        old = importlib.import_module("warehouse.sqlmodel")
    assert old.SqlModel is sqltable.SqlTable
    assert old.load_models() == sqltable.load_tables()
    with pytest.warns(DeprecationWarning, match="use SqlTable"):
        assert transform.SqlModel is sqltable.SqlTable
    with pytest.warns(DeprecationWarning, match="use load_tables"):
        assert transform.load_models is sqltable.load_tables
    with pytest.raises(AttributeError):
        transform.NoSuchName  # noqa: B018
