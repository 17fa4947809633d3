"""SQL checks: each file in sql/checks/ is a SELECT returning the rows that break a rule.

Zero rows = pass. The header names the asset it guards (``-- asset: schema.table``); the first
comment line says what it checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import duckdb


@dataclass(frozen=True)
class SqlCheck:
    name: str
    asset: str  # 'schema.table'
    description: str
    sql: str

    def run(self, con: duckdb.DuckDBPyConnection, sample: int = 5) -> tuple[int, list[dict]]:
        """(number of offending rows, the first ``sample`` of them as dicts)."""
        rel = con.sql(self.sql)
        cols = rel.columns
        rows = rel.fetchall()
        return len(rows), [dict(zip(cols, r)) for r in rows[:sample]]


@cache
def load_checks() -> tuple[SqlCheck, ...]:
    out = []
    for f in sorted(resources.files("sql").joinpath("checks").iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".sql"):
            continue
        sql = f.read_text(encoding="utf-8")
        m = re.search(r"^-- asset:\s*([a-z_]+\.[a-z_0-9]+)", sql, re.M)
        if not m:
            raise ValueError(f"sql/checks/{f.name}: missing '-- asset: schema.table' header")
        desc = " ".join(line[2:].strip() for line in sql.splitlines() if line.startswith("--") and "asset:" not in line)
        out.append(SqlCheck(f.name[:-4], m[1], desc, sql))
    return tuple(out)
