"""The demo's figures that docs/bi.md quotes, computed from a warehouse built from the full demo
(``make run``: ``thinktax demo`` with its defaults), and written between the markers in docs/bi.md.

    .venv/bin/python -m tools.bi_figures var/thinktax.duckdb          # rewrite the block
    .venv/bin/python -m tools.bi_figures var/thinktax.duckdb --check  # exit 1 when it differs

tests/commands/test_bi_figures.py builds the demo and fails when the block has drifted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import duckdb

DOC = Path(__file__).resolve().parents[1] / "docs" / "bi.md"
BEGIN, END = "<!-- demo-figures: python -m tools.bi_figures -->", "<!-- /demo-figures -->"


def figures(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    """Calls in core.calls, rows of marts.focus_costs, and its rows per month of ChargePeriodStart
    (the monthly files of ``thinktax export focus``)."""
    calls = con.execute("SELECT count(*) FROM core.calls").fetchone()[0]
    days = con.execute("SELECT count(DISTINCT day) FROM core.calls").fetchone()[0]
    months = con.execute("SELECT strftime(ChargePeriodStart, '%Y-%m'), count(*) FROM marts.focus_costs "
                         "GROUP BY 1 ORDER BY 1").fetchall()
    return {"calls": calls, "days": days, "months": months, "rows": sum(n for _m, n in months)}


def render(f: dict[str, object]) -> str:
    months = f["months"]
    assert isinstance(months, list)
    files = ", ".join(f"{n:,} ({m})" for m, n in months[:-1]) + f" and {months[-1][1]:,} ({months[-1][0]})"
    return (f"{BEGIN}\nOn the full demo (`make run`: {f['days']} days, {f['calls']:,} calls; `marts.focus_costs` "
            f"{f['rows']:,} rows, exported as {len(months)} monthly files of {files} rows), each file, and the "
            f"whole mart in one file, gives:\n{END}")


def replace(text: str, block: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} block")
    return pattern.sub(lambda _m: block, text, count=1)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    with duckdb.connect(argv[0], read_only=True) as con:
        block = render(figures(con))
    text = DOC.read_text(encoding="utf-8")
    new = replace(text, block)
    if "--check" in argv:
        if new != text:
            print(f"{DOC}: the demo figures differ:\n{block}", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
