"""What a table asset shows in the Dagster UI: row count, column schema (with the column docs) and its head.

For the SQL asset factory (pipelines/defs/warehouse_assets.py), for every mart:
`dg.MaterializeResult(metadata=table_metadata(build_.path, model.table, rows=rows))`, or with an
open connection, `table_metadata(con, model.table)`.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb

from warehouse import comments

PREVIEW_ROWS = 5
PREVIEW_CELL_CHARS = 40


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value)
    if len(text) > PREVIEW_CELL_CHARS:
        text = text[: PREVIEW_CELL_CHARS - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_head(columns: list[str], rows: list[tuple]) -> str:
    """A markdown table of the rows (cells escaped and cut to PREVIEW_CELL_CHARS)."""
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def table_metadata(source: duckdb.DuckDBPyConnection | Path | str, table: str, *, rows: int | None = None,
                   head: int = PREVIEW_ROWS, read_only: bool = False) -> dict[str, object]:
    """``dagster/row_count``, ``dagster/column_schema`` and a markdown ``preview`` of ``schema.table``.

    ``source`` is an open connection or the path of the DuckDB file, opened for the call with the
    same configuration the pipeline's own connections use (read-write: a run's build file), or
    read-only for a published warehouse. ``rows``: the row count when the caller knows it.
    Column descriptions are the warehouse comments (warehouse/comments.py), taken from the
    dictionary because the comments themselves are only written at publish time.
    """
    if not isinstance(source, duckdb.DuckDBPyConnection):
        with duckdb.connect(str(source), read_only=read_only) as con:
            return table_metadata(con, table, rows=rows, head=head)
    con = source
    schema, name = table.split(".")
    cols = con.execute(
        "SELECT column_name, data_type, is_nullable, comment FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index",
        [schema, name],
    ).fetchall()
    if rows is None:
        rows = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchall()[0][0]
    rel = con.execute(f'SELECT * FROM "{schema}"."{name}" LIMIT {int(head)}')
    preview = markdown_head([d[0] for d in rel.description], rel.fetchall())
    column_schema = dg.TableSchema(columns=[
        dg.TableColumn(
            name=col, type=dtype,
            description=comments.column_comment(table, col) or comment,
            constraints=dg.TableColumnConstraints(nullable=bool(nullable)),
        )
        for col, dtype, nullable, comment in cols
    ])
    return {
        "dagster/row_count": dg.MetadataValue.int(int(rows)),
        "dagster/column_schema": dg.MetadataValue.table_schema(column_schema),
        "preview": dg.MetadataValue.md(preview),
    }
