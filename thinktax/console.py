"""What a person sees on the terminal: progress while the pipeline runs, then a short summary."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipelines import progress
from thinktax.runner import RunOptions, RunOutcome, run_pipeline
from warehouse.db import WarehouseBusy, read_only
from warehouse.parts import has_table
from warehouse.incremental import Scope

err = Console(stderr=True)


def stdout_console() -> Console:
    """The console for results: rich on a terminal; plain, unwrapped text when stdout is a file or
    a pipe (rich would otherwise wrap every line at 80 columns, mid-word)."""
    if sys.stdout.isatty():
        return Console()
    return Console(soft_wrap=True, no_color=True, highlight=False, emoji=False, width=100_000)


def _cell(v: object) -> str:
    return "NULL" if v is None else str(v)


def print_rows(cols: list[str], rows: list[tuple], console: Console | None = None) -> None:
    """Query results, readable at any width and never cut to empty boxes.

    On a terminal: a table when every column fits at its natural width, else one block per row
    (column name, value; long values folded), like psql's expanded display. Not on a terminal:
    plain aligned text, one line per row, never wrapped.
    """
    console = console or stdout_console()
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(cols)]
    if not console.is_terminal:
        console.print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip(), markup=False)
        console.print("  ".join("-" * w for w in widths), markup=False)
        for r in cells:
            console.print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip(), markup=False)
        return
    if sum(widths) + 3 * len(cols) + 1 <= console.width:
        t = Table(*cols)
        for r in cells:
            t.add_row(*r)
        console.print(t)
        return
    name_w = max(len(c) for c in cols)
    for k, r in enumerate(cells, 1):
        console.rule(f"row {k}", align="left", characters="─")
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True, width=name_w)
        grid.add_column(overflow="fold")
        for c, v in zip(cols, r):
            grid.add_row(c, v)
        console.print(grid)


def run_with_progress(landing: Path, warehouse: Path, config: str | None, *, quiet: bool = False,
                      options: RunOptions | None = None) -> RunOutcome:
    start = time.monotonic()
    status = None if quiet else err.status("starting Dagster…", spinner="dots")
    counts = {"ingest": 0, "build": 0}

    def on_step(step: str, detail: str) -> None:
        if status is None:
            return
        if step == "spark":  # the Spark engine's own steps (session, ingest, economics, publish), one line each
            print(f"[spark] {detail}", flush=True)
            return
        counts[step] = counts.get(step, 0) + 1
        label = {"prepare": "preparing build", "ingest": f"ingesting file {counts['ingest']}",
                 "build": f"building model {counts['build']}", "publish": "publishing"}.get(step, step)
        status.update(f"{label}: {detail}")

    progress.set_listener(on_step)
    try:
        if status:
            status.start()
        outcome = run_pipeline(landing, warehouse, config, options)
    except WarehouseBusy as exc:
        err.print(f"[red]thinktax: {exc}[/red]")
        return RunOutcome(False, "", error=str(exc))
    finally:
        if status:
            status.stop()
        progress.set_listener(None)
    secs = time.monotonic() - start
    if outcome.success:
        if not quiet:
            err.print(f"[green]pipeline finished in {secs:.1f} s[/green] (Dagster run {outcome.run_id})")
        return outcome
    err.print(f"[red]thinktax run failed[/red] (Dagster run {outcome.run_id}): nothing was published; "
              f"the published warehouse {warehouse} was left as it was.", soft_wrap=True)  # one line: greppable
    for chk in outcome.failed_checks:
        err.print(f"[red]blocking check failed: {chk['check']}[/red] — {chk.get('offending_rows')} offending row(s); "
                  f"sample: {chk.get('sample')}", soft_wrap=True)
    if outcome.error and not outcome.failed_checks:
        err.print(outcome.error, soft_wrap=True, markup=False)
    return outcome


def _usd(x) -> str:
    return "—" if x is None else f"${x:,.2f}"


def _unknown_fields_line(con) -> str | None:
    """The run summary's warning line on ops.unknown_fields (sources/fieldguard.py), or None."""
    from sources.fieldguard import SUMMARY_SQL, summary_line  # noqa: PLC0415

    if not has_table(con, "ops.unknown_fields", views=False):
        return None
    files = con.sql("SELECT count(DISTINCT file_id) FROM ops.unknown_fields").fetchall()[0][0]
    return summary_line(con.sql(SUMMARY_SQL).fetchall(), files)


def print_summary(warehouse: Path, console: Console | None = None) -> None:
    console = console or stdout_console()
    with read_only(warehouse) as con:
        files = con.sql(
            "SELECT count(*), sum(rows_in), sum(rows_loaded), sum(rows_duplicate), sum(rows_quarantined) FROM ops.ingested_files"
        ).fetchall()[0]
        # after a Spark run the per-call tables live in Spark only: the span from the per-task mart
        per_call = has_table(con, "core.call_costs", views=False)
        span = con.sql("SELECT min(day), max(day), count(*), count(DISTINCT task_id) FROM core.call_costs" if per_call else
                       "SELECT min(day), max(day), coalesce(sum(calls), 0), count(DISTINCT task_id) FROM marts.task_costs").fetchall()[0]
        spend = con.sql(
            "SELECT sum(cost_usd), sum(reasoning_cost_usd) FROM marts.daily_spend WHERE source <> 'api_bill'"
        ).fetchall()[0]
        by_source = con.sql(
            "SELECT source, sum(cost_usd) FROM marts.daily_spend GROUP BY source ORDER BY source"
        ).fetchall()
        mix = con.sql(
            "SELECT tier, sum(calls), sum(cost_usd), any_value(target_share) FROM marts.tier_mix WHERE team = '*' "
            "GROUP BY tier ORDER BY CASE tier WHEN 'fast' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END"
        ).fetchall()
        unpriced = con.sql("SELECT coalesce(sum(calls_or_hours), 0) FROM marts.unpriced_usage").fetchall()[0][0]
        scope = con.sql("SELECT full_rebuild, reason, days, tables FROM ops.build_scope").fetchall()
        unknown = _unknown_fields_line(con)
    total, thinking = spend
    console.print(f"[bold]thinktax[/bold] — {span[0]} to {span[1]}: {span[2]:,} calls in {span[3]:,} tasks")
    console.print(f"files: {files[0]} ingested; rows in {files[1] or 0:,} = loaded {files[2] or 0:,} + duplicate {files[3] or 0:,} + quarantined {files[4] or 0:,}")
    if scope:
        full, reason, days, tables = scope[0]
        console.print(Scope(full=full, reason=reason, days=tuple(days or ()),
                            tables=None if tables is None else frozenset(tables)).summary(), markup=False)
    share = (thinking / total * 100) if total else 0
    console.print(f"spend: {_usd(total)}, of which thinking {_usd(thinking)} ({share:.1f}%)  "
                  + "  ".join(f"{s}: {_usd(v)}" for s, v in by_source))
    t = Table("tier", "calls", "share of calls", "target", "cost", title="tier mix (all teams)")
    all_calls = sum(r[1] for r in mix) or 1
    for tier, calls, cost, target in mix:
        t.add_row(tier, f"{calls:,}", f"{calls / all_calls:.1%}", f"{target:.0%}", _usd(cost))
    console.print(t)
    if unpriced:
        console.print(f"[yellow]{unpriced:,} calls/node-hours could not be priced: SELECT * FROM marts.unpriced_usage[/yellow]")
    if unknown:  # issue 44: keys a JSON parser does not read (ops.unknown_fields)
        console.print(f"[yellow]{unknown}[/yellow]", markup=True, soft_wrap=True)
    console.print(f"warehouse: {warehouse}")
    from services.report import default_path  # noqa: PLC0415

    report = default_path(warehouse)
    if report.exists():
        console.print(f"report:    {report}")
    console.print('query it:  thinktax sql "SELECT * FROM marts.tier_mix WHERE team = \'*\' ORDER BY day DESC LIMIT 9"')


def fail(msg: str) -> int:
    print(f"thinktax: {msg}", file=sys.stderr)
    return 2
