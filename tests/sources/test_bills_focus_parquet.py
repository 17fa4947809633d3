"""FOCUS exports as Parquet (sources/bills_focus.py parse_parquet), as AWS Data Exports and Azure
Cost Management write FOCUS: typed columns (timestamps, numbers, a Tags map) instead of text.

The reference is the CSV parser on the same rows: each real FOCUS sample of data/real/focus/ (the
FOCUS specification repository's files, data/real/README.md) and the hand-written fixtures are
written as Parquet by DuckDB's own CSV reader and Parquet writer (columns typed by DuckDB's
sniffer, independent of thinktax), and the Parquet parse must give the CSV parse's rows and
rejects, except that a Parquet row's line is its row number.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sources import bills_focus as bf
from sources.base import ParseContext, SourceFormatError

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "data" / "real" / "focus").rglob("*.csv")) + sorted((ROOT / "tests/fixtures/bills/focus").glob("*.csv"))
CTX = ParseContext(ingested_at=dt.datetime(2025, 7, 1))


def _as_parquet(csv_path: Path, out: Path) -> bytes:
    """The CSV written as a typed Parquet export, typed by DuckDB on its own: a column whose every
    value is an ISO 8601 time (DuckDB's TIMESTAMPTZ cast) is a timestamp (UTC), else a FOCUS cost,
    price or quantity column whose every value casts to DOUBLE is a DOUBLE, else text (slashed dates such as 4/1/25 stay text, as in the
    CSV: DuckDB would read 6/1/25 as the year 6)."""
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{csv_path}', header = true, all_varchar = true)")
        cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_name = 't' ORDER BY ordinal_position").fetchall()]
        select = []
        for c in cols:
            q = '"' + c.replace('"', '""') + '"'
            given = f"nullif(trim({q}), '')"
            ts_ok, num_ok, n = con.execute(
                f"SELECT count(CASE WHEN regexp_full_match({given}, '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}.*') "
                f"THEN TRY_CAST({given} AS TIMESTAMPTZ) END), count(TRY_CAST({given} AS DOUBLE)), count({given}) FROM t"
            ).fetchall()[0]
            if n and ts_ok == n:
                select.append(f"CAST({given} AS TIMESTAMPTZ) AS {q}")
            elif n and num_ok == n and c.endswith(("Cost", "Price", "Quantity")):  # ids stay text
                select.append(f"CAST({given} AS DOUBLE) AS {q}")
            else:
                select.append(q)
        con.execute(f"COPY (SELECT {', '.join(select)} FROM t) TO '{out}' (FORMAT parquet)")
    return out.read_bytes()


def _rows(parsed) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "line"} for r in parsed.rows.to_pylist()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_parquet_gives_the_csv_rows(path: Path, tmp_path: Path):
    data = _as_parquet(path, tmp_path / "f.parquet")
    assert bf.sniff_parquet(data, "f.parquet") and not bf.sniff(data, "f.parquet")
    assert not bf.sniff_parquet(path.read_bytes(), path.name)
    want = bf.parse(path.read_bytes(), path.name, CTX)
    got = bf.parse_parquet(data, "f.parquet", CTX)
    assert got.format == "focus_parquet" and got.rows.schema.equals(bf.SCHEMA)
    assert got.rows_in == want.rows_in == got.rows.num_rows + len(got.rejects)
    assert _rows(got) == _rows(want)
    assert [(r.field, r.reason) for r in got.rejects] == [(r.field, r.reason) for r in want.rejects]
    # a Parquet row's line is its row number (1-based); rejects name theirs
    lines = sorted([r["line"] for r in got.rows.to_pylist()] + [r.line for r in got.rejects])
    assert lines == list(range(1, got.rows_in + 1))


def test_typed_columns_read_as_a_csv_would_hold_them(tmp_path: Path):
    """Timestamps with a zone and without (taken as UTC), DECIMAL and DOUBLE money (no 1e-07),
    a Tags map written as JSON; a text BilledCost that is no number is a reject naming its row."""
    t = pa.table({
        "BillingCurrency": ["USD", "USD", "USD"],
        "BillingPeriodStart": pa.array([dt.datetime(2026, 6, 1)] * 3, pa.timestamp("us", tz="UTC")),
        "ChargePeriodStart": pa.array([dt.datetime(2026, 6, 1, 0, 0)] * 3, pa.timestamp("us")),
        "ChargePeriodEnd": pa.array([dt.datetime(2026, 6, 2, 0, 0)] * 3, pa.timestamp("us")),
        "BilledCost": ["0.20", "abc", "1.5"],
        "EffectiveCost": pa.array([Decimal("0.2000000000"), Decimal("1"), Decimal("1.5")], pa.decimal128(38, 10)),
        "ListCost": pa.array([1.23e-07, 1.0, 1.5], pa.float64()),
        "ServiceName": ["Amazon Bedrock", "Amazon Bedrock", "Amazon Bedrock"],
        "Tags": pa.array([[("team", "search")], [], None], pa.map_(pa.string(), pa.string())),
    })
    pq.write_table(t, tmp_path / "x.parquet")
    p = bf.parse_parquet((tmp_path / "x.parquet").read_bytes(), "x.parquet", CTX)
    assert [(r.line, r.field) for r in p.rejects] == [(2, "BilledCost")]
    assert "not a number: 'abc'" in p.rejects[0].reason and json.loads(p.rejects[0].raw)["BilledCost"] == "abc"
    rows = p.rows.to_pylist()
    assert [r["line"] for r in rows] == [1, 3]
    first = rows[0]
    assert first["billed_cost_usd"] == Decimal("0.2") and first["effective_cost_usd"] == Decimal("0.2")
    assert first["list_cost_usd"] == Decimal("0.0000001230")  # 1.23e-07 to DECIMAL(38,10)
    assert first["charge_period_start"] == dt.datetime(2026, 6, 1) and first["billing_period_start"] == dt.datetime(2026, 6, 1)
    assert json.loads(first["tags_json"]) == {"team": "search"}
    assert rows[1]["tags_json"] is None


def test_a_parquet_without_the_required_columns_or_unreadable_is_a_clear_error(tmp_path: Path):
    pq.write_table(pa.table({"BilledCost": [1.0], "ChargePeriodStart": ["2026-06-01"]}), tmp_path / "a.parquet")
    data = (tmp_path / "a.parquet").read_bytes()
    assert bf.sniff_parquet(data, "a.parquet")
    with pytest.raises(SourceFormatError, match="not a FOCUS export: no column ChargePeriodEnd"):
        bf.parse_parquet(data, "a.parquet", CTX)
    with pytest.raises(SourceFormatError, match="unreadable Parquet"):
        bf.parse_parquet(b"PAR1" + b"\0" * 10 + b"PAR1", "b.parquet", CTX)


def test_the_ingest_reads_a_focus_parquet_once(tmp_path: Path):
    """bills/focus/*.parquet through the Ingestor: recognised by content, accounted
    (rows in = loaded + duplicate + quarantined), and a second ingest of the same file is a no-op."""
    from tests.conftest import build_warehouse

    src = ROOT / "tests/fixtures/bills/focus/llm_api_2025-06-01_02.csv"
    landing = tmp_path / "landing" / "bills" / "focus"
    landing.mkdir(parents=True)
    _as_parquet(src, landing / "export-00001.parquet")
    con, summary = build_warehouse(tmp_path / "landing", tmp_path / "w.duckdb")
    ((fmt, rows_in, loaded, dup, quar),) = con.execute(
        "SELECT format, rows_in, rows_loaded, rows_duplicate, rows_quarantined FROM ops.ingested_files").fetchall()
    want = bf.parse(src.read_bytes(), src.name, CTX)
    assert fmt == "focus_parquet" and rows_in == want.rows_in == loaded + dup + quar and loaded == want.rows.num_rows
    billed = con.execute("SELECT sum(billed_cost_usd) FROM stg.focus_costs").fetchall()[0][0]
    assert billed == sum((r["billed_cost_usd"] for r in want.rows.to_pylist()), Decimal(0))
    from warehouse.ingest import Ingestor

    again = Ingestor(con, tmp_path / "landing").ingest()
    assert sum(f.rows_loaded for f in again.files) == 0
    assert con.execute("SELECT count(*) FROM stg.focus_costs").fetchall()[0][0] == loaded
