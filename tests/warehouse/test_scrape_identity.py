"""A Prometheus scrape is the triple (node, time, bytes) (issue 47): an idle node's byte-identical
scrapes at three times are three scrapes, another node's identical bytes are its own scrape, and
the same file landed again stays a no-op.

Worked by hand. Node ``idle-1``: 1 x H100 at 2.00 USD per GPU-hour, active 2026-07-15 10:00-12:00
UTC: 2 paid hours of 1 GPU-hour and 2.00 USD each. It serves nothing; its vLLM scrapes are the
fixture tests/fixtures/metrics/gpu-node-a__2026-11-03T14-05-00Z.prom byte for byte (an idle server's
counters do not move), at 10:10, 10:40 and 11:10. Node ``idle-2`` (same price, 10:00-11:00) is
scraped once, at 10:10, with the same bytes.
* scrapes per hour (marts.node_hours.scrapes: distinct scrape times): idle-1 hour 10:
  10:10 and 10:40 = 2; hour 11: 11:10 = 1; idle-2 hour 10: 1.
* counter deltas: 10:10 -> 10:40 and 10:40 -> 11:10 are 0 (same bytes), each in the hour of the
  scrape that ends it: hour 10 prompt_tokens 0, hour 11 prompt_tokens 0; calls 0 (e2e count delta 0).
  idle-2's one scrape has no delta: NULL, never a made-up 0.
* KV cache usage: the fixture's 0.4375 (vllm:kv_cache_usage_perc) in every hour with a scrape.
Before issue 47 the four files were one content: the first was loaded, the other three skipped
as re-landings (idle-1 kept 10:10 only; idle-2 had no metrics at all).
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal as D
from pathlib import Path

import pytest

from services.config import Config
from tests.conftest import REPO, write_files
from warehouse.db import Build
from warehouse.ingest import Ingestor, file_identity
from warehouse.transform import build_all

VLLM = (REPO / "tests" / "fixtures" / "metrics" / "gpu-node-a__2026-11-03T14-05-00Z.prom").read_text()
NOW = dt.datetime(2026, 8, 1)
M = "telemetry/metrics/"
SCRAPES = {
    M + "idle-1__2026-07-15T10-10-00Z.prom": VLLM,
    M + "idle-1__2026-07-15T10-40-00Z.prom": VLLM,
    M + "idle-1__2026-07-15T11-10-00Z.prom": VLLM,
    M + "idle-2__2026-07-15T10-10-00Z.prom": VLLM,
}
FILES = {
    "catalog/nodes.csv": (
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        "idle-1,nebius,H100,1,qwen3-32b,bf16,2.00,2026-07-15T10:00:00Z,2026-07-15T12:00:00Z\n"
        "idle-2,nebius,H100,1,qwen3-32b,bf16,2.00,2026-07-15T10:00:00Z,2026-07-15T11:00:00Z\n"),
    **SCRAPES,
}


@pytest.fixture
def con(tmp_path: Path):
    landing = write_files(tmp_path / "landing", FILES)
    b = Build(tmp_path / "wh" / "thinktax.duckdb", "s1")
    b.start(Config().settings_row())
    c = b.connect()
    Ingestor(c, landing, now=NOW).ingest()
    build_all(c)
    yield c, landing
    c.close()


def test_identical_scrapes_at_other_times_or_nodes_are_all_kept(con):
    con, _landing = con
    files = con.execute("SELECT file, status, rows_in, rows_loaded, rows_duplicate, rows_quarantined "
                        "FROM ops.ingested_files WHERE folder = 'telemetry/metrics' ORDER BY file").fetchall()
    assert [f[0] for f in files] == sorted(SCRAPES)
    assert {f[1] for f in files} == {"loaded"}
    # each file is the same 93 sample lines (grep -vc '^#' on the fixture): the same counts four times
    assert len({f[2:] for f in files}) == 1 and files[0][2] == 93
    for _file, _s, rows_in, loaded, dup, quarantined in files:
        assert rows_in == loaded + dup + quarantined
    times = con.execute("SELECT node_id, strftime(scrape_ts, '%H:%M'), count(*) FROM stg.metric_samples "
                        "GROUP BY ALL ORDER BY ALL").fetchall()
    loaded = files[0][3]
    assert times == [("idle-1", "10:10", loaded), ("idle-1", "10:40", loaded), ("idle-1", "11:10", loaded),
                     ("idle-2", "10:10", loaded)]


def test_the_idle_node_hours_worked_by_hand(con):
    con, _landing = con
    rows = con.execute("""
        SELECT node_id, strftime(hour, '%H:%M'), scrapes, gpu_hours, cost_usd, calls, prompt_tokens,
               generation_tokens, kv_cache_usage_mean
        FROM marts.node_hours ORDER BY node_id, hour""").fetchall()
    assert rows == [
        ("idle-1", "10:00", 2, 1, D("2.000000"), 0, 0, 0, 0.4375),
        ("idle-1", "11:00", 1, 1, D("2.000000"), 0, 0, 0, 0.4375),
        ("idle-2", "10:00", 1, 1, D("2.000000"), None, None, None, 0.4375),
    ]
    scrapes = con.execute("SELECT node_id, strftime(date_trunc('hour', scrape_ts), '%H'), count(DISTINCT scrape_ts) "
                          "FROM stg.metric_samples GROUP BY ALL ORDER BY ALL").fetchall()
    assert scrapes == [("idle-1", "10", 2), ("idle-1", "11", 1), ("idle-2", "10", 1)]


def test_the_same_scrape_landed_again_is_a_no_op(con):
    con, landing = con
    first = M + "idle-1__2026-07-15T10-10-00Z.prom"
    before = con.execute("SELECT count(*) FROM stg.metric_samples").fetchone()
    # the same file touched (new mtime: read and hashed again), and the same scrape under another folder
    os.utime(landing / first, ns=(1, 1))
    write_files(landing, {M + "copy/idle-1__2026-07-15T10-10-00Z.prom": VLLM})
    summary = Ingestor(con, landing, now=NOW).ingest()
    assert [f.file for f in summary.new_files] == []
    assert con.execute("SELECT count(*) FROM stg.metric_samples").fetchone() == before
    assert con.execute("SELECT count(*) FROM ops.ingested_files").fetchone() == (len(FILES),)


def test_identity_is_the_bytes_for_any_other_file():
    """Only a scrape named <node>__<time> hashes its node and time; every other file is sha256 of its bytes
    (the digest of b'abc' from FIPS 180-2, appendix B.1)."""
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert file_identity("telemetry/requests/a.jsonl", b"abc") == abc
    assert file_identity("telemetry/metrics/no-time.prom", b"abc") == abc
    a = file_identity(M + "n1__2026-07-15T10-10-00Z.prom", b"abc")
    assert a != abc
    assert file_identity(M + "sub/n1__2026-07-15T10:10:00Z.prom", b"abc") == a  # the same node and instant
    assert file_identity(M + "n1__2026-07-15T10-11-00Z.prom", b"abc") != a
    assert file_identity(M + "n2__2026-07-15T10-10-00Z.prom", b"abc") != a
