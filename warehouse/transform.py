"""SQL models: one SELECT per file under sql/<schema>/, materialised as table <schema>.<file name>.

Dependencies are read from the SQL itself (every ``schema.table`` it names), so they are written
once. Used by the Dagster asset factory and directly by tests and the benchmark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from graphlib import TopologicalSorter
from importlib import resources

import duckdb

SCHEMAS = ("core", "marts")
_REF = re.compile(r"\b(stg|core|marts|ops)\.([a-z_][a-z0-9_]*)\b(?!\s*\()", re.IGNORECASE)


@dataclass(frozen=True)
class SqlModel:
    schema: str
    name: str
    sql: str
    deps: frozenset[str]  # 'schema.table' names this model reads

    @property
    def table(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def description(self) -> str:
        """The header comment, without the comment markers."""
        lines = []
        for line in self.sql.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line[2:].strip())
        return "\n".join(lines)


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


@cache
def load_models() -> tuple[SqlModel, ...]:
    """All SQL models, in dependency order."""
    found: dict[str, SqlModel] = {}
    for schema in SCHEMAS:
        folder = resources.files("sql").joinpath(schema)
        for f in sorted(folder.iterdir(), key=lambda p: p.name):
            if not f.name.endswith(".sql"):
                continue
            sql = f.read_text(encoding="utf-8")
            name = f.name[:-4]
            refs = {f"{m[1].lower()}.{m[2].lower()}" for m in _REF.finditer(_strip_comments(sql))}
            refs.discard(f"{schema}.{name}")
            found[f"{schema}.{name}"] = SqlModel(schema, name, sql, frozenset(refs))
    graph = {t: {d for d in m.deps if d in found} for t, m in found.items()}
    order = TopologicalSorter(graph).static_order()
    return tuple(found[t] for t in order)


def build(con: duckdb.DuckDBPyConnection, model: SqlModel) -> int:
    """(Re)create the model's table from its SELECT; returns its row count."""
    con.execute(f"CREATE OR REPLACE TABLE {model.table} AS {model.sql}")
    return con.execute(f"SELECT count(*) FROM {model.table}").fetchall()[0][0]


def build_all(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {m.table: build(con, m) for m in load_models()}
