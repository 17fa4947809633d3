"""Interleaved A/B of the ingest: ``warehouse.ingest.Ingestor`` of one checkout against another on
the same ``synthetic.benchgen`` landing, each run in a fresh process and a fresh warehouse.

    git worktree add /tmp/before <commit>
    .venv/bin/python -m tools.ingest_ab --before /tmp/before --calls-per-day 150000 --days 4 --pairs 5

Prints CPU and wall seconds per run and the median and minimum ratios after/before (docs/performance.md,
"The request parser after issue 24"). Both checkouts run with this venv's packages.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = r'''
import json, sys, time
from pathlib import Path
from services.config import Config
from warehouse.db import Build
from warehouse.ingest import BUILD_COMMIT_EVERY, Ingestor
wh, landing = Path(sys.argv[1]), Path(sys.argv[2])
b = Build(wh, "ab"); b.start(Config().settings_row()); con = b.connect()
t0, c0 = time.perf_counter(), time.process_time()
Ingestor(con, landing, commit_every=BUILD_COMMIT_EVERY).ingest()
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "rows": con.execute("SELECT count(*) FROM stg.requests").fetchall()[0][0]}))
'''


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="a checkout of the code to compare with (git worktree add DIR COMMIT)")
    p.add_argument("--calls-per-day", type=int, default=150_000)
    p.add_argument("--days", type=int, default=4)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--workdir", help="where the landing is written (default: a temporary folder, removed after)")
    args = p.parse_args(argv)
    from synthetic import benchgen  # noqa: PLC0415

    root = Path(args.workdir or tempfile.mkdtemp(prefix="thinktax-ab-"))
    landing = root / "landing"
    spec = benchgen.GenSpec(calls_per_day=args.calls_per_day, days=args.days)
    if not landing.exists():
        benchgen.write_reference_files(landing, spec)
        for d in range(spec.days):
            benchgen.write_day(landing, spec, d, root / "parquet")
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    try:
        for i in range(args.pairs):
            for name, code in (("before", Path(args.before).resolve()), ("after", REPO)):
                wh = root / f"wh-{name}-{i}"
                shutil.rmtree(wh, ignore_errors=True)
                wh.mkdir(parents=True)
                out = subprocess.run([sys.executable, "-c", CHILD, str(wh / "t.duckdb"), str(landing)], cwd=code,
                                     capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(code)}, check=False)
                shutil.rmtree(wh, ignore_errors=True)
                if out.returncode:
                    print(out.stderr[-3000:], file=sys.stderr)
                    return 1
                r = json.loads(out.stdout.strip().splitlines()[-1])
                runs[name].append(r)
                print(f"{name} {i}: cpu {r['cpu']:.2f} s, wall {r['wall']:.2f} s, {r['rows']:,} calls", flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    for k in ("cpu", "wall"):
        b, a = [r[k] for r in runs["before"]], [r[k] for r in runs["after"]]
        print(f"{k}: before {' / '.join(f'{x:.2f}' for x in b)}; after {' / '.join(f'{x:.2f}' for x in a)}; "
              f"median ratio {statistics.median(a) / statistics.median(b):.3f}, min ratio {min(a) / min(b):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
