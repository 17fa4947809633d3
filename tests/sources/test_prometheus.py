"""Prometheus scrapes -> stg.metric_samples, and counters -> core.metric_deltas."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import duckdb
import pytest

from sources.base import ParseContext, SourceFormatError
from sources.prometheus import CANONICAL, SPECS, parse, parse_scrape_name, sniff

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "data" / "real" / "telemetry"
FIX = ROOT / "tests" / "fixtures" / "metrics"
CTX = ParseContext(ingested_at=dt.datetime(2026, 11, 4))
SGLANG = REAL / "sglang_metrics_sample_llama31_8b.prom"
VLLM_V1 = FIX / "gpu-node-a__2026-11-03T14-05-00Z.prom"
VLLM_OLD = FIX / "gpu-node-b__2026-11-03T14-05-00Z.prom"
DCGM = FIX / "gpu-node-a__2026-11-03T14-05-00Z.dcgm.prom"
T0 = dt.datetime(2026, 11, 3, 14, 5)


def rows_of(path: Path, name: str | None = None):
    parsed = parse(path.read_bytes(), name or f"telemetry/metrics/{path.name}", CTX)
    return parsed, parsed.rows.to_pylist()


def one(rows, metric, **labels):
    hits = [r for r in rows if r["metric"] == metric
            and all(json.loads(r["labels"]).get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, (metric, labels, hits)
    return hits[0]


def assert_lines_point_at_samples(path: Path, rows) -> None:
    """Every row's `line` is the file line that holds that sample."""
    lines = path.read_text().split("\n")
    for r in rows:
        assert lines[r["line"] - 1].startswith(r["source_metric"]), r


# -- the real SGLang sample --------------------------------------------------------------------

def test_real_sglang_sample_parses_with_values_read_off_the_file():
    parsed, rows = rows_of(SGLANG, "telemetry/metrics/sglang-a__2025-01-15T10-00-00Z.prom")
    assert parsed.table == "stg.metric_samples" and parsed.format == "prometheus_text"
    assert parsed.rejects == []
    # 91 sample lines in the file (115 lines minus 24 # HELP/# TYPE lines)
    assert parsed.rows.num_rows == 91 and parsed.meta["samples"] == 91
    assert_lines_point_at_samples(SGLANG, rows)
    assert {r["engine"] for r in rows} == {"sglang"}
    assert {r["node_id"] for r in rows} == {"sglang-a"}
    assert {r["scrape_ts"] for r in rows} == {dt.datetime(2025, 1, 15, 10, 0)}
    model = "meta-llama/Llama-3.1-8B-Instruct"
    p = one(rows, "prompt_tokens_total")
    assert (p["value"], p["line"], p["kind"], p["model_name"]) == (8128902.0, 3, "counter", model)
    assert one(rows, "generation_tokens_total")["value"] == 7557572.0
    assert one(rows, "kv_cache_usage")["value"] == 0.28  # sglang:token_usage
    assert one(rows, "prefix_cache_hit_rate")["value"] == 0.007507552643049313
    assert one(rows, "requests_running")["value"] == 162.0
    assert one(rows, "requests_waiting")["value"] == 2826.0  # sglang:num_queue_reqs
    assert one(rows, "kv_cache_used_tokens")["value"] == 123859.0
    ttft_count = one(rows, "time_to_first_token_seconds_count")
    assert (ttft_count["value"], ttft_count["kind"]) == (11008.0, "histogram_count")
    assert one(rows, "time_to_first_token_seconds_bucket", le="2.5")["value"] == 140.0
    # func_latency_seconds (label name="generate_request") has no canonical name: kept, unmapped
    unmapped = [r for r in rows if not r["mapped"]]
    assert len(unmapped) == parsed.meta["unmapped_kept"] == 21  # 19 buckets + _sum + _count
    assert {r["source_metric"] for r in unmapped} == {
        "sglang:func_latency_seconds_bucket", "sglang:func_latency_seconds_sum", "sglang:func_latency_seconds_count"}


def test_file_without_node_or_time_is_unreadable_naming_the_field():
    with pytest.raises(SourceFormatError) as err:
        parse(SGLANG.read_bytes(), "telemetry/metrics/sglang_metrics_sample_llama31_8b.prom", CTX)
    assert err.value.field == "node_id"
    text = b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 2\n'
    with pytest.raises(SourceFormatError) as err:
        parse(text, "telemetry/metrics/gpu-x__no-time.prom", CTX)
    assert err.value.field == "scrape_ts"


def test_node_falls_back_to_instance_label():
    text = (b'# TYPE vllm:num_requests_running gauge\n'
            b'vllm:num_requests_running{instance="10.0.0.7:8000",model_name="m"} 2 1793714700000\n')
    parsed = parse(text, "telemetry/metrics/scrape.prom", CTX)
    row = parsed.rows.to_pylist()[0]
    assert row["node_id"] == "10.0.0.7_8000"  # host:port -> host_port, as thinktax scrape names it
    assert row["scrape_ts"] == dt.datetime(2026, 11, 3, 14, 5)  # 1793714700000 ms since the epoch
    assert parsed.meta["node_from"] == "label:instance"


# -- vLLM: V1 names and the older names land on the same columns ---------------------------------

def test_vllm_v1_and_old_names_map_to_the_same_canonical_columns():
    new, new_rows = rows_of(VLLM_V1)
    old, old_rows = rows_of(VLLM_OLD)
    assert_lines_point_at_samples(VLLM_V1, new_rows)
    assert_lines_point_at_samples(VLLM_OLD, old_rows)

    def canonical(rows):
        return {r["metric"]: r["value"] for r in rows
                if r["mapped"] and r["kind"] != "histogram_bucket" and r["metric"] != "requests_finished_total"}

    assert canonical(new_rows) == canonical(old_rows)
    c = canonical(new_rows)
    assert c["kv_cache_usage"] == 0.4375
    assert c["prompt_tokens_total"] == 48213377.0
    assert c["generation_tokens_total"] == 61502118.0
    assert c["prefix_cache_queried_tokens_total"] == 48213377.0
    assert c["prefix_cache_hit_tokens_total"] == 20971520.0
    assert (c["requests_running"], c["requests_waiting"]) == (12.0, 3.0)
    assert c["e2e_request_latency_seconds_count"] == 10800.0
    assert c["e2e_request_latency_seconds_sum"] == 448200.0  # mean e2e latency 448200 / 10800 = 41.5 s
    assert c["time_to_first_token_seconds_sum"] == 6701.58

    # the old scrape reaches kv_cache_usage through the deprecated name ...
    assert one(old_rows, "kv_cache_usage")["source_metric"] == "vllm:gpu_cache_usage_perc"
    assert one(old_rows, "prefix_cache_hit_tokens_total")["source_metric"] == "vllm:gpu_prefix_cache_hits_total"
    # ... the V1 scrape exposes both names (as vLLM 0.9-0.10 do) and keeps only the current one
    assert one(new_rows, "kv_cache_usage")["source_metric"] == "vllm:kv_cache_usage_perc"
    assert one(new_rows, "prefix_cache_queried_tokens_total")["source_metric"] == "vllm:prefix_cache_queries_total"
    assert new.meta["dropped_deprecated_alias"] == 3 and old.meta["dropped_deprecated_alias"] == 0

    for rows in (new_rows, old_rows):
        assert one(rows, "requests_finished_total", finished_reason="stop")["value"] == 10412.0
        assert one(rows, "requests_finished_total", finished_reason="length")["value"] == 388.0
        info = one(rows, "cache_config_info")
        labels = json.loads(info["labels"])
        # KV capacity = num_gpu_blocks x block_size = 18432 x 16 = 294,912 tokens
        assert int(labels["num_gpu_blocks"]) * int(labels["block_size"]) == 294912
        assert info["model_name"] is None  # cache_config_info carries no model_name label
        assert {r["model_name"] for r in rows if r["metric"] == "prompt_tokens_total"} == {"Qwen/Qwen3-32B"}
    # counters are typed from # TYPE, the _created stamps are kept unmapped, python_info is 'other'
    assert one(new_rows, "prompt_tokens_total")["kind"] == "counter"
    created = one(new_rows, "vllm:prompt_tokens_created")
    assert (created["mapped"], created["kind"], created["value"]) == (False, "gauge", 1793700000.0)
    assert one(new_rows, "python_info")["engine"] == "other"
    assert one(new_rows, "time_to_first_token_seconds_bucket", le="0.5")["value"] == 5620.0  # 120+1900+3600


# -- DCGM exporter ---------------------------------------------------------------------------

def test_dcgm_units_and_blank_sentinel():
    parsed, rows = rows_of(DCGM)
    assert_lines_point_at_samples(DCGM, rows)
    # 25 fields x 2 GPUs = 50 samples; DCGM_FI_DEV_VGPU_LICENSE_STATUS is 9223372036854775794
    # (DCGM_INT64_BLANK + 2, "not supported") on both GPUs: not loaded, quarantined with the reason
    # so that the file's accounting covers every sample line (50 in = 48 loaded + 2 quarantined).
    assert parsed.meta["samples"] == 50
    assert parsed.meta["dropped_dcgm_blank"] == 2
    assert parsed.rows.num_rows == 48 and parsed.rows_in == 50
    assert [(r.field, r.reason.split(":")[0]) for r in parsed.rejects] == [
        ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM blank value")] * 2
    assert not [r for r in rows if r["source_metric"] == "DCGM_FI_DEV_VGPU_LICENSE_STATUS"]
    assert {r["engine"] for r in rows} == {"dcgm"} and {r["node_id"] for r in rows} == {"gpu-node-a"}
    assert one(rows, "gpu_util", gpu="0")["value"] == pytest.approx(0.87)  # 87 % -> 0.87
    assert one(rows, "gpu_util", gpu="1")["value"] == pytest.approx(0.85)
    assert one(rows, "fb_used_mib", gpu="0")["value"] == 74312.0
    assert one(rows, "power_w", gpu="0")["value"] == 512.337
    energy = one(rows, "energy_mj_total", gpu="1")
    assert energy["value"] == 1802771033982.0  # mJ; = 500.77 kWh (/ 3.6e9)
    assert energy["kind"] == "counter"
    assert energy["source_metric"] == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # as exposed, no _total added
    assert energy["gpu"] == "1"
    assert json.loads(energy["series"]) == {"UUID": "GPU-8b27e0d4-15c3-4a9f-b2d8-6e4f9c3a7b22", "gpu": "1"}
    assert json.loads(energy["labels"])["modelName"] == "NVIDIA H100 80GB HBM3"


def test_dcgm_exporter_2x_layout_and_blank_values_on_mapped_fields():
    # dcgm-exporter 2.x prints every # HELP/# TYPE first and the samples after (its README),
    # with a space after the commas; the parser then calls the samples untyped.
    text = (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        "\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="GPU-a"} 9223372036854775794\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1", UUID="GPU-b"} 40\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0", UUID="GPU-a"} 140737488355328.000000\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="1", UUID="GPU-b"} 301.500000\n'
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0", UUID="GPU-a"} 2147483633\n'
    )
    parsed = parse(text.encode(), "telemetry/metrics/n1__2026-11-03T14-05-00Z.prom", CTX)
    rows = parsed.rows.to_pylist()
    # int64 blank on GPU_UTIL and the FP64 blank (2**47) on POWER_USAGE are dropped
    assert parsed.meta["dropped_dcgm_blank"] == 2
    assert [(r["metric"], r["gpu"], r["line"]) for r in rows] == [
        ("gpu_util", "1", 9), ("power_w", "1", 11), ("energy_mj_total", "0", 12)]
    assert rows[0]["value"] == pytest.approx(0.40)
    assert [r["kind"] for r in rows] == ["gauge", "gauge", "counter"]  # from the # TYPE lines
    # 2147483633 = DCGM_INT32_BLANK + 1, but on a counter it is a real reading (2,147 kJ)
    assert rows[2]["value"] == 2147483633.0


# -- file names, timestamps, errors ------------------------------------------------------------

def test_scrape_time_in_name_with_colons_or_dashes():
    assert parse_scrape_name("telemetry/metrics/gpu-a__2026-11-03T14:05:00Z.prom") == ("gpu-a", T0)
    assert parse_scrape_name("telemetry/metrics/gpu-a__2026-11-03T14-05-00Z.prom") == ("gpu-a", T0)
    assert parse_scrape_name("gpu-a__2026-11-03T14-05-00Z.dcgm.prom.gz") == ("gpu-a", T0)
    assert parse_scrape_name("gpu-a__2026-11-03T16:05:00+02:00.prom") == ("gpu-a", T0)
    assert parse_scrape_name("gpu-a__2026-11-03T14-05-00.250Z.prom") == ("gpu-a", T0.replace(microsecond=250000))
    assert parse_scrape_name("my__node__2026-11-03T14-05-00Z.prom") == ("my__node", T0)
    assert parse_scrape_name("no-separator.prom") == (None, None)
    data = VLLM_V1.read_bytes()
    colon = parse(data, "telemetry/metrics/gpu-node-a__2026-11-03T14:05:00Z.prom", CTX).rows
    dash = parse(data, "telemetry/metrics/gpu-node-a__2026-11-03T14-05-00Z.prom", CTX).rows
    assert colon.equals(dash)


def test_sample_timestamps_win_and_samples_without_time_are_rejected():
    text = (b"# TYPE vllm:num_requests_running gauge\n"
            b'vllm:num_requests_running{model_name="m"} 4 1793714730000\n'
            b"# TYPE vllm:num_requests_waiting gauge\n"
            b'vllm:num_requests_waiting{model_name="m"} 1\n')
    with_name = parse(text, "telemetry/metrics/n__2026-11-03T14-05-00Z.prom", CTX).rows.to_pylist()
    assert [r["scrape_ts"] for r in with_name] == [T0 + dt.timedelta(seconds=30), T0]
    no_time = parse(text, "telemetry/metrics/n__unknown.prom", CTX)
    assert no_time.rows.num_rows == 1 and no_time.rows_in == 2
    assert [(r.line, r.field) for r in no_time.rejects] == [(4, "scrape_ts")]


def test_broken_exposition_names_the_line():
    text = b'# TYPE a gauge\na 1\nb{x="1" 2\nc 3\n'
    with pytest.raises(SourceFormatError) as err:
        parse(text, "telemetry/metrics/n__2026-11-03T14-05-00Z.prom", CTX)
    assert err.value.line == 3
    with pytest.raises(SourceFormatError):
        parse(b"\xff\xfe", "telemetry/metrics/n__2026-11-03T14-05-00Z.prom", CTX)


def test_sniff_and_spec():
    for path in (SGLANG, VLLM_V1, VLLM_OLD, DCGM):
        assert sniff(path.read_bytes(), path.name)
    assert sniff(b"# some comment\nup 1\n", "x.prom")
    for other in (b'{"data": []}', b"node_id,gpu_type\nn1,H100\n", b"<html><body>nope</body></html>",
                  b"# only a comment\n", b""):
        assert not sniff(other, "x.prom")
    (spec,) = SPECS
    assert spec.folder == "telemetry/metrics"
    assert spec.key == ("node_id", "scrape_ts", "source_metric", "labels")
    # every canonical name carries its unit or is a 0-1 ratio / count / info
    assert all(c.metric == c.metric.lower() and ":" not in c.metric for c in CANONICAL.values())


# -- counters -> per-interval deltas (sql/core/metric_deltas.sql) ------------------------------

def _migrated() -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB with the schemas (001) and stg.metric_samples (050) from the migrations."""
    con = duckdb.connect()
    for name in ("001_ops.sql", "050_metrics.sql"):
        sql = (ROOT / "warehouse" / "migrations" / name).read_text()
        sql = re.sub(r"--[^\n]*", "", sql)  # comments may hold ';'
        for statement in sql.split(";"):
            if statement.strip():
                con.execute(statement)
    return con


def _vllm_scrape(prompt: int, generation: int, usage: float) -> bytes:
    # the exact shape vLLM V1 serves (prometheus_client text format 0.0.4)
    return (
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
        "# TYPE vllm:kv_cache_usage_perc gauge\n"
        f'vllm:kv_cache_usage_perc{{engine="0",model_name="Qwen/Qwen3-32B"}} {usage!r}\n'
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        f'vllm:prompt_tokens_total{{engine="0",model_name="Qwen/Qwen3-32B"}} {float(prompt)!r}\n'
        "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
        "# TYPE vllm:generation_tokens_total counter\n"
        f'vllm:generation_tokens_total{{engine="0",model_name="Qwen/Qwen3-32B"}} {float(generation)!r}\n'
    ).encode()


def _load(con, file_id: int, name: str, data: bytes) -> None:
    rows = parse(data, name, CTX).rows
    con.register("incoming", rows)
    con.execute("INSERT INTO stg.metric_samples BY NAME SELECT ? AS file_id, * FROM incoming", [file_id])
    con.unregister("incoming")


def _deltas(con):
    sql = (ROOT / "sql" / "core" / "metric_deltas.sql").read_text()
    return con.execute(f"SELECT * FROM ({sql}) ORDER BY node_id, metric, series, scrape_ts").fetchall(), \
        [d[0] for d in con.description]


def test_counter_reset_gap_duplicates_and_out_of_order_scrapes():
    # Worked example, prompt_tokens_total on node n1, scraped every 30 s:
    #   14:00:00  1000  first scrape          delta NULL
    #   14:00:30  1600                        delta  600
    #   14:01:00   250  server restarted      delta  250  (not 250 - 1600 = -1350)
    #   14:01:30   900                        delta  650
    #   14:03:30  1500  120 s since the last  delta  600, gap: 120 > 2 x median(30,30,30,120)=60
    # Total prompt tokens served between the first and the last scrape: 600+250+650+600 = 2100.
    # generation_tokens_total at the same scrapes: 5000, 5400, 100, 700, 700 -> NULL, 400, 100, 600, 0.
    series = [
        ("2026-11-03T14-00-00Z", 1000, 5000),
        ("2026-11-03T14-00-30Z", 1600, 5400),
        ("2026-11-03T14-01-00Z", 250, 100),
        ("2026-11-03T14-01-30Z", 900, 700),
        ("2026-11-03T14-03-30Z", 1500, 700),
    ]
    con = _migrated()
    # landed out of order, and the 14:00:30 scrape landed twice (once with colons in its name)
    order = [4, 1, 0, 3, 2]
    for file_id, i in enumerate(order, start=1):
        stamp, prompt, gen = series[i]
        _load(con, file_id, f"telemetry/metrics/n1__{stamp}.prom", _vllm_scrape(prompt, gen, 0.5))
    _load(con, 99, "telemetry/metrics/n1__2026-11-03T14:00:30Z.prom", _vllm_scrape(1600, 5400, 0.5))

    rows, cols = _deltas(con)
    got = [dict(zip(cols, r)) for r in rows]
    prompt = [r for r in got if r["metric"] == "prompt_tokens_total"]
    gen = [r for r in got if r["metric"] == "generation_tokens_total"]
    assert [r["scrape_ts"].strftime("%H:%M:%S") for r in prompt] == [
        "14:00:00", "14:00:30", "14:01:00", "14:01:30", "14:03:30"]
    assert [r["delta"] for r in prompt] == [None, 600.0, 250.0, 650.0, 600.0]
    assert sum(r["delta"] or 0 for r in prompt) == 2100.0
    assert [r["is_reset"] for r in prompt] == [False, False, True, False, False]
    assert [r["is_gap"] for r in prompt] == [False, False, False, False, True]
    assert prompt[-1]["interval_s"] == 120.0 and prompt[-1]["median_interval_s"] == 30.0
    assert [r["delta"] for r in gen] == [None, 400.0, 100.0, 600.0, 0.0]
    assert {r["model_name"] for r in got} == {"Qwen/Qwen3-32B"}
    # gauges are not counters
    assert not [r for r in got if r["metric"] == "kv_cache_usage"]


def test_dcgm_energy_series_survives_pod_label_change():
    # The k8s pod label on a DCGM series changes when another pod gets the GPU; the energy
    # counter keeps counting. Series = gpu + UUID, so the delta is 1,900,000 - 1,000,000 = 900,000 mJ.
    def scrape(pod: str, mj: int) -> bytes:
        return (
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3",'
            f'Hostname="n2",pod="{pod}",namespace="serving",container="vllm"}} {mj}\n'
        ).encode()

    con = _migrated()
    _load(con, 1, "telemetry/metrics/n2__2026-11-03T14-00-00Z.dcgm.prom", scrape("vllm-0", 1_000_000))
    _load(con, 2, "telemetry/metrics/n2__2026-11-03T14-00-30Z.dcgm.prom", scrape("vllm-1", 1_900_000))
    rows, cols = _deltas(con)
    got = [dict(zip(cols, r)) for r in rows]
    assert [(r["metric"], r["gpu"], r["delta"]) for r in got] == [
        ("energy_mj_total", "0", None), ("energy_mj_total", "0", 900000.0)]
