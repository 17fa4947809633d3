"""Catalog files (``catalog/``): models.csv, nodes.csv, deployments.csv, substitutions.csv, budgets.csv,
endpoints.csv, cloud_principals.csv, commitments.csv, anomaly_feedback.csv, cost_centers.csv and HF config.json files.

Each CSV is a snapshot: the newest file of a kind is the catalog in force (core takes the rows
of the highest file_id). Columns are matched by header name; an empty optional field means
"not given". Timestamps are ISO-8601 (an offset is converted to UTC; none means UTC; a bare date
means 00:00 UTC).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

import pyarrow as pa

from sources import contract
from sources.base import Parsed, ParseContext, Reject, SourceFormatError, head_text
from sources.csvutil import FieldError, Row, bool_field, decimal_field, float_field, int_field, read_rows
from sources.base import SourceSpec
from sources.contract import MAX_CATALOG_USD_PER_GPU_HOUR


def _timestamp(row: Row, field: str, *, required: bool) -> dt.datetime | None:
    text = row.get(field)
    if text == "":
        if required:
            raise FieldError(field, "missing")
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise FieldError(field, f"not an ISO-8601 timestamp: {text!r}") from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _text(row: Row, field: str, *, required: bool = False) -> str | None:
    value = row.get(field)
    if value == "" and required:
        raise FieldError(field, "missing")
    return value or None


def _csv_parser(table: str, fmt: str, convert: Callable[[Row], dict], *,
                defaults: tuple[str, ...] = ()) -> Callable[[bytes, str, ParseContext], Parsed]:
    """A catalog CSV parser: its header names the staging table's columns; the NOT NULL ones are
    required (except ``defaults``, which ``convert`` fills in), the rows get the table's Arrow schema."""
    declared = contract.table(table)
    schema = declared.arrow_schema()
    required = [c.name for c in declared.columns if not c.nullable and c.name not in defaults]

    def parse(data: bytes, name: str, ctx: ParseContext) -> Parsed:
        _, rows = read_rows(data, required=required, name=name)
        good: list[dict] = []
        rejects: list[Reject] = []
        for row in rows:
            try:
                rec = convert(row)
            except FieldError as exc:
                rejects.append(Reject(row.line, exc.field, exc.reason, row.raw))
                continue
            rec["line"] = row.line
            good.append(rec)
        return Parsed(table, pa.Table.from_pylist(good, schema=schema), rejects, fmt)

    return parse


def _model(row: Row) -> dict:
    return {
        "model": _text(row, "model", required=True),
        "family": _text(row, "family"),
        "reasoning": bool_field(row, "reasoning"),
        "params_total_b": float_field(row, "params_total_b"),
        "params_active_b": float_field(row, "params_active_b"),
        "config_json": _config_path(row),
        "weights_gb_fp8": float_field(row, "weights_gb_fp8"),
        "kv_bytes_per_token_bf16": int_field(row, "kv_bytes_per_token_bf16"),
    }


def _config_path(row: Row) -> str | None:
    """``config_json``: a path relative to catalog/. An absolute path or one with a '..' part
    (``../../etc/passwd``) could only name a file outside the landing folder: the row is rejected."""
    path = _text(row, "config_json")
    if path is None:
        return None
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", path) or ".." in parts:
        raise FieldError("config_json", f"{path!r} is not a path inside the landing folder's catalog/ "
                                        "(absolute or with '..'); give it relative to catalog/")
    return path


def _node(row: Row) -> dict:
    rec = {
        "node_id": _text(row, "node_id", required=True),
        "provider": (_text(row, "provider") or "").lower() or None,
        "gpu_type": _text(row, "gpu_type", required=True),
        "gpus": int_field(row, "gpus", required=True, minimum=1),
        "model": _text(row, "model"),
        "precision": (_text(row, "precision") or "").lower() or None,
        "usd_per_gpu_hour": decimal_field(row, "usd_per_gpu_hour", maximum=MAX_CATALOG_USD_PER_GPU_HOUR),
        "active_from": _timestamp(row, "active_from", required=True),
        "active_to": _timestamp(row, "active_to", required=False),
        "cloud_resource_id": _text(row, "cloud_resource_id"),
    }
    if rec["active_to"] is not None and rec["active_to"] <= rec["active_from"]:
        raise FieldError("active_to", "not after active_from")
    return rec


def _deployment(row: Row) -> dict:
    return {
        "deployment": _text(row, "deployment", required=True),
        "model": _text(row, "model", required=True),
        "provider": (_text(row, "provider") or "").lower() or None,
        "gpu_type": _text(row, "gpu_type", required=True),
        "gpus": int_field(row, "gpus", required=True, minimum=1),
        "precision": (_text(row, "precision") or "").lower() or None,
        "gpu_mem_gb": float_field(row, "gpu_mem_gb"),
        "calls_per_minute": float_field(row, "calls_per_minute"),
        "usd_per_gpu_hour": decimal_field(row, "usd_per_gpu_hour", maximum=MAX_CATALOG_USD_PER_GPU_HOUR),
    }


def _substitution(row: Row) -> dict:
    return {
        "from_model": _text(row, "from_model", required=True),
        "to_model": _text(row, "to_model", required=True),
        "thinking_ratio": float_field(row, "thinking_ratio", required=True),
        "output_ratio": float_field(row, "output_ratio", required=True),
        "note": _text(row, "note"),
    }


def _budget(row: Row) -> dict:
    soft = float_field(row, "soft_pct")
    if soft is not None and soft > 100:
        raise FieldError("soft_pct", f"a percent of the budget, 0 to 100: {soft:g}")
    return {
        "team": _text(row, "team", required=True),
        "monthly_usd": decimal_field(row, "monthly_usd", required=True),
        "soft_pct": 80.0 if soft is None else soft,
    }


def _day(row: Row, field: str) -> dt.date:
    text = row.get(field)
    if not text:
        raise FieldError(field, "missing")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise FieldError(field, f"not an ISO date (YYYY-MM-DD): {text!r}") from None


def _anomaly_feedback(row: Row) -> dict:
    """catalog/anomaly_feedback.csv: ``scope,scope_value,from,to,label`` (issue 42); ``to`` on or after
    ``from``; the scope and label are checked against the staging contract (lower case)."""
    scope = (_text(row, "scope", required=True) or "").strip().lower()
    if scope not in ("all", *contract.ANOMALY_SCOPES):
        raise FieldError("scope", f"not a scope of marts.spend_anomalies ({', '.join(('all', *contract.ANOMALY_SCOPES))}): "
                                  f"{row.get('scope')!r}")
    label = (_text(row, "label", required=True) or "").strip().lower()
    if label not in ("planned", "not_anomaly"):
        raise FieldError("label", f"not planned or not_anomaly: {row.get('label')!r}")
    start, end = _day(row, "from"), _day(row, "to")
    if end < start:
        raise FieldError("to", f"before from: {row.get('to')} < {row.get('from')}")
    return {"scope": scope, "scope_value": _text(row, "scope_value", required=True),
            "from_day": start, "to_day": end, "label": label}


def _principal(row: Row) -> dict:
    return {"principal": _text(row, "principal", required=True), "team": _text(row, "team", required=True)}


parse_cloud_principals = _csv_parser("stg.cloud_principals", "cloud_principals_csv", _principal)

_TAG_KEY = re.compile(r"[A-Za-z0-9_-]+")


def glob_regex(pattern: str) -> str:
    """A shell glob as an anchored regular expression both DuckDB (RE2) and Spark (Java) read the
    same: ``*`` any text, ``?`` one character, ``[abc]`` / ``[a-z]`` / ``[!abc]`` a set; every other
    character literal. A ``[`` without its ``]`` is an error (FieldError)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
            if end < 0:
                raise FieldError("pattern", f"a '[' without its ']': {pattern!r}")
            body = pattern[i + 1:end]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            body = "".join("\\" + c if c in "\\^[]" else c for c in body)
            out.append("[" + ("^" if neg else "") + body + "]")
            i = end
        else:
            out.append(re.escape(ch) if not ch.isalnum() else ch)
        i += 1
    return "^" + "".join(out) + "$"


def _cost_center(row: Row) -> dict:
    """catalog/cost_centers.csv: ``cost_center,field,pattern`` (docs/contract.md "Cost centers")."""
    field = (_text(row, "field", required=True) or "").strip().lower()
    if field.startswith("tag:"):
        key = field[4:]
        if not _TAG_KEY.fullmatch(key):
            raise FieldError("field", f"tag:<key> with a key of letters, digits, '_' or '-': {field!r}")
    elif field not in contract.COST_CENTER_FIELDS:
        raise FieldError("field", f"unknown field {field!r} (known: {', '.join(contract.COST_CENTER_FIELDS)}, tag:<key>)")
    pattern = _text(row, "pattern", required=True)
    return {"cost_center": _text(row, "cost_center", required=True), "field": field, "pattern": pattern,
            "pattern_regex": glob_regex(pattern)}


parse_cost_centers = _csv_parser("stg.cost_centers", "cost_centers_csv", _cost_center, defaults=("pattern_regex",))


_DEPLOYMENT_TYPES = {
    "global": "global", "standard": "global", "": None,
    "data_zone_eu": "data_zone_eu", "datazone_eu": "data_zone_eu", "eu": "data_zone_eu", "data zone eu": "data_zone_eu",
    "data_zone_us": "data_zone_us", "datazone_us": "data_zone_us", "us": "data_zone_us", "data zone us": "data_zone_us",
    "regional": "regional",
}
_BEDROCK_PROFILES = ("apac", "jp", "au", "ca", "us-gov", "global_profile")


def _endpoint(row: Row) -> dict:
    """catalog/endpoints.csv: ``provider,endpoint,model,sheet_provider,deployment_type,region,billing``.
    deployment_type: Azure's global / data zone (``data_zone_eu`` or ``eu``, ``data_zone_us`` or
    ``us``) / regional; for Bedrock a cross-region profile prefix (``us``, ``eu``, ``apac``, ``jp``,
    ``au``, ``global``) is stored as written. billing: ``on_demand`` (empty = on_demand) or
    ``provisioned``."""
    provider = (_text(row, "provider", required=True) or "").lower()
    deployment = (row.get("deployment_type") or "").strip().lower()
    if deployment in _DEPLOYMENT_TYPES:
        deployment_type = _DEPLOYMENT_TYPES[deployment]
    elif deployment in _BEDROCK_PROFILES:
        deployment_type = deployment
    else:
        raise FieldError("deployment_type", f"not global, data_zone_eu, data_zone_us, regional or a Bedrock profile prefix: {deployment!r}")
    billing = (row.get("billing") or "").strip().lower().replace("-", "_").replace(" ", "_") or "on_demand"
    if billing in ("ondemand", "pay_as_you_go", "paygo"):
        billing = "on_demand"
    if billing in ("ptu", "provisioned_throughput", "reserved"):
        billing = "provisioned"
    if billing not in contract.BILLINGS:
        raise FieldError("billing", f"not on_demand or provisioned: {row.get('billing')!r}")
    return {
        "provider": provider,
        "endpoint": _text(row, "endpoint", required=True),
        "model": _text(row, "model", required=True),
        "sheet_provider": (_text(row, "sheet_provider") or "").lower() or None,
        "deployment_type": deployment_type,
        "region": (_text(row, "region") or "").lower() or None,
        "billing": billing,
    }


def _add_months(ts: dt.datetime, months: int) -> dt.datetime:
    """``ts`` + ``months`` calendar months (the day clamped to the month's last day)."""
    y, m = divmod(ts.month - 1 + months, 12)
    year, month = ts.year + y, m + 1
    last = (dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)).day
    return ts.replace(year=year, month=month, day=min(ts.day, last))


def _commitment(row: Row) -> dict:
    """catalog/commitments.csv: ``provider,model,units,usd_per_unit_hour,commit_months,start,end[,note]``.
    units and usd_per_unit_hour must be positive; ``end`` (exclusive) must be after ``start``; an empty
    ``end`` is ``start`` + ``commit_months`` months (a row with neither has no end: rejected). The
    provider is kept as written (lower case); marts.commitments normalises it (core.provider_key)."""
    provider = (_text(row, "provider", required=True) or "").strip().lower()
    units = decimal_field(row, "units", required=True, minimum=None)
    if units is not None and units <= 0:
        raise FieldError("units", f"not positive: {row.get('units')}")
    price = decimal_field(row, "usd_per_unit_hour", required=True, minimum=None)
    if price is not None and price <= 0:
        raise FieldError("usd_per_unit_hour", f"not positive: {row.get('usd_per_unit_hour')}")
    months = int_field(row, "commit_months", minimum=0)
    if months is not None and months > 120:
        raise FieldError("commit_months", f"a term of 0 to 120 months: {months}")
    start = _timestamp(row, "start", required=True)
    end = _timestamp(row, "end", required=False)
    if end is None:
        if not months:
            raise FieldError("end", "missing, and no commit_months to end the term")
        end = _add_months(start, months)
    if end <= start:
        raise FieldError("end", f"not after start: {row.get('end')} <= {row.get('start')}")
    return {
        "provider": provider, "model": _text(row, "model", required=True), "units": units,
        "usd_per_unit_hour": price, "commit_months": months, "commit_start": start, "commit_end": end,
        "note": _text(row, "note"),
    }


parse_models = _csv_parser("stg.models", "models_csv", _model)
parse_nodes = _csv_parser("stg.nodes", "nodes_csv", _node)
parse_deployments = _csv_parser("stg.deployments", "deployments_csv", _deployment)
parse_substitutions = _csv_parser("stg.substitutions", "substitutions_csv", _substitution)
parse_budgets = _csv_parser("stg.budgets", "budgets_csv", _budget, defaults=("soft_pct",))  # soft_pct: 80
# the CSV's from / to columns are from_day / to_day
parse_anomaly_feedback = _csv_parser("stg.anomaly_feedback", "anomaly_feedback_csv", _anomaly_feedback,
                                     defaults=("from_day", "to_day"))
parse_endpoints = _csv_parser("stg.endpoints", "endpoints_csv", _endpoint, defaults=("billing",))  # billing: on_demand
# the CSV's start / end columns are commit_start / commit_end (end may be empty: start + commit_months)
parse_commitments = _csv_parser("stg.commitments", "commitments_csv", _commitment,
                                defaults=("commit_start", "commit_end"))


def parse_config(data: bytes, name: str, ctx: ParseContext) -> Parsed:
    """A Hugging Face config.json, kept as text; ``path`` is relative to catalog/."""
    text = data.decode("utf-8").lstrip("\ufeff")
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceFormatError(f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(cfg, dict):
        raise SourceFormatError("config.json is not a JSON object")
    path = name.split("catalog/", 1)[-1]
    return Parsed(
        "stg.model_configs",
        pa.table({"line": [1], "path": [path], "config_json": [text]}, schema=contract.MODEL_CONFIGS.arrow_schema()),
        [],
        "hf_config_json",
    )


def _header(data: bytes) -> list[str]:
    first = head_text(data, 2048).splitlines()[0] if data.strip() else ""
    return [h.strip().lower() for h in first.split(",")]


def _sniff_csv(*columns: str) -> Callable[[bytes, str], bool]:
    return lambda data, name: all(c in _header(data) for c in columns)


def _sniff_config(data: bytes, name: str) -> bool:
    head = head_text(data, 8192)
    return head.startswith("{") and any(k in head for k in ('"num_hidden_layers"', '"architectures"', '"model_type"'))


SPECS = [
    SourceSpec("catalog", "substitutions_csv", _sniff_csv("from_model", "to_model", "thinking_ratio"), parse_substitutions, "stg.substitutions"),
    SourceSpec("catalog", "endpoints_csv", _sniff_csv("provider", "endpoint", "model"), parse_endpoints, "stg.endpoints"),
    SourceSpec("catalog", "commitments_csv", _sniff_csv("provider", "model", "units", "usd_per_unit_hour"),
               parse_commitments, "stg.commitments"),
    SourceSpec("catalog", "anomaly_feedback_csv", _sniff_csv("scope", "scope_value", "label"), parse_anomaly_feedback,
               "stg.anomaly_feedback"),
    SourceSpec("catalog", "cost_centers_csv", _sniff_csv("cost_center", "field", "pattern"), parse_cost_centers,
               "stg.cost_centers"),
    SourceSpec("catalog", "budgets_csv", _sniff_csv("team", "monthly_usd"), parse_budgets, "stg.budgets"),
    SourceSpec("catalog", "cloud_principals_csv", _sniff_csv("principal", "team"), parse_cloud_principals,
               "stg.cloud_principals"),
    SourceSpec("catalog", "nodes_csv", _sniff_csv("node_id", "gpu_type"), parse_nodes, "stg.nodes"),
    SourceSpec("catalog", "deployments_csv", _sniff_csv("deployment", "gpu_type"), parse_deployments, "stg.deployments"),
    SourceSpec("catalog", "models_csv", _sniff_csv("model"), parse_models, "stg.models"),
    SourceSpec("catalog", "hf_config_json", _sniff_config, parse_config, "stg.model_configs"),
]
