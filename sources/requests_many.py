"""Per-request JSONL (sources/requests.py), many files in one query.

The request query is large (one JSON parse per line, ~20 integer fields each tested and cast, the
reject rules): DuckDB takes ~0.15-0.2 CPU s to bind and plan it, whatever the number of lines. A
landing folder of many small files (the demo's 221 files of ~1,000 calls; a gateway rotating its
log every few minutes) paid that once per file: most of its ingest. ``parse_many`` runs the
query once over the lines of several files and splits the result, giving for each file exactly
what ``requests.parse`` gives (the same good rows, the same rejects with their line numbers, the
same "empty file" error). The query works line by line (no line reads another), so a file's
rows do not depend on its neighbours in the batch. A file's line numbers carry its position in
the batch in their high 32 bits while the query runs. If the batch query fails, each file is
parsed on its own, so that a file that stops the parse stops only itself, as before.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sources import requests
from sources.base import Parsed, ParseContext, SourceFormatError

FORMAT = "requests_jsonl"
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1


def parse_many(items: list[tuple[bytes, str]], ctx: ParseContext) -> list[Parsed | Exception]:
    """``requests.parse(data, name, ctx)`` for each (data, name), or the exception it raises
    (returned, not raised: the caller raises it when it reaches that file)."""
    if len(items) == 1:
        return [_one(*items[0], ctx)]
    try:
        tables = []
        for k, (data, _name) in enumerate(items):
            t = requests._lines(data)  # noqa: SLF001 - the same split into lines as requests.parse
            tables.append(t.set_column(0, "line", pc.add(t["line"], pa.scalar(k << _SHIFT, pa.int64()))))
        good, rejects = requests.run_lines(pa.concat_tables(tables), ctx, allow_empty=True)
    except Exception:  # noqa: BLE001 - parse each file alone: its own error, as requests.parse gives it
        return [_one(data, name, ctx) for data, name in items]
    file_of = pc.shift_right(good["line"], pa.scalar(_SHIFT, pa.int64()))
    local = pc.bit_wise_and(good["line"], pa.scalar(_LOW, pa.int64()))
    good = good.set_column(good.column_names.index("line"), "line", local)
    by_file: dict[int, list] = {}
    for r in rejects:
        by_file.setdefault(r.line >> _SHIFT, []).append(dataclasses.replace(r, line=r.line & _LOW))
    # the rows come out in line order, so each file's rows are one run of them: a slice (no copy),
    # found by a binary search; a filter of the whole batch per file was ~1.3 ms a file (0.7 s of
    # the demo's 513 request files). Rows in any other order are filtered, as before.
    ks = file_of.to_numpy()
    ordered = bool(np.all(ks[1:] >= ks[:-1]))
    bounds = np.searchsorted(ks, np.arange(len(items) + 1)) if ordered else None
    out: list[Parsed | Exception] = []
    for k in range(len(items)):
        if bounds is not None:
            rows = good.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
        else:
            rows = good.filter(pc.equal(file_of, k))
        bad = by_file.get(k, [])
        if rows.num_rows == 0 and not bad:
            out.append(SourceFormatError("empty file: no JSON lines"))
            continue
        out.append(Parsed(requests.TABLE, rows, bad, FORMAT))
    return out


def _one(data: bytes, name: str, ctx: ParseContext) -> Parsed | Exception:
    try:
        return requests.parse(data, name, ctx)
    except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it at this file
        return exc


# parse function -> its batch version: a spec whose parse is another function (a wrapper, a
# test's) is parsed one file at a time with that function
BATCH_PARSERS = {requests.parse: parse_many}
# parse function -> its reader by path, for a large file (warehouse/ingest.py BY_PATH_BYTES)
BY_PATH = {requests.parse: requests.read_by_path}
# parse function -> the query of its reader by path, for a loader that runs it in its own connection
# (warehouse/ingest.py: the rows go straight into its temp table, with no Arrow copy)
IN_PLACE = {requests.parse: (requests.path_select, requests.path_lines)}
