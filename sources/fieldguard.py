"""The unknown-field guard (issue 44, item 3): which keys of a JSON source's records the parser does
not read, per file, so that a new field is seen instead of silently dropped.

DuckDB's ``read_json(columns=...)`` / ``json_transform`` and polars drop every key they were not
told about (duckdb #15502, #25826; polars #29330): when Anthropic added
``usage.output_tokens_details.thinking_tokens`` every Claude call lost its thinking and nothing
said so. Each JSON parser declares, next to its parser, one :class:`KnownFields` built from the
structure it reads (``known_fields(...)``): the paths it reads are the paths of that structure, so
a field a parser starts to read is known the moment it is added there, with no second list.
Beside them a parser may name, with a reason, documented fields it deliberately does not read
(``ignored``: a total that is the sum of counts it reads, the response text, ...), and objects it
does not walk (``open``: free-form maps such as ``metadata``).

``scan(data, known)`` lists the keys of every walked object (the record itself and each object of
the structure not declared open) in DuckDB (``json_keys`` with all the objects' paths: one JSON
parse per line, no Python loop). Cost (docs/performance.md, "Unknown-field guard"): a file of at
most :data:`SMALL_BYTES` is scanned whole; a larger one first on a sample of 2 % of its bytes (its
head and :data:`CHUNKS` evenly spaced slices of whole lines), and whole only when the sample shows
an unknown key (a whole pass is ~25-50 % of the ingest's own time, the sample ~1 %). A key absent
from every sampled line is therefore missed: a key on 1 line in 1,000 spread evenly escapes a
5,000-line sample with probability e^-5 (0.7 %); one that starts mid-file and stays is seen.

Each unknown path gets: the records carrying it, its first line, an example value (200 chars),
whether it looks like a token count (:data:`TOKEN_LIKE_PATH`) and on how many records its value
is not zero / empty. A Gemini per-modality list (``[{modality, tokenCount}]``) is a breakdown of a
count the parser reads, priced at that count's rate: it counts as non-zero only for the modalities
the price sheets give another rate (LiteLLM's ``input_cost_per_audio_token``,
``output_cost_per_image_token``): AUDIO tokens, or output tokens of any modality but TEXT. A token-looking path with a non-zero value makes those calls
``partially_priced`` in ``marts.unpriced_usage`` (their lines: ``ops.unknown_field_lines``).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from sources.base import split_lines

# A file at most SMALL_BYTES (decoded) is scanned whole. A larger one is first scanned on a sample of
# SAMPLE_SHARE of its bytes (at least SMALL_BYTES, at most MAX_SAMPLE_BYTES): half its head, half
# CHUNKS evenly spaced slices, each of whole lines (at least one); whole only when the sample shows
# an unknown key.
SMALL_BYTES = 64 << 10
SAMPLE_SHARE = 0.02
MAX_SAMPLE_BYTES = 4 << 20
CHUNKS = 64

# A path looks like a token count when one of its names does: *_tokens, *Tokens, *TokenCount,
# *_token_count, or a *_tokens_details / *TokensDetails object (or anything under one); or when its
# value is an object or array holding such a key (a new details object).
TOKEN_NAME = r"(_tokens|Tokens|TokenCount|_token_count|_tokens_details|TokensDetails)"
TOKEN_LIKE_PATH = r"(^|\.)[A-Za-z0-9_]*" + TOKEN_NAME + r"(\.|$)"
TOKEN_LIKE_VALUE = r'"[A-Za-z0-9_]*' + TOKEN_NAME + r'"\s*:'
EXAMPLE_CHARS = 200


def token_like(path: str) -> bool:
    """The Python twin of the SQL rule on a path (used for messages and tests)."""
    return re.search(TOKEN_LIKE_PATH, path) is not None


@dataclass(frozen=True)
class KnownFields:
    """What a JSON parser reads: ``paths`` (dotted, from the record's root), the objects whose keys
    are checked (``walked``, '' = the record), and ``ignored``: documented paths it does not read,
    each with the reason it is harmless."""

    source: str
    paths: frozenset[str]
    walked: tuple[str, ...]
    ignored: dict[str, str] = field(default_factory=dict)

    @property
    def known(self) -> frozenset[str]:
        return self.paths | frozenset(self.ignored)


def known_fields(source: str, structure: dict, *, open_objects: tuple[str, ...] = (),
                 ignored: dict[str, str] | None = None, reads: tuple[str, ...] = ()) -> KnownFields:
    """The :class:`KnownFields` of a parser that reads ``structure`` (a json_transform structure:
    {key: type or {sub-structure} or [element]}). Every key of it is a read path; every object is
    walked (its keys checked) except those in ``open_objects`` (free-form maps: only the objects the
    structure declares inside them are walked) and array elements. ``reads``: dotted
    paths the parser reads outside ``structure`` (e.g. with json_extract on the raw line)."""
    paths: set[str] = set(reads)
    walked: list[str] = [""]

    def walk(prefix: str, spec: dict) -> None:
        for key, sub in spec.items():
            path = f"{prefix}{key}"
            paths.add(path)
            if isinstance(sub, dict):
                if path not in open_objects:
                    walked.append(path)
                # an open object's keys the parser reads are read paths too, and an object of the
                # structure inside it (LiteLLM's metadata.usage_object) is walked
                walk(path + ".", sub)

    walk("", structure)
    ignored = dict(ignored or {})
    overlap = sorted(set(ignored) & paths)
    if overlap:
        raise ValueError(f"{source}: declared ignored but read: {overlap}")
    return KnownFields(source, frozenset(paths), tuple(walked), ignored)


@dataclass
class Unknown:
    """The guard's findings on one file: ``rows`` (one per unknown path: path, records, first_line,
    example, token_like, nonzero_records) and ``lines`` (line, path) of the records whose
    token-looking unknown path holds a non-zero value."""

    rows: list[dict]
    lines: pa.Table
    sampled: bool  # the file was larger than SMALL_BYTES (its full pass ran because its sample showed a key)

    def summary(self) -> str:
        parts = []
        for r in self.rows:
            tag = ", token-looking -> partially priced" if r["token_like"] and r["nonzero_records"] else (
                ", token-looking (all zero)" if r["token_like"] else "")
            parts.append(f"{r['path']}: {r['records']} records{tag}")
        return "; ".join(parts)


def _lines(data: bytes) -> pa.Table:
    return split_lines(data)


def sample(data: bytes) -> bytes:
    """The bytes the first look scans: the whole file when small, else its head and evenly spaced
    slices, each made of whole lines."""
    if len(data) <= SMALL_BYTES:
        return data
    target = min(MAX_SAMPLE_BYTES, max(SMALL_BYTES, int(len(data) * SAMPLE_SHARE)))
    head = target // 2
    out = [data[:data.rfind(b"\n", 0, head) + 1]]
    step = (len(data) - head) // CHUNKS
    width = max(1, (target - head) // CHUNKS)
    for i in range(CHUNKS):
        start = data.find(b"\n", head + i * step)  # the slice starts after a line end
        if start < 0 or start + 1 >= len(data):
            break
        end = data.rfind(b"\n", start + 1, start + 1 + width)
        if end <= start:  # no whole line in the window: the next line, whole
            end = data.find(b"\n", start + 1)
            end = len(data) - 1 if end < 0 else end
        out.append(data[start + 1:end + 1])
    joined = b"".join(out)
    return joined if joined.endswith(b"\n") else joined + b"\n"


def _objects(known: KnownFields) -> tuple[list[str], list[str]]:
    """(JSON paths, dotted prefixes) of the walked objects, in the same order."""
    jpaths = ["$" + "".join(f'."{k}"' for k in w.split(".")) if w else "$" for w in known.walked]
    prefixes = [f"{w}." if w else "" for w in known.walked]
    return jpaths, prefixes


_VALID = "json_valid(raw) AND json_type(raw) = 'OBJECT'"


def _sample_unknown(con: duckdb.DuckDBPyConnection, known: KnownFields) -> set[int]:
    """The files (``f`` of the table ``lines``) whose sampled lines hold a key not in ``known``."""
    jpaths, prefixes = _objects(known)
    try:  # one JSON parse per line; a line that is not JSON (the parser rejects it) fails the whole
        # query, which then runs again skipping such lines (three parses per line)
        rows = con.execute("SELECT DISTINCT f, json_keys(raw, ?) FROM lines WHERE raw <> ''", [jpaths]).fetchall()
    except duckdb.Error:
        rows = con.execute(f"SELECT DISTINCT f, json_keys(raw, ?) FROM lines WHERE {_VALID}", [jpaths]).fetchall()
    found: set[int] = set()
    for f, lists in rows:
        if f in found:
            continue
        for prefix, keys in zip(prefixes, lists, strict=True):
            if any(prefix + k not in known.known for k in keys or ()):
                found.add(f)
                break
    return found


_FULL = f"""
WITH objs AS (
    SELECT line, raw, unnest(range(1, len($jpaths) + 1)) AS i, json_keys(raw, $jpaths) AS ks
    FROM lines WHERE {_VALID}
),
keyed AS (
    SELECT line, raw, $prefixes[i] || k AS path, $jpaths[i] || '."' || replace(k, '"', '\\"') || '"' AS jp
    FROM (SELECT line, raw, i, unnest(ks[i]) AS k FROM objs)
),
unknown AS (
    SELECT line, path, json_extract(raw, jp) AS val FROM keyed WHERE NOT list_contains($known, path)
),
judged AS (
    SELECT line, path, CAST(val AS VARCHAR) AS val_text,
           regexp_matches(path, $tl_path)
           OR (json_type(val) IN ('OBJECT', 'ARRAY') AND regexp_matches(CAST(val AS VARCHAR), $tl_value)) AS token_like,
           CASE WHEN json_type(val) = 'ARRAY' AND json_extract_string(val, '$[0].modality') IS NOT NULL
                -- Gemini's per-modality list (ModalityTokenCount): a breakdown of a count the parser
                -- reads (promptTokenCount, candidatesTokenCount, ...), so its tokens are priced at that
                -- count's rate. Unpriced only where the price sheet has another rate: AUDIO in
                -- (input_cost_per_audio_token), and any output modality but TEXT (output_cost_per_image_token)
                THEN len(list_filter(json_extract(val, '$[*]'), lambda e:
                         coalesce(json_extract_string(e, '$.tokenCount'), '0') NOT IN ('0', '')
                         AND (upper(coalesce(json_extract_string(e, '$.modality'), '')) = 'AUDIO'
                              OR (suffix(path, 'candidatesTokensDetails')
                                  AND upper(coalesce(json_extract_string(e, '$.modality'), '')) <> 'TEXT')))) > 0
                ELSE coalesce(trim(json_extract_string(val, '$')), '') NOT IN ('', '0', '0.0', 'null', 'false', '{{}}', '[]')
           END AS nonzero
    FROM unknown
)
SELECT line, path, val_text, token_like, nonzero FROM judged
"""


_CON: list[duckdb.DuckDBPyConnection] = []
_LOCK = threading.Lock()


def _connection() -> duckdb.DuckDBPyConnection:
    """One in-memory DuckDB for the guard, kept for the process: a new connection per file cost
    50-90 ms, more than the scan of a small file."""
    if not _CON:
        con = duckdb.connect()
        con.execute("SET preserve_insertion_order = true")
        _CON.append(con)
    return _CON[0]


def scan(data: bytes, known: KnownFields) -> Unknown | None:
    """The unknown paths of a JSONL file's records (``data``: its decoded bytes), or None when every
    key of every walked object is known (the usual file)."""
    return scan_many([data], known)[0]


def scan_many(datas: list[bytes], known: KnownFields) -> list[Unknown | None]:
    """``scan`` of several files: their samples in one query (a query per small file cost more
    than its scan), then a full pass of each file whose sample shows an unknown key."""
    with _LOCK:
        con = _connection()
        tables = []
        for i, d in enumerate(datas):
            t = _lines(sample(d))
            tables.append(t.append_column("f", pa.array(np.full(t.num_rows, i, dtype=np.int32))))
        if not tables:
            return []
        con.register("lines", pa.concat_tables(tables))
        try:
            found = _sample_unknown(con, known)
        finally:
            con.unregister("lines")
        return [_full(con, d, known) if i in found else None for i, d in enumerate(datas)]


def _full(con: duckdb.DuckDBPyConnection, data: bytes, known: KnownFields) -> Unknown | None:
    """The full pass over one file: every unknown path, its records, first line, example value."""
    con.register("lines", _lines(data))
    try:
        jpaths, prefixes = _objects(known)
        con.execute(f"CREATE OR REPLACE TEMP TABLE u AS {_FULL}", {
            "jpaths": jpaths, "prefixes": prefixes, "known": sorted(known.known),
            "tl_path": TOKEN_LIKE_PATH, "tl_value": TOKEN_LIKE_VALUE})
        rows = con.execute(f"""
            SELECT path, count(*) AS records, min(line) AS first_line,
                   left(arg_min(val_text, line), {EXAMPLE_CHARS}) AS example, bool_or(token_like) AS token_like,
                   count(*) FILTER (token_like AND nonzero) AS nonzero_records
            FROM u GROUP BY path ORDER BY path""").fetchall()
        lines = con.sql("SELECT DISTINCT line, path FROM u WHERE token_like AND nonzero ORDER BY line, path").to_arrow_table()
    finally:
        con.execute("DROP TABLE IF EXISTS u")
        con.unregister("lines")
    if not rows:
        return None
    cols = ("path", "records", "first_line", "example", "token_like", "nonzero_records")
    return Unknown([dict(zip(cols, r, strict=True)) for r in rows], lines, len(data) > SMALL_BYTES)


# ops.unknown_fields by path over its files: (path, files, records, token_like, nonzero_records),
# most records first. The run summary (thinktax/console.py) and the report read it.
SUMMARY_SQL = """
    SELECT path, count(DISTINCT file_id) AS files, sum(records) AS records, bool_or(token_like) AS token_like,
           sum(nonzero_records) AS nonzero_records
    FROM ops.unknown_fields GROUP BY path ORDER BY nonzero_records DESC, records DESC, path"""


def summary_line(rows: list[tuple], files: int, shown: int = 5) -> str | None:
    """One line for the run summary from SUMMARY_SQL's rows and the number of files that have any:
    'unknown fields: 2 paths in 1 file (usage.output_tokens_details.foo_tokens: 3 calls,
    token-looking -> 1 partially priced; shiny: 1 call)'; None when there are none."""
    if not rows:
        return None

    def one(path: str, records: int, tl: bool, nonzero: int) -> str:
        s = f"{path}: {records:,} call{'s' if records != 1 else ''}"
        if tl and nonzero:
            return s + f", token-looking -> {nonzero:,} partially priced"
        return s + (", token-looking, all zero" if tl else "")

    parts = [one(p, int(r), bool(t), int(n)) for p, _f, r, t, n in rows[:shown]]
    more = f"; {len(rows) - shown} more: SELECT * FROM ops.unknown_fields" if len(rows) > shown else ""
    return (f"unknown fields: {len(rows)} path{'s' if len(rows) != 1 else ''} in {files} file{'s' if files != 1 else ''} "
            f"({'; '.join(parts)}{more})")
