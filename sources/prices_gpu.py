"""GPU rental price sheets (``landing/prices/gpu/``) -> ``stg.gpu_prices``.

Two formats, told apart by their CSV header (:data:`SPECS`):

``skypilot_csv`` -- a SkyPilot catalog ``vms.csv`` (any cloud)
    Columns are found by name, in any order (the clouds' files differ: nebius/lambda
    ``InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice``,
    gcp ``...,GpuInfo,Region,AvailabilityZone,Price,SpotPrice``, azure ``...,GpuInfo,Price,
    SpotPrice,Region,Generation``). Required: InstanceType, AcceleratorName, AcceleratorCount,
    Price, Region; SpotPrice is optional; GpuInfo, vCPUs, MemoryGiB, AvailabilityZone and the rest
    are ignored.

    * ``Price`` is USD per **instance**-hour, so ``usd_per_gpu_hour = Price / AcceleratorCount``
      (Decimal division; e.g. nebius ``gpu-h100-sxm_8gpu-128vcpu-1600gb``: 23.60 / 8 = 2.95).
      The column is DECIMAL(18,6): a quotient with more than 6 decimals (6.82343 / 4 =
      1.7058575) is rounded half-even to 6 (1.705858); ``meta["rounded"]`` counts those.
    * ``SpotPrice`` gives a second row with ``pricing = 'spot'`` (none when it is empty);
      ``Price`` gives ``pricing = 'on_demand'``. Both rows carry the record's line.
    * **GCP attachment-only prices**: GCP's GPU rows have an empty ``InstanceType``; their
      price is the accelerator attached to a VM, the host VM (vCPU, RAM) being priced on other
      rows. They are kept with ``instance_type`` NULL; a self-host cost built on them leaves out
      the host VM.
    * Rows without an accelerator (CPU VMs: empty AcceleratorName and an empty or 0
      AcceleratorCount) are skipped and counted in ``meta["skipped"]``; so are fractional GPU
      counts (a slice of a GPU does not fit ``gpus_per_node INTEGER``).
    * GCP lists one row per availability zone; zones of one region with the same price produce
      rows with the same natural key, which the ingest counts as duplicates.
    * The **provider** is not in the file. It comes from the file's path: the first path part
      (file name first, then its folders) that names exactly one known cloud
      (``skypilot_catalog_v7_nebius_vms.csv`` -> nebius, ``anycloud_gcp_vms...`` -> gcp,
      ``prices/gpu/azure/vms.csv`` -> azure; see :data:`PROVIDERS`). Failing that, from the
      instance types and regions (``Standard_*`` -> azure, ``gpu_8x_*`` -> lambda,
      ``gpu-h100-sxm_8gpu-*`` -> nebius, ``p4d.24xlarge`` -> aws, an empty InstanceType in a
      ``us-central1``-style region or ``a2-highgpu-1g`` -> gcp) when every recognisable row
      agrees; else ``'unknown'`` with a warning. ``meta["provider_source"]`` says which rule won.

``thinktax_gpu_csv`` -- the thinktax GPU price CSV (DESIGN.md section 2)
    ``provider,gpu_type,gpus_per_node,usd_per_gpu_hour,pricing,effective_from,region``, by header
    name. Required: provider, gpu_type, usd_per_gpu_hour, pricing (``on_demand``, ``reserved``
    or ``spot``; ``on-demand`` is accepted). Optional: gpus_per_node (empty -> NULL),
    effective_from (overrides the file-name date), region, instance_type, currency (as for the
    LLM price CSV: USD unless ``ctx.fx_usd_per_unit`` has a rate).

Both reject (quarantine) a price that is not a number, is zero or negative, or is above
:data:`MAX_USD_PER_GPU_HOUR` per GPU-hour (a per-node price typed as per-GPU), and bad counts,
pricings and dates. ``line`` is the physical line (header = line 1). The effective date is the
first ISO date in the file name, else the UTC day of ingestion (``meta["effective_from"]``).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

from sources._price_common import (
    RowsBase,
    default_effective_from,
    parse_day,
    parse_decimal,
    quantize,
    usd_rate,
)
from sources import contract
from sources.csvutil import CsvSheet, header_names
from sources.base import ParseContext, Parsed, Reject
from sources.contract import GPU_PRICINGS, MAX_USD_PER_GPU_HOUR
from sources.base import SourceSpec

TABLE = "stg.gpu_prices"
_SCALE = 6  # DECIMAL(18,6)
PRICINGS = GPU_PRICINGS

SCHEMA = contract.table(TABLE).arrow_schema()

# Clouds SkyPilot has catalogs for, and other names people put in file names for them.
PROVIDERS = {
    p: p
    for p in ("aws", "azure", "gcp", "lambda", "nebius", "oci", "ibm", "runpod", "fluidstack", "cudo",
              "paperspace", "vast", "hyperbolic", "digitalocean", "kubernetes", "vsphere", "seeweb",
              "primeintellect", "shadeform", "coreweave", "together")
} | {"google": "gcp", "gce": "gcp", "microsoft": "azure", "amazon": "aws", "ec2": "aws",
     "lambdalabs": "lambda", "lambdacloud": "lambda"}

_CONTENT_RULES = (  # (provider, instance-type pattern)
    ("azure", re.compile(r"Standard_\w+")),
    ("lambda", re.compile(r"(?:gpu|cpu)_\d+x_\w+")),
    ("nebius", re.compile(r"(?:gpu|cpu)-[a-z0-9]+(?:-[a-z0-9]+)?_\d+(?:gpu|vcpu)-[\w-]+")),
    ("aws", re.compile(r"[a-z][a-z0-9-]*\.(?:\d*x?large|metal[\w-]*|medium|small|micro|nano)")),
    ("gcp", re.compile(r"[a-z]\d[a-z]?-(?:highgpu|megagpu|ultragpu|edgegpu|standard|highmem|highcpu)-\w+")),
)
_GCP_REGION = re.compile(r"[a-z]+-[a-z]+\d+")  # us-central1, asia-northeast1 (lambda/aws have -1)


def provider_from_name(name: str) -> tuple[str | None, list[str]]:
    """The provider a file path names, and warnings (a path part naming two clouds is ambiguous)."""
    warnings: list[str] = []
    for part in reversed([p for p in name.replace("\\", "/").split("/") if p]):
        found = {PROVIDERS[t] for t in re.split(r"[^a-z0-9]+", part.lower()) if t in PROVIDERS}
        if len(found) == 1:
            return found.pop(), warnings
        if len(found) > 1:
            warnings.append(f"path part {part!r} names several clouds ({', '.join(sorted(found))})")
    return None, warnings


def provider_from_rows(rows: list[tuple[str, str]]) -> set[str]:
    """Providers suggested by (instance_type, region) pairs; a single element when they agree."""
    votes: set[str] = set()
    for instance, region in rows:
        if instance:
            for provider, pattern in _CONTENT_RULES:
                if pattern.fullmatch(instance):
                    votes.add(provider)
                    break
        elif _GCP_REGION.fullmatch(region):
            votes.add("gcp")  # GCP's attachment-only GPU rows have no instance type
    return votes


class _Rows(RowsBase):
    schema = SCHEMA
    table = TABLE

    def per_gpu(self, value: Decimal) -> tuple[Decimal | None, str | None]:
        if value <= 0:
            return None, f"price {value} USD per GPU-hour is not positive"
        if value > MAX_USD_PER_GPU_HOUR:
            return None, (f"{value.normalize():f} USD per GPU-hour is above the plausible maximum "
                          f"{MAX_USD_PER_GPU_HOUR} (a per-node price given as per-GPU?)")
        q, changed = quantize(value, _SCALE)
        self.rounded += changed
        return q, None

    def add(self, line: int, provider: str, gpu_type: str, gpus: int | None, usd: Decimal, pricing: str,
            region: str | None, instance_type: str | None, effective_from: dt.date | None = None) -> None:
        for k, v in (("line", line), ("provider", provider), ("gpu_type", gpu_type), ("gpus_per_node", gpus),
                     ("usd_per_gpu_hour", usd), ("pricing", pricing), ("region", region),
                     ("instance_type", instance_type), ("effective_from", effective_from or self.effective_from),
                     ("source_format", self.fmt)):
            self.cols[k].append(v)


def _gpu_count(text: str) -> int | None | str:
    """AcceleratorCount -> int; None when empty or 0 (no GPU); 'fractional' for a GPU slice.

    Raises ValueError for text that is not a number or is negative.
    """
    if not text:
        return None
    n = parse_decimal(text)
    if n < 0:
        raise ValueError(f"negative GPU count {text!r}")
    if n == 0:
        return None
    if n != n.to_integral_value():
        return "fractional"
    return int(n)


# --------------------------------------------------------------------------------------------
# SkyPilot vms.csv

_SKY_REQUIRED = ("instancetype", "acceleratorname", "acceleratorcount", "price", "region")


def sniff_skypilot(data: bytes, name: str) -> bool:
    return {"instancetype", "acceleratorname", "acceleratorcount", "price"} <= header_names(data)


def parse_skypilot(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    sheet = CsvSheet(data, _SKY_REQUIRED)
    records = list(sheet.records())
    g = sheet.get
    out = _Rows("skypilot_csv", default_effective_from(name, ctx))

    provider, warnings = provider_from_name(name)
    votes = provider_from_rows([(g(f, "instancetype"), g(f, "region")) for _line, f, _raw in records])
    source = "file_name"
    if provider is None:
        if len(votes) == 1:
            provider, source = next(iter(votes)), "content"
        else:
            provider, source = "unknown", "unknown"
            seen = f" (rows look like {', '.join(sorted(votes))})" if votes else ""
            warnings.append(f"cannot tell the cloud of {name!r} from its name or rows{seen}: provider 'unknown'; "
                            "put the cloud in the file name, e.g. gcp_vms.csv")
    elif votes and votes != {provider}:
        warnings.append(f"file name says {provider!r} but the rows look like {', '.join(sorted(votes))}")

    spot_rows = spot_same = 0
    for line, fields, raw in records:
        if len(fields) > sheet.width:
            out.rejects.append(Reject(line, None, f"{len(fields)} fields but the header has {sheet.width}", raw))
            continue
        gpu = g(fields, "acceleratorname")
        try:
            count = _gpu_count(g(fields, "acceleratorcount"))
        except ValueError as exc:
            out.rejects.append(Reject(line, "AcceleratorCount", str(exc), raw))
            continue
        if not gpu and count is None:
            out.skipped["no_gpu"] += 1  # CPU VM
            continue
        if count == "fractional":
            out.skipped["fractional_gpu"] += 1
            continue
        if not gpu or count is None:
            if not gpu:
                reason = f"AcceleratorCount {g(fields, 'acceleratorcount')} without an AcceleratorName"
            else:
                reason = f"GPU {gpu!r} with AcceleratorCount {g(fields, 'acceleratorcount') or 'empty'!r}"
            out.rejects.append(Reject(line, "AcceleratorName" if not gpu else "AcceleratorCount", reason, raw))
            continue
        if g(fields, "spotprice") and g(fields, "spotprice") == g(fields, "price"):
            spot_same += 1  # azure lists some GPUs (H200) with SpotPrice == Price: kept as given
        region = g(fields, "region") or None
        instance = g(fields, "instancetype") or None
        for column, field, pricing in (("price", "Price", "on_demand"), ("spotprice", "SpotPrice", "spot")):
            text = g(fields, column)
            if not text:
                if pricing == "on_demand":
                    out.rejects.append(Reject(line, field, "empty Price", raw))
                continue
            try:
                per_gpu, reason = out.per_gpu(parse_decimal(text) / count)
            except ValueError as exc:
                per_gpu, reason = None, str(exc)
            if reason:
                out.rejects.append(Reject(line, field, f"{field} {text!r} / {count} GPUs: {reason}", raw))
                continue
            spot_rows += pricing == "spot"
            out.add(line, provider, gpu, count, per_gpu, pricing, region, instance)
    return out.parsed(provider=provider, provider_source=source, spot_rows=spot_rows,
                      spot_same_as_price=spot_same, blank_rows=sheet.blank_rows, warnings=warnings)


# --------------------------------------------------------------------------------------------
# thinktax GPU CSV

_GPU_REQUIRED = ("provider", "gpu_type", "usd_per_gpu_hour", "pricing")


def sniff_thinktax_gpu(data: bytes, name: str) -> bool:
    return "usd_per_gpu_hour" in header_names(data)


def parse_thinktax_gpu(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    sheet = CsvSheet(data, _GPU_REQUIRED)
    out = _Rows("thinktax_gpu_csv", default_effective_from(name, ctx))
    g = sheet.get
    for line, fields, raw in sheet.records():
        def reject(field: str | None, reason: str) -> None:
            out.rejects.append(Reject(line, field, reason, raw))  # noqa: B023 (used at once)

        if len(fields) > sheet.width:
            reject(None, f"{len(fields)} fields but the header has {sheet.width} (an unquoted comma?)")
            continue
        provider, gpu = g(fields, "provider").lower(), g(fields, "gpu_type")
        if not provider or not gpu:
            reject("provider" if not provider else "gpu_type", "empty provider or gpu_type")
            continue
        pricing = re.sub(r"[\s-]+", "_", g(fields, "pricing").lower())
        pricing = "on_demand" if pricing == "ondemand" else pricing
        if pricing not in PRICINGS:
            reject("pricing", f"pricing {g(fields, 'pricing')!r} is not one of {', '.join(PRICINGS)}")
            continue
        try:
            count = _gpu_count(g(fields, "gpus_per_node"))
        except ValueError as exc:
            reject("gpus_per_node", str(exc))
            continue
        if count == "fractional" or (count is None and g(fields, "gpus_per_node")):
            reject("gpus_per_node", f"gpus_per_node {g(fields, 'gpus_per_node')!r} is not a whole number >= 1")
            continue
        effective = None
        if g(fields, "effective_from"):
            try:
                effective = parse_day(g(fields, "effective_from"))
            except ValueError as exc:
                reject("effective_from", str(exc))
                continue
        currency = g(fields, "currency").upper() or "USD"
        rate = usd_rate(currency, ctx.fx_usd_per_unit)
        if rate is None:
            reject("currency", f"currency {currency!r} without an FX rate (only USD, or a currency with a rate)")
            continue
        text = g(fields, "usd_per_gpu_hour")
        if not text:
            reject("usd_per_gpu_hour", "missing usd_per_gpu_hour")
            continue
        try:
            price, reason = out.per_gpu(parse_decimal(text) * rate)
        except ValueError as exc:
            price, reason = None, str(exc)
        if reason:
            reject("usd_per_gpu_hour", reason)
            continue
        out.add(line, provider, gpu, count, price, pricing, g(fields, "region") or None,
                g(fields, "instance_type") or None, effective)
    return out.parsed(blank_rows=sheet.blank_rows)


SPECS = [
    SourceSpec("prices/gpu", "skypilot_csv", sniff_skypilot, parse_skypilot, TABLE),
    SourceSpec("prices/gpu", "thinktax_gpu_csv", sniff_thinktax_gpu, parse_thinktax_gpu, TABLE),
]
