"""Benchmark (issue 44, item 3): the ingest with and without the unknown-field guard
(sources/fieldguard.py), alternating runs into fresh builds, and the time spent inside the guard.

    PYTHONPATH=$PWD .venv/bin/python tools/bench_unknown_fields.py [--calls 300000] [--lines-per-file 300000] [--reps 4]

The landing folder is synthetic/benchgen.py's (the bench's own generator): one day of ``--calls``
calls in files of ``--lines-per-file`` lines (300,000 in one file: the large-file route, read by
path; 1,000 a file: the demo's many small files, parsed in batches). Prints each run's wall and CPU
seconds, the medians and their ratio (target: <= 1.10), the guard's own median time, and the
time of one guard pass over a whole file without sampling (what the sample saves).
"""

from __future__ import annotations

import argparse
import shutil
import statistics as st
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300_000)
    ap.add_argument("--lines-per-file", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()

    from services.config import Config  # noqa: PLC0415
    from sources import fieldguard  # noqa: PLC0415
    from sources.requests import KNOWN_FIELDS  # noqa: PLC0415
    from synthetic import benchgen  # noqa: PLC0415
    from warehouse import ingest as ing  # noqa: PLC0415
    from warehouse import parts  # noqa: PLC0415
    from warehouse.db import Build  # noqa: PLC0415

    root = args.dir or Path(tempfile.mkdtemp(prefix="thinktax-guard-bench-"))
    landing = root / "landing"
    spec = benchgen.GenSpec(calls_per_day=args.calls, days=1, lines_per_file=args.lines_per_file)
    if not landing.exists():
        benchgen.write_reference_files(landing, spec)
        day = benchgen.write_day(landing, spec, 0)
        print(f"generated {len(day.jsonl)} request files, {day.jsonl_bytes / 1e6:.1f} MB")
    guard, guard_many = ing.Ingestor._guard, ing.Ingestor._guard_many  # noqa: SLF001
    spent = [0.0]

    def timed(f):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t
        return wrapper

    def run(tag: str, on: bool) -> tuple[float, float, float]:
        ing.Ingestor._guard = timed(guard) if on else (lambda *a, **k: None)  # noqa: SLF001
        ing.Ingestor._guard_many = timed(guard_many) if on else (lambda *a, **k: None)  # noqa: SLF001
        wh = root / f"wh_{tag}"
        shutil.rmtree(wh, ignore_errors=True)
        wh.mkdir()
        build = Build(wh / "full.duckdb", "bench")
        build.start(Config().settings_row())
        con = build.connect()
        spent[0] = 0.0
        t, c = time.perf_counter(), time.process_time()
        ing.Ingestor(con, landing, commit_every=ing.BUILD_COMMIT_EVERY).ingest()
        parts.flush(con, build.build_id)
        out = (time.perf_counter() - t, time.process_time() - c, spent[0])
        con.close()
        shutil.rmtree(wh, ignore_errors=True)
        return out

    res: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    try:
        for i in range(args.reps):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                r = run(f"{i}{on}", on)
                res[on].append(r)
                print(f"{'guard   ' if on else 'no guard'}  wall {r[0]:.2f} s  cpu {r[1]:.2f} s  inside the guard {r[2]:.3f} s",
                      flush=True)
    finally:
        ing.Ingestor._guard, ing.Ingestor._guard_many = guard, guard_many  # noqa: SLF001
    for k, name in ((0, "wall"), (1, "cpu ")):
        a, b = st.median(r[k] for r in res[False]), st.median(r[k] for r in res[True])
        print(f"{name}: median without {a:.2f} s, with {b:.2f} s, ratio {b / a:.3f}")
    g, w = st.median(r[2] for r in res[True]), st.median(r[0] for r in res[True])
    print(f"inside the guard: median {g:.3f} s = {g / w:.1%} of the guarded ingest's wall time")
    big = max((landing / "telemetry" / "requests").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    data = big.read_bytes()
    small, fieldguard.SMALL_BYTES = fieldguard.SMALL_BYTES, 1 << 62
    try:
        t = time.perf_counter()
        fieldguard.scan_many([data], KNOWN_FIELDS)
        print(f"one pass over the whole of {big.name} ({len(data) / 1e6:.0f} MB) without sampling: "
              f"{time.perf_counter() - t:.2f} s")
    finally:
        fieldguard.SMALL_BYTES = small


if __name__ == "__main__":
    main()
