"""GPU specs for sizing and the decode roofline, and catalog-name normalisation.

One table, per GPU, as the vendor quotes it: memory in GB (vendors' round figures, used as
10^9 bytes per the warehouse contract; the real capacity is a few % higher, which the
memory-utilisation fraction more than absorbs), HBM bandwidth in TB/s, and *dense* (no 2:4
sparsity) tensor-core throughput in TFLOP/s for bf16 and fp8. Datasheets quote sparse
figures first; dense is half of them.

============  ======  =======  ========  ========  ==================================================
key           GB      TB/s     bf16 TF   fp8 TF    source (vendor datasheet / system spec)
============  ======  =======  ========  ========  ==================================================
A100-40GB     40      1.555    312       —         NVIDIA A100 Tensor Core GPU datasheet (SXM4 40 GB)
A100-80GB     80      2.039    312       —         NVIDIA A100 datasheet (SXM4 80 GB)
H100          80      3.35     989       1,979     NVIDIA H100 Tensor Core GPU datasheet (SXM5)
H100-PCIe     80      2.0      756       1,513     NVIDIA H100 datasheet (PCIe)
H100-NVL      94      3.9      835       1,670     NVIDIA H100 datasheet (NVL)
H800          80      3.35     989       1,979     NVIDIA H800 datasheet (SXM5; H100 with cut NVLink)
H200          141     4.8      989       1,979     NVIDIA H200 Tensor Core GPU datasheet (SXM)
GH200         96      4.0      989       1,979     NVIDIA GH200 Grace Hopper datasheet (96 GB HBM3)
B200          180     8.0      2,250     4,500     NVIDIA DGX B200 datasheet: 1,440 GB, 64 TB/s,
                                                   72 PF fp8 (sparse) for 8 GPUs
B300          288     8.0      2,250     4,500     NVIDIA HGX B300 spec: 2.3 TB, 72 PF fp8 (sparse)
                                                   and 36 PF bf16 (sparse) for 8 GPUs
L40S          48      0.864    362       733       NVIDIA L40S datasheet (GDDR6)
L4            24      0.300    121       242       NVIDIA L4 datasheet (GDDR6)
MI300X        192     5.3      1,307     2,615     AMD Instinct MI300X datasheet
============  ======  =======  ========  ========  ==================================================

A100s have no fp8 tensor cores: fp8 weights there run as weight-only (W8A16) kernels at the
bf16 rate, and int4 (W4A16) runs at the bf16 rate on every GPU. B200 is often quoted at
192 GB (the HBM on the package); NVIDIA's DGX/HGX B200 systems expose 180 GB per GPU, which
is what a rented B200 has (SkyPilot catalogs list 184,320 MiB ≈ 180 GiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model. Throughputs are dense tensor-core TFLOP/s."""

    name: str
    memory_gb: float
    hbm_tb_s: float
    bf16_tflops: float
    fp8_tflops: float | None
    source: str

    def tflops(self, precision: str) -> float:
        """Dense TFLOP/s for the matmuls of a model served at ``precision``.

        fp8 uses the fp8 rate where the GPU has fp8 tensor cores (H100: 1,979), else the
        bf16 rate (A100: 312); bf16/fp16 and int4 (weight-only W4A16) use the bf16 rate.
        """
        if precision.lower() == "fp8" and self.fp8_tflops is not None:
            return self.fp8_tflops
        return self.bf16_tflops


_TABLE: tuple[GpuSpec, ...] = (
    GpuSpec("A100-40GB", 40, 1.555, 312, None, "NVIDIA A100 datasheet, SXM4 40GB"),
    GpuSpec("A100-80GB", 80, 2.039, 312, None, "NVIDIA A100 datasheet, SXM4 80GB"),
    GpuSpec("H100", 80, 3.35, 989, 1979, "NVIDIA H100 datasheet, SXM5"),
    GpuSpec("H100-PCIe", 80, 2.0, 756, 1513, "NVIDIA H100 datasheet, PCIe"),
    GpuSpec("H100-NVL", 94, 3.9, 835, 1670, "NVIDIA H100 datasheet, NVL"),
    GpuSpec("H800", 80, 3.35, 989, 1979, "NVIDIA H800 datasheet, SXM5"),
    GpuSpec("H200", 141, 4.8, 989, 1979, "NVIDIA H200 datasheet, SXM"),
    GpuSpec("GH200", 96, 4.0, 989, 1979, "NVIDIA GH200 datasheet, 96GB HBM3"),
    GpuSpec("B200", 180, 8.0, 2250, 4500, "NVIDIA DGX B200 datasheet (per GPU)"),
    GpuSpec("B300", 288, 8.0, 2250, 4500, "NVIDIA HGX B300 specifications (per GPU)"),
    GpuSpec("L40S", 48, 0.864, 362, 733, "NVIDIA L40S datasheet"),
    GpuSpec("L4", 24, 0.3, 121, 242, "NVIDIA L4 datasheet"),
    GpuSpec("MI300X", 192, 5.3, 1307, 2615, "AMD Instinct MI300X datasheet"),
)

GPUS: dict[str, GpuSpec] = {g.name: g for g in _TABLE}

# Words in catalog/driver names that say nothing about which GPU it is.
_NOISE = {
    "NVIDIA", "TESLA", "AMD", "INSTINCT", "GPU", "GPUS", "SXM", "SXM2", "SXM4", "SXM5",
    "HBM2", "HBM2E", "HBM3", "HBM3E", "MEGA", "HGX", "DGX", "GB", "X1", "X2", "X4", "X8",
}
_FAMILIES = ("GH200", "A100", "H100", "H800", "H200", "B200", "B300", "L40S", "L4", "MI300X")


class UnknownGpuError(KeyError):
    """A GPU name that does not resolve to a row of the table."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


def normalize_gpu_name(raw: str) -> str:
    """Map a catalog, cloud or driver name to a table key.

    'H100', 'H100-SXM', 'gpu-h100-sxm', 'NVIDIA H100 80GB HBM3', 'H100-MEGA' → 'H100';
    'A100' → 'A100-40GB' (SkyPilot's convention); 'A100-80GB', 'NVIDIA A100-SXM4-80GB' →
    'A100-80GB'; 'NVIDIA H100 PCIe' → 'H100-PCIe'. Raises :class:`UnknownGpuError`.
    """
    tokens = [t for t in re.split(r"[^A-Z0-9]+", raw.upper()) if t and t not in _NOISE]
    family = next((t for t in tokens if t in _FAMILIES), None)
    if family is None:
        raise UnknownGpuError(f"unknown GPU {raw!r}; known: {', '.join(GPUS)}")
    memory = next((int(m.group(1)) for t in tokens if (m := re.fullmatch(r"(\d+)(GB|G)?", t))), None)
    if family == "A100":
        return "A100-80GB" if memory == 80 else "A100-40GB"
    if family == "H100":
        if "PCIE" in tokens:
            return "H100-PCIe"
        if "NVL" in tokens or memory == 94:
            return "H100-NVL"
    return family


def gpu_spec(raw: str) -> GpuSpec:
    """The spec row for any accepted spelling: ``gpu_spec('NVIDIA H200').hbm_tb_s == 4.8``."""
    return GPUS[normalize_gpu_name(raw)]
