"""GPU nodes billed by the cloud (issue 25 item 4): the compute lines of a cloud invoice price the
hours of the nodes.csv node whose cloud_resource_id they name; every other hour keeps the catalog
price.

The exports are tests/fixtures/bills/cloud/gpu_nodes/ (the column sets of the other cloud fixtures).
One day, 2026-06-10 (UTC). nodes.csv (below), figures worked by hand, in micro-USD:

* gpu-p5-a, aws, 8 x H100 at 6.00 USD per GPU-hour, active 00:00-06:00, cloud_resource_id
  i-0a1b2c3d4e5f60001. The CUR 2.0 bills its p5.48xlarge (USE1-BoxUsage:p5.48xlarge, Usage):
  00-01 55.04, 01-02 55.04, and one line over 02-05 of 165.120001 (3 hours).
  hour 00: 55,040,000; hour 01: 55,040,000;
  hours 02-04: 165,120,001 x 3,600 s / 10,800 s = 55,040,000.33 each: floors 3 x 55,040,000 =
  165,120,000, leftover 1 micro-USD, equal remainders -> the earliest hour: 02 55,040,001,
  03 55,040,000, 04 55,040,000 (sum 165,120,001: the line exactly);
  hour 05: no line -> catalog 8 x 6.00 = 48,000,000.
  Node: 55.04 + 55.04 + 165.120001 + 48.00 = 323.200001 (the catalog alone: 6 x 48 = 288.00).
  Effective rate of hour 02: 55,040,001 x 3.6e9 / (8 x 3.6e9) = 6,880,000.125 micro-USD per
  GPU-hour -> 6.880000 (half up); of hour 00: 55.04 / 8 = 6.88.
* gpu-l4-b, aws, 1 x L4 at 0.80, 00:00-02:00, no cloud_resource_id: 2 x 0.80 = 1.60, catalog.
* gpu-a10-c, aws, 1 x A10G at 1.01, 00:00-01:00, cloud_resource_id i-0eeee000000000001 that no
  invoice line names: 1.01, catalog.
* gpu-nd-d, azure, 8 x H100 at 12.00, 08:00-12:00; cloud_resource_id written in other case (and
  with spaces around it) than the Azure export writes the VM's ResourceId. One daily line
  (ND96isr H100 v5, 4 x '1 Hour', 392.88) covers 00:00-24:00; the node was active in 4 of those
  hours (3,600 s each): 392,880,000 / 4 = 98,220,000 each, 392.88 in all (catalog: 4 x 96 = 384).
  Rate 98.22 / 8 = 12.2775.
* gpu-a3-e, gcp, 8 x H100 at 11.00, 14:00-16:00, cloud_resource_id the instance's
  resource.global_name. The detailed export bills, per hour, GPUs 70.00 + cores 12.00 + RAM 6.49 =
  88.49: 2 x 88,490,000, 176.98 in all. Rate 88.49 / 8 = 11.06125.

Self-hosted total of the day: 323.200001 + 1.60 + 1.01 + 392.88 + 176.98 = 895.670001.

Accounting (rows in = loaded + duplicate + quarantined + skipped):
* CUR: 8 lines: 4 EC2 instance-hour lines of GPU instances (3 of gpu-p5-a, 1 of a g6.xlarge no
  node names) and 1 Bedrock line loaded; the EBS volume, the S3 line and an m7i.large (not an
  accelerated instance: never a GPU node) skipped -> (8, 5, 0, 0, 3).
* Azure: the ND H100 v5 VM line loaded; the disk line (Storage) and a D4s v5 VM (not N series)
  skipped -> (3, 1, 0, 0, 2).
* GCP: 6 instance lines and 1 boot-disk line (Compute Engine, a resource) loaded, the Cloud
  Storage line skipped -> (8, 7, 0, 0, 1).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bills" / "cloud" / "gpu_nodes"
AZ_VM = ("  /SUBSCRIPTIONS/0a1b2c3d-0000-4000-8000-000000000001/resourcegroups/RG-GPU/providers/microsoft.compute/"
         "virtualmachines/ND-H100-1  ")
GCP_VM = "//compute.googleapis.com/projects/ai-prod-4821/zones/us-central1-a/instances/4815162342108001"
NODES = (
    "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to,cloud_resource_id\n"
    "gpu-p5-a,aws,H100,8,qwen3-32b,fp8,6.00,2026-06-10T00:00:00Z,2026-06-10T06:00:00Z,i-0a1b2c3d4e5f60001\n"
    "gpu-l4-b,aws,L4,1,qwen3-32b,fp8,0.80,2026-06-10T00:00:00Z,2026-06-10T02:00:00Z,\n"
    "gpu-a10-c,aws,A10G,1,qwen3-32b,fp8,1.01,2026-06-10T00:00:00Z,2026-06-10T01:00:00Z,i-0eeee000000000001\n"
    f"gpu-nd-d,azure,H100,8,qwen3-32b,fp8,12.00,2026-06-10T08:00:00Z,2026-06-10T12:00:00Z,\"{AZ_VM}\"\n"
    f"gpu-a3-e,gcp,H100,8,qwen3-32b,fp8,11.00,2026-06-10T14:00:00Z,2026-06-10T16:00:00Z,{GCP_VM}\n"
)
CALLS = [
    {"ts": "2026-06-10T00:30:00Z", "request_id": "s1", "model": "qwen3-32b", "node_id": "gpu-p5-a", "team": "search",
     "latency_ms": 2000, "usage": {"prompt_tokens": 1000, "completion_tokens": 500}},
    {"ts": "2026-06-10T09:15:00Z", "request_id": "s2", "model": "qwen3-32b", "node_id": "gpu-nd-d", "team": "search",
     "latency_ms": 3000, "usage": {"prompt_tokens": 2000, "completion_tokens": 800}},
]
H = dt.datetime(2026, 6, 10)


def hour(h: int) -> dt.datetime:
    return H + dt.timedelta(hours=h)


def landing(root: Path, nodes: str = NODES) -> Path:
    land = root / "landing"
    for cloud in ("aws", "azure", "gcp"):
        shutil.copytree(FIXTURES / cloud, land / "bills" / cloud)
    (land / "catalog").mkdir(parents=True)
    (land / "catalog" / "nodes.csv").write_text(nodes)
    (land / "telemetry" / "requests").mkdir(parents=True)
    (land / "telemetry" / "requests" / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    return land


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("nodeinvoice")
    con, summary = build_warehouse(landing(root), root / "w.duckdb")
    assert summary.total("rows_quarantined") == 0, [f for f in summary.files if f.rows_quarantined]
    yield con
    con.close()


def rows(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


def test_files_are_accounted_with_the_compute_lines_loaded(wh):
    files = {f.split("/")[1]: (n, loaded, dup, q, skipped) for f, n, loaded, dup, q, skipped in rows(
        wh, "SELECT file, rows_in, rows_loaded, rows_duplicate, rows_quarantined, rows_skipped "
            "FROM ops.ingested_files WHERE folder LIKE 'bills/%'")}
    assert files == {"aws": (8, 5, 0, 0, 3), "azure": (3, 1, 0, 0, 2), "gcp": (8, 7, 0, 0, 1)}
    assert rows(wh, "SELECT count(*) FROM ops.ingested_files WHERE rows_in <> "
                    "rows_loaded + rows_duplicate + rows_quarantined + coalesce(rows_skipped, 0)") == [(0,)]


def test_compute_lines_are_kept_narrow_with_their_own_bucket(wh):
    got = rows(wh, "SELECT cloud, provider, rule, resource_id, usage_start, usage_end, quantity, unit, cost_usd, "
                   "charge_kind, model, tokens FROM stg.cloud_bill_lines WHERE bucket = 'instance_hours' "
                   "AND cloud = 'aws' ORDER BY line")
    assert [r[:4] for r in got] == [("aws", "aws", "aws.ec2_instance_hours", "i-0a1b2c3d4e5f60001")] * 3 + [
        ("aws", "aws", "aws.ec2_instance_hours", "i-0ffff000000000002")]
    assert got[2][4:] == (hour(2), hour(5), D(3), "Hrs", D("165.120001"), "usage", None, None)
    assert rows(wh, "SELECT cloud, rule, count(*) FROM stg.cloud_bill_lines WHERE bucket = 'instance_hours' "
                    "GROUP BY ALL ORDER BY 1") == [
        ("aws", "aws.ec2_instance_hours", 4), ("azure", "azure.virtual_machine", 1), ("gcp", "gcp.compute_engine", 7)]
    # they are not AI lines: not in the invoice reconciliation (the Bedrock line is)
    assert rows(wh, "SELECT count(*) FROM core.cloud_bill_lines WHERE bucket = 'instance_hours'") == [(0,)]
    assert rows(wh, "SELECT provider, billed_usd FROM marts.bill_reconciliation WHERE provider IN "
                    "('aws', 'azure', 'gcp', 'bedrock', 'vertex_ai')") == [("bedrock", D("0.30"))]


def test_invoice_hours_spread_each_line_to_the_micro_dollar(wh):
    got = {(n, h): r for n, h, *r in rows(
        wh, "SELECT node_id, hour, cost_micro_usd, usd_per_gpu_hour, price_source, node_cost_source "
            "FROM core.node_hours_cost")}
    a = "gpu-p5-a"
    assert got[a, hour(0)] == [55_040_000, D("6.88"), "invoice", "invoice"]
    assert got[a, hour(1)] == [55_040_000, D("6.88"), "invoice", "invoice"]
    assert got[a, hour(2)] == [55_040_001, D("6.88"), "invoice", "invoice"]  # the leftover micro-dollar
    assert got[a, hour(3)][:1] == got[a, hour(4)][:1] == [55_040_000]
    assert got[a, hour(5)] == [48_000_000, D("6"), "nodes_csv", "catalog"]  # no line covers 05-06
    for h in (8, 9, 10, 11):
        assert got["gpu-nd-d", hour(h)] == [98_220_000, D("12.2775"), "invoice", "invoice"]
    for h in (14, 15):
        assert got["gpu-a3-e", hour(h)] == [88_490_000, D("11.06125"), "invoice", "invoice"]
    assert got["gpu-l4-b", hour(0)] == [800_000, D("0.8"), "nodes_csv", "catalog"]
    assert got["gpu-a10-c", hour(0)] == [1_010_000, D("1.01"), "nodes_csv", "catalog"]


def test_node_hours_mart_says_where_the_cost_comes_from(wh):
    got = {n: r for n, *r in rows(
        wh, "SELECT node_id, sum(cost_usd), count(*) FILTER (WHERE node_cost_source = 'invoice'), "
            "count(*) FILTER (WHERE node_cost_source = 'catalog') FROM marts.node_hours GROUP BY ALL")}
    assert got == {
        "gpu-p5-a": [D("323.200001"), 5, 1],
        "gpu-l4-b": [D("1.60"), 0, 2],
        "gpu-a10-c": [D("1.01"), 0, 1],
        "gpu-nd-d": [D("392.88"), 4, 0],
        "gpu-a3-e": [D("176.98"), 2, 0],
    }
    assert rows(wh, "SELECT DISTINCT node_cost_source FROM marts.node_hours ORDER BY 1") == [("catalog",), ("invoice",)]


def test_the_downstream_marts_carry_the_invoice_figure_and_add_up(wh):
    # allocated to calls + idle = paid, per node (the checks), and the day's self-hosted spend is the nodes' cost
    assert rows(wh, "SELECT sum(cost_usd) FROM marts.daily_spend WHERE source = 'self_hosted' "
                    "AND day = DATE '2026-06-10'") == [(D("895.670001"),)]
    assert rows(wh, "SELECT node_id, sum(allocated_micro_usd) FROM core.self_hosted_allocation "
                    "WHERE node_id IN ('gpu-p5-a', 'gpu-nd-d') GROUP BY ALL ORDER BY 1") == [
        ("gpu-nd-d", 392_880_000), ("gpu-p5-a", 323_200_001)]
    assert rows(wh, "SELECT sum(usage_cost_usd) + sum(idle_cost_usd), sum(cost_usd) FROM marts.node_hours") == [
        (D("895.670001"), D("895.670001"))]
    for check in ("node_hours_paid_matches", "allocation_balances"):
        sql = (Path(__file__).resolve().parents[2] / "sql" / "checks" / f"{check}.sql").read_text()
        assert wh.execute(sql).fetchall() == [], check


def test_a_node_without_cloud_resource_id_keeps_the_catalog_price(tmp_path):
    # the same exports, nodes.csv of before this column: every hour at the catalog price
    old = "\n".join(line.rsplit(",", 1)[0] if not line.startswith("gpu-nd-d") else
                    line.split(",\"")[0] for line in NODES.strip().splitlines()) + "\n"
    con, _ = build_warehouse(landing(tmp_path, old), tmp_path / "w.duckdb")
    got = dict(rows(con, "SELECT node_id, sum(cost_usd) FROM marts.node_hours GROUP BY ALL"))
    # 6 x 8 x 6.00; 4 x 8 x 12.00; 2 x 8 x 11.00
    assert got == {"gpu-p5-a": D("288"), "gpu-l4-b": D("1.6"), "gpu-a10-c": D("1.01"), "gpu-nd-d": D("384"),
                   "gpu-a3-e": D("176")}
    assert rows(con, "SELECT DISTINCT node_cost_source, price_source FROM core.node_hours_cost") == [
        ("catalog", "nodes_csv")]
    con.close()


CUR_HEADER = (FIXTURES / "aws" / "thinktax-cur2" / "data" / "BILLING_PERIOD=2026-06" / "thinktax-cur2-00001.csv"
              ).read_text().splitlines()[0]


def test_bad_compute_lines_are_quarantined_as_the_ai_lines_are(tmp_path):
    land = tmp_path / "landing"
    cur = land / "bills" / "aws" / "bad" / "data" / "BILLING_PERIOD=2026-06" / "bad-00001.csv"
    cur.parent.mkdir(parents=True)
    pre = "2026-06-01T00:00:00.000Z,,111122223333,2026-06-10T00:00:00.000Z,2026-06-10T01:00:00.000Z,Usage,AmazonEC2,"
    cur.write_text(CUR_HEADER + "\n"
                   + pre + "USE1-BoxUsage:p5.48xlarge,RunInstances,-1,-55.04,-55.04,USD,i-0a1b2c3d4e5f60001,,"
                           "us-east-1,Hrs,OnDemand,{},{}\n"
                   + pre + "USE1-BoxUsage:p5.48xlarge,RunInstances,1,55.04,55.04,USD,i-0a1b2c3d4e5f60001,,"
                           "us-east-1,Hrs,OnDemand,{},{}\n")
    az = land / "bills" / "azure" / "eur" / "part_0_0001.csv"
    az.parent.mkdir(parents=True)
    az.write_text("SubscriptionId,Date,ChargeType,PricingModel,MeterCategory,MeterSubCategory,MeterName,Quantity,"
                  "UnitOfMeasure,CostInBillingCurrency,BillingCurrency,ResourceId\n"
                  "sub-1,06/10/2026,Usage,OnDemand,Virtual Machines,NDsr H100 v5 Series,ND96isr H100 v5,4,1 Hour,"
                  "360.00,EUR,/subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/nd-1\n")
    con, _ = build_warehouse(land, tmp_path / "w.duckdb")
    got = rows(con, "SELECT q.line, q.field, q.reason FROM ops.quarantine q ORDER BY q.file, q.line")
    assert [(line, field) for line, field, _ in got] == [(2, "line_item_usage_amount"), (2, "BillingCurrency")]
    assert got[0][2].startswith("negative usage amount -1")
    assert got[1][2].startswith("currency EUR: no FX rate")
    assert rows(con, "SELECT folder, rows_in, rows_loaded, rows_quarantined, rows_skipped FROM ops.ingested_files "
                     "ORDER BY folder") == [("bills/aws", 2, 1, 1, 0), ("bills/azure", 1, 0, 1, 0)]
    con.close()


def test_which_compute_lines_are_kept(tmp_path):
    """The compute filters, one spelling a line (sources/bills_cloud.py CLOUDS): GPU instance hours with a
    resource id, on demand or spot; everything else is a skipped line."""
    from sources.base import ParseContext
    from sources.bills_cloud import parse_path

    pre = "2026-06-01T00:00:00.000Z,,111122223333,2026-06-10T00:00:00.000Z,2026-06-10T01:00:00.000Z,"
    aws = {  # line type, usage type, resource id -> kept
        ("Usage", "BoxUsage:p4d.24xlarge", "i-01"): True,  # us-east-1 writes no region prefix
        ("Usage", "USW2-SpotUsage:g5.xlarge", "i-02"): True,
        ("Usage", "USE1-DedicatedUsage:trn1.32xlarge", "i-03"): True,
        ("Usage", "EUC1-BoxUsage:inf2.xlarge", "i-04"): True,
        ("Usage", "USE1-BoxUsage:m7g.large", "i-05"): False,  # not an accelerated family
        ("Usage", "USE1-BoxUsage:p5.48xlarge", ""): False,  # no resource id
        ("DiscountedUsage", "USE1-BoxUsage:p5.48xlarge", "i-06"): False,  # a reserved instance's hour
        ("SavingsPlanCoveredUsage", "USE1-BoxUsage:p5.48xlarge", "i-07"): False,
        ("Usage", "USE1-EBS:VolumeUsage.gp3", "vol-01"): False,
    }
    cur = tmp_path / "cur.csv"
    cur.write_text(CUR_HEADER + "\n" + "".join(
        f"{pre}{lt},AmazonEC2,{ut},RunInstances,1,1.00,1.00,USD,{rid},,us-east-1,Hrs,OnDemand,{{}},{{}}\n"
        for lt, ut, rid in aws))
    parsed = parse_path(cur, "bills/aws/cur.csv", ParseContext(dt.datetime(2026, 7, 1)), "aws")
    kept = {(r["charge_type"], r["sku"], r["resource_id"] or "") for r in parsed.rows.to_pylist()}
    assert kept == {k for k, v in aws.items() if v}
    assert parsed.skipped == sum(not v for v in aws.values()) and parsed.rejects == []

    azure = {  # MeterName, MeterSubCategory, PricingModel, cost -> kept
        ("NC24ads A100 v4", "NCadsA100v4 Series", "OnDemand", "10.00"): True,
        ("NV36ads A10 v5", "NVadsA10 v5 Series", "Spot", "10.00"): True,
        # a reservation's hours: at 0 in the actual-cost dataset (the money is the Purchase line), with
        # their prorated share in the amortized dataset, which prices them
        ("ND96isr H100 v5", "NDsr H100 v5 Series", "Reservation", "0"): False,
        ("ND96isr H100 v5", "NDsr H100 v5 Series", "Reservation", "8.50"): True,
        ("D4s v5", "Dsv5 Series", "OnDemand", "10.00"): False,  # not an N-series VM
    }
    az = tmp_path / "az.csv"
    az.write_text("SubscriptionId,Date,ChargeType,PricingModel,MeterCategory,MeterSubCategory,MeterName,Quantity,"
                  "UnitOfMeasure,CostInBillingCurrency,BillingCurrency,ResourceId\n" + "".join(
                      f"sub-1,06/10/2026,Usage,{pm},Virtual Machines,{sub},{meter},24,1 Hour,{cost},USD,/vm/{i}\n"
                      for i, (meter, sub, pm, cost) in enumerate(azure)))
    parsed = parse_path(az, "bills/azure/az.csv", ParseContext(dt.datetime(2026, 7, 1)), "azure")
    assert {(r["sku"], r["pricing_model"], r["cost"]) for r in parsed.rows.to_pylist()} == {
        (k[0], k[2], D(k[3])) for k, v in azure.items() if v}
    assert {r["bucket"] for r in parsed.rows.to_pylist()} == {"instance_hours"}
    assert {r["cost_basis"] for r in parsed.rows.to_pylist() if r["pricing_model"] == "Reservation"} == {"amortized"}
    assert parsed.skipped == 2


def test_node_invoice_lines_name_the_node_and_the_hours(wh):
    got = {(c, s, r): rest for c, s, r, *rest in rows(
        wh, "SELECT cloud, sku, resource_id, usage_hours, cost_usd, node_id, in_node_hours "
            "FROM core.node_invoice_lines WHERE usage_start = TIMESTAMP '2026-06-10 02:00:00' OR cloud <> 'gcp'")}
    # 3 'Hrs' of p5.48xlarge; the Azure daily line 4 x '1 Hour'; the GPU line of the A3 VM 28,800 seconds = 8 hours
    assert got["aws", "USE1-BoxUsage:p5.48xlarge", "i-0a1b2c3d4e5f60001"] == [3.0, D("165.120001"), "gpu-p5-a", True]
    assert got["aws", "USE1-BoxUsage:g6.xlarge", "i-0ffff000000000002"] == [24.0, D("19.3104"), None, False]
    vm = ("azure", "ND96isr H100 v5",
          "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/rg-gpu/providers/Microsoft.Compute/"
          "virtualMachines/nd-h100-1")
    assert got[vm] == [4.0, D("392.88"), "gpu-nd-d", True]
    assert rows(wh, "SELECT usage_hours, node_id FROM core.node_invoice_lines WHERE cloud = 'gcp' "
                    "AND sku LIKE 'Nvidia%' ORDER BY usage_start") == [(8.0, "gpu-a3-e"), (8.0, "gpu-a3-e")]
    assert rows(wh, "SELECT usage_hours FROM core.node_invoice_lines WHERE sku LIKE '%Ram%' LIMIT 1") == [(None,)]
    # what the invoice lines in node hours bill = what the invoice-priced node-hours cost
    # 55.04 + 55.04 + 165.120001 = 275.200001 (gpu-p5-a) + 392.88 (gpu-nd-d) + 176.98 (gpu-a3-e) = 845.060001
    assert rows(wh, "SELECT sum(cost_usd) FROM core.node_invoice_lines WHERE in_node_hours") == [(D("845.060001"),)]
    assert rows(wh, "SELECT sum(cost_micro_usd) FROM core.node_hours_cost WHERE node_cost_source = 'invoice'") == [
        (845_060_001,)]


def test_a_line_two_nodes_name_is_split_between_them_not_counted_twice(tmp_path):
    """Node x (00:00-02:00) and its replacement y (02:00-04:00) name the same instance; one CUR line of
    4.000003 over 00:00-04:00: 4,000,003 micro-USD over 4 hours of 3,600 s = 1,000,000.75 each, floors
    4 x 1,000,000, leftover 3 to the first three (node, hour) in order: x 00 and x 01 get 1,000,001, y 02
    gets 1,000,001, y 03 1,000,000 -> x 2.000002, y 2.000001: 4.000003 in all, once."""
    land = tmp_path / "landing"
    cur = land / "bills" / "aws" / "cur" / "data" / "BILLING_PERIOD=2026-06" / "cur-00001.csv"
    cur.parent.mkdir(parents=True)
    cur.write_text(CUR_HEADER + "\n2026-06-01T00:00:00.000Z,,111122223333,2026-06-10T00:00:00.000Z,"
                   "2026-06-10T04:00:00.000Z,Usage,AmazonEC2,USE1-BoxUsage:g6e.xlarge,RunInstances,4,4.000003,4.000003,"
                   "USD,i-0abc,,us-east-1,Hrs,OnDemand,{},{}\n")
    (land / "catalog").mkdir()
    (land / "catalog" / "nodes.csv").write_text(
        "node_id,provider,gpu_type,gpus,model,usd_per_gpu_hour,active_from,active_to,cloud_resource_id\n"
        "x,aws,L40S,1,qwen3-32b,1.00,2026-06-10T00:00:00Z,2026-06-10T02:00:00Z,I-0ABC\n"
        "y,aws,L40S,1,qwen3-32b,1.00,2026-06-10T02:00:00Z,2026-06-10T04:00:00Z,i-0abc\n")
    (land / "telemetry" / "requests").mkdir(parents=True)
    (land / "telemetry" / "requests" / "calls.jsonl").write_text(json.dumps(CALLS[0] | {"node_id": "x"}) + "\n")
    con, _ = build_warehouse(land, tmp_path / "w.duckdb")
    assert rows(con, "SELECT node_id, hour, cost_micro_usd, node_cost_source FROM core.node_hours_cost ORDER BY 1, 2") == [
        ("x", hour(0), 1_000_001, "invoice"), ("x", hour(1), 1_000_001, "invoice"),
        ("y", hour(2), 1_000_001, "invoice"), ("y", hour(3), 1_000_000, "invoice")]
    assert rows(con, "SELECT node_id, in_node_hours FROM core.node_invoice_lines ORDER BY 1") == [("x", True), ("y", True)]
    con.close()


def test_a_nightly_run_that_lands_the_invoice_reprices_the_nodes_as_a_full_rebuild_would(tmp_path):
    """Night 1: nodes.csv and calls, no invoice (catalog prices). Night 2: the three exports land; the
    incremental run rebuilds the days they touch and every table equals a full rebuild."""
    from tests.warehouse.test_incremental import _run, _same_as_full

    land = landing(tmp_path)
    bills = tmp_path / "bills-later"
    shutil.move(land / "bills", bills)
    wh = tmp_path / "wh.duckdb"
    _run(wh, land, "one")
    con = duckdb.connect(str(wh), read_only=True)
    assert rows(con, "SELECT sum(cost_usd) FROM marts.node_hours WHERE node_id = 'gpu-p5-a'") == [(D("288"),)]
    con.close()
    shutil.move(bills, land / "bills")
    scope = _run(wh, land, "two")
    assert not scope.full and dt.date(2026, 6, 10) in scope.days
    con = duckdb.connect(str(wh), read_only=True)
    assert rows(con, "SELECT sum(cost_usd) FROM marts.node_hours WHERE node_id = 'gpu-p5-a'") == [(D("323.200001"),)]
    con.close()
    _same_as_full(wh, land, tmp_path)


def test_reserved_and_savings_plan_hours_are_priced_at_their_amortized_cost(tmp_path):
    """A p5 node (8 x H100, catalog 6.00 per GPU-hour) bought as a reserved instance and under a savings
    plan. The CUR writes its covered hours as DiscountedUsage (unblended cost 0; the hour's amortized
    cost in reservation_effective_cost) and SavingsPlanCoveredUsage (unblended cost = the on-demand
    55.04, taken back by a SavingsPlanNegation line; the amortized cost in
    savings_plan_savings_plan_effective_cost): the AWS CUR data dictionary's "Reservation details" and
    "Savings Plans details" columns, CUR 2.0 spelling. Worked by hand:
    * 00-01 DiscountedUsage, effective 31.464 -> 31,464,000 micro-USD, 31.464 / 8 = 3.933 per GPU-hour;
    * 01-02 SavingsPlanCoveredUsage, effective 38.528 (not the 55.04 unblended) -> 38,528,000, 4.816;
    * 02-03 DiscountedUsage with no effective cost written: its money is elsewhere (the RI fee), the
      line is skipped and the hour keeps the catalog price, 8 x 6.00 = 48,000,000;
    * 03-04 DiscountedUsage with effective cost 'n/a': quarantined, named; the hour keeps the catalog price.
    Node: 31.464 + 38.528 + 48 + 48 = 165.992. The negation line is no compute line: skipped.
    Accounting: 5 lines in = 2 loaded + 1 quarantined + 2 skipped."""
    land = tmp_path / "landing"
    cur = land / "bills" / "aws" / "ri" / "data" / "BILLING_PERIOD=2026-06" / "ri-00001.csv"
    cur.parent.mkdir(parents=True)

    def line(h: int, line_type: str, unblended: str, ri: str = "", sp: str = "", usage_type: str = "USE1-BoxUsage:p5.48xlarge") -> str:
        return (f"2026-06-01T00:00:00.000Z,,111122223333,2026-06-10T{h:02d}:00:00.000Z,2026-06-10T{h + 1:02d}:00:00.000Z,"
                f"{line_type},AmazonEC2,{usage_type},RunInstances,1,{unblended},{unblended},USD,i-0r,,us-east-1,Hrs,"
                f"Reserved,{{}},{{}},{ri},{sp}\n")
    cur.write_text(CUR_HEADER + ",reservation_effective_cost,savings_plan_savings_plan_effective_cost\n"
                   + line(0, "DiscountedUsage", "0", ri="31.464")
                   + line(1, "SavingsPlanCoveredUsage", "55.04", sp="38.528")
                   + line(1, "SavingsPlanNegation", "-16.512")
                   + line(2, "DiscountedUsage", "0")
                   + line(3, "DiscountedUsage", "0", ri="n/a"))
    (land / "catalog").mkdir(parents=True)
    (land / "catalog" / "nodes.csv").write_text(
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to,cloud_resource_id\n"
        "gpu-p5-r,aws,H100,8,qwen3-32b,fp8,6.00,2026-06-10T00:00:00Z,2026-06-10T04:00:00Z,i-0r\n")
    (land / "telemetry" / "requests").mkdir(parents=True)
    (land / "telemetry" / "requests" / "calls.jsonl").write_text(json.dumps(CALLS[0] | {"node_id": "gpu-p5-r"}) + "\n")
    con, _ = build_warehouse(land, tmp_path / "w.duckdb")
    assert rows(con, "SELECT rows_in, rows_loaded, rows_duplicate, rows_quarantined, rows_skipped FROM ops.ingested_files "
                     "WHERE folder = 'bills/aws'") == [(5, 2, 0, 1, 2)]
    assert rows(con, "SELECT line, field, reason FROM ops.quarantine") == [
        (6, "reservation_effective_cost", "reservation_effective_cost: not a number: 'n/a'")]
    assert rows(con, "SELECT charge_type, cost_usd, amortized_cost_usd FROM stg.cloud_bill_lines ORDER BY line") == [
        ("DiscountedUsage", D("0"), D("31.464")), ("SavingsPlanCoveredUsage", D("55.04"), D("38.528"))]
    got = {h: r for h, *r in rows(con, "SELECT hour, cost_micro_usd, usd_per_gpu_hour, node_cost_source "
                                       "FROM core.node_hours_cost ORDER BY hour")}
    assert got == {hour(0): [31_464_000, D("3.933"), "invoice"], hour(1): [38_528_000, D("4.816"), "invoice"],
                   hour(2): [48_000_000, D("6"), "catalog"], hour(3): [48_000_000, D("6"), "catalog"]}
    assert rows(con, "SELECT sum(cost_usd) FROM marts.node_hours") == [(D("165.992"),)]
    con.close()
