"""GPU price-sheet parsers: SkyPilot catalog vms.csv (real files) and the thinktax GPU CSV.

Real files: data/real/skypilot/ (see data/real/README.md); fixtures: tests/fixtures/prices/.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from sources.base import ParseContext, SourceFormatError
from sources.prices_gpu import (
    SCHEMA,
    SPECS,
    parse_skypilot,
    parse_thinktax_gpu,
    provider_from_name,
)
from sources.prices_llm import SPECS as LLM_SPECS

ROOT = Path(__file__).resolve().parents[2]
SKY = ROOT / "data" / "real" / "skypilot"
FIX = ROOT / "tests" / "fixtures" / "prices"
CTX = ParseContext(ingested_at=dt.datetime(2026, 8, 1, 12, 0))
KEY = ("provider", "gpu_type", "gpus_per_node", "pricing", "region", "instance_type", "effective_from")

FILES = {
    "nebius": "skypilot_catalog_v7_nebius_vms.csv",
    "gcp": "anycloud_gcp_vms.datacenter_gpus.csv",
    "azure": "anycloud_azure_vms.datacenter_gpus.csv",
    "lambda": "anycloud_lambda_vms.csv",
}


def check_contract(p):
    assert p.table == "stg.gpu_prices"
    assert p.rows.schema.equals(SCHEMA)
    assert p.rows_in == p.rows.num_rows + len(p.rejects)


def at(p, line, pricing="on_demand"):
    """The one row of physical line ``line`` with ``pricing``."""
    got = [r for r in p.rows.to_pylist() if r["line"] == line and r["pricing"] == pricing]
    assert len(got) == 1, got
    return got[0]


@pytest.fixture(scope="module")
def sky():
    return {cloud: parse_skypilot((SKY / f).read_bytes(), f"prices/gpu/{f}", CTX) for cloud, f in FILES.items()}


def test_specs():
    assert [s.format for s in SPECS] == ["skypilot_csv", "thinktax_gpu_csv"]
    assert all(s.folder == "prices/gpu" and s.key == KEY for s in SPECS)


@pytest.mark.parametrize("fname", [*FILES.values(), "skypilot_bad_vms.csv"])
def test_sniff_skypilot_in_every_column_order(fname):
    path = SKY / fname if (SKY / fname).exists() else FIX / fname
    data = path.read_bytes()
    assert [s.format for s in SPECS if s.sniff(data, "vms.dat")] == ["skypilot_csv"]
    assert not any(s.sniff(data, "vms.dat") for s in LLM_SPECS)


def test_sniff_thinktax_gpu():
    for f in ("thinktax_gpu_prices.2025-06-01.csv", "thinktax_gpu_prices_bad.csv"):
        data = (FIX / f).read_bytes()
        assert [s.format for s in SPECS if s.sniff(data, "x")] == ["thinktax_gpu_csv"]
    assert not any(s.sniff((FIX / "thinktax_prices.2025-06-01.csv").read_bytes(), "x") for s in SPECS)


def test_skypilot_real_row_counts(sky):
    # rows = GPU records (on-demand) + records with a SpotPrice (spot), measured on the files:
    #   nebius 61 records: 40 CPU VMs skipped, 21 GPU rows, 8 with SpotPrice      -> 29
    #   gcp    459 records (all GPU, attachment-only), 453 with SpotPrice          -> 912
    #   azure  241 records, 231 with SpotPrice                                     -> 472
    #   lambda 425 records: 34 CPU VMs skipped, 391 GPU rows, no SpotPrice         -> 391
    expected = {"nebius": (29, 40, 8), "gcp": (912, 0, 453), "azure": (472, 0, 231), "lambda": (391, 34, 0)}
    for cloud, p in sky.items():
        check_contract(p)
        assert p.rejects == []
        assert (p.rows.num_rows, p.meta["skipped"], p.meta["spot_rows"]) == expected[cloud]
        assert p.meta["provider"] == cloud and p.meta["provider_source"] == "file_name"
        assert set(p.rows.column("provider").to_pylist()) == {cloud}
        assert p.meta["warnings"] == []
    # GCP lists each region once per availability zone at the same price: 912 rows, 497
    # distinct natural keys; the ingest counts the other 415 as duplicates.
    gcp = sky["gcp"].rows
    assert len(set(zip(*(gcp.column(c).to_pylist() for c in KEY)))) == 497
    assert sky["azure"].meta["spot_same_as_price"] == 28


def test_skypilot_hand_worked_prices(sky):
    # nebius line 43: gpu-h100-sxm_8gpu-128vcpu-1600gb,H100,8,...,Price 23.60,eu-north1,...,SpotPrice 10.00
    r = at(sky["nebius"], 43)
    assert (r["gpu_type"], r["gpus_per_node"], r["region"], r["instance_type"]) == (
        "H100", 8, "eu-north1", "gpu-h100-sxm_8gpu-128vcpu-1600gb")
    assert r["usd_per_gpu_hour"] == Decimal("2.95")  # 23.60 / 8
    assert at(sky["nebius"], 43, "spot")["usd_per_gpu_hour"] == Decimal("1.25")  # 10.00 / 8
    # nebius line 60: gpu-b200-sxm_8gpu-160vcpu-1792gb, 44.00, us-central1, empty SpotPrice
    assert at(sky["nebius"], 60)["usd_per_gpu_hour"] == Decimal("5.5")  # 44.00 / 8
    assert [x for x in sky["nebius"].rows.to_pylist() if x["line"] == 60 and x["pricing"] == "spot"] == []
    # gcp line 223: ,,,H100,8,...,asia-east1,asia-east1-c,Price 90.74744,SpotPrice 30.3912
    r = at(sky["gcp"], 223)
    assert (r["instance_type"], r["region"], r["gpu_type"]) == (None, "asia-east1", "H100")  # attachment-only
    assert r["usd_per_gpu_hour"] == Decimal("11.34343")  # 90.74744 / 8
    assert at(sky["gcp"], 223, "spot")["usd_per_gpu_hour"] == Decimal("3.7989")  # 30.3912 / 8
    # gcp line 40: A100 x4, 6.82343 / 4 = 1.7058575 -> 6 places half-even -> 1.705858 (7 is odd: up)
    assert at(sky["gcp"], 40)["usd_per_gpu_hour"] == Decimal("1.705858")
    # azure line 175: Standard_ND96isr_H100_v5,H100,8,...,Price 142.6,SpotPrice 26.35248,australiaeast
    r = at(sky["azure"], 175)
    assert (r["usd_per_gpu_hour"], r["region"]) == (Decimal("17.825"), "australiaeast")  # 142.6 / 8
    assert at(sky["azure"], 175, "spot")["usd_per_gpu_hour"] == Decimal("3.29406")  # 26.35248 / 8
    # azure line 62: A100-80GB x2, SpotPrice 1.724841 / 2 = 0.8624205 -> 0.862420 (0 is even: stays)
    assert at(sky["azure"], 62, "spot")["usd_per_gpu_hour"] == Decimal("0.86242")
    # lambda line 325: gpu_8x_h100_sxm5,H100,8.0,...,31.92,europe-central-1 -> 31.92 / 8 = 3.99
    r = at(sky["lambda"], 325)
    assert (r["usd_per_gpu_hour"], r["gpus_per_node"], r["instance_type"]) == (Decimal("3.99"), 8, "gpu_8x_h100_sxm5")
    assert sky["gcp"].meta["rounded"] == 142 and sky["nebius"].meta["rounded"] == 0


def test_skypilot_effective_from_and_format(sky):
    for p in sky.values():
        assert p.meta["effective_from"] == dt.date(2026, 8, 1)  # no date in these names: ingestion day
        assert set(p.rows.column("source_format").to_pylist()) == {"skypilot_csv"}
    data = (SKY / FILES["nebius"]).read_bytes()
    p = parse_skypilot(data, "prices/gpu/nebius_vms.2025-09-30.csv", CTX)
    assert set(p.rows.column("effective_from").to_pylist()) == {dt.date(2025, 9, 30)}


@pytest.mark.parametrize("cloud", list(FILES))
def test_skypilot_provider_from_rows_when_name_is_neutral(cloud):
    p = parse_skypilot((SKY / FILES[cloud]).read_bytes(), "prices/gpu/vms.csv", CTX)
    assert (p.meta["provider"], p.meta["provider_source"]) == (cloud, "content")


def test_skypilot_provider_rules():
    assert provider_from_name("prices/gpu/azure/vms.csv") == ("azure", [])
    assert provider_from_name("prices/gpu/google_vms.csv") == ("gcp", [])
    assert provider_from_name("prices/gpu/vms.csv") == (None, [])
    name, warnings = provider_from_name("prices/gpu/aws_vs_azure.csv")
    assert name is None and "several clouds" in warnings[0]
    # the name wins, but a disagreement is reported
    p = parse_skypilot((SKY / FILES["azure"]).read_bytes(), "prices/gpu/gcp_vms.csv", CTX)
    assert p.meta["provider"] == "gcp" and "look like azure" in p.meta["warnings"][0]


def test_skypilot_bad_rows_and_unknown_provider():
    p = parse_skypilot((FIX / "skypilot_bad_vms.csv").read_bytes(), "prices/gpu/vms.csv", CTX)
    check_contract(p)
    assert p.meta["provider"] == "unknown" and "cannot tell the cloud" in p.meta["warnings"][0]
    got = {(r.line, r.field): r.reason for r in p.rejects}
    assert set(got) == {(2, "Price"), (3, "AcceleratorCount"), (5, "Price"), (6, "SpotPrice"), (8, "Price"),
                        (10, "AcceleratorCount")}
    assert "not a number" in got[(2, "Price")]
    assert "per-node price given as per-GPU?" in got[(5, "Price")]  # 1000 / 8 = 125 > 100
    assert "not positive" in got[(6, "SpotPrice")]  # -1
    assert got[(8, "Price")] == "empty Price"
    assert p.meta["skipped_reasons"] == {"no_gpu": 1, "fractional_gpu": 1}  # line 4 CPU, line 7 0.5 GPU
    rows = {(r["line"], r["pricing"]): r["usd_per_gpu_hour"] for r in p.rows.to_pylist()}
    assert rows == {
        (6, "on_demand"): Decimal("2.5"),  # 20 / 8; its spot price was rejected on its own
        (8, "spot"): Decimal("0.125"),  # 1 / 8; its empty Price was rejected on its own
        (9, "on_demand"): Decimal("3.333333"),  # 10 / 3 = 3.3333... rounded to 6 places
    }
    assert p.meta["rounded"] == 1


def test_skypilot_unreadable():
    with pytest.raises(SourceFormatError, match="region") as e:
        parse_skypilot(b"InstanceType,AcceleratorName,AcceleratorCount,Price\nx,H100,1,2\n", "aws_vms.csv", CTX)
    assert e.value.line == 1
    with pytest.raises(SourceFormatError, match="bad CSV"):
        parse_skypilot(b'InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx,"H100"x,1,2,r\n', "a.csv", CTX)


def test_thinktax_gpu_good():
    path = FIX / "thinktax_gpu_prices.2025-06-01.csv"
    p = parse_thinktax_gpu(path.read_bytes(), path.name, CTX)
    check_contract(p)
    assert p.rejects == []
    got = {r["provider"]: r for r in p.rows.to_pylist()}
    assert (got["nebius"]["usd_per_gpu_hour"], got["nebius"]["gpus_per_node"], got["nebius"]["pricing"]) == (
        Decimal("2.95"), 8, "on_demand")
    assert got["nebius"]["effective_from"] == dt.date(2025, 6, 1)  # from the file name
    assert (got["coreweave"]["pricing"], got["coreweave"]["effective_from"]) == ("reserved", dt.date(2025, 1, 1))
    assert (got["runpod"]["pricing"], got["runpod"]["gpus_per_node"], got["runpod"]["region"]) == ("on_demand", None, None)
    assert (got["lambda"]["pricing"], got["lambda"]["line"]) == ("spot", 5)
    assert set(p.rows.column("source_format").to_pylist()) == {"thinktax_gpu_csv"}


def test_thinktax_gpu_bad():
    path = FIX / "thinktax_gpu_prices_bad.csv"  # columns in another order than the contract's
    p = parse_thinktax_gpu(path.read_bytes(), path.name, CTX)
    check_contract(p)
    got = {r.line: r.field for r in p.rejects}
    assert got == {3: "pricing", 4: "usd_per_gpu_hour", 5: "usd_per_gpu_hour", 6: "usd_per_gpu_hour",
                   7: "usd_per_gpu_hour", 8: "gpus_per_node", 9: "effective_from", 10: "gpu_type",
                   11: "usd_per_gpu_hour"}
    reasons = {r.line: r.reason for r in p.rejects}
    assert "per-node price" in reasons[7] and "decimal comma" in reasons[11]
    assert [r["line"] for r in p.rows.to_pylist()] == [2]
    # FX: 2 EUR x 1.08 = 2.16 USD per GPU-hour
    data = b"provider,gpu_type,usd_per_gpu_hour,pricing,currency\nx,H100,2,spot,EUR\n"
    assert parse_thinktax_gpu(data, "x.csv", CTX).rejects[0].field == "currency"
    q = parse_thinktax_gpu(data, "x.csv", ParseContext(CTX.ingested_at, {"EUR": 1.08}))
    assert q.rows.to_pylist()[0]["usd_per_gpu_hour"] == Decimal("2.16")
