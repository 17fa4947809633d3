"""`make bench` at a tiny size: it runs end to end, prints its table, and its last line parses.

Speed is never asserted (shared, noisy machine); what is checked is that every phase ran on
the same data and the generator writes what the contract says gateways write.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import duckdb

from synthetic import benchgen
from tools import bench

LAST_LINE = re.compile(r"^floor_ratio=(\d+\.\d+) incremental_growth=(\d+\.\d+)$")


def test_bench_smoke_prints_table_and_contract_last_line(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    work = tmp_path / "work"
    assert bench.main(["--smoke", "--calls-per-day", "1500", "--days", "4", "--workdir", str(work), "--keep", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()

    m = LAST_LINE.match(out[-1])
    assert m, out[-1]
    assert float(m[1]) > 0 and float(m[2]) > 0

    rows = {re.split(r"\s{2,}", line.strip())[0]: line for line in out if line.strip()}
    for phase in ("ingest: floor (read_json)", "ingest: thinktax (Ingestor)", "marts: floor (scan Parquet)",
                  "marts: thinktax (build_all)", "nightly 1x total", "nightly 4x total"):
        assert phase in rows, phase
    # 4 days x 1,500 calls were read by thinktax and by the floor alike
    assert " 6,000 " in rows["ingest: thinktax (Ingestor)"]
    assert " 6,000 " in rows["ingest: floor (read_json)"]
    # issue 43's floors: the same 6,000 lines read with the parser's own struct, and 6,000 calls priced once
    assert " 6,000 " in rows["ingest: floor (read_json, thinktax's own columns)"]
    priced = rows["every call priced once (one CTAS: calls x price versions)"]
    assert " 6,000 " in priced
    # the nightly run ingests the new day (1,500 calls), whatever the history
    assert " 1,500 " in rows["nightly 1x total"] and " 1,500 " in rows["nightly 4x total"]
    assert "all pass" in rows["checks"]
    assert any("0 unpriced calls" in line for line in out)
    # issue 25: the smoke's 20,000-line CUR, read by read_csv and ingested (200 Bedrock lines, the rest skipped)
    assert " 20,000 " in rows["cloud CUR: floor (read_csv, all columns)"]
    assert "200 loaded, 19,800 skipped, 0 quarantined" in rows["cloud CUR: thinktax (Ingestor)"]
    assert any(re.fullmatch(r"target: cloud CUR ingest rate vs read_csv >= 0\.5x: [0-9.]+x, (met|NOT met) "
                            r"\(peak resident memory [0-9,]+ MiB, 20,000 lines\)", line) for line in out), out
    # issue 26's targets, each with its limit and met / NOT met
    targets = [line for line in out if line.startswith("target: ")]
    for name in ("ingest vs the read_json floor <= 1.5x", "full rebuild vs one per-call table written <= 1.6x",
                 "nightly 4x / 1x history <= 1.1x", "at 1x), 4x / 1x <= 1.1x",
                 "peak resident memory of any thinktax phase", "full rebuild vs every call priced once <= 2x",
                 "ingest vs read_json of thinktax's own columns <= 1.3x"):
        mine = [t for t in targets if name in t]
        assert len(mine) == 1 and re.search(r": [0-9.,]+( MiB|x), (met|NOT met)$", mine[0]), (name, targets)
    # the memory line names the floors' own peak and the build's limit (3GB: DuckDB's GB is 10^9 bytes)
    assert any(re.search(r"\(the floors' own: [0-9,]+ MiB\) <= 2861 MiB", t) for t in targets), targets

    # the published 4x warehouse holds 5 days (4 of history + the new one); 1x holds 1 + 1
    with duckdb.connect(str(work / "wh" / "full.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT CAST(ts AS DATE)) FROM stg.requests").fetchall() == [(7500, 5)]
        # the pricing floor priced every API call of the history (the self-hosted ones have a node, no sheet price)
        api = con.execute("SELECT count(*) FROM stg.requests WHERE node_id IS NULL AND CAST(ts AS DATE) < "
                          "(SELECT max(CAST(ts AS DATE)) FROM stg.requests)").fetchall()[0][0]
    assert f" {api:,} calls with a price" in priced, (api, priced)
    with duckdb.connect(str(work / "wh" / "history1x.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT CAST(ts AS DATE)) FROM stg.requests").fetchall() == [(3000, 2)]

    # issue 26 item 1: the per-call tables of the published builds are views over Parquet parts,
    # every row of which the views give back; the DuckDB file a nightly run copies holds the rest
    with duckdb.connect(str(work / "wh" / "full.duckdb"), read_only=True) as con:
        listed = dict(con.execute("SELECT table_name, sum(row_count) FROM ops.part_files WHERE retired_by IS NULL "
                                  "GROUP BY 1").fetchall())
        assert set(listed) == {"core.calls", "core.call_costs", "core.call_kv", "core.self_hosted_allocation",
                               "core.self_hosted_usage_cost", "core.tasks", "marts.task_costs", "stg.requests"}
        for table, n in listed.items():
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == n, table
        assert listed["core.calls"] == listed["stg.requests"] == 7500
        # the calls as ingested too: one file by the bench's full ingest, one by the nightly run on top of it
        assert con.execute("SELECT count(*), count(DISTINCT build_id) FROM ops.part_files "
                           "WHERE table_name = 'stg.requests'").fetchall() == [(2, 2)]
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'requests__pending'"
                           ).fetchall() == [(0,)]  # written out and dropped
    assert (work / "wh" / "full.parts" / "core.call_costs").is_dir()


def test_generator_writes_the_three_usage_shapes_with_consistent_buckets(tmp_path: Path):
    spec = benchgen.GenSpec(calls_per_day=3000, days=1, lines_per_file=1000)
    out = benchgen.write_day(tmp_path / "landing", spec, 0, tmp_path / "parquet")
    assert out.calls == 3000 and len(out.jsonl) == 3 and len(out.parquet) == 3
    lines = [json.loads(line) for f in out.jsonl for line in f.read_text().splitlines()]
    assert len(lines) == 3000
    assert len({r["request_id"] for r in lines}) == 3000
    ts = [r["ts"] for r in lines[:1000]]
    assert ts == sorted(ts) and all(t.startswith("2026-01-05T") and t.endswith("Z") for t in ts)

    shapes = {"chat": 0, "responses": 0, "anthropic": 0}
    flat = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'parquet'}/**/*.parquet')").fetchall()
    cols = [c for c in benchgen.PARQUET_COLUMNS]
    by_id = {row[cols.index("request_id")]: dict(zip(cols, row)) for row in flat}
    for r in lines:
        u, b = r["usage"], by_id[r["request_id"]]
        if "cache_read_input_tokens" in u:  # Anthropic: input excludes cache, output includes thinking
            shapes["anthropic"] += 1
            assert u["input_tokens"] == b["uncached_input_tokens"]
            assert u["cache_read_input_tokens"] == b["cached_input_tokens"]
            assert u["cache_creation_input_tokens"] == b["cache_write_tokens"]
            assert u["output_tokens"] == b["thinking_tokens"] + b["output_tokens"]
        elif "prompt_tokens" in u:  # Chat: cached inside prompt, reasoning inside completion
            shapes["chat"] += 1
            assert u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"] == b["uncached_input_tokens"]
            assert u["completion_tokens_details"]["reasoning_tokens"] == b["thinking_tokens"]
            assert u["completion_tokens"] - b["thinking_tokens"] == b["output_tokens"]
        else:  # Responses: same nesting, other names
            shapes["responses"] += 1
            assert u["input_tokens"] - u["input_tokens_details"]["cached_tokens"] == b["uncached_input_tokens"]
            assert u["output_tokens_details"]["reasoning_tokens"] == b["thinking_tokens"]
            assert u["output_tokens"] - b["thinking_tokens"] == b["output_tokens"]
        assert ("node_id" in r) == (b["node_id"] is not None)
        assert (r.get("team") or r["metadata"]["user_api_key_team_alias"]) == b["team"]
    assert all(n > 100 for n in shapes.values()), shapes


def test_generator_is_deterministic_and_gzip_holds_the_same_lines(tmp_path: Path):
    plain = benchgen.GenSpec(calls_per_day=500, days=1)
    packed = benchgen.GenSpec(calls_per_day=500, days=1, gzip=True)
    a = benchgen.write_day(tmp_path / "a", plain, 0).jsonl[0].read_bytes()
    b = benchgen.write_day(tmp_path / "b", plain, 0).jsonl[0].read_bytes()
    c = gzip.decompress(benchgen.write_day(tmp_path / "c", packed, 0).jsonl[0].read_bytes())
    assert a == b == c
    assert a.count(b"\n") == 500


def test_bench_smoke_on_gzip_jsonl(tmp_path: Path, capsys, monkeypatch):
    # the large sizes write .jsonl.gz (--gzip auto): thinktax and the read_json floor read the same .gz files
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert bench.main(["--smoke", "--calls-per-day", "500", "--gzip", "yes", "--workdir", str(tmp_path / "w"), "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert LAST_LINE.match(out[-1]), out[-1]
    rows = {re.split(r"\s{2,}", line.strip())[0]: line for line in out if line.strip()}
    assert "(gzip)" in rows["generate JSONL + Parquet"]
    assert " 2,000 " in rows["ingest: thinktax (Ingestor)"] and " 2,000 " in rows["ingest: floor (read_json)"]
    assert not (tmp_path / "w").exists()  # removed without --keep
