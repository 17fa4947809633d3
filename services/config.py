"""thinktax.toml: the few settings a user tunes. Every field documents what it does."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from warehouse.anomalies import METRICS, SCOPES

DEFAULT_LANDING = "landing"
# Runtime data lives under one folder of the working directory, outside the packages (issue 27):
# the published DuckDB file and what sits next to it (report.html, the run lock, build files, the
# DuckDB spill folder .thinktax_tmp), the Spark tables (var/spark) and the Dagster home
# (var/dagster_home). `var` as in the Filesystem Hierarchy Standard's "variable data files";
# /var/ is git-ignored, so nothing a run writes shows in `git status`.
DEFAULT_VAR = "var"
DEFAULT_WAREHOUSE = f"{DEFAULT_VAR}/thinktax.duckdb"
DEFAULT_DAGSTER_HOME = f"{DEFAULT_VAR}/dagster_home"
DEFAULT_CONFIG = "thinktax.toml"
# the defaults before issue 27, inside the source tree: found and moved once (move_old_defaults)
OLD_DEFAULT_WAREHOUSE = "warehouse/thinktax.duckdb"
OLD_DEFAULT_SPARK = "warehouse/spark"
OLD_DEFAULT_DAGSTER_HOME = ".thinktax/dagster_home"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Tiers:
    # A call is 'fast' below medium_min, 'full' from full_min, 'medium' in between (thinking tokens).
    medium_min_thinking_tokens: int = 1
    full_min_thinking_tokens: int = 4096
    target_mix: dict[str, float] = field(
        default_factory=lambda: {"fast": 0.80, "medium": 0.15, "full": 0.05}
    )


@dataclass(frozen=True)
class Alert:
    webhook_url: str = ""  # Slack-compatible incoming webhook; empty = log only
    window_days: int = 30  # trailing window of reasoning API spend
    threshold_usd_per_month: float = 0.0  # 0 = break-even of the cheapest feasible deployment
    warn_months: int = 3  # breakeven_ahead: warn once when the expected crossing is this many months away or less
    # invoice_mismatch: warn once per provider and month when the cloud invoice's unexplained difference
    # (marts.invoice_mismatch) exceeds both this many USD and this percent of the month's invoice usage
    invoice_mismatch_usd: float = 100.0
    invoice_mismatch_pct: float = 5.0


@dataclass(frozen=True)
class Forecast:
    horizon_months: int = 12  # marts.spend_forecast: months forecast after the last day with data


@dataclass(frozen=True)
class Capacity:
    # marts.capacity_plan: replicas keep the p95 queueing delay of the busiest observed hours, replayed
    # through the deployment, at or under this many seconds (models/capacity.py)
    max_queue_seconds: float = 10.0


@dataclass(frozen=True)
class Otel:
    # The resource attribute that names the team of an OpenTelemetry span (telemetry/otel/);
    # a span whose resource lacks it takes service.name. Applies to files ingested from then on.
    team_attribute: str = "service.namespace"


@dataclass(frozen=True)
class Cloud:
    # The tag (AWS resource_tags, Azure Tags) or label (GCP labels) of a cloud invoice line that names
    # its team (also tried as 'user:<tag>' and 'user_<tag>', AWS's user-defined tag spellings).
    # Applies to cloud invoices ingested from then on.
    team_tag: str = "team"


@dataclass(frozen=True)
class Chargeback:
    # How marts.chargeback spreads the month's shared costs (idle node-days, commitment fees, invoice
    # lines no call explains) over the cost centers: 'proportional' (to their usage cost), 'even'
    # (the same to each cost center with calls that month) or a cost center's name (all of it there).
    shared: str = "proportional"


@dataclass(frozen=True)
class Engine:
    kind: str = "duckdb"  # 'duckdb' (one process, the default) or 'spark' (warehouse/spark/)
    spark_remote: str = ""  # 'sc://host:port': a cluster through Spark Connect; empty = local[2]
    spark_warehouse: str = ""  # where the Spark tables live; empty = <warehouse folder>/spark
    # kind = "spark": where the landing files are parsed: "spark" (the parsers on Spark's executors,
    # warehouse/spark/ingest.py) or "duckdb" (warehouse/ingest.py on this machine, then copied to Spark)
    ingest: str = "spark"


@dataclass(frozen=True)
class Warehouse:
    # The per-call tables are Parquet files shared by successive builds (warehouse/parts.py); a file
    # a new build no longer lists is kept while one of the last keep_builds published builds lists
    # it, so a BI tool that opened one of them keeps reading it. 1 = only the current build's files.
    keep_builds: int = 2


@dataclass(frozen=True)
class Anomaly:
    # marts.spend_anomalies (warehouse/anomalies.py, docs/economics.md "Spend anomalies"): a day's expected
    # value is the median of the same day type (weekday / weekend) over the adapt_days days before it, so
    # a permanent level change is fully in the baseline after adapt_days days
    adapt_days: int = 14
    min_history_days: int = 14  # days a series needs before its first scored day
    # a day is anomalous only when its excess beats both floors (the excess in USD, and in percent of expected)
    min_impact_usd: float = 100.0
    min_impact_pct: float = 25.0
    # spend_anomaly alerts: once per episode of a series of these scopes; 'scope' = its cost_usd and
    # reasoning_tokens_per_call, 'scope:metric' = that metric only (cost_usd, calls, reasoning_tokens_per_call)
    alert_scopes: tuple[str, ...] = ("team", "task_type:reasoning_tokens_per_call")


@dataclass(frozen=True)
class Config:
    hours_per_month: float = 730.0
    tiers: Tiers = field(default_factory=Tiers)
    alert: Alert = field(default_factory=Alert)
    forecast: Forecast = field(default_factory=Forecast)
    capacity: Capacity = field(default_factory=Capacity)
    otel: Otel = field(default_factory=Otel)
    cloud: Cloud = field(default_factory=Cloud)
    chargeback: Chargeback = field(default_factory=Chargeback)
    engine: Engine = field(default_factory=Engine)
    warehouse: Warehouse = field(default_factory=Warehouse)
    anomaly: Anomaly = field(default_factory=Anomaly)
    source: str | None = None  # the file it came from, if any

    def settings_row(self) -> dict[str, object]:
        """The one-row ops.settings table the SQL reads (names are part of the SQL contract)."""
        mix = self.tiers.target_mix
        return {
            "hours_per_month": float(self.hours_per_month),
            "medium_min_thinking_tokens": int(self.tiers.medium_min_thinking_tokens),
            "full_min_thinking_tokens": int(self.tiers.full_min_thinking_tokens),
            "target_fast": float(mix.get("fast", 0.0)),
            "target_medium": float(mix.get("medium", 0.0)),
            "target_full": float(mix.get("full", 0.0)),
            "alert_window_days": int(self.alert.window_days),
            "alert_threshold_usd_per_month": float(self.alert.threshold_usd_per_month),
            "alert_warn_months": int(self.alert.warn_months),
            "forecast_horizon_months": int(self.forecast.horizon_months),
            "capacity_max_queue_seconds": float(self.capacity.max_queue_seconds),
            "otel_team_attribute": str(self.otel.team_attribute),
            "cloud_team_tag": str(self.cloud.team_tag),
            "anomaly_adapt_days": int(self.anomaly.adapt_days),
            "anomaly_min_history_days": int(self.anomaly.min_history_days),
            "anomaly_min_impact_usd": float(self.anomaly.min_impact_usd),
            "anomaly_min_impact_pct": float(self.anomaly.min_impact_pct),
            "chargeback_shared": str(self.chargeback.shared).strip(),
        }


def _check(cfg: Config) -> Config:
    t = cfg.tiers
    if not 0 <= t.medium_min_thinking_tokens <= t.full_min_thinking_tokens:
        raise ConfigError(
            "tiers: need 0 <= medium_min_thinking_tokens <= full_min_thinking_tokens, got "
            f"{t.medium_min_thinking_tokens} and {t.full_min_thinking_tokens}"
        )
    if set(t.target_mix) - {"fast", "medium", "full"}:
        raise ConfigError(f"tiers.target_mix: unknown tiers {sorted(set(t.target_mix) - {'fast', 'medium', 'full'})}")
    total = sum(t.target_mix.values())
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"tiers.target_mix must add up to 1, adds up to {total}")
    if cfg.hours_per_month <= 0:
        raise ConfigError("hours_per_month must be > 0")
    if cfg.alert.window_days < 1:
        raise ConfigError("alert.window_days must be >= 1")
    if cfg.alert.warn_months < 0:
        raise ConfigError("alert.warn_months must be >= 0")
    if not 1 <= cfg.forecast.horizon_months <= 36:
        raise ConfigError("forecast.horizon_months must be 1 to 36")
    if not cfg.capacity.max_queue_seconds >= 0:
        raise ConfigError("capacity.max_queue_seconds must be >= 0")
    if not isinstance(cfg.otel.team_attribute, str) or not cfg.otel.team_attribute.strip():
        raise ConfigError("otel.team_attribute must be a resource attribute name, e.g. 'service.namespace'")
    if cfg.alert.invoice_mismatch_usd < 0 or cfg.alert.invoice_mismatch_pct < 0:
        raise ConfigError("alert.invoice_mismatch_usd and alert.invoice_mismatch_pct must be >= 0")
    if not isinstance(cfg.cloud.team_tag, str) or not cfg.cloud.team_tag.strip():
        raise ConfigError("cloud.team_tag must be a tag / label name, e.g. 'team'")
    if not isinstance(cfg.chargeback.shared, str) or not cfg.chargeback.shared.strip():
        raise ConfigError("chargeback.shared must be 'proportional', 'even' or a cost center's name")
    if not isinstance(cfg.warehouse.keep_builds, int) or cfg.warehouse.keep_builds < 1:
        raise ConfigError(f"warehouse.keep_builds must be an integer >= 1, got {cfg.warehouse.keep_builds!r}")
    _check_anomaly(cfg.anomaly)
    return cfg


ANOMALY_SCOPES = ("all", *SCOPES)


def _check_anomaly(a: Anomaly) -> None:
    for name in ("adapt_days", "min_history_days"):
        v = getattr(a, name)
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 366:
            raise ConfigError(f"anomaly.{name} must be an integer of days from 1 to 366, got {v!r}")
    for name in ("min_impact_usd", "min_impact_pct"):
        v = getattr(a, name)
        if not isinstance(v, int | float) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"anomaly.{name} must be a number >= 0, got {v!r}")
    if isinstance(a.alert_scopes, str) or not all(isinstance(x, str) for x in a.alert_scopes):
        raise ConfigError(f"anomaly.alert_scopes must be a list of strings, got {a.alert_scopes!r}")
    for entry in a.alert_scopes:
        scope, _, metric = entry.partition(":")
        if scope not in ANOMALY_SCOPES or (metric and metric not in METRICS):
            raise ConfigError(f"anomaly.alert_scopes: {entry!r} is not '<scope>' or '<scope>:<metric>' with scope "
                              f"one of {', '.join(ANOMALY_SCOPES)} and metric one of {', '.join(METRICS)}")


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read thinktax.toml. ``path`` None: $THINKTAX_CONFIG, else ./thinktax.toml if present, else defaults."""
    if path is None:
        path = os.environ.get("THINKTAX_CONFIG") or (DEFAULT_CONFIG if Path(DEFAULT_CONFIG).exists() else None)
    if path is None:
        return _check(Config())
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:  # a folder, no permission, not UTF-8
        raise ConfigError(f"{p}: cannot be read as a TOML file ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: {exc}") from None
    _check_types(raw, p)
    tiers = Tiers(**raw.get("tiers", {}))
    alert = Alert(**raw.get("alert", {}))
    forecast = Forecast(**raw.get("forecast", {}))
    capacity = Capacity(**raw.get("capacity", {}))
    otel = Otel(**raw.get("otel", {}))
    cloud = Cloud(**raw.get("cloud", {}))
    engine = Engine(**raw.get("engine", {}))
    chargeback = Chargeback(**raw.get("chargeback", {}))
    warehouse = Warehouse(**raw.get("warehouse", {}))
    anomaly_raw = dict(raw.get("anomaly", {}))
    if isinstance(anomaly_raw.get("alert_scopes"), list):
        anomaly_raw["alert_scopes"] = tuple(anomaly_raw["alert_scopes"])
    anomaly = Anomaly(**anomaly_raw)
    if engine.kind not in ("duckdb", "spark"):
        raise ConfigError(f"{p}: engine.kind must be 'duckdb' or 'spark', got {engine.kind!r}")
    if engine.ingest not in ("duckdb", "spark"):
        raise ConfigError(f"{p}: engine.ingest must be 'spark' or 'duckdb', got {engine.ingest!r}")
    try:
        return _check(Config(hours_per_month=float(raw.get("hours_per_month", 730)), tiers=tiers, alert=alert,
                             forecast=forecast, capacity=capacity, otel=otel, cloud=cloud, engine=engine,
                             warehouse=warehouse, anomaly=anomaly, chargeback=chargeback, source=str(p)))
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None


# The sections of thinktax.toml, each a dataclass whose fields are its keys (top-level keys: Config's).
SECTIONS: dict[str, type] = {"tiers": Tiers, "alert": Alert, "forecast": Forecast, "capacity": Capacity,
                             "otel": Otel, "cloud": Cloud, "engine": Engine, "warehouse": Warehouse,
                             "anomaly": Anomaly, "chargeback": Chargeback}
_TOP = {"hours_per_month": float}
_EXPECTED = {int: "an integer", float: "a number", str: "a string", dict: "a table of numbers, e.g. { fast = 0.8 }",
             tuple: "a list of strings, e.g. [\"team\"]"}


def _kind(annotation: object) -> type:
    """int, float, str or dict, from a field's type (``dict[str, float]`` is dict)."""
    return getattr(annotation, "__origin__", annotation)  # type: ignore[return-value]


def _type_ok(kind: type, value: object) -> bool:
    if isinstance(value, bool):  # TOML true/false is never a count, a number or a name
        return False
    if kind is int:
        return isinstance(value, int)
    if kind is float:
        return isinstance(value, (int, float))
    if kind is dict:
        return isinstance(value, dict) and all(_type_ok(float, v) for v in value.values())
    if kind is tuple:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def _check_types(raw: dict, p: Path) -> None:
    """Every key of the file is known and has its type: the message names the file, the key, the
    value and the type expected (a range is checked after, by ``_check``)."""
    import typing  # noqa: PLC0415

    unknown = set(raw) - set(SECTIONS) - set(_TOP)
    if unknown:
        raise ConfigError(f"{p}: unknown settings {sorted(unknown)}")
    for key, kind in _TOP.items():
        if key in raw and not _type_ok(kind, raw[key]):
            raise ConfigError(f"{p}: {key} = {raw[key]!r}: expected {_EXPECTED[kind]}")
    for section, cls in SECTIONS.items():
        if section not in raw:
            continue
        table = raw[section]
        if not isinstance(table, dict):
            raise ConfigError(f"{p}: {section} = {table!r}: expected a table ([{section}])")
        hints = typing.get_type_hints(cls)
        unknown = set(table) - set(hints)
        if unknown:
            raise ConfigError(f"{p}: [{section}]: unknown settings {sorted(unknown)} (known: {', '.join(hints)})")
        for key, value in table.items():
            kind = _kind(hints[key])
            if not _type_ok(kind, value):
                raise ConfigError(f"{p}: [{section}] {key} = {value!r}: expected {_EXPECTED[kind]}")


WAREHOUSE_FILE = Path(DEFAULT_WAREHOUSE).name


def resolve_paths(landing: str | None, warehouse: str | None, *, folder: bool = False) -> tuple[Path, Path]:
    """CLI flag, else environment variable, else the default. The warehouse may be named by its
    folder: an existing directory means the file ``thinktax.duckdb`` in it; with ``folder`` (the
    Spark engine, whose ``--warehouse`` names where its tables live) so does a path without a suffix
    that does not exist yet. The Spark tables then default to ``<that folder>/spark``."""
    land = landing or os.environ.get("THINKTAX_LANDING") or DEFAULT_LANDING
    named = warehouse or os.environ.get("THINKTAX_WAREHOUSE")
    if not named:
        move_old_defaults()
    wh = Path(named or DEFAULT_WAREHOUSE).resolve()
    if wh.is_dir() or (folder and not wh.exists() and not wh.suffix):
        wh = wh / WAREHOUSE_FILE
    return Path(land).resolve(), wh


# what the Spark engine writes in its table folder (warehouse/spark/pipeline.py before issue 27):
# the published build's pointer and folders, staging and hand-over tables, database folders
_SPARK_DATA = ("CURRENT", "builds", "_staging", "_ingest", "_to_duckdb", "_economics")


def _is_spark_data(p: Path) -> bool:
    return p.name in _SPARK_DATA or p.name.endswith(".db") or p.name.startswith(".CURRENT")


def move_old_defaults(root: Path | None = None, say=None) -> list[tuple[Path, Path]]:
    """Runtime data at the default paths of before issue 27 (inside the source tree) moved once
    under ./var/: the published file warehouse/thinktax.duckdb with its WAL and report.html, the
    Spark tables among warehouse/spark/'s source files, the Dagster home .thinktax/dagster_home.
    Only where the new place is still empty; each move is said on stderr. Returns (from, to)."""
    import shutil  # noqa: PLC0415
    import sys  # noqa: PLC0415

    root = Path.cwd() if root is None else Path(root)
    var = root / DEFAULT_VAR
    moves: list[tuple[Path, Path]] = []
    old_wh, new_wh = root / OLD_DEFAULT_WAREHOUSE, root / DEFAULT_WAREHOUSE
    if old_wh.is_file() and not new_wh.exists():
        for name in (old_wh.name, f"{old_wh.name}.wal", "report.html"):
            if (old_wh.parent / name).is_file():
                moves.append((old_wh.parent / name, var / name))
    old_spark, new_spark = root / OLD_DEFAULT_SPARK, var / "spark"
    if old_spark.is_dir() and not new_spark.exists():
        moves += [(p, new_spark / p.name) for p in sorted(old_spark.iterdir()) if _is_spark_data(p)]
    old_home, new_home = root / OLD_DEFAULT_DAGSTER_HOME, root / DEFAULT_DAGSTER_HOME
    yaml = old_home / "dagster.yaml"
    # a dagster.yaml someone edited (no thinktax marker) may name its folder: left where it is
    if old_home.is_dir() and not new_home.exists() and (not yaml.exists() or yaml.read_text().startswith("# Written by thinktax")):
        moves.append((old_home, new_home))
    for src, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(src), str(dst))
        (say or (lambda m: print(m, file=sys.stderr)))(
            f"thinktax: moved {src.relative_to(root)} to {dst.relative_to(root)} (runtime data now lives under ./{DEFAULT_VAR}/)")
    return moves
