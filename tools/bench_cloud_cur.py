"""Benchmark (issue 25): ingest a CUR 2.0 CSV of N lines (default 2,000,000) with 1 % Bedrock lines,
against DuckDB's own read_csv of the same file, each in a fresh process, with its peak RSS.

    PYTHONPATH=$PWD .venv/bin/python tools/bench_cloud_cur.py [--lines 2000000] [--dir /tmp/cur-bench]

Prints, per step: seconds, lines per second and peak RSS (ru_maxrss of the child process):
* ``read_csv count``: ``SELECT count(*) FROM read_csv(file, header = true)`` (DuckDB's fastest scan);
* ``read_csv needed``: the 20 CUR 2.0 columns thinktax reads, fetched as Arrow in batches (what
  any reader of those columns must parse and materialise);
* ``read_csv all``: ``SELECT * FROM read_csv(file, header = true)`` fetched as Arrow in batches;
* ``thinktax ingest``: ``warehouse.ingest.Ingestor`` on a landing folder holding only the file, into a
  fresh migrated DuckDB file: sha256, sniffing, the one-pass read, the rules, de-duplication,
  staging insert and the accounting (rows_skipped = the non-AI lines).
The file has the CUR 2.0 columns thinktax reads plus 20 more that real exports carry (identity,
bill, pricing, reservation, savings plan), about 600 bytes a line.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

COLUMNS = [
    "identity_line_item_id", "identity_time_interval", "bill_invoice_id", "bill_invoicing_entity", "bill_billing_entity",
    "bill_bill_type", "bill_payer_account_id", "bill_billing_period_start_date", "bill_billing_period_end_date",
    "line_item_usage_account_id", "line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date",
    "line_item_product_code", "line_item_usage_type", "line_item_operation", "line_item_availability_zone",
    "line_item_resource_id", "line_item_usage_amount", "line_item_normalization_factor", "line_item_currency_code",
    "line_item_unblended_rate", "line_item_unblended_cost", "line_item_blended_rate", "line_item_blended_cost",
    "line_item_net_unblended_cost", "line_item_line_item_description", "line_item_iam_principal", "product_region_code",
    "product_product_family", "product_servicecode", "pricing_unit", "pricing_term", "pricing_public_on_demand_cost",
    "reservation_reservation_a_r_n", "savings_plan_savings_plan_a_r_n", "product", "resource_tags",
]
NON_AI = [("AmazonEC2", "USE1-BoxUsage:m7i.large", "RunInstances", "Hrs"),
          ("AmazonS3", "USE1-TimedStorage-ByteHrs", "StandardStorage", "GB-Mo"),
          ("AmazonRDS", "USE1-InstanceUsage:db.r6g.large", "CreateDBInstance", "Hrs"),
          ("AWSLambda", "USE1-Lambda-GB-Second", "Invoke", "Lambda-GB-Second"),
          ("AmazonCloudWatch", "USE1-CW:Requests", "GetMetricData", "Requests")]
BEDROCK = ["USE1-Claude4.5Sonnet-input-tokens", "USE1-Claude4.5Sonnet-output-tokens",
           "USE1-Claude4.5Sonnet-cache-read-input-token-count", "USE1-Claude4.5Sonnet-cache-write-input-token-count-1-hour",
           "USE1-Claude4.6Opus-input-tokens-batch", "USE1-Claude4.6Opus-output-tokens-cross-region-global"]


def write_cur(path: Path, lines: int, ai_share: float = 0.01, seed: int = 25) -> int:
    """A CUR 2.0 CSV with ``lines`` data lines, every 1/ai_share-th a Bedrock line; returns the AI lines."""
    rnd = random.Random(seed)
    every = round(1 / ai_share)
    ai = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(COLUMNS) + "\n")
        buf = []
        for i in range(lines):
            day = 1 + (i * 30) // lines
            hour = f"2026-06-{day:02d}T{i % 24:02d}:00:00Z"
            end = hour.replace(":00:00Z", ":59:59Z")
            if i % every == 0:
                ai += 1
                code, ut, op, unit = "AmazonBedrockService", BEDROCK[i % len(BEDROCK)], "InvokeModelInference", "1K tokens"
                product = '"{""product_name"":""Amazon Bedrock Service""}"'
            else:
                code, ut, op, unit = NON_AI[i % len(NON_AI)]
                product = '"{""product_name"":""' + code + '""}"'
            amount = rnd.randint(1, 5000) / 10
            cost = amount * 0.003
            row = [f"id{i:09d}", f"{hour}/{end}", "", "AWS", "AWS", "Anniversary", "999988887777",
                   "2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z", "111122223333", "Usage", hour, end,
                   code, ut, op, "us-east-1a", f"arn:aws:x:us-east-1:111122223333:r/{i % 997}", f"{amount:.1f}", "1",
                   "USD", "0.003", f"{cost:.10f}", "0.003", f"{cost:.10f}", f"{cost * 0.9:.10f}",
                   f"{code} usage", "arn:aws:iam::111122223333:role/app", "us-east-1", "Compute", code, unit, "OnDemand",
                   f"{cost:.10f}", "", "", product, '"{""user_team"":""search""}"']
            buf.append(",".join(row))
            if len(buf) >= 50_000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")
    return ai


CHILD = r"""
import json, resource, sys, time, datetime as dt
from pathlib import Path
step, path, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
t0 = time.perf_counter()
out = {}
if step == "read_csv_count":
    import duckdb
    out["rows"] = duckdb.connect().execute(f"SELECT count(*) FROM read_csv('{path}', header = true)").fetchall()[0][0]
elif step == "read_csv_needed":
    import duckdb
    from sources.bills_cloud import AWS_FIELDS
    cols = ", ".join(v[0] for v in AWS_FIELDS.values())
    con = duckdb.connect()
    reader = con.sql(f"SELECT {cols} FROM read_csv('{path}', header = true)").to_arrow_reader(1_000_000)
    out["rows"] = sum(b.num_rows for b in reader)
elif step == "read_csv_all":
    import duckdb
    con = duckdb.connect()
    reader = con.sql(f"SELECT * FROM read_csv('{path}', header = true)").to_arrow_reader(1_000_000)
    out["rows"] = sum(b.num_rows for b in reader)
else:
    import duckdb
    from warehouse.db import migrate
    from warehouse.ingest import Ingestor
    con = duckdb.connect(str(work / "bench.duckdb"))
    migrate(con)
    landing = path.parent.parent.parent
    import sources.bills_cloud  # the parsers' imports (polars, pyarrow) are start-up, not per file
    t1 = time.perf_counter()
    s = Ingestor(con, landing, now=dt.datetime(2026, 8, 1)).ingest()
    out["ingest_only_seconds"] = round(time.perf_counter() - t1, 2)
    f = s.files[0]
    out.update(status=f.status, rows=f.rows_in, loaded=f.rows_loaded, skipped=f.rows_skipped,
               quarantined=f.rows_quarantined, message=f.message)
out["seconds"] = time.perf_counter() - t0
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_step(step: str, path: Path, work: Path) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, step, str(path), str(work)], capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        raise SystemExit(f"{step} failed:\n{res.stdout}\n{res.stderr}")
    return json.loads(next(ln for ln in reversed(res.stdout.strip().splitlines()) if ln.startswith("{")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--dir", default="/tmp/thinktax-cur-bench")
    args = ap.parse_args()
    work = Path(args.dir)
    landing_file = work / "landing" / "bills" / "aws" / "cur2.csv"
    landing_file.parent.mkdir(parents=True, exist_ok=True)
    for leftover in work.glob("bench.duckdb*"):
        leftover.unlink()
    t0 = time.perf_counter()
    ai = write_cur(landing_file, args.lines)
    size = landing_file.stat().st_size
    print(f"wrote {args.lines:,} lines ({ai:,} Bedrock), {size / 1e6:,.0f} MB in {time.perf_counter() - t0:.1f} s")
    results = {}
    for step in ("read_csv_count", "read_csv_needed", "read_csv_all", "thinktax_ingest"):
        r = run_step(step, landing_file, work)
        results[step] = r
        rate = args.lines / r["seconds"]
        print(f"{step:16s} {r['seconds']:7.2f} s  {rate:12,.0f} lines/s  peak RSS {r['peak_rss_mb']:7.0f} MB  "
              + json.dumps({k: v for k, v in r.items() if k not in ('seconds', 'peak_rss_mb')}))
    for label, secs in (("with start-up (imports, migrations)", results["thinktax_ingest"]["seconds"]),
                        ("Ingestor.ingest only", results["thinktax_ingest"]["ingest_only_seconds"])):
        ratios = {k: results[k]["seconds"] / secs for k in ("read_csv_count", "read_csv_needed", "read_csv_all")}
        print(f"ingest rate / read_csv rate, {label}: {ratios['read_csv_count']:.2f} (read_csv count(*)), "
              f"{ratios['read_csv_needed']:.2f} (read_csv of the CUR columns thinktax reads), "
              f"{ratios['read_csv_all']:.2f} (read_csv, all columns)")


if __name__ == "__main__":
    main()
