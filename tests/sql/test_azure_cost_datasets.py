"""Azure's two cost-details datasets, landed side by side (issue 25 item 3).

Microsoft's "Get Enterprise Agreement and Microsoft Customer Agreement reservation costs and usage"
(learn.microsoft.com/azure/cost-management-billing/reservations/understand-reserved-instance-usage-ea)
describes them: the *actual* cost dataset reconciles with the invoice — a reservation is a
`ChargeType` `Purchase` line in the month it is bought, and the usage the reservation covers has an
EffectivePrice of zero; the *amortized* dataset has no purchase lines — the covered usage carries the
reservation's prorated cost and the part not used that day is an `UnusedReservation` line. A team
that exports both (a common set-up: one for finance, one for chargeback) lands both.

The exports below use the columns of tests/fixtures/bills/cloud/azure (an EA cost-details file) and
bill June 2026 for one subscription:

| line | actual export | amortized export |
|---|---|---|
| gpt-4o input, OnDemand, 06/10, 1,600 x 1K | $4.00 | $4.00 (the same line) |
| PTU `Provisioned Managed Global`, PricingModel Reservation, Usage, 06/10, 24 x 1 Hour | $0.00 | $8.00 |
| the reservation: Purchase 06/01, 1 x 1/Month | $300.00 | — |
| UnusedReservation 06/10, 6 x 1 Hour | — | $2.00 |

So: the actual file loads 3 lines; the amortized file loads 2 and its gpt-4o line is a duplicate of
the actual one (3 = 2 + 1: no conflicting_duplicate, although its PTU usage line has the actual
line's key with another cost). The invoice (the reconciliations) is the actual dataset:
$4.00 + $0.00 on 06-10 and $300.00 on 06-01. What June cost per model (marts.effective_rates,
marts.commitments) is the amortized dataset: gpt-4o $4.00 and the PTU (model NULL: a PTU meter names
no model) 8.00 + 2.00 = $10.00, not $300 and not $310. With the amortized export alone, it is also
the invoice: 4.00 + 8.00 + 2.00 = $14.00 on 06-10.
"""

from __future__ import annotations

import csv
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse
from tests.sql.test_cloud_bills import FIXTURES

SHEET = "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,currency\nazure,gpt-4o,2.5,1.25,10,USD\n"
SRC = next((FIXTURES / "azure").rglob("*.csv")).read_text().splitlines()
HEAD = SRC[0].split(",")
INPUT = dict(zip(HEAD, next(csv.reader([next(r for r in SRC if "gpt 4o 1120 Inp glbl" in r)])), strict=True))
PTU = dict(zip(HEAD, next(csv.reader([next(r for r in SRC if "Provisioned Managed" in r)])), strict=True))
RESERVATION = {"PricingModel": "Reservation", "ReservationId": "r-ptu-1", "ReservationName": "ptu-june"}

ACTUAL = [
    INPUT,
    PTU | RESERVATION | {"CostInBillingCurrency": "0", "EffectivePrice": "0"},
    PTU | RESERVATION | {"Date": "06/01/2026", "ChargeType": "Purchase", "Quantity": "1", "UnitOfMeasure": "1/Month",
                         "CostInBillingCurrency": "300.00", "EffectivePrice": "300.00", "UnitPrice": "300.00"},
]
AMORTIZED = [
    INPUT,
    PTU | RESERVATION | {"CostInBillingCurrency": "8.00", "EffectivePrice": "0.3333333333"},
    PTU | RESERVATION | {"ChargeType": "UnusedReservation", "Quantity": "6", "CostInBillingCurrency": "2.00",
                         "EffectivePrice": "0.3333333333"},
]


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEAD)
        for r in rows:
            w.writerow([r[h] for h in HEAD])


def _landing(root: Path, exports: dict[str, list[dict]]) -> Path:
    landing = root / "landing"
    (landing / "prices" / "llm").mkdir(parents=True)
    (landing / "prices" / "llm" / "azure.2026-06-01.csv").write_text(SHEET)
    for name, rows in exports.items():
        _write(landing / "bills" / "azure" / "daily" / name / "20260601-20260630" / "part_0_0001.csv", rows)
    return landing


@pytest.fixture(scope="module", params=[("thinktax-actual", "thinktax-amortized"), ("a-amortized", "b-actual")],
                ids=["actual-first", "amortized-first"])
def both(request, tmp_path_factory) -> tuple[duckdb.DuckDBPyConnection, dict, str, str]:
    actual, amortized = request.param if request.param[0].endswith("actual") else request.param[::-1]
    root = tmp_path_factory.mktemp("azure2")
    con, summary = build_warehouse(_landing(root, {actual: ACTUAL, amortized: AMORTIZED}), root / "w.duckdb")
    files = {f.file.split("/")[3]: (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) for f in summary.files
             if f.file.startswith("bills/")}
    yield con, files, actual, amortized
    con.close()


def test_the_two_datasets_share_only_the_lines_that_are_the_same(both):
    con, files, actual, amortized = both
    first = min(actual, amortized)  # files are ingested in path order: the later one holds the duplicate
    assert files[first] == (3, 3, 0, 0)
    assert files[max(actual, amortized)] == (3, 2, 1, 0)
    assert con.execute("SELECT count(*) FROM ops.quarantine").fetchone()[0] == 0
    got = sorted(con.execute("SELECT charge_type, cost_basis, cost FROM stg.cloud_bill_lines").fetchall(),
                 key=lambda r: (r[0], r[1] or "", r[2]))
    assert got == [("Purchase", "actual", D("300")), ("UnusedReservation", "amortized", D("2")),
                   ("Usage", None, D("4")), ("Usage", "actual", D("0")), ("Usage", "amortized", D("8"))]


def test_the_invoice_is_the_actual_dataset(both):
    con, *_ = both
    got = con.execute("SELECT day, sum(billed_usd) FROM marts.bill_reconciliation WHERE provider = 'azure' "
                      "GROUP BY day ORDER BY day").fetchall()
    assert [(d.isoformat(), v) for d, v in got] == [("2026-06-01", D("300")), ("2026-06-10", D("4"))]
    inv = con.execute("SELECT sum(invoice_usd) FROM marts.invoice_reconciliation WHERE provider = 'azure'").fetchone()[0]
    assert inv == D("304")


def test_what_june_cost_per_model_is_the_amortized_dataset(both):
    con, *_ = both
    got = dict(((m, v) for m, v in con.execute(
        "SELECT model, list_usd FROM marts.effective_rates WHERE provider = 'azure'").fetchall()))
    assert got == {"gpt-4o": D("4"), None: D("10")}
    paid = con.execute("SELECT paid_usd FROM marts.commitments WHERE provider = 'azure' AND source = 'invoice'").fetchall()
    assert paid == [(D("10"),)]


def test_one_dataset_alone_is_the_invoice(tmp_path):
    con, summary = build_warehouse(_landing(tmp_path, {"thinktax-amortized": AMORTIZED}), tmp_path / "w.duckdb")
    assert summary.total("rows_loaded") == 4  # the sheet's row and the three lines
    got = con.execute("SELECT day, sum(billed_usd) FROM marts.bill_reconciliation WHERE provider = 'azure' GROUP BY day").fetchall()
    assert [(d.isoformat(), v) for d, v in got] == [("2026-06-10", D("14"))]
    assert con.execute("SELECT DISTINCT cost_basis FROM stg.cloud_bill_lines WHERE charge_type <> 'Usage' "
                       "OR cost <> 4").fetchall() == [("amortized",)]
    con.close()
