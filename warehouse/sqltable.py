"""The SQL tables: one SELECT per file under sql/core and sql/marts, in DuckDB's dialect.

Each file is parsed once with sqlglot. What a model reads comes from its syntax tree (every table
it names that is not one of its own CTEs; a ``'stg.x'`` inside a string literal is not a table);
how it is materialised comes from its structured header, the ``-- @key: value`` lines that end the
comment block at the top of the file::

    -- What the table is, in prose (any number of comment lines) ...
    -- @kind: incremental_by_day
    -- @grain: one row per call (request_id)
    -- @closure: task_id
    -- @halo: true

* ``@kind`` (required): ``full`` (recreated whole each build), ``incremental_by_day`` /
  ``incremental_by_month`` (a build with an incremental plan replaces the rows of its days /
  months, keyed by the column ``day`` / ``month``), ``view`` (nothing stored).
* ``@grain`` (required): what one row is. It may continue on the following comment lines.
* ``@closure`` (incremental kinds): ``task_id`` when a row depends on every call of its task, so
  the plan's days must be closed over tasks (warehouse/incremental.py); ``trace_id`` /
  ``session_id`` likewise for a trace's (and its agent spans') or a session's calls.
* ``@halo`` (``incremental_by_day`` only, default false): rows depend on neighbouring days; the
  planned days +- the halo are replaced.
* ``@key`` (incremental kinds, default ``day`` / ``month``): the column the days are matched on.
* ``@storage`` (``incremental_by_day`` only, default ``table``): ``parquet`` keeps the table out of
  the DuckDB file, as day-partitioned Parquet files and a view over them (warehouse/parts.py); for
  the large per-call tables, so that publishing a build does not copy them.

A header that is missing, names an unknown key or a bad value fails at load with the file named
(``HeaderError``). The same SQL is rendered for Spark SQL by ``to_spark`` (sqlglot plus the
rewrite rules in warehouse/spark/render.py); ``warehouse.spark.render.load_spark_tables()`` renders every model
at load, so a construct that cannot be rendered fails there, with the file and construct named.

Nothing here imports warehouse.incremental or warehouse.transform (they import this module).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import cache
from graphlib import TopologicalSorter
from importlib import resources
from pathlib import Path

SCHEMAS = ("core", "marts")
# the schemas a model can read from; any other qualified name is not a warehouse table
READABLE = ("stg", "core", "marts", "ops")
KINDS = ("full", "incremental_by_day", "incremental_by_month", "view")
CLOSURES = ("task_id", "trace_id", "session_id")
_KEYS = ("kind", "grain", "closure", "halo", "key", "storage")
STORAGES = ("table", "parquet")
_HEADER_LINE = re.compile(r"^--\s*@([A-Za-z_]+)\s*:\s*(.*)$")
_TRUE = {"true": True, "yes": True, "false": False, "no": False}


class HeaderError(ValueError):
    """A model file whose structured header is missing or invalid."""


class SqlParseError(ValueError):
    """A model file sqlglot cannot parse."""


@dataclass(frozen=True)
class SqlTable:
    schema: str
    name: str
    sql: str
    deps: frozenset[str]  # 'schema.table' names this model reads (from the syntax tree)
    incremental: str | None = None  # 'day' / 'month': the key unit of an in-place rebuild
    halo: bool = False  # rows depend on neighbouring days: rewrite the planned days +- halo
    view: bool = False  # '@kind: view': a view, nothing stored
    grain: str = ""
    closure: str | None = None  # 'task_id': the plan's days are closed over this key
    key: str | None = None  # the column matched against the planned days ('day' / 'month')
    path: str = ""  # 'sql/core/x.sql', for messages
    storage: str = "table"  # '@storage: parquet': day-partitioned Parquet files and a view (warehouse/parts.py)

    @property
    def table(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def kind(self) -> str:
        if self.view:
            return "view"
        return f"incremental_by_{self.incremental}" if self.incremental else "full"

    @property
    def key_column(self) -> str | None:
        return (self.key or self.incremental) if self.incremental else None

    @property
    def description(self) -> str:
        """The header's prose without the comment markers, 'grain: ...' after its first sentence."""
        lines = []
        for line in self.sql.splitlines():
            if not line.startswith("--") or _HEADER_LINE.match(line):
                break
            lines.append(line[2:].strip())
        while lines and not lines[-1]:
            lines.pop()
        if self.grain:
            at = next((i + 1 for i, ln in enumerate(lines) if ln.endswith(".")), len(lines))
            lines.insert(at, f"grain: {self.grain}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Header:
    kind: str
    grain: str
    closure: str | None = None
    halo: bool = False
    key: str | None = None
    storage: str = "table"


def parse_header(sql: str, path: str) -> Header:
    """The structured header of a model file (the ``-- @key: value`` lines ending its top comment)."""
    values: dict[str, str] = {}
    current: str | None = None
    for n, line in enumerate(sql.splitlines(), 1):
        if not line.startswith("--"):
            break
        m = _HEADER_LINE.match(line)
        if m:
            key = m.group(1).lower()
            if key not in _KEYS:
                raise HeaderError(f"{path}:{n}: unknown header key '@{key}' (known: {', '.join('@' + k for k in _KEYS)})")
            if key in values:
                raise HeaderError(f"{path}:{n}: header key '@{key}' given twice")
            values[key] = m.group(2).strip()
            current = key
        elif current is not None:  # a continuation of the previous key's value
            text = line[2:].strip()
            if text:
                values[current] = f"{values[current]} {text}".strip()
    if "kind" not in values:
        raise HeaderError(
            f"{path}: no structured header: end the top comment with '-- @kind: full' (or incremental_by_day, "
            "incremental_by_month, view) and '-- @grain: <what one row is>' (docs/contract.md, 'SQL table headers')")
    kind = values["kind"].lower()
    if kind not in KINDS:
        raise HeaderError(f"{path}: @kind '{values['kind']}' is not one of {', '.join(KINDS)}")
    if not values.get("grain"):
        raise HeaderError(f"{path}: no '-- @grain:' line (what one row of the table is)")
    incremental = kind.startswith("incremental_")
    closure = values.get("closure") or None
    if closure is not None:
        if not incremental:
            raise HeaderError(f"{path}: @closure is for incremental models; this one is @kind {kind}")
        if closure not in CLOSURES:
            raise HeaderError(f"{path}: @closure '{closure}' is not one of {', '.join(CLOSURES)}")
    halo_text = values.get("halo", "false").lower()
    if halo_text not in _TRUE:
        raise HeaderError(f"{path}: @halo '{values['halo']}' is not true or false")
    halo = _TRUE[halo_text]
    if halo and kind != "incremental_by_day":
        raise HeaderError(f"{path}: @halo is for @kind incremental_by_day; this one is @kind {kind}")
    key = values.get("key") or None
    if key is not None:
        if not incremental:
            raise HeaderError(f"{path}: @key is for incremental models; this one is @kind {kind}")
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
            raise HeaderError(f"{path}: @key '{key}' is not a column name")
    storage = values.get("storage", "table").lower()
    if storage not in STORAGES:
        raise HeaderError(f"{path}: @storage '{values['storage']}' is not one of {', '.join(STORAGES)}")
    if storage != "table" and kind != "incremental_by_day":
        raise HeaderError(f"{path}: @storage {storage} is for @kind incremental_by_day (files per day); this one is @kind {kind}")
    return Header(kind, values["grain"], closure, halo, key, storage)


# -- the syntax tree -----------------------------------------------------------------------------

def parse(sql: str, path: str):
    import sqlglot  # noqa: PLC0415
    from sqlglot.errors import ParseError  # noqa: PLC0415

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except ParseError as exc:
        raise SqlParseError(f"{path}: sqlglot cannot parse it: {exc}") from exc
    if tree is None:
        raise SqlParseError(f"{path}: no SQL statement")
    return tree


def table_refs(tree) -> set[str]:
    """'schema.table' of every warehouse table the statement reads (CTE names and string
    literals are not tables; macros such as core.model_key(...) are functions, not tables)."""
    from sqlglot import exp  # noqa: PLC0415

    out = set()
    for t in tree.find_all(exp.Table):
        db = (t.db or "").lower()  # unqualified names are CTEs or table functions (range, ...)
        if db in READABLE:
            out.add(f"{db}.{t.name.lower()}")
    return out


# -- what each model reads, remembered between processes ---------------------------------------
# sqlglot parses the ~30 model files in 1-2 s, paid by every process that loads the Dagster
# definitions (each `thinktax run`). The tables each file reads are stored in a small JSON file
# keyed by a hash of the sqlglot version and the file's text, so a file is parsed again only when
# it (or sqlglot) changed. A cache that cannot be read or written is simply not used.

def _cache_file() -> Path:
    base = os.environ.get("THINKTAX_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "thinktax")
    return Path(base) / "sql_table_refs.json"


@cache
def _sqlglot_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("sqlglot")
    except PackageNotFoundError:
        return "unknown"


def _refs_key(sql: str) -> str:
    return hashlib.sha256(f"sqlglot {_sqlglot_version()}\0{sql}".encode()).hexdigest()


def _read_refs_cache() -> dict[str, list[str]]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_refs_cache(entries: dict[str, list[str]]) -> None:
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass


def sql_refs(sql: str, path: str, cached: dict[str, list[str]] | None = None) -> set[str]:
    """table_refs(parse(sql)), from ``cached`` (the refs cache) when this exact text was parsed before."""
    key = _refs_key(sql)
    if cached is not None and isinstance(cached.get(key), list):
        return set(cached[key])
    refs = table_refs(parse(sql, path))
    if cached is not None:
        cached[key] = sorted(refs)
    return refs


def _table(schema: str, name: str, sql: str, path: str, cached: dict[str, list[str]] | None = None) -> SqlTable:
    header = parse_header(sql, path)
    refs = sql_refs(sql, path, cached)
    refs.discard(f"{schema}.{name}")
    incremental = header.kind.removeprefix("incremental_by_") if header.kind.startswith("incremental_by_") else None
    return SqlTable(schema, name, sql, frozenset(refs), incremental=incremental, halo=header.halo,
                    view=header.kind == "view", grain=header.grain, closure=header.closure, key=header.key, path=path,
                    storage=header.storage)


@cache
def _load() -> tuple[SqlTable, ...]:
    found: dict[str, SqlTable] = {}
    cached = _read_refs_cache()
    before = dict(cached)
    for schema in SCHEMAS:
        folder = resources.files("sql").joinpath(schema)
        for f in sorted(folder.iterdir(), key=lambda p: p.name):
            if not f.name.endswith(".sql"):
                continue
            name = f.name[:-4]
            found[f"{schema}.{name}"] = _table(schema, name, f.read_text(encoding="utf-8"), f"sql/{schema}/{f.name}", cached)
    if cached != before:
        current = {_refs_key(m.sql) for m in found.values()}
        _write_refs_cache({k: v for k, v in cached.items() if k in current})  # only today's files: no growth
    # sorted predecessors: the same order in every process (a set's order follows the string hash
    # seed, so two pytest-xdist workers would list the models differently)
    graph = {t: sorted(d for d in m.deps if d in found) for t, m in found.items()}
    order = TopologicalSorter(graph).static_order()
    return tuple(found[t] for t in order)


def load_tables(engine: str = "duckdb") -> tuple[SqlTable, ...]:
    """All SQL tables, in dependency order, their headers validated. For Spark,
    ``warehouse.spark.render.load_spark_tables()`` also renders each model for Spark SQL, so a model
    Spark cannot run fails at load rather than mid-build (this module does not import the Spark
    package: it imports this one)."""
    if engine != "duckdb":
        raise ValueError(f"unknown engine {engine!r}: load_tables is DuckDB's; Spark's is "
                         "warehouse.spark.render.load_spark_tables()")
    return _load()


def downstream(models: tuple[SqlTable, ...] | list[SqlTable], tables: set[str]) -> set[str]:
    """The models that read any of ``tables``, directly or through other models (``tables``
    themselves only where they are such a model). The one ``downstream`` (issue 27): the plan
    (warehouse/incremental.py) and the Dagster graph use this one."""
    out: set[str] = set()
    for m in models:  # dependency order
        if m.deps & (tables | out):
            out.add(m.table)
    return out
