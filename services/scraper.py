"""Pull Prometheus ``/metrics`` from vLLM / SGLang / DCGM endpoints into the landing folder.

One file per scrape per target: ``<landing>/telemetry/metrics/<node>__<YYYY-MM-DDTHH-MM-SSZ>.prom``
(colons written as ``-`` so the names are safe on every file system; sources/prometheus.py reads
both spellings). A node with several endpoints (vLLM and DCGM) gets a tag after the time,
``<node>__<time>.<host with - for .>_<port>.prom``, so their files never collide.

Each file is written to a hidden temporary file in the same folder and renamed into place, so
the ingest (which skips hidden files) never sees half a scrape. A target that is down, answers
with an error, or returns something that is not Prometheus text is logged on stderr (one line)
and skipped; the other targets are still scraped.

Targets are either a ``nodes.csv`` (``node_id`` plus a ``metrics_url`` column -- an extension of
the catalog file; several URLs in one cell are separated by spaces or ``;``; rows without a URL
are skipped) or comma-separated URLs, whose node id is ``host_port``. A URL without a path gets
``/metrics``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit, urlunsplit

from sources.prometheus import FOLDER, node_id_from_hostport, sniff

ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"  # the classic text format, not OpenMetrics
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Target:
    node_id: str
    url: str
    tag: str | None = None  # set when the node has more than one endpoint


@dataclass
class ScrapeResult:
    target: Target
    path: Path | None  # written file; None when the target was down
    error: str | None = None


def parse_duration(text: str) -> float:
    """Seconds in ``500ms``, ``30s``, ``10m``, ``2h`` or a bare number of seconds."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 10m, 1h)")
    factor = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[m[2]]
    return float(m[1]) * factor


def normalise_url(url: str) -> str:
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"not a URL: {url!r}")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def url_node_id(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return node_id_from_hostport(parts.hostname or "", port)


def _safe_node(node_id: str) -> str:
    return _SAFE.sub("-", node_id.strip()).strip("-")


def load_targets(spec: str) -> list[Target]:
    """Targets from a nodes.csv path or from comma-separated URLs. Something that looks like a file
    (a path separator and no scheme, or a .csv name) and is not one is said to be missing."""
    path = Path(spec)
    if path.is_file():
        return _targets_from_csv(path)
    if "://" not in spec and (path.suffix.lower() == ".csv" or spec.startswith(("/", "./", "../", "~"))
                              or path.is_dir()):
        kind = "is a folder" if path.is_dir() else "does not exist"
        raise ValueError(f"--targets {spec}: {kind} (expected a nodes.csv with columns node_id and metrics_url, "
                         "or comma-separated URLs)")
    targets = []
    for raw in spec.split(","):
        if raw.strip():
            url = normalise_url(raw)
            targets.append(Target(url_node_id(url), url))
    if not targets:
        raise ValueError(f"no targets in {spec!r}")
    return targets


def _targets_from_csv(path: Path) -> list[Target]:
    text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    fields = {(f or "").strip().lower(): f for f in reader.fieldnames or []}
    if "node_id" not in fields or "metrics_url" not in fields:
        raise ValueError(f"{path}: needs columns node_id and metrics_url (found: {', '.join(fields) or 'none'})")
    targets: list[Target] = []
    for row in reader:
        node = _safe_node(row.get(fields["node_id"]) or "")
        urls = [u for u in re.split(r"[\s;]+", row.get(fields["metrics_url"]) or "") if u]
        if not node or not urls:
            continue
        normalised = [normalise_url(u) for u in urls]
        for url in normalised:
            tag = url_node_id(url).replace(".", "-") if len(normalised) > 1 else None
            targets.append(Target(node, url, tag))
    if not targets:
        raise ValueError(f"{path}: no row has both node_id and metrics_url")
    return targets


def fetch(url: str, timeout_s: float) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": "thinktax-scrape"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return response.read()


def file_name(target: Target, at: dt.datetime) -> str:
    stamp = at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H-%M-%SZ")
    tag = f".{target.tag}" if target.tag else ""
    return f"{target.node_id}__{stamp}{tag}.prom"


def write_atomic(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/name`` via a hidden temporary file and a rename."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        final = folder / name
        os.replace(tmp, final)
        return final
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def scrape_once(
    targets: list[Target],
    landing: Path,
    at: dt.datetime,
    *,
    timeout_s: float = 5.0,
    fetcher: Callable[[str, float], bytes] = fetch,
    log: TextIO | None = None,
) -> list[ScrapeResult]:
    """Scrape every target (in parallel) once; write the answers; log and skip the failures."""
    log = log or sys.stderr
    folder = landing / FOLDER

    def one(target: Target) -> ScrapeResult:
        try:
            body = fetcher(target.url, timeout_s)
        except urllib.error.HTTPError as exc:
            return ScrapeResult(target, None, f"HTTP {exc.code}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return ScrapeResult(target, None, str(reason) or type(exc).__name__)
        if not sniff(body, target.url):
            return ScrapeResult(target, None, "answer is not Prometheus text")
        return ScrapeResult(target, write_atomic(folder, file_name(target, at), body))

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(targets)))) as pool:
        results = list(pool.map(one, targets))
    for r in results:
        if r.error:
            print(f"scrape: {r.target.node_id} {r.target.url} skipped: {r.error}", file=log)
    return results


def run_scrapes(
    targets: list[Target],
    landing: Path,
    *,
    every_s: float,
    for_s: float | None = None,
    max_scrapes: int | None = None,
    timeout_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    fetcher: Callable[[str, float], bytes] = fetch,
    log: TextIO | None = None,
) -> list[ScrapeResult]:
    """Scrape all targets at start, start + every, start + 2*every, ... while the round starts
    within ``for_s`` of the start and fewer than ``max_scrapes`` rounds have run (either bound may
    be None; with neither, until interrupted). ``--every 30s --for 10m`` is 20 rounds.
    A round that starts late (the previous one overran) skips the ticks it missed."""
    if every_s <= 0:
        raise ValueError("--every must be positive")
    results: list[ScrapeResult] = []
    start = clock()
    rounds = 0
    tick = 0
    while max_scrapes is None or rounds < max_scrapes:
        due = start + tick * every_s
        if for_s is not None and due - start >= for_s:
            break
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        results.extend(scrape_once(targets, landing, now(), timeout_s=timeout_s, fetcher=fetcher, log=log))
        rounds += 1
        late = clock() - start
        tick = max(tick + 1, math.ceil(late / every_s - 1e-9))
    return results
