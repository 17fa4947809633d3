"""GPU table and name normalisation, including the names in the real SkyPilot catalogs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from models.gpus import GPUS, UnknownGpuError, gpu_spec, normalize_gpu_name

SKYPILOT = Path(__file__).resolve().parents[2] / "data" / "real" / "skypilot"


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("H100", "H100"),
        ("H100-SXM", "H100"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("gpu-h100-sxm", "H100"),
        ("H100-MEGA", "H100"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("H100 NVL", "H100-NVL"),
        ("A100", "A100-40GB"),
        ("A100-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("h200", "H200"),
        ("NVIDIA H200 141GB HBM3e", "H200"),
        ("GH200", "GH200"),
        ("B200", "B200"),
        ("NVIDIA B300", "B300"),
        ("L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("AMD Instinct MI300X", "MI300X"),
    ],
)
def test_normalize(raw: str, key: str) -> None:
    assert normalize_gpu_name(raw) == key


@pytest.mark.parametrize("raw", ["V100", "RTX6000", "L40", "", "TPU-v5"])
def test_unknown_gpu_raises_with_known_list(raw: str) -> None:
    with pytest.raises(UnknownGpuError, match="unknown GPU"):
        normalize_gpu_name(raw)


def test_required_gpus_present_with_datasheet_figures() -> None:
    for key in ("A100-40GB", "A100-80GB", "H100", "H200", "B200", "B300", "L40S"):
        assert key in GPUS
    h100, h200 = GPUS["H100"], GPUS["H200"]
    assert (h100.memory_gb, h100.hbm_tb_s, h100.bf16_tflops, h100.fp8_tflops) == (80, 3.35, 989, 1979)
    assert (h200.memory_gb, h200.hbm_tb_s) == (141, 4.8)
    assert GPUS["B200"].hbm_tb_s == 8.0 and GPUS["B300"].memory_gb == 288


def test_tflops_by_precision() -> None:
    assert gpu_spec("H100").tflops("fp8") == 1979
    assert gpu_spec("H100").tflops("bf16") == 989
    # A100 has no fp8 tensor cores: fp8 weights run at the bf16 rate
    assert gpu_spec("A100").tflops("fp8") == 312
    # int4 is weight-only: activations at bf16
    assert gpu_spec("H200").tflops("int4") == 989


def test_every_datacenter_gpu_in_real_catalogs_resolves_or_is_known_unsupported() -> None:
    names: set[str] = set()
    for path in SKYPILOT.glob("*.csv"):
        with path.open(newline="") as f:
            names |= {row["AcceleratorName"] for row in csv.DictReader(f) if row.get("AcceleratorName")}
    unsupported = {"V100", "A10", "A6000", "RTX6000"}  # not sized by thinktax
    for name in sorted(names - unsupported):
        assert normalize_gpu_name(name) in GPUS, name
    assert {"H100", "H200", "B200", "A100", "A100-80GB", "L40S"} <= names
