"""Which UTC days the landed files touch: the unit of the daily partitions.

Every staging table that holds time-stamped usage or spend names the column(s) that place a
row on a day. A row with an end (a bill bucket, a FOCUS charge period; end exclusive) touches
every day from its start to just before its end. After each ingest, ``record_new_file_days``
writes one ``ops.ingested_days`` row per new file x day, so a run knows which days its new
files (late ones included) changed.
"""

from __future__ import annotations

import datetime as dt

import duckdb

from sources.contract import TABLES

# staging table -> (start column, end column or None), from the declarations in sources/contract.py.
# Tables without a day column are not day-bound (catalog, price sheets) and do not make an asset
# daily-partitioned.
DAY_SOURCES: dict[str, tuple[str, str | None]] = {name: t.day for name, t in TABLES.items() if t.day}

_NEW_FILES = """
    SELECT file_id FROM ops.ingested_files
    WHERE ingested_at >= (SELECT started_at FROM ops.runs WHERE build_id = $build_id)
"""


def _existing(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_schema = 'stg'"
    ).fetchall()
    present = {r[0] for r in rows}
    return [t for t in DAY_SOURCES if t in present]


def record_new_file_days(con: duckdb.DuckDBPyConnection, build_id: str) -> list[dt.date]:
    """Record the days touched by the files this build ingested; return them, sorted."""
    for table in _existing(con):
        start, end = DAY_SOURCES[table]
        if end is None:
            days = f"CAST({start} AS DATE)"
        else:
            # end is exclusive: a bucket [Nov 1 00:00, Nov 2 00:00) is Nov 1 only.
            days = (f"unnest(generate_series(CAST({start} AS DATE), "
                    f"CAST(greatest({end} - INTERVAL 1 MICROSECOND, {start}) AS DATE), INTERVAL 1 DAY))")
        con.execute(
            f"""INSERT INTO ops.ingested_days
                SELECT file_id, CAST(day AS DATE), count(*)
                FROM (SELECT file_id, {days} AS day FROM {table} WHERE file_id IN ({_NEW_FILES}))
                WHERE file_id NOT IN (SELECT file_id FROM ops.ingested_days)
                GROUP BY ALL""",
            {"build_id": build_id},
        )
    return run_days(con, build_id)


def run_days(con: duckdb.DuckDBPyConnection, build_id: str) -> list[dt.date]:
    """The days touched by the files this build ingested (after ``record_new_file_days``)."""
    rows = con.execute(
        f"SELECT DISTINCT day FROM ops.ingested_days WHERE file_id IN ({_NEW_FILES}) ORDER BY day",
        {"build_id": build_id},
    ).fetchall()
    return [r[0] for r in rows]
