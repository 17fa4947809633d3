"""`thinktax fetch-spendlogs`: copy new rows of the LiteLLM proxy's ``"LiteLLM_SpendLogs"`` table
from its Postgres into the landing folder, for the next ``thinktax run`` to ingest
(sources/litellm_spendlogs.py).

* Read-only: one ``READ ONLY`` transaction; rows are streamed through a server-side (named)
  cursor, ``--batch-rows`` at a time, in ``("startTime", request_id)`` order (the table's own
  index ``LiteLLM_SpendLogs_startTime_request_id_idx``).
* Incremental: the last (startTime, request_id) written is kept in
  ``<landing>/telemetry/litellm_spendlogs/.cursor.json``; the next run reads rows after it, less
  ``--overlap-minutes`` (default 15: the proxy writes spend logs in batches, so a row may appear
  after a later-started one was read). Rows read again are counted as duplicates by the ingest,
  never loaded twice. ``--since DAY`` is the first UTC day read when there is no cursor (and a
  floor when there is one).
* Nothing half-written: rows go to a hidden temporary file in the landing folder, renamed to
  ``spendlogs.<first>--<last>.jsonl`` only when every row was read; the cursor moves after that.
  A dropped connection leaves the landing folder and the cursor as they were (exit 1).
* The DSN's password never reaches output, logs, landing files or the warehouse: messages name
  the server by ``user@host:port/dbname`` only, and the columns copied are the call's facts
  (not ``api_key``, ``messages``, ``response``, ``proxy_server_request``, ``requester_ip_address``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from pathlib import Path

from thinktax.commands import day_arg

NAME = "fetch-spendlogs"
HELP = "Copy new LiteLLM proxy spend logs (LiteLLM_SpendLogs, read-only) from its Postgres into landing/telemetry/litellm_spendlogs/."

FOLDER = "telemetry/litellm_spendlogs"
CURSOR = ".cursor.json"
APP_NAME = "thinktax-fetch-spendlogs"
log = logging.getLogger("thinktax.fetch_spendlogs")

# the columns landed, as named in schema.prisma (model LiteLLM_SpendLogs)
COLUMNS = ["request_id", "call_type", "spend", "total_tokens", "prompt_tokens", "completion_tokens",
           "startTime", "endTime", "model", "model_group", "custom_llm_provider", "metadata",
           "request_tags", "team_id", "session_id", "status"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dsn", help="postgresql://user:password@host:port/dbname of the LiteLLM proxy "
                                 "(default $THINKTAX_LITELLM_DSN, then $DATABASE_URL)")
    p.add_argument("--since", type=day_arg, help="first UTC day to read when there is no cursor yet (YYYY-MM-DD)")
    p.add_argument("--landing", help="landing folder (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--overlap-minutes", type=int, default=15, help="read again this far before the cursor (default 15)")
    p.add_argument("--batch-rows", type=int, default=5000, help="rows per round trip of the server-side cursor")


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN: never its password."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

    try:
        d = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - an unreadable DSN is described without any of it
        return "<unreadable DSN>"
    return f"{d.get('user') or ''}@{d.get('host') or 'localhost'}:{d.get('port') or 5432}/{d.get('dbname') or ''}"


def redact(text: str, dsn: str) -> str:
    """``text`` with the DSN and its password replaced (a driver message may quote either)."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

    out = text.replace(dsn, describe(dsn))
    try:
        pw = conninfo_to_dict(dsn).get("password")
    except Exception:  # noqa: BLE001
        pw = None
    if pw:
        from urllib.parse import quote  # noqa: PLC0415

        for form in {pw, quote(pw, safe="")}:
            out = out.replace(form, "***")
    return out


def _read_cursor(folder: Path) -> dict | None:
    p = folder / CURSOR
    return json.loads(p.read_text()) if p.exists() else None


def _iso(ts: dt.datetime) -> str:
    return ts.isoformat(timespec="microseconds")


def fetch(dsn: str, landing: Path, since: dt.date | None = None, overlap_minutes: int = 15,
          batch_rows: int = 5000, after_batch=None) -> tuple[Path | None, int]:
    """Land the new rows; returns (file written or None when there was nothing new, rows)."""
    import psycopg  # noqa: PLC0415
    from psycopg import sql  # noqa: PLC0415

    folder = landing / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    cursor = _read_cursor(folder)
    lower_ts: dt.datetime | None = None
    lower_id = ""
    if cursor:
        lower_ts = dt.datetime.fromisoformat(cursor["startTime"]) - dt.timedelta(minutes=overlap_minutes)
        lower_id = cursor["request_id"] if overlap_minutes == 0 else ""
    if since is not None:
        floor = dt.datetime.combine(since, dt.time())
        if lower_ts is None or floor > lower_ts:
            lower_ts, lower_id = floor, ""
    # Postgres writes each row as the JSON line that is landed (row_to_json: JSON columns embedded,
    # timestamps ISO-8601), so no row is rebuilt in Python
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS)
    query = sql.SQL(
        'SELECT s."startTime", s.request_id, row_to_json(s)::text FROM (SELECT {cols} FROM "LiteLLM_SpendLogs" '
        'WHERE {where}) s ORDER BY s."startTime", s.request_id'
    ).format(
        cols=cols,
        where=sql.SQL('("startTime", request_id) > (%(ts)s, %(id)s)') if lower_ts is not None else sql.SQL("true"),
    )
    tmp = folder / f".spendlogs.{os.getpid()}.tmp"
    n = 0
    first = last = None
    try:
        with psycopg.connect(dsn, application_name=APP_NAME, autocommit=False) as conn:
            conn.read_only = True  # the transaction below is READ ONLY
            with conn.transaction(), conn.cursor(name="thinktax_spendlogs") as cur, tmp.open("w", encoding="utf-8") as out:
                cur.itersize = batch_rows
                cur.execute(query, {"ts": lower_ts, "id": lower_id} if lower_ts is not None else None)
                while True:
                    rows = cur.fetchmany(batch_rows)
                    if not rows:
                        break
                    out.writelines(r[2] + "\n" for r in rows)
                    n += len(rows)
                    first = first or (rows[0][0], rows[0][1])
                    last = (rows[-1][0], rows[-1][1])
                    if after_batch is not None:
                        after_batch(n, conn)
                out.flush()
                os.fsync(out.fileno())  # on disk before the rename makes it visible
        if n == 0:
            tmp.unlink()
            return None, 0
        name = f"spendlogs.{first[0]:%Y%m%dT%H%M%S%f}--{last[0]:%Y%m%dT%H%M%S%f}.{n}.jsonl"
        path = folder / name
        os.replace(tmp, path)
        cur_tmp = folder / f".cursor.{os.getpid()}.tmp"
        cur_tmp.write_text(json.dumps({"startTime": _iso(last[0]), "request_id": last[1], "source": describe(dsn)}))
        os.replace(cur_tmp, folder / CURSOR)
        return path, n
    finally:
        if tmp.exists():
            tmp.unlink()


def run(args: argparse.Namespace) -> int:
    from services.config import resolve_paths  # noqa: PLC0415

    dsn = args.dsn or os.environ.get("THINKTAX_LITELLM_DSN") or os.environ.get("DATABASE_URL")
    if not dsn:
        print("thinktax: no DSN: give --dsn postgresql://... (or set THINKTAX_LITELLM_DSN)", file=sys.stderr)
        return 2
    landing, _ = resolve_paths(args.landing, None)
    import psycopg  # noqa: PLC0415

    try:
        path, n = fetch(dsn, landing, args.since, args.overlap_minutes, args.batch_rows)
    except psycopg.Error as exc:
        print(f"thinktax: reading LiteLLM_SpendLogs from {describe(dsn)} failed, nothing landed: "
              f"{redact(str(exc).strip(), dsn)}", file=sys.stderr)
        return 1
    if path is None:
        print(f"no new spend logs in {describe(dsn)}")
    else:
        print(f"{n:,} spend log rows from {describe(dsn)} -> {path}")
    return 0
