"""Prometheus text scrapes from vLLM, SGLang and the NVIDIA DCGM exporter -> ``stg.metric_samples``.

Landing: ``telemetry/metrics/<node>__<ISO-8601 UTC>[.<tag>].prom`` -- one file per scrape of one
endpoint. ``thinktax scrape`` writes them; any other tool may too.

* **Parser**: ``prometheus_client.parser`` (the maintained reference parser of the text exposition
  format 0.0.4, the one vLLM and SGLang expose through). We call ``text_fd_to_metric_families``
  on our own ``io.StringIO`` -- ``text_string_to_metric_families`` is that same call on a StringIO
  it makes itself -- so that when the parser fails we can read the stream position and name the
  line.
* **Scrape time** comes from the file name (``2026-11-03T14:05:00Z`` or, file-system safe,
  ``2026-11-03T14-05-00Z``; fractions and ``+HH:MM`` offsets are accepted and converted to UTC;
  no zone means UTC). A sample that carries its own timestamp (milliseconds since the epoch, as
  the format allows) uses that instead. No time in the name and none on a sample: that sample is
  rejected (field ``scrape_ts``); when no sample has one the whole file is unreadable.
* **Node** is the file-name prefix before the last ``__``. Without one, a ``node`` label, else an
  ``instance`` label (``host:port`` -> ``host_port``, the way ``thinktax scrape`` names URL
  targets), else DCGM's own ``Hostname`` label is used if every sample carrying it agrees;
  otherwise the file is unreadable (field ``node_id``).
* **Optional tag** after the time (``gpu-a__2026-11-03T14-05-00Z.dcgm.prom``) lets one node have
  several endpoints (vLLM and DCGM) scraped at the same second; it is not stored.
* **Line numbers**: the parser does not report them. It consumes the text line by line (split on
  ``\\n``, each line stripped) and turns every non-blank line that does not start with ``#`` into
  exactly one sample, in file order, yielding families in file order. So one scan of the text
  that lists the numbers of those lines, zipped with the parser's samples in yield order, gives
  each sample its line; the two counts are checked to be equal.
* **Canonical names** (``CANONICAL`` below) put vLLM V1, its older names and SGLang on the same
  columns, in the unit the name carries. A series exposed under a new and a deprecated name in
  the same scrape (vLLM 0.9-0.10 expose both) is kept once, under the new name.
* **Not loaded** (so every sample line is still accounted for: rows in = loaded + duplicate +
  quarantined): DCGM blank sentinels (the exporter prints DCGM's "no value" markers as numbers;
  treated as missing) and NaN/Inf values are quarantined with that reason; a series exposed under
  a deprecated vLLM name next to its current one is kept once, under the current name, and the
  other sample counts as a duplicate. Everything else is kept:
  metrics with no canonical name keep ``metric = source_metric`` and ``mapped = false``.
* **Type**: from the family the parser built; when it gives ``unknown`` (dcgm-exporter 2.x
  prints all ``# TYPE`` lines first and the samples after, which the parser then sees as untyped)
  the ``# TYPE`` line declared anywhere in the file is used.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from prometheus_client.parser import text_fd_to_metric_families

from sources import contract
from sources.base import ParseContext, Parsed, Reject, SourceFormatError, head_text
from sources.base import SourceSpec

TABLE = "stg.metric_samples"
FORMAT = "prometheus_text"
FOLDER = "telemetry/metrics"


@dataclass(frozen=True)
class Canon:
    metric: str  # canonical name, unit in the name
    scale: float = 1.0  # canonical value = exposed value x scale
    deprecated: bool = False  # an older name: dropped when the current name is in the same scrape


# One dict for every engine. Keys are the names as exposed; histograms by their base name (the
# canonical name gets the same _bucket/_sum/_count suffix). Sources of the names:
# vLLM vllm/v1/metrics/loggers.py (PrometheusStatLogger), SGLang docs/references/production_metrics.md,
# dcgm-exporter etc/default-counters.csv (units from its help texts).
CANONICAL: dict[str, Canon] = {
    # -- vLLM V1 -------------------------------------------------------------------------------
    "vllm:prompt_tokens_total": Canon("prompt_tokens_total"),
    "vllm:generation_tokens_total": Canon("generation_tokens_total"),
    "vllm:kv_cache_usage_perc": Canon("kv_cache_usage"),  # a fraction 0-1 despite "perc"
    "vllm:gpu_cache_usage_perc": Canon("kv_cache_usage", deprecated=True),  # renamed in 0.9
    "vllm:num_requests_running": Canon("requests_running"),
    "vllm:num_requests_waiting": Canon("requests_waiting"),
    # prefix cache counters count tokens (queried tokens / tokens found in the cache)
    "vllm:prefix_cache_queries_total": Canon("prefix_cache_queried_tokens_total"),
    "vllm:prefix_cache_queries": Canon("prefix_cache_queried_tokens_total"),
    "vllm:prefix_cache_hits_total": Canon("prefix_cache_hit_tokens_total"),
    "vllm:prefix_cache_hits": Canon("prefix_cache_hit_tokens_total"),
    "vllm:gpu_prefix_cache_queries_total": Canon("prefix_cache_queried_tokens_total", deprecated=True),
    "vllm:gpu_prefix_cache_queries": Canon("prefix_cache_queried_tokens_total", deprecated=True),
    "vllm:gpu_prefix_cache_hits_total": Canon("prefix_cache_hit_tokens_total", deprecated=True),
    "vllm:gpu_prefix_cache_hits": Canon("prefix_cache_hit_tokens_total", deprecated=True),
    "vllm:request_success_total": Canon("requests_finished_total"),  # label finished_reason
    "vllm:num_preemptions_total": Canon("preemptions_total"),
    "vllm:e2e_request_latency_seconds": Canon("e2e_request_latency_seconds"),
    "vllm:time_to_first_token_seconds": Canon("time_to_first_token_seconds"),
    "vllm:time_per_output_token_seconds": Canon("time_per_output_token_seconds"),
    "vllm:request_prompt_tokens": Canon("request_prompt_tokens"),
    "vllm:request_generation_tokens": Canon("request_generation_tokens"),
    "vllm:cache_config_info": Canon("cache_config_info"),  # labels num_gpu_blocks, block_size, ...
    # -- SGLang ---------------------------------------------------------------------------------
    "sglang:prompt_tokens_total": Canon("prompt_tokens_total"),
    "sglang:generation_tokens_total": Canon("generation_tokens_total"),
    "sglang:cached_tokens_total": Canon("prefix_cache_hit_tokens_total"),
    "sglang:token_usage": Canon("kv_cache_usage"),  # fraction of KV token slots in use, 0-1
    "sglang:num_used_tokens": Canon("kv_cache_used_tokens"),
    "sglang:cache_hit_rate": Canon("prefix_cache_hit_rate"),  # 0-1
    "sglang:num_running_reqs": Canon("requests_running"),
    "sglang:num_queue_reqs": Canon("requests_waiting"),
    "sglang:gen_throughput": Canon("generation_tokens_per_s"),
    "sglang:e2e_request_latency_seconds": Canon("e2e_request_latency_seconds"),
    "sglang:time_to_first_token_seconds": Canon("time_to_first_token_seconds"),
    "sglang:time_per_output_token_seconds": Canon("time_per_output_token_seconds"),
    # -- NVIDIA DCGM exporter (one series per GPU) ------------------------------------------------
    "DCGM_FI_DEV_GPU_UTIL": Canon("gpu_util", scale=0.01),  # % -> 0-1
    "DCGM_FI_DEV_MEM_COPY_UTIL": Canon("mem_copy_util", scale=0.01),  # % -> 0-1
    "DCGM_FI_DEV_FB_USED": Canon("fb_used_mib"),
    "DCGM_FI_DEV_FB_FREE": Canon("fb_free_mib"),
    "DCGM_FI_DEV_FB_RESERVED": Canon("fb_reserved_mib"),
    "DCGM_FI_DEV_POWER_USAGE": Canon("power_w"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": Canon("energy_mj_total"),  # counter, mJ since boot
    "DCGM_FI_DEV_GPU_TEMP": Canon("gpu_temp_c"),
    "DCGM_FI_DEV_MEMORY_TEMP": Canon("memory_temp_c"),
    "DCGM_FI_DEV_SM_CLOCK": Canon("sm_clock_mhz"),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": Canon("gr_engine_active"),  # ratio 0-1
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": Canon("tensor_active"),  # ratio 0-1
    "DCGM_FI_PROF_DRAM_ACTIVE": Canon("dram_active"),  # ratio 0-1
}

_ENGINE_PREFIXES = (("vllm:", "vllm"), ("sglang:", "sglang"), ("DCGM_", "dcgm"))

# DCGM "no value" markers (dcgm_structs.h): DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the
# NOT_FOUND / NOT_SUPPORTED (9223372036854775794, the one dcgm-exporter's README shows) /
# NOT_PERMISSIONED values above it; DCGM_FP64_BLANK = 2**47 (+1..+15 for the same family);
# DCGM_INT32_BLANK = 0x7ffffff0 (+1..+15). The int32 values are real readings for a counter
# (energy in mJ passes 2**31 within an hour), so they count as blanks on gauges only.
DCGM_INT64_BLANK = 0x7FFFFFFFFFFFFFF0  # 9223372036854775792
DCGM_FP64_BLANK = float(2**47)  # 140737488355328.0
DCGM_INT32_BLANK = 0x7FFFFFF0  # 2147483632

# Labels that identify a DCGM series; the others (Hostname, driver version, k8s pod/container,
# ...) may change while the GPU's counter keeps counting, so they are not part of `series`.
_DCGM_SERIES_LABELS = ("gpu", "UUID", "GPU_I_ID", "GPU_I_PROFILE")

SCHEMA = contract.table(TABLE).arrow_schema()

_TS = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[T_ ](?P<h>\d{2})[:-]?(?P<m>\d{2})[:-]?(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|z|[+-]\d{2}(?:[:-]?\d{2})?)?"
    r"(?:\.(?P<tag>[A-Za-z0-9._-]+))?$"
)
_SAMPLE_START = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})?[ \t]+[-+]?(\d|\.\d|Inf|inf|NaN|nan)")
_HELP_TYPE = re.compile(r"^#[ \t]+(HELP|TYPE)[ \t]+[A-Za-z_:\"]")
_NODE_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def node_id_from_hostport(host: str, port: int | str | None) -> str:
    """File-name-safe node id for an endpoint: ``127.0.0.1:8000`` -> ``127.0.0.1_8000``."""
    host = host.strip("[]")
    raw = f"{host}_{port}" if port not in (None, "") else host
    return _NODE_SAFE.sub("-", raw).strip("-") or "node"


def parse_scrape_name(name: str) -> tuple[str | None, dt.datetime | None]:
    """(node_id, scrape time as naive UTC) from ``.../<node>__<ISO-8601>[.<tag>].prom[.gz]``.

    >>> parse_scrape_name("telemetry/metrics/gpu-a__2026-11-03T14-05-00Z.prom")
    ('gpu-a', datetime.datetime(2026, 11, 3, 14, 5))
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".gz", ".prom", ".txt", ".metrics"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    if "__" not in base:
        return None, None
    node, rest = base.rsplit("__", 1)
    node = node or None
    m = _TS.match(rest)
    if not m:
        return node, None
    frac = (m["frac"] or "").ljust(6, "0")[:6]
    try:
        ts = dt.datetime.fromisoformat(f"{m['date']}T{m['h']}:{m['m']}:{m['s']}.{frac}")
    except ValueError:
        return node, None
    zone = m["zone"]
    if zone and zone not in ("Z", "z"):
        sign = -1 if zone[0] == "-" else 1
        digits = re.sub(r"\D", "", zone[1:])
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        ts = ts - sign * offset
    return node, ts


def sniff(data: bytes, name: str) -> bool:
    """Prometheus text: the first meaningful line is ``# HELP``/``# TYPE`` or a sample line."""
    head = head_text(data)
    if head[:1] in ("{", "[", "<"):
        return False
    for raw in head.split("\n")[:200]:
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            if _HELP_TYPE.match(s):
                return True
            continue
        return bool(_SAMPLE_START.match(s))
    return False


def _engine_of(source_metric: str) -> str:
    for prefix, engine in _ENGINE_PREFIXES:
        if source_metric.startswith(prefix):
            return engine
    return "other"


def _declared_type(declared: dict[str, str], name: str) -> tuple[str, str]:
    """(type, base name) for a sample the parser left untyped, from the file's ``# TYPE`` lines."""
    if name in declared:
        return declared[name], name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and declared.get(name[: -len(suffix)]) in ("histogram", "summary"):
            return declared[name[: -len(suffix)]], name[: -len(suffix)]
    if name.endswith("_total") and declared.get(name[:-6]) == "counter":
        return "counter", name[:-6]
    return "untyped", name


def _kind(ftype: str, name: str) -> tuple[str, str]:
    """(kind, base name used for the canonical lookup)."""
    if ftype in ("histogram", "summary"):
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                return f"{ftype}_{suffix[1:]}", name[: -len(suffix)]
        return ("summary_quantile" if ftype == "summary" else "histogram_other"), name
    if ftype == "unknown":
        return "untyped", name
    return ftype, name


def _is_dcgm_blank(value: float, kind: str) -> bool:
    if value >= DCGM_INT64_BLANK:
        return True
    if DCGM_FP64_BLANK <= value < DCGM_FP64_BLANK + 16:
        return True
    return kind != "counter" and DCGM_INT32_BLANK <= value <= 0x7FFFFFFF


def _ts_from_ms(seconds: float) -> dt.datetime:
    # prometheus_client divides the millisecond timestamp by 1000; round back to whole ms.
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=round(seconds * 1000))


def _json(d: dict[str, str]) -> str:
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _exposed_name(line_text: str, parsed_name: str) -> str:
    """The metric name as written on the line (the parser appends ``_total`` to counter samples
    declared without it, e.g. DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION)."""
    s = line_text.strip()
    if s.startswith("{"):
        return parsed_name
    end = len(s)
    for ch in ("{", " ", "\t"):
        i = s.find(ch)
        if i != -1:
            end = min(end, i)
    return s[:end] or parsed_name


def _node_from_labels(samples: list[Any]) -> tuple[str | None, str | None]:
    for label, transform in (
        ("node", lambda v: v),
        ("instance", lambda v: node_id_from_hostport(*v.rsplit(":", 1)) if ":" in v else v),
        ("Hostname", lambda v: v),
    ):
        values = {s.labels[label] for s in samples if s.labels.get(label)}
        if len(values) == 1:
            return transform(values.pop()), f"label:{label}"
        if len(values) > 1:
            raise SourceFormatError(
                f"no node id in the file name (<node>__<time>.prom) and the {label!r} labels disagree "
                f"({', '.join(sorted(values)[:3])}...)",
                field="node_id",
            )
    return None, None


def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise SourceFormatError(f"not UTF-8: {exc}") from None

    # One scan: which lines hold samples, and the # TYPE declarations.
    lines = text.split("\n")
    sample_lines: list[int] = []
    declared: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s:
            continue
        if s[0] == "#":
            if s.startswith("# TYPE"):
                parts = s.split(None, 3)
                if len(parts) == 4:
                    declared[parts[2].strip('"')] = parts[3].strip()
            continue
        sample_lines.append(number)

    fd = io.StringIO(text)
    samples: list[tuple[str, Any]] = []
    try:
        for family in text_fd_to_metric_families(fd):
            for sample in family.samples:
                samples.append((family.type, sample))
    except (ValueError, IndexError, TypeError, KeyError) as exc:
        pos = fd.tell()
        line = text.count("\n", 0, pos) + (0 if pos and text[pos - 1] == "\n" else 1)
        raise SourceFormatError(f"not Prometheus text exposition: {exc}", line=line) from None
    if len(samples) != len(sample_lines):
        raise SourceFormatError(
            f"parser returned {len(samples)} samples for {len(sample_lines)} sample lines"
        )

    node_id, file_ts = parse_scrape_name(name)
    node_from = "file_name" if node_id else None
    if node_id is None:
        node_id, node_from = _node_from_labels([s for _, s in samples])
    if node_id is None:
        raise SourceFormatError(
            "no node id: name the file <node>__<ISO-8601 UTC>.prom or give samples a 'node' or "
            "'instance' label",
            field="node_id",
        )
    if file_ts is None and samples and all(s.timestamp is None for _, s in samples):
        raise SourceFormatError(
            "no scrape time: name the file <node>__<ISO-8601 UTC>.prom or give samples timestamps",
            field="scrape_ts",
        )

    cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    rejects: list[Reject] = []
    dropped_blank = dropped_nonfinite = unmapped = 0
    deprecated_rows: list[int] = []  # row indexes of rows under a deprecated name
    current_keys: set[tuple[Any, str, str]] = set()  # (scrape_ts, metric, labels) under current names
    for (ftype, sample), line in zip(samples, sample_lines):
        source_metric = _exposed_name(lines[line - 1], sample.name)
        if ftype == "unknown":
            ftype, _ = _declared_type(declared, source_metric)
        kind, base = _kind(ftype, source_metric)
        engine = _engine_of(source_metric)
        value = float(sample.value)
        if not math.isfinite(value):
            dropped_nonfinite += 1
            rejects.append(Reject(line, source_metric, f"not a finite value ({sample.value}): nothing to load",
                                  lines[line - 1][:500]))
            continue
        if engine == "dcgm" and _is_dcgm_blank(value, kind):
            dropped_blank += 1
            rejects.append(Reject(line, source_metric, "DCGM blank value: the exporter has no data for this field",
                                  lines[line - 1][:500]))
            continue
        if sample.timestamp is not None:
            ts = _ts_from_ms(sample.timestamp)
        elif file_ts is not None:
            ts = file_ts
        else:
            rejects.append(
                Reject(line, "scrape_ts", "no timestamp on the sample and none in the file name",
                       lines[line - 1][:500])
            )
            continue
        canon = CANONICAL.get(base)
        if canon is None:
            metric, mapped = source_metric, False
            unmapped += 1
        else:
            metric = canon.metric + source_metric[len(base):]
            mapped = True
            value *= canon.scale
        labels = {k: str(v) for k, v in sample.labels.items()}
        labels_json = _json(labels)
        if engine == "dcgm" and any(k in labels for k in _DCGM_SERIES_LABELS):
            series_json = _json({k: labels[k] for k in _DCGM_SERIES_LABELS if k in labels})
        else:
            series_json = labels_json
        if canon is not None:
            if canon.deprecated:
                deprecated_rows.append(len(cols["line"]))
            else:
                current_keys.add((ts, metric, labels_json))
        cols["line"].append(line)
        cols["node_id"].append(node_id)
        cols["scrape_ts"].append(ts)
        cols["engine"].append(engine)
        cols["metric"].append(metric)
        cols["mapped"].append(mapped)
        cols["source_metric"].append(source_metric)
        cols["kind"].append(kind)
        cols["labels"].append(labels_json)
        cols["series"].append(series_json)
        cols["gpu"].append(labels.get("gpu") if engine == "dcgm" else None)
        cols["model_name"].append(labels.get("model_name"))
        cols["value"].append(value)

    # A series exposed under both its current and its deprecated name: keep the current one.
    drop = {
        i for i in deprecated_rows
        if (cols["scrape_ts"][i], cols["metric"][i], cols["labels"][i]) in current_keys
    }
    if drop:
        cols = {k: [v for i, v in enumerate(vs) if i not in drop] for k, vs in cols.items()}

    table = pa.Table.from_pydict(cols, schema=SCHEMA)
    meta = {
        "node_id": node_id,
        "node_from": node_from,
        "scrape_ts_from": "file_name" if file_ts is not None else "sample_timestamps",
        "samples": len(samples),
        "dropped_dcgm_blank": dropped_blank,
        "dropped_non_finite": dropped_nonfinite,
        "dropped_deprecated_alias": len(drop),
        "unmapped_kept": unmapped,
        "engines": sorted(set(table.column("engine").to_pylist())),
    }
    return Parsed(TABLE, table, rejects, FORMAT, meta, duplicates=len(drop))


SPECS = [
    SourceSpec(
        folder=FOLDER,
        format=FORMAT,
        sniff=sniff,
        parse=parse,
        table=TABLE,
    )
]
