"""Cloud invoices -> ``stg.cloud_bill_lines``: the AI lines of AWS Data Exports CUR 2.0
(``landing/bills/aws/``), Azure Cost Management cost details (``landing/bills/azure/``) and the GCP
Cloud Billing export (``landing/bills/gcp/``), each as CSV (also ``.csv.gz``) or Parquet (GCP also
newline-delimited JSON), in any sub-folder, recognised by their header columns.

A real export holds millions of lines that are not AI (EC2, S3, ...). Such a file is never held in
memory: it is read by path (``SourceSpec.parse_path``) with DuckDB's own ``read_csv`` /
``read_parquet`` / ``read_json`` in a private in-memory connection (never the warehouse's), only the
columns named below, every value as text (no CSV sniffer decides that 10/01 is 10 January), in one
pass that counts every line and collects the AI lines and, narrow (:data:`NARROW_FIELDS`), the compute
lines that can price a self-hosted GPU node (issue 25 item 4: EC2 instance hours of accelerated
instances, Azure N-series VMs, Compute Engine lines with a resource; ``bucket = 'instance_hours'``,
read by sql/core/node_hours_cost.sql). The other lines are counted as ``Parsed.skipped``
(``ops.ingested_files.rows_skipped``), not quarantined. Compute lines are typed, converted and
rejected by the same rules as the AI lines.

The AI lines are then read by rules over the SKU text (one Python call per *distinct* usage type /
meter / SKU, never per line): model x token bucket x tier x deployment type x long context. An AI
line no rule understands keeps its money with ``rule = 'unattributed'`` and the reason; nothing is
guessed. The rules, with the spellings they accept, are in :data:`RULES` and docs/contract.md; the
spellings come from the sources listed in tests/fixtures/bills/cloud/README.md.

The AI lines are then typed in the same private DuckDB (``_typed_lines``): text -> DECIMAL(38,10)
(never a float for CSV), times, FX, tags and the rule readings joined from small lookup tables.
A line is rejected (``ops.quarantine``, with its line and the reason) when a required value is
missing or unreadable, when its usage amount is negative on a usage line, or when its currency has
no ``fx/`` rate (USD needs none). The USD amount is ``cost x fx_usd_per_unit`` (rounded to 10
decimals) as in the other bills. ``line`` is the physical line for CSV (header = line 1; a quoted
newline inside a field would shift it), the record number for Parquet and NDJSON.

Re-issued exports: every file gets ``meta['export_key']`` = cloud | billing months it covers | its
path with run ids (GUIDs, timestamps) as ``*``. A later file with the same key is the same export
re-issued: the warehouse moves the older file's rows to ``ops.replaced_cloud_bill_lines`` (see
warehouse/ingest.py). Any other overlap is decided line by line on the natural key: the same line
is a duplicate, the same key with other values a ``conflicting_duplicate``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa

from sources import contract
from sources.contract import COMPUTE_BUCKET
from sources.base import ParseContext, Parsed, Reject, SourceFormatError, SourceSpec, head_text, rate_decimal

TABLE = "stg.cloud_bill_lines"
SCHEMA = contract.table(TABLE).arrow_schema()
KEY_COLUMNS = contract.table(TABLE).key[:-1]  # type: ignore[index]
DEC = "DECIMAL(38,10)"


# --- the columns each cloud writes -----------------------------------------------------------------
# logical field -> spellings, first found wins (case-insensitive; 'a.b' = a flattened column named
# 'a.b', or field b of a STRUCT column a, or a column 'a_b').

# CUR 2.0 names first, then the legacy CUR's ('lineItem/UsageStartDate': the legacy CSV report; its
# Athena / Parquet flavour writes the CUR 2.0 snake_case names, with the product attributes and the tags
# as columns of their own, 'product_product_name', 'resource_tags_user_team': see _legacy_maps)
AWS_FIELDS: dict[str, tuple[str, ...]] = {
    "billing_period": ("bill_billing_period_start_date", "bill/BillingPeriodStartDate"),
    "invoice_id": ("bill_invoice_id", "bill/InvoiceId"),
    "account_id": ("line_item_usage_account_id", "lineItem/UsageAccountId"),
    "usage_start": ("line_item_usage_start_date", "lineItem/UsageStartDate"),
    "usage_end": ("line_item_usage_end_date", "lineItem/UsageEndDate"),
    "charge_type": ("line_item_line_item_type", "lineItem/LineItemType"),
    "service": ("line_item_product_code", "lineItem/ProductCode"),
    "sku": ("line_item_usage_type", "lineItem/UsageType"),
    "operation": ("line_item_operation", "lineItem/Operation"),
    "quantity": ("line_item_usage_amount", "lineItem/UsageAmount"),
    "cost": ("line_item_unblended_cost", "lineItem/UnblendedCost"),
    "net_cost": ("line_item_net_unblended_cost", "lineItem/NetUnblendedCost"),
    "currency": ("line_item_currency_code", "lineItem/CurrencyCode"),
    "resource_id": ("line_item_resource_id", "lineItem/ResourceId"),
    "principal": ("line_item_iam_principal",),
    "region": ("product_region_code", "product/regionCode", "product_region", "product/region"),
    "unit": ("pricing_unit", "pricing/unit"),
    "pricing_model": ("pricing_term", "pricing/term"),
    "product": ("product",),
    "tags": ("resource_tags",),
    # the amortized cost of an hour a reserved instance or a savings plan covers (AWS CUR data
    # dictionary, "Reservation details" / "Savings Plans details": reservation/EffectiveCost on
    # DiscountedUsage lines, whose unblended cost is 0; savingsPlan/SavingsPlanEffectiveCost on
    # SavingsPlanCoveredUsage lines, whose unblended cost is the on-demand cost that a
    # SavingsPlanNegation line takes back)
    "ri_effective_cost": ("reservation_effective_cost", "reservation/EffectiveCost"),
    "sp_effective_cost": ("savings_plan_savings_plan_effective_cost", "savingsPlan/SavingsPlanEffectiveCost"),
}
AWS_REQUIRED = ("usage_start", "usage_end", "charge_type", "service", "sku", "quantity", "cost", "currency")

AZURE_FIELDS: dict[str, tuple[str, ...]] = {
    "billing_period": ("BillingPeriodStartDate",),
    "invoice_id": ("InvoiceId", "InvoiceNumber"),
    "account_id": ("SubscriptionId", "SubscriptionGuid"),
    "usage_start": ("Date", "UsageDateTime"),
    "charge_type": ("ChargeType",),
    "pricing_model": ("PricingModel",),
    "service": ("MeterCategory",),
    "sub_category": ("MeterSubCategory",),
    "sku": ("MeterName",),
    "product_name": ("ProductName", "Product"),
    "quantity": ("Quantity", "UsageQuantity"),
    "unit": ("UnitOfMeasure",),
    "cost": ("CostInBillingCurrency", "Cost", "PreTaxCost"),
    "currency": ("BillingCurrency", "BillingCurrencyCode", "Currency"),
    "resource_id": ("ResourceId", "InstanceId"),
    "region": ("ResourceLocation",),
    "tags": ("Tags",),
    "reservation_id": ("ReservationId",),
}
AZURE_REQUIRED = ("usage_start", "service", "sku", "quantity", "cost", "currency")

GCP_FIELDS: dict[str, tuple[str, ...]] = {
    "billing_period": ("invoice.month",),
    "account_id": ("project.id",),
    "usage_start": ("usage_start_time",),
    "usage_end": ("usage_end_time",),
    "charge_type": ("cost_type",),
    "service": ("service.description",),
    "sku": ("sku.description",),
    "sku_id": ("sku.id",),
    "quantity": ("usage.amount",),
    "unit": ("usage.unit",),
    "cost": ("cost",),
    "currency": ("currency",),
    "credits": ("credits",),
    "tags": ("labels",),
    "region": ("location.region",),
    "resource_id": ("resource.global_name", "resource.name"),
}
GCP_REQUIRED = ("usage_start", "usage_end", "service", "sku", "quantity", "cost", "currency")


@dataclass(frozen=True)
class Cloud:
    name: str
    folder: str
    fields: dict[str, tuple[str, ...]]
    required: tuple[str, ...]
    ai_filter: str  # SQL over the logical fields (text): which lines are AI lines
    compute_guard: str  # cheap SQL test of the compute service: the rest of compute_filter runs only where it holds
    compute_filter: str  # SQL over the logical fields: the compute lines that can price a node (not AI lines)
    compute_rule: str  # the rule name of those lines in stg.cloud_bill_lines


# The compute lines kept to price self-hosted nodes (issue 25 item 4), each with a resource id: on-demand
# and spot instance hours (AWS line type 'Usage'; Azure ChargeType 'Usage' not under a reservation or
# savings plan; GCP cost_type 'regular'), and the AWS hours a reserved instance or a savings plan covers
# when the export has their amortized cost (DiscountedUsage with reservation_effective_cost,
# SavingsPlanCoveredUsage with savings_plan_savings_plan_effective_cost: amortized_cost_usd, which
# prices the hour), and the Azure hours under a reservation or savings plan of the amortized dataset
# (PricingModel Reservation / SavingsPlan with a cost: their prorated share). Other covered hours bill
# their money elsewhere (an RI fee, a negation line, an Azure Purchase; the actual dataset bills the
# hour at 0), so those hours keep the catalog price. A node is a GPU node
# (nodes.csv gpu_type), so AWS keeps accelerated instance families only (p, g, gr, trn, inf, dl: p5,
# g6e, trn2, ...) and Azure the N series (NC, ND, NG, NV): an hourly CUR of a large CPU fleet has millions
# of BoxUsage lines, which stay skipped. GCP bills one VM in several lines (cores, memory, GPUs) whose
# SKUs name the machine family, not the GPU (an N1 VM with attached T4s), so every Compute Engine line
# with a resource is kept (the resource-level detailed export is the only one that names it). The lines
# are collected narrow: only the fields below (NARROW_FIELDS), not the product map, tags, principal or
# credits.
NARROW_FIELDS = ("billing_period", "account_id", "usage_start", "usage_end", "charge_type", "pricing_model",
                 "service", "sku", "sku_id", "sub_category", "operation", "region", "resource_id", "quantity", "unit",
                 "cost", "currency", "ri_effective_cost", "sp_effective_cost")
_HAS_RESOURCE = "nullif(trim(resource_id), '') IS NOT NULL"
# Azure PricingModel values of usage a reservation or savings plan covers
_BENEFIT_PRICING = "('reservation', 'savingsplan', 'savings plan')"


CLOUDS = {
    "aws": Cloud("aws", "bills/aws", AWS_FIELDS, AWS_REQUIRED,
                 # first-party Bedrock (newer Claude models bill under AmazonBedrockService) and the
                 # Marketplace lines of Bedrock models (usage type '...MP:...', product names Bedrock)
                 "service IN ('AmazonBedrock', 'AmazonBedrockService') "
                 "OR (contains(sku, 'MP:') AND contains(lower(product), 'bedrock'))",
                 # EC2 instance hours: 'USE1-BoxUsage:p5.48xlarge', 'BoxUsage:...' (us-east-1), Spot, Dedicated
                 "service = 'AmazonEC2'",
                 f"{_HAS_RESOURCE} AND (coalesce(nullif(trim(charge_type), ''), 'Usage') = 'Usage' "
                 "OR (trim(charge_type) = 'DiscountedUsage' AND nullif(trim(ri_effective_cost), '') IS NOT NULL) "
                 "OR (trim(charge_type) = 'SavingsPlanCoveredUsage' AND nullif(trim(sp_effective_cost), '') IS NOT NULL)) "
                 "AND regexp_matches(sku, '(^|-)(BoxUsage|SpotUsage|DedicatedUsage):(p|g|gr|trn|inf|dl)[0-9]')",
                 "aws.ec2_instance_hours"),
    "azure": Cloud("azure", "bills/azure", AZURE_FIELDS, AZURE_REQUIRED,
                   "lower(service) IN ('foundry models', 'azure openai', 'azure ai foundry models') "
                   "OR (lower(service) = 'cognitive services' AND (contains(lower(coalesce(sub_category, '')), 'openai') "
                   "    OR contains(lower(coalesce(product_name, '')), 'openai'))) "
                   # a purchase (a reserved PTU) may have blank meter columns ("Purchases and Marketplace
                   # usage might be shown as blank or unassigned": Microsoft's EA / MCA cost details schema
                   # for MeterCategory, MeterSubCategory, MeterName): its product names the service
                   "OR (nullif(trim(service), '') IS NULL AND (contains(lower(coalesce(product_name, '')), 'openai') "
                   "    OR contains(lower(coalesce(product_name, '')), 'foundry')))",
                   "lower(trim(service)) = 'virtual machines'",
                   f"{_HAS_RESOURCE} "
                   "AND lower(coalesce(nullif(trim(charge_type), ''), 'usage')) = 'usage' "
                   # an hour a reservation or savings plan covers: kept from the amortized dataset only,
                   # where it carries its prorated cost (the actual dataset bills it at 0)
                   f"AND (lower(coalesce(trim(pricing_model), '')) NOT IN {_BENEFIT_PRICING} "
                   "     OR coalesce(TRY_CAST(trim(cost) AS DECIMAL(38,10)), 0) > 0) "
                   "AND (regexp_matches(trim(coalesce(sku, '')), '^(Standard_)?N[CDGV]') "
                   "     OR regexp_matches(trim(coalesce(sub_category, '')), '^N[CDGV]'))",
                   "azure.virtual_machine"),
    "gcp": Cloud("gcp", "bills/gcp", GCP_FIELDS, GCP_REQUIRED,
                 "lower(service) IN ('vertex ai', 'gemini api', 'generative language api')",
                 # every line of the instance (cores, memory, GPUs) names it in resource.name / global_name
                 "lower(trim(service)) = 'compute engine'",
                 f"{_HAS_RESOURCE} "
                 "AND lower(coalesce(nullif(trim(charge_type), ''), 'regular')) = 'regular'",
                 "gcp.compute_engine"),
}


# --- sniffing ----------------------------------------------------------------------------------

def _header_names(data: bytes) -> set[str]:
    head = head_text(data, 65536)
    first = head.split("\n", 1)[0]
    if first.startswith("{"):  # NDJSON: the keys of the first record (nested ones as a.b)
        try:
            rec = json.loads(first)
        except ValueError:
            return set()
        names = set()
        for k, v in rec.items():
            names.add(k.lower())
            if isinstance(v, dict):
                names.update(f"{k}.{kk}".lower() for kk in v)
        return names
    return {c.strip().strip('"').lower() for c in first.rstrip("\r").split(",")}


def _sniffer(cloud: Cloud):
    def sniff(data: bytes, name: str) -> bool:
        if data[:4] == b"PAR1":  # Parquet: the columns are checked when it is read
            return True
        names = _header_names(data)
        found = sum(1 for f in cloud.required if any(_flat_match(s, names) for s in cloud.fields[f]))
        return found == len(cloud.required)
    return sniff


def _flat_match(spelling: str, names: set[str]) -> bool:
    s = spelling.lower()
    return s in names or s.replace(".", "_") in names or ("." in s and s.split(".")[0] in names)


# --- reading -----------------------------------------------------------------------------------

def _open(path: Path, head: bytes) -> tuple[str, str]:
    """(kind, table function) for the file."""
    p = str(path).replace("'", "''")
    if head[:4] == b"PAR1":
        return "parquet", f"read_parquet('{p}')"
    if head_text(head, 64).startswith("{"):
        return "json", (f"read_json('{p}', format='newline_delimited', sample_size=-1, "
                        "maximum_object_size=16777216, union_by_name=true)")
    # every column as text, the dialect fixed (comma, double quotes): no sniffer guesses types or dates
    return "csv", (f"read_csv('{p}', header=true, all_varchar=true, delim=',', quote='\"', escape='\"', "
                   "null_padding=false, parallel=true)")


def _columns(con: duckdb.DuckDBPyConnection, src: str) -> dict[str, tuple[str, str]]:
    """lower-case name -> (name as written, DuckDB type)."""
    rows = con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()
    return {r[0].lower().lstrip("\ufeff"): (r[0], r[1]) for r in rows}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(expr: str, typ: str) -> str:
    if typ.startswith(("STRUCT", "MAP")) or typ.endswith("[]") or typ == "JSON":
        return f"CAST(to_json({expr}) AS VARCHAR)"
    if typ == "VARCHAR":
        return expr
    return f"CAST({expr} AS VARCHAR)"


def _resolve(spelling: str, cols: dict[str, tuple[str, str]]) -> str | None:
    s = spelling.lower()
    if s in cols:
        name, typ = cols[s]
        return _text(_q(name), typ)
    if s.replace(".", "_") in cols:
        name, typ = cols[s.replace(".", "_")]
        return _text(_q(name), typ)
    if "." in s:
        parent, child = s.split(".", 1)
        if parent in cols and cols[parent][1].startswith("STRUCT"):
            name, typ = cols[parent]
            m = re.search(r'(?:^|[(,]\s*)"?' + re.escape(child) + r'"?\s+([A-Z]+[^,)]*)', typ, re.I)
            return _text(f"{_q(name)}.{_q(child)}", m[1] if m else "VARCHAR") if m else f"CAST({_q(name)}.{_q(child)} AS VARCHAR)"
    return None


# --- value parsing -------------------------------------------------------------------------------

_MDY = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?")


def parse_time(value: str | None) -> dt.datetime | None:
    """One export time -> naive UTC. Azure's ``MM/DD/YYYY`` is month first, always (the cost
    details documentation's format; a day-first export would be read wrong, which is why the
    Azure parser refuses a file whose dates go beyond 12 in the first field, see below)."""
    if value is None:
        return None
    s = value.strip()
    if not s:
        return None
    m = _MDY.fullmatch(s)
    try:
        if m:
            mo, d, y, hh, mi, ss = m.groups()
            return dt.datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0))
        s = re.sub(r"\s*UTC$", "+00:00", s).replace("Z", "+00:00")
        if re.fullmatch(r"\d{6}", s):  # GCP invoice.month 'YYYYMM'
            return dt.datetime(int(s[:4]), int(s[4:]), 1)
        if re.fullmatch(r"\d{4}-\d{2}", s):
            return dt.datetime(int(s[:4]), int(s[5:]), 1)
        ts = dt.datetime.fromisoformat(s)
    except ValueError:
        return None
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
    return ts


CHARGE_KINDS = {
    # AWS line_item_line_item_type
    "usage": "usage", "discountedusage": "usage", "savingsplancoveredusage": "usage",
    "credit": "credit", "refund": "refund", "tax": "tax",
    "edpdiscount": "discount", "privateratediscount": "discount", "bundleddiscount": "discount",
    "sppdiscount": "discount", "discount": "discount", "savingsplannegation": "discount",
    "distributordiscount": "discount",
    "fee": "fee", "rifee": "commitment", "savingsplanrecurringfee": "commitment",
    "savingsplanupfrontfee": "commitment",
    # Azure ChargeType
    "purchase": "commitment", "unusedreservation": "commitment", "unusedsavingsplan": "commitment",
    "roundingadjustment": "rounding",
    # GCP cost_type
    "regular": "usage", "adjustment": "credit", "rounding error": "rounding", "roundingerror": "rounding",
}


def charge_kind(charge_type: str | None) -> str:
    return CHARGE_KINDS.get((charge_type or "usage").strip().lower().replace(" ", ""),
                            CHARGE_KINDS.get((charge_type or "").strip().lower(), "other"))


def tokens_per_unit(cloud: str, unit: str | None, bucket: str | None) -> int | None:
    """Tokens one unit of quantity stands for: 1M units -> 10^6, 1K units and AWS Bedrock's
    token amounts (in thousands) -> 1000, a count of tokens -> 1. None: not a token line."""
    if bucket in (None, "provisioned", "cache_storage", COMPUTE_BUCKET):
        return None
    u = (unit or "").strip().lower()
    if re.search(r"\b1\s*m\b|million|1m", u):
        return 1_000_000
    if re.search(r"\b1\s*k\b|thousand|1k|\bk\s*tokens", u):
        return 1000
    if u in ("tokens", "token", "count", "requests"):
        return 1
    if cloud == "aws":  # Bedrock token amounts are in thousands ('Units', '1K tokens', empty)
        return 1000
    if cloud == "gcp" and u in ("", "count"):
        return 1
    return None


# --- the rules ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    rule: str
    model: str | None = None
    bucket: str | None = None
    tier: str | None = None
    deployment_type: str | None = None
    long_context: bool | None = None
    reason: str | None = None  # set: unattributed


def unattributed(reason: str) -> Reading:
    return Reading("unattributed", reason=reason)


def claude_key(name: str) -> str | None:
    """'Claude4.6Sonnet', 'Claude 3.5 Sonnet', 'ClaudeSonnet4.5', 'Claude Opus 4.1' -> the model
    family as core.cloud_model_key spells calls ('claude-sonnet-4-6', 'claude-3-5-sonnet')."""
    n = re.sub(r"[\s_-]+", "", name).lower()
    m = re.fullmatch(r"claude(\d+)(?:\.(\d+))?(sonnet|opus|haiku)(v\d+)?", n) or None
    if m:
        major, minor, fam = m[1], m[2], m[3]
    else:
        m = re.fullmatch(r"claude(sonnet|opus|haiku)(\d+)(?:\.(\d+))?(v\d+)?", n)
        if not m:
            return None
        fam, major, minor = m[1], m[2], m[3]
    if int(major) >= 4:
        return f"claude-{fam}-{major}" + (f"-{minor}" if minor else "")
    return f"claude-{major}" + (f"-{minor}" if minor else "") + f"-{fam}"


def generic_key(name: str) -> str:
    """Any other model name: words and CamelCase parts joined by '-', lower case ('NovaPro' -> 'nova-pro')."""
    s = re.sub(r"(?<=[a-z])(?=[A-Z])", "-", name.strip())
    return re.sub(r"[\s_]+", "-", s).strip("-").lower()


def model_key(name: str) -> str:
    return claude_key(name) or generic_key(name)


_AWS_REGION = re.compile(r"^(?:[A-Z]{2,4}\d?|[A-Z]{2}-[A-Z]+-\d)-")
# first-party token kinds, dashed spellings ('input-tokens', 'cache-read-input-token-count', ...)
_AWS_KIND = re.compile(
    r"^(?P<model>.+?)-(?P<kind>cache-read-input-token(?:s|-count)?|cache-write-input-token(?:s|-count)?"
    r"|input-token(?:s|-count)?|output-token(?:s|-count)?)(?P<suffix>(?:-[A-Za-z0-9]+)*)$", re.I)
# CamelCase spellings ('InputTokenCount', 'CacheReadInputTokenCount_Global', Marketplace 'MP:USE1_InputTokenCount-Units')
_AWS_CAMEL = re.compile(
    r"(?P<kind>CacheReadInputTokenCount|CacheWriteInputTokenCount|InputTokenCount|OutputTokenCount)"
    r"(?P<suffix>(?:[_-][A-Za-z0-9]+)*)$")
_KIND_BUCKET = {"cache-read": "cache_read", "cache-write": "cache_write", "input": "input", "output": "output",
                "cachereadinputtokencount": "cache_read", "cachewriteinputtokencount": "cache_write",
                "inputtokencount": "input", "outputtokencount": "output"}
_AWS_SUFFIX = {"batch": ("tier", "batch"), "priority": ("tier", "priority"), "flex": ("tier", "flex"),
               "global": ("deployment_type", "cross_region_global"), "cross-region-global": ("deployment_type", "cross_region_global"),
               "cross-region": ("deployment_type", "cross_region"), "crossregion": ("deployment_type", "cross_region"),
               "1-hour": ("bucket", "cache_write_1h"), "1h": ("bucket", "cache_write_1h"), "1hr": ("bucket", "cache_write_1h"),
               "units": (None, None), "standard": ("tier", "standard"), "regional": ("deployment_type", "in_region"),
               "long-context": ("long_context", True), "lctx": ("long_context", True)}


def _suffix_reading(rule: str, model: str, bucket: str, suffix: str) -> Reading:
    fields: dict[str, object] = {"tier": "standard", "deployment_type": "in_region", "long_context": False}
    s = suffix.strip("-_").lower()
    parts: list[str] = []
    while s:  # longest known suffix first: 'cross-region-global', '1-hour'
        for known in sorted(_AWS_SUFFIX, key=len, reverse=True):
            if s == known or s.startswith(known + "-") or s.startswith(known + "_"):
                parts.append(known)
                s = s[len(known):].lstrip("-_")
                break
        else:
            return unattributed(f"usage type suffix '{s}' is not one the rules know")
    for p in parts:
        what, value = _AWS_SUFFIX[p]
        if what == "bucket":
            if bucket != "cache_write":
                return unattributed(f"'{p}' on a {bucket} usage type")
            bucket = str(value)
        elif what:
            fields[what] = value
    return Reading(rule, model, bucket, **fields)  # type: ignore[arg-type]


def read_aws(sku: str, product: str | None) -> Reading:
    """A Bedrock usage type -> model x bucket x tier x deployment type (rules aws.*)."""
    ut = sku.strip()
    body = _AWS_REGION.sub("", ut, count=1)
    if re.search(r"ProvisionedThroughput|ModelUnits", ut, re.I):
        m = re.search(r"ProvisionedThroughput-(.+?)-ModelUnits", body, re.I) or re.search(r"^(.+?)-ProvisionedThroughput", body, re.I)
        if not m or not m[1].strip("-"):
            return unattributed(f"provisioned-throughput usage type '{ut}' names no model")
        return Reading("aws.provisioned_throughput", model_key(m[1]), "provisioned", "provisioned", None, False)
    if "MP:" in ut:  # Marketplace: the model is in the product map's product name
        m = _AWS_CAMEL.search(body)
        name = _product_name(product)
        if not m:
            return unattributed(f"Marketplace usage type '{ut}' names no token kind")
        if not name:
            return unattributed("Marketplace line without a product name")
        bucket = _KIND_BUCKET[m["kind"].lower()]
        return _suffix_reading("aws.marketplace", model_key(name), bucket, m["suffix"])
    m = _AWS_KIND.match(body)
    if m:
        kind = m["kind"].lower()
        bucket = next(b for k, b in _KIND_BUCKET.items() if kind.startswith(k))
        return _suffix_reading("aws.usage_type", model_key(m["model"]), bucket, m["suffix"])
    m = _AWS_CAMEL.search(body)
    if m and body[: m.start()].strip("-_"):
        bucket = _KIND_BUCKET[m["kind"].lower()]
        return _suffix_reading("aws.usage_type_camel", model_key(body[: m.start()].strip("-_")), bucket, m["suffix"])
    return unattributed(f"usage type '{ut}' names no token kind the rules know")


def _product_name(product: str | None) -> str | None:
    if not product:
        return None
    try:
        obj = json.loads(product)
    except ValueError:
        m = re.search(r"product_name[\"']?\s*[:=]\s*[\"']?([^,\"'}]+)", product)
        obj = {"product_name": m[1]} if m else {}
    if isinstance(obj, list):  # a MAP exported as [{key, value}]
        obj = {e.get("key"): e.get("value") for e in obj if isinstance(e, dict)}
    name = obj.get("product_name") or obj.get("productName") if isinstance(obj, dict) else None
    if not name:
        return None
    return re.sub(r"\s*\((?:Amazon )?Bedrock[^)]*\)\s*$", "", str(name), flags=re.I).strip()


_AZ_WORDS = {
    "inp": "input", "input": "input", "outp": "output", "output": "output", "cached": "cached", "cchd": "cached",
    "cache": "cached", "glbl": "global", "global": "global", "dz": "data_zone", "datazone": "data_zone",
    "regnl": "regional", "regional": "regional", "rgnl": "regional", "tokens": None, "token": None, "tkns": None,
    "batch": "batch", "ptu": "ptu", "provisioned": "ptu", "managed": None, "hour": None, "hours": None,
    "unit": None, "units": None, "lc": "long", "long": "long",
}


def read_azure(meter: str, sub_category: str | None, product: str | None, pricing_model: str | None) -> Reading:
    """An Azure OpenAI / Foundry meter -> model x bucket x deployment type (rules azure.*)."""
    text = re.sub(r"\bdata\s+zone\b", "datazone", meter.strip(), flags=re.I)
    words = text.replace("_", " ").split()
    model_words: list[str] = []
    seen: list[str] = []
    for w in words:
        tag = _AZ_WORDS.get(w.lower(), "?")
        if tag == "?":
            if seen:  # a word after the kind words: not a meter the rules know
                return unattributed(f"meter '{meter}': unknown word '{w}' after the token kind")
            if not re.fullmatch(r"\d{4}", w):  # '1120', '0416': the model version, not the model
                model_words.append(w)
            continue
        if tag:
            seen.append(tag)
    if "ptu" in seen or (pricing_model or "").lower() == "reservation" and not {"input", "output"} & set(seen):
        model = "-".join(model_words).lower() or None
        return Reading("azure.ptu", model, "provisioned", "provisioned",
                       next((t for t in seen if t in ("global", "data_zone", "regional")), None), False)
    if "input" in seen:
        bucket = "cache_read" if "cached" in seen else "input"
    elif "output" in seen:
        bucket = "output"
    else:
        return unattributed(f"meter '{meter}' names no token kind (Inp, Outp, cached Inp) nor PTU")
    if not model_words:
        return unattributed(f"meter '{meter}' names no model")
    model = "-".join(model_words).lower()
    deployment = next((t for t in seen if t in ("global", "data_zone", "regional")), None)
    return Reading("azure.meter", model, bucket, "batch" if "batch" in seen else "standard", deployment,
                   "long" in seen)


_GCP_KIND = re.compile(r"\b(text|image|audio|video|thinking|input|output|caching|cached|cache|provisioned|batch|long|"
                       r"predictions?|tokens?|character|characters)\b", re.I)


def read_gcp(sku: str) -> Reading:
    """A Vertex AI / Gemini API SKU description -> model x bucket x long context (rules gcp.*)."""
    s = re.sub(r"\s+-\s+(online\s+)?predictions?\b.*$", "", sku.strip(), flags=re.I)
    low = s.lower()
    m = _GCP_KIND.search(s)
    if not m or not s[: m.start()].strip():
        return unattributed(f"SKU '{sku}' names no model before its token kind")
    model_name = s[: m.start()].strip()
    model = (claude_key(model_name) or re.sub(r"\s+", "-", model_name).lower())
    long_ctx = bool(re.search(r"\(long\)|long context|>\s*200k|long input|long output", low))
    tier = "batch" if re.search(r"\bbatch\b", low) else "standard"
    if "provisioned throughput" in low:
        return Reading("gcp.provisioned_throughput", model, "provisioned", "provisioned", None, False)
    if re.search(r"cach\w*\s+storage|storage", low):
        return Reading("gcp.sku", model, "cache_storage", tier, None, long_ctx)
    if re.search(r"\bcach", low):
        if re.search(r"\boutput\b", low):
            return unattributed(f"SKU '{sku}': caching of output is not a bucket the rules know")
        return Reading("gcp.sku", model, "cache_read", tier, None, long_ctx)
    if re.search(r"\boutput\b", low):
        return Reading("gcp.sku", model, "output", tier, None, long_ctx)
    if re.search(r"\binput\b", low):
        return Reading("gcp.sku", model, "input", tier, None, long_ctx)
    return unattributed(f"SKU '{sku}' names no token kind (Input, Output, Caching) nor provisioned throughput")


RULES = {
    "aws.usage_type": "USE1-Claude4.6Sonnet-input-tokens[-batch|-priority|-flex|-cross-region-global|...], "
                      "...-cache-read-input-token-count, ...-cache-write-input-token-count[-1-hour]",
    "aws.usage_type_camel": "USE1-Claude4.6Sonnet_InputTokenCount[_Global], USE1_OutputTokenCount_Global",
    "aws.marketplace": "USE1-MP:USE1_InputTokenCount-Units (model from the product map's product_name)",
    "aws.provisioned_throughput": "...-ProvisionedThroughput-<model>-ModelUnits (model-unit hours)",
    "azure.meter": "'gpt 4o 1120 Outp glbl Tokens', 'o3 0416 Inp glbl', '... cached Inp ...', '... Dz', '... regnl'",
    "azure.ptu": "PTU / Provisioned meters, PricingModel Reservation",
    "gcp.sku": "'Gemini 2.5 Pro Thinking Text Output - Predictions', '... Text Input (Long) ...', '... Caching ...', "
               "'... Caching Storage'",
    "gcp.provisioned_throughput": "'... Provisioned Throughput ...'",
}


# --- parse -------------------------------------------------------------------------------------

_RUN_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|\d{8}T\d{4,6}Z?|\d{14}")


def export_key(cloud: str, months: list[dt.date], name: str) -> str:
    """The export a file is part of: cloud | months it bills | path with run ids as '*'."""
    return f"{cloud}|{','.join(m.strftime('%Y-%m') for m in months)}|{_RUN_ID.sub('*', name)}"


def parse_path(path: Path, name: str, ctx: ParseContext, cloud_name: str) -> Parsed:
    cloud = CLOUDS[cloud_name]
    con = duckdb.connect()
    try:
        con.execute("SET threads = 2; SET preserve_insertion_order = true; SET memory_limit = '1GB'; "
                    "SET enable_progress_bar = false")
        with path.open("rb") as fh:
            head = fh.read(65536)
        if path.name.endswith(".gz") or head[:2] == b"\x1f\x8b":
            import gzip  # noqa: PLC0415

            with gzip.open(path, "rb") as gz:
                head = gz.read(65536)
        kind, src = _open(path, head)
        try:
            cols = _columns(con, src)
        except duckdb.Error as exc:
            raise SourceFormatError(f"unreadable {kind}: {str(exc).splitlines()[0]}") from None
        exprs: dict[str, str] = {}
        for field, spellings in cloud.fields.items():
            for sp in spellings:
                e = _resolve(sp, cols)
                if e is not None:
                    exprs[field] = e
                    break
        missing = [f for f in cloud.required if f not in exprs]
        if missing:
            want = ", ".join(cloud.fields[f][0] for f in missing)
            raise SourceFormatError(f"not a {cloud_name} cost export: no column {want}", line=1)
        if cloud_name == "aws":
            exprs.update({k: v for k, v in _legacy_maps(cols).items() if k not in exprs})
        for field in cloud.fields:
            exprs.setdefault(field, "CAST(NULL AS VARCHAR)")
        missing_own = [fl for fl in cloud.fields if exprs[fl] == "CAST(NULL AS VARCHAR)"]
        # the other clouds' fields, NULL: one set of names for the typing SQL (added after the pass)
        others = sorted({fl for c in CLOUDS.values() for fl in c.fields} - set(cloud.fields))
        first_line = 2 if kind == "csv" else 1
        select = ", ".join(f"{e} AS {_q(f)}" for f, e in exprs.items())
        packed = ", ".join(f"{_q(f)} := {_q(f)}" for f in exprs)
        narrow = ", ".join(f"{_q(f)} := {_q(f)}" for f in NARROW_FIELDS if f in exprs)
        # one pass: every line counted, the AI lines collected (they are few), the compute lines that can
        # price a node collected narrow, the months billed
        try:
            # (the first and last billing period, not a DISTINCT list: a hash of every line's text
            # cost a third of the pass; an export holds one billing period, at most a few)
            con.execute(
                f"""CREATE TEMP TABLE agg AS
                    SELECT count(*) AS n, list(struct_pack(line := rn + {first_line - 1}, {packed})) FILTER (WHERE is_ai) AS ai,
                           list(struct_pack(line := rn + {first_line - 1}, {narrow})) FILTER (WHERE is_compute) AS compute,
                           min(billing_period) AS first_period, max(billing_period) AS last_period
                    FROM (SELECT *, CASE WHEN is_ai THEN false WHEN {cloud.compute_guard}
                                         THEN coalesce({cloud.compute_filter}, false) ELSE false END AS is_compute
                          FROM (SELECT *, coalesce({cloud.ai_filter}, false) AS is_ai
                                FROM (SELECT row_number() OVER () AS rn, {select} FROM {src})))""")
        except duckdb.Error as exc:
            raise SourceFormatError(f"unreadable {kind}: {str(exc).splitlines()[0]}") from None
        total, first_period, last_period = con.execute("SELECT n, first_period, last_period FROM agg").fetchall()[0]
        nulls = "".join(f", CAST(NULL AS VARCHAR) AS {_q(fl)}" for fl in others)
        con.execute(f"CREATE TEMP TABLE ai AS SELECT unnest(ai, recursive := true){nulls}, false AS is_compute "
                    "FROM agg WHERE ai IS NOT NULL")
        ai_lines = con.execute("SELECT count(*) FROM ai").fetchall()[0][0]
        # the compute lines into the same table: the fields not collected are NULL
        con.execute("""INSERT INTO ai BY NAME SELECT unnest(compute, recursive := true), true AS is_compute
                        FROM agg WHERE compute IS NOT NULL""")
        compute_lines = con.execute("SELECT count(*) FROM ai WHERE is_compute").fetchall()[0][0]
        period_months = _months_between(parse_time(first_period), parse_time(last_period))
        meta: dict[str, object] = {"reader": kind, "lines": total, "ai_lines": ai_lines,
                                   "compute_lines": compute_lines, "columns_missing": missing_own}
        if not period_months and (ai_lines or compute_lines):  # no billing-period column: the months of the lines' usage
            starts = [parse_time(v) for (v,) in con.execute("SELECT DISTINCT usage_start FROM ai").fetchall()]
            period_months = sorted({t.date().replace(day=1) for t in starts if t})
        meta["export_key"] = export_key(cloud_name, period_months, name)
        rows, rejects = _typed_lines(con, cloud, ctx) if ai_lines or compute_lines else (SCHEMA.empty_table(), [])
        meta["rules"] = sorted(set(rows.column("rule").to_pylist())) if rows.num_rows else []
        return Parsed(table=TABLE, rows=rows, rejects=rejects, format=f"{cloud_name}_{kind}", meta=meta,
                      skipped=total - ai_lines - compute_lines)
    finally:
        con.close()


def _legacy_maps(cols: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The legacy CUR's product attributes and tags, one column each ('product/productName' or
    'product_product_name'; 'resourceTags/user:team' or 'resource_tags_user_team'), as the JSON objects
    CUR 2.0 writes in its ``product`` and ``resource_tags`` maps (keys as the column names give them
    after the prefix: 'product_name', 'user:team', 'user_team')."""
    out: dict[str, str] = {}
    name = next((cols[c][0] for c in ("product/productname", "product_product_name") if c in cols), None)
    if name is not None:
        out["product"] = f"CAST(json_object('product_name', {_q(name)}) AS VARCHAR)"
    tags = [(written, written.split("/", 1)[1] if "/" in written else written[len("resource_tags_"):])
            for low, (written, _typ) in cols.items()
            if low.startswith("resourcetags/") or (low.startswith("resource_tags_") and low != "resource_tags")]
    if tags:
        pairs = ", ".join(f"{_lit(key)}, nullif({_q(col)}, '')" for col, key in sorted(tags))
        out["tags"] = f"CAST(json_object({pairs}) AS VARCHAR)"
    return out


def _months_between(first: dt.datetime | None, last: dt.datetime | None) -> list[dt.date]:
    """The first days of the months from ``first`` to ``last`` (both given), else those given."""
    if first is None or last is None:
        return [t.date().replace(day=1) for t in (first or last,) if t is not None]
    if last < first:  # text order is not time order for MM/DD/YYYY
        first, last = last, first
    months, m = [], first.date().replace(day=1)
    while m <= last.date() and len(months) < 24:
        months.append(m)
        m = (m + dt.timedelta(days=32)).replace(day=1)
    return months


def _tags_object(cloud: str, raw: str | None) -> dict | None:
    if raw is None or not str(raw).strip():
        return None
    s = str(raw).strip()
    if cloud == "azure" and not s.startswith("{"):
        s = "{" + s + "}"  # Azure writes Tags with or without the braces
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    if isinstance(obj, list):  # GCP labels [{key, value}]; a MAP as [{key, value}]
        return {str(e.get("key")): e.get("value") for e in obj if isinstance(e, dict)}
    # a tag without a value (the legacy CUR's empty tag column) says nothing
    return {k: v for k, v in obj.items() if v is not None} if isinstance(obj, dict) else None


def _credits(raw: str | None) -> Decimal | None:
    if raw is None or not str(raw).strip():
        return None
    try:
        items = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(items, list) or not items:
        return None
    total = Decimal(0)
    for c in items:
        if isinstance(c, dict) and c.get("amount") is not None:
            total += Decimal(str(c["amount"]))
    return total


def _register(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, list], types: dict[str, pa.DataType]) -> None:
    con.register(name, pa.table({c: pa.array(v, type=types[c]) for c, v in columns.items()}))


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_NUM = "TRY_CAST(nullif(nullif(lower(trim({c})), 'null'), 'nan') AS DECIMAL(38,10))"
_USAGE_TYPES = "('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage')"


def _readings(con: duckdb.DuckDBPyConnection, cloud: Cloud) -> None:
    """``_readings``: one rule reading per distinct (charge type, SKU, what else the rule reads, unit)."""
    az = cloud.name == "azure"
    product = (f"CASE WHEN contains(sku, 'MP:') OR charge_type NOT IN {_USAGE_TYPES} THEN product END"
               if cloud.name == "aws" else "NULL::VARCHAR")
    extra = "sub_category, product_name, pricing_model" if az else "NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR"
    keys = con.execute(f"SELECT DISTINCT is_compute, charge_type, coalesce(sku, ''), {product}, {extra}, unit "
                       "FROM ai").fetchall()
    names = ("is_compute", "charge_type", "sku", "product", "sub_category", "product_name", "pricing_model", "unit",
             "kind", "per", "model", "bucket", "tier", "deployment_type", "long_context", "rule", "reason")
    cols: dict[str, list] = {k: [] for k in names}
    for is_compute, charge_type, sku, prod, sub, prod_name, pricing, unit in keys:
        ct = (charge_type or "").strip() or "Usage"
        kind = charge_kind(ct)
        sku_s = sku.strip()
        if is_compute:  # an instance-hour line that can price a node: no model, no tokens
            reading = Reading(cloud.compute_rule, None, COMPUTE_BUCKET)
        elif cloud.name == "aws":
            reading = read_aws(sku_s, prod)
        elif az:
            reading = read_azure(sku_s, sub, prod_name, pricing if kind in ("usage", "commitment") else None)
        else:
            reading = read_gcp(sku_s)
        if kind not in ("usage", "commitment") and not is_compute:
            # a credit / discount / tax line: the model its SKU names, if any; no bucket
            reading = Reading(f"{cloud.name}.{kind}", reading.model if sku_s and reading.rule != "unattributed" else None)
        per = tokens_per_unit(cloud.name, unit, reading.bucket) if reading.rule != "unattributed" else None
        for k, v in zip(names, (is_compute, charge_type, sku, prod, sub, prod_name, pricing, unit, kind, per, reading.model,
                                reading.bucket, reading.tier, reading.deployment_type, reading.long_context,
                                reading.rule, reading.reason), strict=True):
            cols[k].append(v)
    types = {k: pa.string() for k in names}
    types.update(per=pa.int64(), long_context=pa.bool_(), is_compute=pa.bool_())
    _register(con, "_readings", cols, types)


def _lookups(con: duckdb.DuckDBPyConnection, cloud: Cloud, ctx: ParseContext) -> None:
    """``_times``, ``_tags``, ``_credits``, ``_fx``: each distinct text read once in Python."""
    times = [v for (v,) in con.execute(
        "SELECT DISTINCT v FROM (SELECT usage_start AS v FROM ai UNION ALL SELECT usage_end FROM ai "
        "UNION ALL SELECT billing_period FROM ai) WHERE v IS NOT NULL").fetchall()]
    _register(con, "_times", {"v": times, "ts": [parse_time(v) for v in times]},
              {"v": pa.string(), "ts": pa.timestamp("us")})
    tag = ctx.cloud_team_tag
    texts = [v for (v,) in con.execute("SELECT DISTINCT tags FROM ai WHERE tags IS NOT NULL").fetchall()]
    tags_json, teams = [], []
    for raw in texts:
        obj = _tags_object(cloud.name, raw)
        tags_json.append(json.dumps(obj, sort_keys=True) if obj else None)
        teams.append(next((str(obj[k]) for k in (tag, f"user:{tag}", f"user_{tag}") if obj and obj.get(k) not in (None, "")),
                          None))
    _register(con, "_tags", {"v": texts, "tags_json": tags_json, "team": teams},
              {"v": pa.string(), "tags_json": pa.string(), "team": pa.string()})
    texts = [v for (v,) in con.execute("SELECT DISTINCT credits FROM ai WHERE credits IS NOT NULL").fetchall()]
    _register(con, "_credits", {"v": texts, "amount": [_credits(v) for v in texts]},
              {"v": pa.string(), "amount": pa.decimal128(38, 10)})
    currencies = [v for (v,) in con.execute(
        "SELECT DISTINCT upper(trim(currency)) FROM ai WHERE nullif(trim(currency), '') IS NOT NULL").fetchall()]
    rates = []
    for cur in currencies:
        raw_rate = 1 if cur == "USD" else ctx.fx_usd_per_unit.get(cur, ctx.fx_usd_per_unit.get(cur.lower()))
        rates.append(None if raw_rate is None else
                     Decimal(1) if cur == "USD" else rate_decimal(raw_rate).quantize(Decimal("1e-9")))
    _register(con, "_fx", {"currency": currencies, "rate": rates}, {"currency": pa.string(), "rate": pa.decimal128(18, 9)})


def _checks(cloud: Cloud) -> list[tuple[str, str, str]]:
    """(field, condition, reason) of every rule a line must meet, in reporting order (SQL over ``t``)."""
    f = {k: v[0] for k, v in cloud.fields.items()}
    az = cloud.name == "azure"
    end_field = "usage_end" if az else f["usage_end"]
    out = [
        (f["usage_start"], "ts_start IS NULL AND nullif(trim(usage_start), '') IS NULL", _lit(f["usage_start"] + ": required value missing")),
        (f["usage_start"], "ts_start IS NULL AND nullif(trim(usage_start), '') IS NOT NULL",
         _lit(f["usage_start"] + ": not a date/time: '") + " || usage_start || ''''"),
    ]
    if not az:
        out += [
            (end_field, "ts_end IS NULL AND nullif(trim(usage_end), '') IS NULL", _lit(end_field + ": required value missing")),
            (end_field, "ts_end IS NULL AND nullif(trim(usage_end), '') IS NOT NULL",
             _lit(end_field + ": not a date/time: '") + " || usage_end || ''''"),
        ]
    else:
        out.append(("Date", "regexp_matches(usage_start, '^[0-9]{1,2}/[0-9]{1,2}/[0-9]{4}') "
                            "AND TRY_CAST(split_part(usage_start, '/', 1) AS INTEGER) > 12",
                    "'Date ''' || usage_start || ''' is day-first; Azure exports write MM/DD/YYYY'"))
    out += [
        (f["billing_period"], "ts_period IS NULL AND nullif(trim(billing_period), '') IS NOT NULL",
         _lit(f["billing_period"] + ": not a date/time: '") + " || billing_period || ''''"),
        (f["quantity"], "q IS NULL AND nullif(trim(quantity), '') IS NULL", _lit(f["quantity"] + ": required value missing")),
        (f["quantity"], "q IS NULL AND nullif(trim(quantity), '') IS NOT NULL",
         _lit(f["quantity"] + ": not a number: '") + " || quantity || ''''"),
        (f["cost"], "k IS NULL AND nullif(trim(cost), '') IS NULL", _lit(f["cost"] + ": required value missing")),
        (f["cost"], "k IS NULL AND nullif(trim(cost), '') IS NOT NULL", _lit(f["cost"] + ": not a number: '") + " || cost || ''''"),
        (f["currency"], "nullif(cur, '') IS NULL", _lit(f["currency"] + ": required value missing")),
        (f["currency"], "nullif(cur, '') IS NOT NULL AND rate IS NULL",
         "'currency ' || cur || ': no FX rate in fx/ (only USD is accepted without one)'"),
        (f["quantity"], "q < 0 AND kind = 'usage'", "'negative usage amount ' || trim(quantity) || ' on a ' || ct || ' line'"),
        (end_field, "ts_end < ts_start", "'usage period ends before it starts'"),
    ]
    if cloud.name == "aws":  # an amortized cost that is there must be a number (it prices the hour)
        out += [(f[k], f"{v} IS NULL AND ct = {_lit(t)} AND nullif(trim({k}), '') IS NOT NULL",
                 _lit(f[k] + ": not a number: '") + f" || {k} || ''''")
                for k, v, t in (("ri_effective_cost", "ri_eff", "DiscountedUsage"),
                                ("sp_effective_cost", "sp_eff", "SavingsPlanCoveredUsage"))]
    return out


def _azure_cost_basis(con: duckdb.DuckDBPyConnection) -> str | None:
    """Which Azure cost-details dataset the file is (Microsoft's "Get Enterprise Agreement and Microsoft
    Customer Agreement reservation costs and usage", learn.microsoft.com/azure/cost-management-billing/
    reservations/understand-reserved-instance-usage-ea): 'amortized' when it holds an UnusedReservation
    / UnusedSavingsPlan line or a reservation / savings-plan usage line with a cost (its prorated
    share), 'actual' when it holds a Purchase line or such a usage line at cost 0 (the benefit makes
    it free), None when it holds neither (no benefit: the two datasets are the same file)."""
    amortized, actual = con.execute(f"""
        SELECT coalesce(bool_or(lower(ct) IN ('unusedreservation', 'unusedsavingsplan')
                                OR (kind = 'usage' AND lower(coalesce(trim(pricing_model), '')) IN {_BENEFIT_PRICING}
                                    AND k <> 0)), false),
               coalesce(bool_or(lower(ct) = 'purchase'
                                OR (kind = 'usage' AND lower(coalesce(trim(pricing_model), '')) IN {_BENEFIT_PRICING}
                                    AND k = 0)), false)
        FROM typed WHERE len(reasons) = 0""").fetchall()[0]
    return "amortized" if amortized else "actual" if actual else None


def _typed_lines(con: duckdb.DuckDBPyConnection, cloud: Cloud, ctx: ParseContext) -> tuple[pa.Table, list[Reject]]:
    """The AI lines (temp table ``ai``, text as read) typed and read by the rules, in SQL: Python runs
    once per *distinct* time, SKU reading, tag set, credit list and currency, never per line."""
    az = cloud.name == "azure"
    _lookups(con, cloud, ctx)
    _readings(con, cloud)
    product = (f"CASE WHEN contains(a.sku, 'MP:') OR a.charge_type NOT IN {_USAGE_TYPES} THEN a.product END"
               if cloud.name == "aws" else "NULL")
    checks = _checks(cloud)
    reasons = "list_filter([" + ", ".join(f"CASE WHEN {c} THEN {r} END" for _f, c, r in checks) + "], lambda x: x IS NOT NULL)"
    fields = "list_filter([" + ", ".join(f"CASE WHEN {c} THEN {_lit(fl)} END" for fl, c, _r in checks) + "], lambda x: x IS NOT NULL)[1]"
    con.execute(f"""
        CREATE TEMP TABLE typed AS
        WITH t0 AS (
            SELECT a.*, ts.ts AS ts_start, tb.ts AS ts_period, te.ts AS ts_end_read,
                   {_NUM.format(c='a.quantity')} AS q, {_NUM.format(c='a.cost')} AS k,
                   {_NUM.format(c='a.net_cost')} AS net_raw,
                   {_NUM.format(c='a.ri_effective_cost')} AS ri_eff, {_NUM.format(c='a.sp_effective_cost')} AS sp_eff,
                   upper(trim(a.currency)) AS cur, fx.rate,
                   r.kind, r.per, r.model AS r_model, r.bucket, r.tier, r.deployment_type, r.long_context, r.rule, r.reason,
                   coalesce(nullif(trim(a.charge_type), ''), 'Usage') AS ct,
                   tg.tags_json, tg.team, cr.amount AS credits_raw
            FROM ai a
            LEFT JOIN _times ts ON ts.v = a.usage_start
            LEFT JOIN _times te ON te.v = a.usage_end
            LEFT JOIN _times tb ON tb.v = a.billing_period
            LEFT JOIN _fx fx ON fx.currency = upper(trim(a.currency))
            LEFT JOIN _readings r
                   ON r.is_compute = a.is_compute
                  AND r.charge_type IS NOT DISTINCT FROM a.charge_type AND r.sku = coalesce(a.sku, '')
                  AND r.product IS NOT DISTINCT FROM {product}
                  AND r.sub_category IS NOT DISTINCT FROM {'a.sub_category' if az else 'NULL'}
                  AND r.product_name IS NOT DISTINCT FROM {'a.product_name' if az else 'NULL'}
                  AND r.pricing_model IS NOT DISTINCT FROM {'a.pricing_model' if az else 'NULL'}
                  AND r.unit IS NOT DISTINCT FROM a.unit
            LEFT JOIN _tags tg ON tg.v = a.tags
            LEFT JOIN _credits cr ON cr.v = a.credits
        ),
        t AS (
            SELECT *, {'ts_start + INTERVAL 1 DAY' if az else 'ts_end_read'} AS ts_end FROM t0
        )
        SELECT *, {reasons} AS reasons, {fields} AS first_field FROM t""")
    rejects = [Reject(int(line), field, "; ".join(rs), raw[:2000]) for line, field, rs, raw in con.execute(
        "SELECT line, first_field, reasons, CAST(to_json(struct_pack("
        + ", ".join(f"{_q(c)} := {_q(c)}" for c in cloud.fields)
        + ")) AS VARCHAR) FROM typed WHERE len(reasons) > 0 ORDER BY line").fetchall()]
    provider = ("'bedrock'" if cloud.name == "aws" else "'azure'" if az else
                "CASE WHEN lower(trim(service)) IN ('gemini api', 'generative language api') THEN 'gemini' ELSE 'vertex_ai' END")
    # a compute line's provider is the cloud, as nodes.csv names it ('aws', 'azure', 'gcp')
    provider = f"CASE WHEN is_compute THEN {_lit(cloud.name)} ELSE {provider} END"

    def usd(x: str) -> str:
        return f"CASE WHEN cur = 'USD' THEN {x} ELSE CAST(round({x} * rate, 10) AS DECIMAL(38,10)) END"

    net = (f"{usd('k')} + coalesce({usd('credits_raw')}, 0)" if cloud.name == "gcp"
           else usd("net_raw") if cloud.name == "aws" else "NULL::DECIMAL(38,10)")
    sku_id = {"gcp": "nullif(sku_id, '')", "azure": "nullif(sub_category, '')"}.get(cloud.name, "nullif(operation, '')")
    key = ", ".join(_q(c) for c in KEY_COLUMNS)
    basis = _azure_cost_basis(con) if az else None
    dependent = ("lower(ct) IN ('purchase', 'unusedreservation', 'unusedsavingsplan') "
                 f"OR lower(coalesce(trim(pricing_model), '')) IN {_BENEFIT_PRICING}")
    cost_basis = f"CASE WHEN {dependent} THEN {_lit(basis)} END" if basis else "NULL::VARCHAR"
    # an Azure purchase with a blank MeterCategory (see the Azure ai_filter): its ProductName stands in
    service = "coalesce(nullif(trim(service), ''), trim(product_name))" if az else "trim(service)"
    rows = con.sql(f"""
        WITH good AS (
            SELECT line, {_lit(cloud.name)} AS cloud, {provider} AS provider,
                   CAST(date_trunc('month', coalesce(ts_period, ts_start)) AS DATE) AS billing_period,
                   nullif(invoice_id, '') AS invoice_id, nullif(account_id, '') AS account_id,
                   ts_start AS usage_start, ts_end AS usage_end, ct AS charge_type, kind AS charge_kind,
                   nullif(pricing_model, '') AS pricing_model, {service} AS service, trim(coalesce(sku, '')) AS sku,
                   coalesce({sku_id}, nullif(operation, '')) AS sku_id,
                   nullif(operation, '') AS operation, nullif(lower(trim(region)), '') AS region,
                   nullif(resource_id, '') AS resource_id, nullif(principal, '') AS principal, tags_json,
                   q AS quantity, unit,
                   CASE WHEN per IS NOT NULL THEN CAST(round(q * per) AS DECIMAL(38,0)) END AS tokens,
                   k AS cost, cur AS currency, rate AS fx_usd_per_unit, {usd('k')} AS cost_usd,
                   {net} AS net_cost_usd, {usd('credits_raw')} AS credits_usd,
                   r_model AS model, bucket, tier, deployment_type, long_context, rule, reason AS unattributed_reason, team,
                   {cost_basis} AS cost_basis, nullif(trim(reservation_id), '') AS reservation_id,
                   CASE WHEN ct = 'DiscountedUsage' THEN {usd('ri_eff')}
                        WHEN ct = 'SavingsPlanCoveredUsage' THEN {usd('sp_eff')} END AS amortized_cost_usd
            FROM typed WHERE len(reasons) = 0
        )
        SELECT *, CAST(row_number() OVER (PARTITION BY {key} ORDER BY line) AS INTEGER) AS key_occurrence
        FROM good ORDER BY line""").to_arrow_table()
    return rows.select([fl.name for fl in SCHEMA]).cast(SCHEMA), rejects


def _bytes_parser(cloud_name: str):
    def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
        import tempfile  # noqa: PLC0415

        suffix = ".parquet" if data[:4] == b"PAR1" else ".csv"
        with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
            tmp.write(data)
            tmp.flush()
            return parse_path(Path(tmp.name), name, ctx, cloud_name)
    return parse


def _path_parser(cloud_name: str):
    def parse(path: Path, name: str, ctx: ParseContext) -> Parsed:
        return parse_path(path, name, ctx, cloud_name)
    return parse


SPECS = [
    SourceSpec(c.folder, f"{c.name}_cost_export", _sniffer(c), _bytes_parser(c.name), TABLE,
               parse_path=_path_parser(c.name))
    for c in CLOUDS.values()
]
