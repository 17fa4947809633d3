"""Ingest on Spark executors: the landing files parsed where they are, by the same parsers.

The Spark engine's ingest (``thinktax run --engine spark``) with the semantics of the DuckDB
``warehouse.ingest.Ingestor``, each step a Spark DataFrame or SQL operation (no RDD, no
SparkContext: a cluster reached through Spark Connect runs the same code):

1. **listing**: ``binaryFile`` over the landing root (any path Spark reads: local, ``s3a://``,
   ``abfss://``, ``gs://``), without the bytes. A file whose (path, size, modification time to the
   millisecond) is in ``ops.ingested_files`` is skipped unread; the others are read by the
   executors. Files are ordered as on DuckDB: ``fx/`` first, then by relative path.
2. **content**: ``sha2(content, 256)`` in Spark SQL (a Prometheus scrape's node and time from its
   name hashed before its bytes, ``warehouse.ingest.file_identity``); a content already in
   ``ops.ingested_files`` (under any name) is skipped, and of two new files with the same bytes
   only the first counts.
3. **parse** (one ``mapInArrow``): each executor runs ``warehouse.ingest``'s own ``_decode``
   (gunzip, UTF-8), ``_detect`` (the sniffers of the file's folder) and the parser of
   ``sources/`` (several files of one format in one call where the format has a batch parser, as
   on DuckDB). Each file gives one ``file`` record (format, table, rows_in, the parser's own
   duplicates, its error if unreadable) and its rows, rejects and side rows as Arrow IPC chunks.
   These records are written once to a scratch Parquet folder: every later step reads them, so a
   file is parsed once. Currency rate files (``fx/``) go first, in a round of their own, so the
   other files are parsed with the rates they bring (``ParseContext.fx_usd_per_unit``).
4. **typed rows** (one ``mapInArrow`` per staging table): the IPC chunks become the table's
   columns (types from ``sources/contract.py``), with the file's order and the row's position.
5. **de-duplication in Spark SQL**, as ``Ingestor._classify``: per natural key, a row whose key is
   stored already is a ``duplicate`` if some stored row has the same values, else a
   ``conflicting_duplicate`` (quarantined); a key first seen in this batch keeps its first row
   (file order, then row order) and later rows are duplicates of it or conflicts. Rows missing a
   NOT NULL value are quarantined first ('missing required value'). The result is written to the
   scratch folder before anything is appended, so the comparison never sees this batch's rows.
6. **accounting**: per file, ``rows_in = loaded + duplicate + quarantined`` is checked on the
   counts Spark computed; a file that breaks it fails the ingest, naming the file, before any
   row is written. Then the rows are appended: ``stg.*`` (and side tables, only for new main
   rows), ``ops.quarantine``, and ``ops.ingested_files`` last.

file_id numbering is DuckDB's: the next id after the largest one, file by file in the order above.

Where the tables live: Parquet folders ``<folder>/<schema>.<table>`` (the layout
``warehouse/spark/build.load_staging`` uses, so ``pipeline.attach`` finds them), registered in the
session's catalog. Appends are not one transaction across tables: ``ops.ingested_files`` is
written last, so a crash before it leaves staging rows of files the next run ingests again (its
rows then count as duplicates of the rows the crashed run left, so ``rows_in`` still balances).

Differences from the DuckDB ingest, by design: Spark's file listing leaves out empty files and
names starting with ``_`` (Hadoop's hidden files; ``.`` too, as DuckDB does): under a local landing
folder the driver walks the folder and reads those few files itself, under a URI they are not
seen; the modification time is compared to the millisecond (what Hadoop file systems report); a
file whose bytes are known under the same name with a new mtime is read again on each run (DuckDB
records the new mtime). The executors import ``sources/`` and ``warehouse/``: on a cluster,
thinktax must be installed in the executors' Python (a local session runs this interpreter).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

import duckdb
import pyarrow as pa

from sources import contract
from sources.base import ParseContext, SourceFormatError
from warehouse.ingest import REJECTS_SCHEMA, FileResult, IngestSummary, _decode, _detect, folder_of, verdict_sql

log = logging.getLogger("thinktax.spark.ingest")



@cache
def ops_ddl(table: str) -> str:
    """The Spark column list of an ops table (``ops.ingested_files``, ``ops.quarantine``), read from
    the DuckDB migrations (applied to an in-memory database): one DDL for both engines, so a column a
    migration adds reaches Spark's ops tables with no second list to keep in step."""
    from warehouse.db import migrate  # noqa: PLC0415

    schema, name = table.split(".")
    con = duckdb.connect()
    try:
        migrate(con)
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", [schema, name]).fetchall()
    finally:
        con.close()
    if not cols:
        raise KeyError(f"{table}: no such table in warehouse/migrations")
    return ", ".join(f"{c} {spark_type(t)}" for c, t in cols)


RECORDS_DDL = ("file_order INT, rel STRING, sha STRING, nbytes BIGINT, mtime_ns BIGINT, kind STRING, "
               "tbl STRING, seq INT, ipc BINARY, info STRING")
CHUNK_BYTES = 8 << 20  # an IPC payload holds at most about this many bytes of rows
BATCH_FILES = 64  # files of one format parsed in one call of its batch parser (as warehouse/ingest.py)

_SPARK_TYPES = {"VARCHAR": "string", "BIGINT": "bigint", "INTEGER": "int", "DOUBLE": "double",
                "BOOLEAN": "boolean", "TIMESTAMP": "timestamp_ntz", "DATE": "date"}
_DECIMAL = re.compile(r"DECIMAL\((\d+),(\d+)\)")


def spark_type(duckdb_type: str) -> str:
    m = _DECIMAL.fullmatch(duckdb_type)
    return f"decimal({m[1]},{m[2]})" if m else _SPARK_TYPES[duckdb_type]


def table_ddl(name: str, *, file_id: bool = True) -> str:
    """The Spark column list of a staging table (sources/contract.py), file_id first as in DuckDB."""
    cols = [c for c in contract.table(name).all_columns if file_id or c.name != "file_id"]
    return ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in cols)


def qualify(landing: str) -> str:
    """The landing root as Spark names its files: a URI kept as given, a local path as ``file:/...``."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", landing) and not re.match(r"^[a-zA-Z]:[\\/]", landing):
        root = landing
    else:
        import os  # noqa: PLC0415

        root = "file:" + os.path.abspath(landing)
    return re.sub(r"^file:/+", "file:/", root).rstrip("/")


def _sql_str(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _functions(spark):
    """``pyspark.sql.functions``, or its Spark Connect twin for a session made by the Connect client
    (warehouse/spark/build.py ``session``): pyspark 3.5's plain functions build classic Columns,
    which need a SparkContext that a Connect session does not have."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions  # noqa: PLC0415
    else:
        from pyspark.sql import functions  # noqa: PLC0415
    return functions


def _ts(value: dt.datetime, F):
    """A TIMESTAMP_NTZ literal (from text: a Python datetime would pass through the local time zone)."""
    return F.lit(value.isoformat(sep=" ")).cast("timestamp_ntz")


# -- executors ------------------------------------------------------------------------------------
def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _chunks(table: pa.Table) -> Iterator[pa.Table]:
    """The table in slices of about CHUNK_BYTES (at least one, possibly empty)."""
    n = table.num_rows
    per = max(1, int(n * CHUNK_BYTES / max(table.nbytes, 1))) if n else 1
    yield table.slice(0, per)
    for start in range(per, n, per):
        yield table.slice(start, per)


def _conform(rows: pa.Table, name: str, fmt: str) -> pa.Table:
    """The parser's rows in the table's column order and types (missing nullable columns NULL), as
    ``Ingestor._load`` inserts them; columns the table lacks are an error, as there."""
    schema = contract.table(name).arrow_schema()
    extra = set(rows.column_names) - set(schema.names)
    if extra:
        raise RuntimeError(f"parser {fmt} produced columns not in {name}: {sorted(extra)}")
    cols = [rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
            for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def parse_files(ctx: ParseContext, folders: list[str]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of step 3 (module doc): (file_order, rel, sha, nbytes, mtime_ns,
    content) in, RECORDS_DDL out."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from sources.registry import all_specs  # noqa: PLC0415 - on the executor
        from sources.requests_many import BATCH_PARSERS  # noqa: PLC0415

        specs = all_specs()
        for batch in batches:
            files = batch.to_pylist()
            out: list[dict] = []
            groups: dict[int, list[tuple[dict, bytes]]] = {}
            for f in files:
                rel = f["rel"]
                folder = folder_of(rel, folders)
                f["folder"] = folder
                try:
                    if folder is None:
                        raise SourceFormatError(
                            f"not in a known landing folder (expected one of: {', '.join(sorted(folders))})")
                    data = _decode(f["content"], rel)
                    spec = _detect([s for s in specs if s.folder == folder], data, rel)
                except SourceFormatError as exc:
                    out.extend(_records(f, exc))
                    continue
                groups.setdefault(specs.index(spec), []).append((f, data))
            for i, items in groups.items():
                spec = specs[i]
                many = BATCH_PARSERS.get(spec.parse)
                for k in range(0, len(items), BATCH_FILES if many else 1):
                    part = items[k:k + (BATCH_FILES if many else 1)]
                    if many:
                        results = many([(d, f["rel"]) for f, d in part], ctx)
                    else:
                        results = []
                        for f, d in part:
                            try:
                                results.append(spec.parse(d, f["rel"], ctx))
                            except SourceFormatError as exc:
                                results.append(exc)
                    for (f, _d), result in zip(part, results, strict=True):
                        if isinstance(result, SourceFormatError):
                            out.extend(_records(f, result))
                        elif isinstance(result, Exception):
                            raise result
                        else:
                            out.extend(_records(f, result, spec))
            yield pa.RecordBatch.from_pylist(out, schema=_RECORDS_ARROW)

    return fn


_RECORDS_ARROW = pa.schema([("file_order", pa.int32()), ("rel", pa.string()), ("sha", pa.string()),
                            ("nbytes", pa.int64()), ("mtime_ns", pa.int64()), ("kind", pa.string()),
                            ("tbl", pa.string()), ("seq", pa.int32()), ("ipc", pa.binary()), ("info", pa.string())])


def _records(f: dict, result, spec=None) -> list[dict]:
    """The records of one file: a ``file`` record, then its rows, rejects and side rows as IPC."""
    base = {k: f[k] for k in ("file_order", "rel", "sha", "nbytes", "mtime_ns")}
    if isinstance(result, SourceFormatError):
        info = {"status": "unreadable", "folder": f["folder"], "line": result.line, "field": result.field,
                "message": str(result)}
        return [{**base, "kind": "file", "tbl": None, "seq": 0, "ipc": None, "info": json.dumps(info)}]
    parsed = result
    if parsed.table != spec.table:  # the key the rows are de-duplicated on is the spec table's
        raise RuntimeError(f"parser {spec.format} produced rows for {parsed.table}, its spec names {spec.table}")
    eff = parsed.meta.get("effective_from")
    info = {"status": "loaded", "folder": f["folder"], "format": parsed.format, "table": parsed.table,
            "rows_in": parsed.rows_in, "duplicates": parsed.duplicates,
            "effective_from": eff.isoformat() if eff is not None else None,
            "warnings": [str(w) for w in parsed.meta.get("warnings", [])]}
    out = [{**base, "kind": "file", "tbl": parsed.table, "seq": 0, "ipc": None, "info": json.dumps(info)}]
    rows = _conform(parsed.rows, parsed.table, parsed.format)
    rows = rows.append_column("_row", pa.array(range(rows.num_rows), pa.int64()))
    for seq, chunk in enumerate(_chunks(rows)):
        out.append({**base, "kind": "rows", "tbl": parsed.table, "seq": seq, "ipc": _ipc(chunk), "info": None})
    if parsed.rejects:
        rejects = pa.Table.from_pylist([{"line": r.line, "field": r.field, "reason": r.reason, "raw": r.raw}
                                        for r in parsed.rejects], schema=REJECTS_SCHEMA)
        for seq, chunk in enumerate(_chunks(rejects)):
            out.append({**base, "kind": "rejects", "tbl": None, "seq": seq, "ipc": _ipc(chunk), "info": None})
    for side, side_rows in parsed.side.items():
        if "line" not in side_rows.column_names:
            raise RuntimeError(f"side rows for {side}: no 'line'")
        for seq, chunk in enumerate(_chunks(_conform(side_rows, side, parsed.format))):
            out.append({**base, "kind": "side", "tbl": side, "seq": seq, "ipc": _ipc(chunk), "info": None})
    return out


def decode_rows(schema: pa.Schema) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of step 4: (file_order, ipc) in; the IPC rows with ``_order``."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            orders = batch.column("file_order").to_pylist()
            for order, payload in zip(orders, batch.column("ipc").to_pylist(), strict=True):
                t = pa.ipc.open_stream(payload).read_all()
                t = t.append_column("_order", pa.array([order] * t.num_rows, pa.int32()))
                for b in t.select(schema.names).cast(schema).to_batches():
                    yield b

    return fn


# -- driver ---------------------------------------------------------------------------------------
@dataclass
class SparkIngest:
    """Ingests a landing root into the staging and ops tables of a Spark session (module doc)."""

    spark: object
    landing: str  # a local path or any URI Spark reads
    folder: str  # where the tables' Parquet folders are (<folder>/<schema>.<table>)
    scratch: str  # a scratch folder for this run's parsed records (removed at the end)
    now: dt.datetime | None = None
    otel_team_attribute: str = "service.namespace"
    progress: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        self.now = self.now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        self.root = qualify(self.landing)
        self.seconds: dict[str, float] = {}
        # table -> (scratch Parquet folder, filter or None, columns) of the rows this run appended to it
        self.written: dict[str, list[tuple[str, str | None, list[str]]]] = {}
        self._run_scratch = f"{self.scratch.rstrip('/')}/{uuid.uuid4().hex[:8]}"

    # -- tables ----------------------------------------------------------------------------------
    def _path(self, table: str) -> str:
        return f"{self.folder.rstrip('/')}/{table}"

    def ensure_tables(self) -> None:
        """Every staging table and ops.ingested_files / ops.quarantine registered in the catalog over
        its folder (re-registered: the catalog may name a table registered elsewhere; dropping a table
        with a LOCATION keeps its files). An empty folder is an empty table."""
        spark = self.spark
        for db in ("stg", "ops"):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        wanted = {name: table_ddl(name) for name in contract.TABLES}
        wanted |= {"ops.ingested_files": ops_ddl("ops.ingested_files"), "ops.quarantine": ops_ddl("ops.quarantine")}
        # read by marts.unpriced_usage (issue 44); the Spark ingest does not run the unknown-field guard
        # (sources/fieldguard.py), so on Spark its rows are those copied from the DuckDB build (load_staging)
        wanted["ops.unknown_field_lines"] = ops_ddl("ops.unknown_field_lines")
        for name, ddl in wanted.items():
            if spark.catalog.tableExists(name):
                kind = spark.catalog.getTable(name).tableType.upper()
                spark.sql(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")
            spark.sql(f"CREATE TABLE {name} ({ddl}) USING parquet LOCATION '{self._path(name)}'")

    def _say(self, line: str) -> None:
        log.info("%s", line)
        if self.progress:
            self.progress(line)

    # -- the run ---------------------------------------------------------------------------------
    def ingest(self) -> IngestSummary:
        F = _functions(self.spark)

        spark = self.spark
        t0 = time.perf_counter()
        self.ensure_tables()
        root = self.root
        listing = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(root)
                   .select("path", "length", "modificationTime"))
        rel = F.expr(f"substring(regexp_replace(path, '^file:/+', 'file:/'), {len(root) + 2})")
        listing = listing.select(rel.alias("rel"), "path", F.col("length").alias("nbytes"),
                                 (F.unix_millis("modificationTime") * 1_000_000).alias("mtime_ns"))
        seen = spark.table("ops.ingested_files").where("file_mtime_ns IS NOT NULL").select(
            F.col("file").alias("rel"), F.col("bytes").alias("nbytes"),
            F.expr("file_mtime_ns div 1000000").alias("mtime_ms"))
        listing = listing.withColumn("mtime_ms", F.expr("mtime_ns div 1000000"))
        # the hidden parts (name starting with '.') that DuckDB's landing_files leaves out
        listing = listing.where(r"NOT (rel RLIKE '(^|/)\\.')")
        listed = listing.join(seen.distinct().withColumn("_seen", F.lit(True)), ["rel", "nbytes", "mtime_ms"], "left").collect()
        cand = sorted((r["rel"], r["path"], r["nbytes"], r["mtime_ns"]) for r in listed if not r["_seen"])
        all_rels = [r["rel"] for r in listed]
        self._local: dict[str, bytes] = {}  # path -> bytes of the files the driver reads (below)
        for rel, path, nbytes, mtime_ns in self._unlisted(set(all_rels)):
            all_rels.append(rel)
            if not seen.where(f"rel = '{_sql_str(rel)}' AND nbytes = {nbytes} AND mtime_ms = {mtime_ns // 1_000_000}").isEmpty():
                continue
            cand.append((rel, path, nbytes, mtime_ns))
        cand.sort()
        self.seconds["listing"] = time.perf_counter() - t0
        summary = IngestSummary()
        cand_rels = {c[0] for c in cand}
        # Cloud invoices (bills/aws, bills/azure, bills/gcp; issue 25) are read by path with DuckDB's
        # readers and count their non-AI lines as skipped, which this ingest does not yet account:
        # refuse them before anything is appended, rather than load them wrong
        from sources.registry import all_specs  # noqa: PLC0415

        # (and FOCUS exports as Parquet, bills/focus/*.parquet, read by path too; FOCUS CSV is read here)
        specs = all_specs()
        path_folders = sorted({s.folder for s in specs if getattr(s, "parse_path", None) is not None})
        path_only = [f for f in path_folders if all(getattr(s, "parse_path", None) is not None for s in specs if s.folder == f)]
        by_path = [r for r in sorted(cand_rels) if folder_of(r, path_only) is not None
                   or (folder_of(r, path_folders) is not None and r.lower().endswith(".parquet"))]
        if by_path:
            raise SourceFormatError(
                f"{len(by_path)} file(s) read by path, cloud invoices or FOCUS Parquet "
                f"({', '.join(by_path[:3])}{', ...' if len(by_path) > 3 else ''}) "
                f"in {', '.join(path_folders)} are read by the DuckDB ingest only: run with [engine] ingest = \"duckdb\" "
                "(thinktax.toml) or without --engine spark; nothing was ingested")
        skipped = [FileResult(r, "already_ingested") for r in sorted(all_rels) if r not in cand_rels]
        # fx/ first (their rates are the context of the others), each group by path
        order = sorted(cand, key=lambda c: (not c[0].startswith("fx/"), c[0]))
        fx = [c for c in order if c[0].startswith("fx/")]
        rest = [c for c in order if not c[0].startswith("fx/")]
        self._say(f"ingest on Spark: {len(all_rels)} file(s) listed, {len(cand)} to read")
        results: list[FileResult] = []
        old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_FILES))  # files per Arrow batch
        try:
            if fx:
                results += self._round(fx, 0, "fx")
            if rest:
                results += self._round(rest, len(fx), "rest")
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
        summary.files = results + skipped
        self.seconds["total"] = time.perf_counter() - t0
        return summary

    def _unlisted(self, listed: set[str]) -> list[tuple[str, str, int, int]]:
        """(rel, path, bytes, mtime_ns) of the files of a local landing root that Spark's listing
        leaves out but DuckDB's ingests: empty files and names starting with '_'. Their bytes are
        read here, on the driver (``_local``)."""
        import os  # noqa: PLC0415

        if not self.root.startswith("file:/"):
            return []
        base = self.root[len("file:"):]
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, base).replace(os.sep, "/")
                if name.startswith(".") or rel in listed or not os.path.isfile(full):
                    continue
                st = os.stat(full)
                with open(full, "rb") as fh:
                    self._local["file:" + full] = fh.read()
                out.append((rel, "file:" + full, st.st_size, st.st_mtime_ns // 1_000_000 * 1_000_000))
        return out

    def close(self) -> None:
        """Remove this run's scratch folder (a local one; a remote one is left to its lifecycle rules)."""
        path = re.sub(r"^file:/+", "/", self._run_scratch)
        if path.startswith("/"):
            shutil.rmtree(path, ignore_errors=True)

    def fx_rates(self) -> dict[str, object]:
        """USD per unit of each currency: the newest rate in stg.fx_rates (as Ingestor._fx_rates)."""
        rows = self.spark.sql("SELECT currency, max_by(usd_per_unit, effective_from) AS r FROM stg.fx_rates "
                              "GROUP BY currency").collect()
        return {r["currency"]: r["r"] for r in rows}

    def _round(self, files: list[tuple[str, str, int, int]], first_order: int, name: str) -> list[FileResult]:
        """Parse, classify and append one group of files (fx, then the rest): steps 2-6."""
        F = _functions(self.spark)

        from sources.registry import folders as landing_folders  # noqa: PLC0415

        spark = self.spark
        t = time.perf_counter()
        scratch = f"{self._run_scratch}/{name}"
        ctx = ParseContext(ingested_at=self.now, fx_usd_per_unit=self.fx_rates(),
                           otel_team_attribute=self.otel_team_attribute)
        from warehouse.ingest import identity_head  # noqa: PLC0415

        meta = spark.createDataFrame(
            [(first_order + i, rel, path, nbytes, mtime, identity_head(rel))
             for i, (rel, path, nbytes, mtime) in enumerate(files)],
            "file_order INT, rel STRING, path STRING, nbytes BIGINT, mtime_ns BIGINT, head BINARY")
        remote = [f[1] for f in files if f[1] not in self._local]
        content = None
        if remote:
            content = spark.read.format("binaryFile").load(remote).select("path", "content")
            content = content.withColumn("path", F.regexp_replace("path", "^file:/+", "file:/"))
        local = [(p, self._local[p]) for _r, p, _n, _m in files if p in self._local]
        if local:
            here = spark.createDataFrame(local, "path STRING, content BINARY")
            content = here if content is None else content.unionByName(here)
        meta = meta.withColumn("path", F.regexp_replace("path", "^file:/+", "file:/"))
        known = spark.table("ops.ingested_files").select(F.col("sha256").alias("sha"))
        identity = F.when(F.col("head").isNull(), F.col("content")).otherwise(F.concat("head", "content"))
        batch = (meta.join(content, "path").withColumn("sha", F.sha2(identity, 256))
                 .join(known, "sha", "left_anti")
                 .select("file_order", "rel", "sha", "nbytes", "mtime_ns", "content"))
        parse = parse_files(ctx, landing_folders())
        batch.mapInArrow(parse, RECORDS_DDL).write.mode("overwrite").parquet(f"{scratch}/records")
        records = spark.read.parquet(f"{scratch}/records")
        self.seconds[f"parse_{name}"] = time.perf_counter() - t
        t = time.perf_counter()

        # the files of this round, in order; of two with the same bytes only the first counts
        base = spark.sql("SELECT coalesce(max(file_id), 0) AS m FROM ops.ingested_files").collect()[0]["m"]
        infos = sorted(records.where("kind = 'file'").select("file_order", "rel", "sha", "nbytes", "mtime_ns", "info")
                       .collect(), key=lambda r: r["file_order"])
        files_in: list[dict] = []
        shas: set[str] = set()
        for r in infos:
            if r["sha"] in shas:
                continue
            shas.add(r["sha"])
            files_in.append({**r.asDict(), **json.loads(r["info"]), "file_id": base + len(files_in) + 1})
        # the round's other files: their bytes were ingested before (under any name) or just now
        skipped = [FileResult(f[0], "already_ingested") for f in files if f[0] not in {g["rel"] for g in files_in}]
        if not files_in:
            return skipped
        fmap = spark.createDataFrame([(f["file_order"], f["file_id"], f["rel"]) for f in files_in],
                                     "file_order INT, file_id INT, file STRING")
        records = records.join(F.broadcast(fmap), "file_order")
        now = self.now

        # quarantine: unreadable files and the parsers' rejects
        quarantine = [spark.createDataFrame(
            [(f["file_id"], f["rel"], f["line"], f["field"], f"unreadable file: {f['message']}", None, now)
             for f in files_in if f["status"] == "unreadable"], ops_ddl("ops.quarantine"))]
        rejects = records.where("kind = 'rejects'").select("file_order", "ipc").mapInArrow(
            decode_rows(REJECTS_SCHEMA.append(pa.field("_order", pa.int32()))),
            "line BIGINT, field STRING, reason STRING, raw STRING, _order INT")
        quarantine.append(rejects.join(F.broadcast(fmap.withColumnRenamed("file_order", "_order")), "_order")
                          .select("file_id", "file", "line", "field", "reason", "raw",
                                  _ts(now, F).alias("quarantined_at")))

        tables = sorted({f["table"] for f in files_in if f["status"] == "loaded"})
        classified: dict[str, str] = {}
        for table in tables:
            classified[table] = self._classify(table, records, fmap, scratch, quarantine)
        sides = sorted({r["tbl"] for r in records.where("kind = 'side'").select("tbl").distinct().collect()})

        # per-file counts (Spark), checked before anything is appended
        counts: dict[int, dict[str, int]] = {f["file_id"]: {"new": 0, "duplicate": 0, "q": 0} for f in files_in}
        verdicts = None  # one job for every table's verdict counts
        for path in classified.values():
            v = spark.read.parquet(path).select("file_id", "_verdict")
            verdicts = v if verdicts is None else verdicts.unionByName(v)
        for r in ([] if verdicts is None else verdicts.groupBy("file_id", "_verdict").count().collect()):
            if r["_verdict"] in ("new", "duplicate"):
                counts[r["file_id"]][r["_verdict"]] += r["count"]
        q_all = quarantine[0]
        for q in quarantine[1:]:
            q_all = q_all.unionByName(q)
        q_path = f"{scratch}/quarantine"
        q_all.write.mode("overwrite").parquet(q_path)
        for r in spark.read.parquet(q_path).groupBy("file_id").count().collect():
            counts[r["file_id"]]["q"] += r["count"]
        out: list[FileResult] = []
        rows = []
        for f in files_in:
            c = counts[f["file_id"]]
            if f["status"] == "unreadable":
                log.warning("%s: %s", f["rel"], f["message"])
                rows.append((f["file_id"], f["rel"], f["sha"], f["folder"] or "", None, None, "unreadable", 1, 0, 0, 1,
                             None, f["nbytes"], now, f["mtime_ns"], 0, None, None))
                out.append(FileResult(f["rel"], "unreadable", rows_in=1, rows_quarantined=1, message=f["message"]))
                continue
            loaded, dup, quarantined = c["new"], c["duplicate"] + f["duplicates"], c["q"]
            if loaded + dup + quarantined != f["rows_in"]:
                raise RuntimeError(f"{f['rel']}: accounting broken: rows_in {f['rows_in']} != loaded {loaded} + "
                                   f"duplicate {dup} + quarantined {quarantined}")
            for w in f["warnings"]:
                log.warning("%s: %s", f["rel"], w)
            eff = dt.date.fromisoformat(f["effective_from"]) if f["effective_from"] else None
            rows.append((f["file_id"], f["rel"], f["sha"], f["folder"], f["format"], f["table"], "loaded", f["rows_in"],
                         loaded, dup, quarantined, eff, f["nbytes"], now, f["mtime_ns"], 0, None, None))
            out.append(FileResult(f["rel"], "loaded", f["format"], f["table"], f["rows_in"], loaded, dup, quarantined))
        self.seconds[f"classify_{name}"] = time.perf_counter() - t
        t = time.perf_counter()

        # append: staging (new rows), side rows of new main rows, quarantine, then the files
        for table, path in classified.items():
            cols = contract.table(table).column_names
            spark.read.parquet(path).where("_verdict = 'new'").select(*[f"`{c}`" for c in cols]).write.insertInto(table)
            self.written.setdefault(table, []).append((path, "_verdict = 'new'", cols))
        for side in sides:
            main = {table for f in files_in for table in [f.get("table")] if table}
            side_rows = (records.where(f"kind = 'side' AND tbl = '{side}'").select("file_order", "ipc")
                         .mapInArrow(decode_rows(contract.table(side).arrow_schema().append(pa.field("_order", pa.int32()))),
                                     table_ddl(side, file_id=False) + ", _order INT"))
            new_lines = None
            for table in main & set(classified):
                nl = spark.read.parquet(classified[table]).where("_verdict = 'new'").select(
                    F.col("_order"), F.col("line"))
                new_lines = nl if new_lines is None else new_lines.unionByName(nl)
            if new_lines is None:
                continue
            keep = side_rows.join(new_lines.distinct(), ["_order", "line"], "left_semi").join(
                F.broadcast(fmap.withColumnRenamed("file_order", "_order")), "_order")
            self._append(keep.select(*[f"`{c}`" for c in contract.table(side).column_names]), side,
                         f"{scratch}/new/{side}")
        q_cols = [c.split()[0] for c in ops_ddl("ops.quarantine").split(", ")]
        spark.read.parquet(q_path).select(*q_cols).write.insertInto("ops.quarantine")
        self.written.setdefault("ops.quarantine", []).append((q_path, None, q_cols))
        self._append(spark.createDataFrame(rows, ops_ddl("ops.ingested_files")), "ops.ingested_files", f"{scratch}/new/ops.ingested_files")
        for table in ("ops.quarantine", "ops.ingested_files", *classified, *sides):
            spark.catalog.refreshTable(table)
        self.seconds[f"append_{name}"] = time.perf_counter() - t
        return out + skipped

    def _append(self, df, table: str, path: str) -> None:
        """Append ``df`` to ``table`` by way of a scratch Parquet copy (kept in ``written``: the rows
        the DuckDB build gets, warehouse/spark/engine.py)."""
        df.write.mode("overwrite").parquet(path)
        self.spark.read.parquet(path).write.insertInto(table)
        self.written.setdefault(table, []).append((path, None, df.columns))

    def _classify(self, table: str, records, fmap, scratch: str, quarantine: list) -> str:
        """Steps 4-5 for one staging table: typed rows, NOT NULL safety net (into ``quarantine``),
        verdicts; written to the scratch folder (returned), so that later appends do not change them."""
        F = _functions(self.spark)

        spark = self.spark
        spec = contract.table(table)
        schema = spec.arrow_schema().append(pa.field("_row", pa.int64())).append(pa.field("_order", pa.int32()))
        typed = (records.where(f"kind = 'rows' AND tbl = '{table}'").select("file_order", "ipc")
                 .mapInArrow(decode_rows(schema), table_ddl(table, file_id=False) + ", _row BIGINT, _order INT"))
        typed = typed.join(F.broadcast(fmap.withColumnRenamed("file_order", "_order")), "_order")
        typed.write.mode("overwrite").parquet(f"{scratch}/typed/{table}")  # decoded once, read twice below
        typed = spark.read.parquet(f"{scratch}/typed/{table}")
        now = self.now
        required = [c.name for c in spec.all_columns if not c.nullable and c.name not in ("file_id", "line")]
        if required:
            first_null = "CASE " + " ".join(f"WHEN `{c}` IS NULL THEN '{c}'" for c in required) + " END"
            quarantine.append(typed.where(f"{first_null} IS NOT NULL").select(
                "file_id", "file", "line", F.expr(first_null).alias("field"),
                F.lit("missing required value").alias("reason"), F.lit(None).cast("string").alias("raw"),
                _ts(now, F).alias("quarantined_at")))
            typed = typed.where(" AND ".join(f"`{c}` IS NOT NULL" for c in required))
        key = spec.key
        values = [c for c in spec.column_names if c not in ("file_id", "line")]
        if not key:
            verdicts = typed.withColumn("_verdict", F.lit("new"))
        else:
            typed.createOrReplaceTempView("_incoming")
            spark.table(table).createOrReplaceTempView("_stored")
            # the one verdict rule (warehouse/ingest.py verdict_sql), rendered for Spark SQL
            import sqlglot  # noqa: PLC0415

            sql = verdict_sql("_incoming", "_stored", tuple(key), values, ("_order", "_row"))
            verdicts = spark.sql(sqlglot.transpile(sql, read="duckdb", write="spark")[0]).drop("_rn", "_first_vals")
        path = f"{scratch}/classified/{table}"
        verdicts.write.mode("overwrite").parquet(path)
        if key:  # the session is shared: leave no temporary views behind in the catalog
            spark.catalog.dropTempView("_incoming")
            spark.catalog.dropTempView("_stored")
        if key:
            quarantine.append(spark.read.parquet(path).where("_verdict = 'conflict'").select(
                "file_id", "file", "line", F.lit(", ".join(key)).alias("field"),
                F.lit("conflicting_duplicate: same key as a loaded row, other values").alias("reason"),
                F.lit(None).cast("string").alias("raw"), _ts(now, F).alias("quarantined_at")))
        return path
