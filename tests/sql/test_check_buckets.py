"""sql/checks/buckets_non_negative.sql, written as one single-comparison branch per bucket so that a
scan of the Parquet-stored core.call_costs skips the row groups whose statistics show no negative
value: it must return exactly the calls the plain predicate returns (every bucket of each, once per
call), wherever in the files they are."""

from __future__ import annotations

import duckdb

from warehouse.checks import load_checks

BUCKETS = ("uncached_input_tokens", "cached_input_tokens", "cache_write_tokens", "thinking_tokens", "output_tokens")
PLAIN = ("SELECT request_id, " + ", ".join(BUCKETS) + " FROM core.call_costs WHERE "
         + " OR ".join(f"{b} < 0" for b in BUCKETS))


def _check():
    return next(c for c in load_checks() if c.name == "buckets_non_negative")


def test_the_check_returns_each_offending_call_once_from_parquet_row_groups(tmp_path):
    con = duckdb.connect()
    # 100,000 calls in row groups of 10,000; negatives in three of them, one call with two negative buckets,
    # one with a NULL bucket (not negative)
    con.execute(f"""COPY (SELECT 'r' || i AS request_id, DATE '2026-01-01' + CAST(i // 50000 AS INTEGER) AS day,
                          CASE WHEN i = 15003 THEN -1 ELSE i % 97 END AS uncached_input_tokens,
                          CASE WHEN i = 47001 THEN -5 WHEN i = 47002 THEN NULL ELSE i % 13 END AS cached_input_tokens,
                          0 AS cache_write_tokens,
                          CASE WHEN i IN (88000, 88001) THEN -2 ELSE i % 1000 END AS thinking_tokens,
                          CASE WHEN i = 88001 THEN -3 ELSE i % 500 END AS output_tokens
                   FROM range(100000) t(i))
                   TO '{tmp_path}/calls.parquet' (FORMAT parquet, ROW_GROUP_SIZE 10000)""")
    con.execute("CREATE SCHEMA core")
    con.execute(f"CREATE VIEW core.call_costs AS SELECT * FROM read_parquet('{tmp_path}/calls.parquet')")
    n, _ = _check().run(con)
    got = sorted(con.execute(_check().sql).fetchall())
    assert got == sorted(con.execute(PLAIN).fetchall())
    assert [r[0] for r in got] == ["r15003", "r47001", "r88000", "r88001"] and n == 4
    # no negative anywhere: nothing
    con.execute(f"CREATE OR REPLACE VIEW core.call_costs AS SELECT * REPLACE (abs(uncached_input_tokens) AS uncached_input_tokens, "
                f"abs(cached_input_tokens) AS cached_input_tokens, abs(thinking_tokens) AS thinking_tokens, "
                f"abs(output_tokens) AS output_tokens) FROM read_parquet('{tmp_path}/calls.parquet')")
    assert _check().run(con) == (0, [])
