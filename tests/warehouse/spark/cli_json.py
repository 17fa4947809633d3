"""`thinktax sql --format json` as the Spark tests read it, and rows compared across engines."""

from __future__ import annotations

import json


def sql_json(capsys, argv: list[str]) -> list[dict]:
    """Run ``thinktax <argv>`` in this process (it must exit 0) and parse what it printed as JSON."""
    from thinktax.cli import main

    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def canon(rows: list[dict]) -> list[str]:
    """Rows as sorted JSON texts, floats to 9 significant digits (float sums depend on the order an
    engine adds them in; DECIMALs, integers, text and dates are printed exactly)."""
    def fix(v):
        return float(f"{v:.9g}") if isinstance(v, float) else v

    return sorted(json.dumps({k: fix(v) for k, v in r.items()}, sort_keys=True) for r in rows)
