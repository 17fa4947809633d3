"""The break-even alert: arithmetic, state machine, delivery to a real receiver on 127.0.0.1, and
the whole thing inside `thinktax run` (figures: tests/nightly_helpers.py)."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from tests.conftest import build_warehouse
from tests.nightly_helpers import (HIGH_PER_MONTH, HIGH_WINDOW_USD, LOW_PER_MONTH, Receiver, alert_landing,
                                   closed_port_url, config_file)
from services import alert
from thinktax.cli import main
from services.config import Alert, Config

# Dates well in the past: `thinktax run` quarantines calls dated after the day they are ingested.
APR30, MAY30, JUN30 = dt.date(2025, 4, 30), dt.date(2025, 5, 30), dt.date(2025, 6, 30)
MONTHS = [(2025, 4, True), (2025, 5, False), (2025, 6, True)]


def cfg(webhook: str = "", threshold: float = 200.0, window_days: int = 30) -> Config:
    return Config(alert=Alert(webhook_url=webhook, window_days=window_days, threshold_usd_per_month=threshold))


@pytest.fixture
def con(tmp_path: Path):
    c, summary = build_warehouse(alert_landing(tmp_path / "landing", MONTHS), tmp_path / "wh" / "t.duckdb")
    assert summary.total("rows_quarantined") == 0
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


# -- pure logic ------------------------------------------------------------------------------

def test_per_month_scaling():
    # 240 x 730 / (24 x 30) = 175,200 / 720 = 243.333333
    assert alert.per_month(D("240"), 30, 730) == D("243.333333")
    # a 7-day window: 70 x 730 / 168 = 304.166667
    assert alert.per_month(D("70"), 7, 730) == D("304.166667")


@pytest.mark.parametrize(("status", "above", "action"), [
    (None, True, "send"), ("armed", True, "send"), ("pending", True, "send"), ("fired", True, "none"),
    (None, False, "none"), ("armed", False, "none"), ("fired", False, "rearm"), ("pending", False, "rearm"),
])
def test_state_machine(status, above, action):
    assert alert.next_action(status, above) == action


def test_reasoning_models_are_the_catalog_flag_or_observed_thinking(con):
    spend = alert.reasoning_spend(con, dt.date(2025, 4, 1), APR30)
    # o3 (catalog: reasoning), mystery-r1 (not in catalog, reports thinking); not gpt-4o (catalog: false)
    # nor plain-x (no thinking). o3: 30 x 8 = 240; mystery-r1: 0.40
    assert spend == {"o3": D("240"), "mystery-r1": D("0.40")}


def test_window_ends_with_the_latest_day_of_data(con):
    assert alert.window_end(con, None) == JUN30
    [s] = alert.subjects(con, cfg(), None)
    # Jun 1..30: o3 30 x 8 = 240, mystery-r1 on Jun 15: 0.40
    assert (s.window_start, s.window_end) == (dt.date(2025, 6, 1), JUN30)
    assert s.window_spend_usd == HIGH_WINDOW_USD and s.window_spend_usd_per_month == HIGH_PER_MONTH


# -- crossings against a real receiver ----------------------------------------------------

def test_fires_once_per_crossing(con):
    with Receiver() as rx:
        c = cfg(rx.url)
        first = alert.evaluate(con, c, as_of=APR30)  # Apr: 243.74/month > 200
        assert (first.sent, first.delivered, rx.posts) == (1, 1, 1)
        again = alert.evaluate(con, c, as_of=APR30)  # still above: silent
        assert (again.sent, rx.posts) == (0, 1)
        below = alert.evaluate(con, c, as_of=MAY30)  # May 1..30: 2.43/month: re-armed, nothing sent
        assert (below.sent, below.rearmed, rx.posts) == (0, 1, 1)
        above = alert.evaluate(con, c, as_of=JUN30)  # Jun: above again: one more
        assert (above.sent, rx.posts) == (1, 2)
        assert alert.evaluate(con, c, as_of=JUN30).sent == 0
    assert rx.posts == 2
    body = rx.bodies[0]
    assert body["model"] == "*" and body["window_spend_usd_per_month"] == 243.74
    assert body["threshold_usd_per_month"] == 200.0 and body["window_end"] == "2025-04-30"
    assert "$243.74/month" in body["text"] and "o3" in body["recommendation"]
    rows = con.sql("SELECT window_end, window_spend_usd, window_spend_usd_per_month, threshold_usd, delivered, channel "
                   "FROM ops.alerts ORDER BY fired_at, window_end").fetchall()
    assert rows == [(APR30, HIGH_WINDOW_USD, HIGH_PER_MONTH, D("200"), True, "webhook"),
                    (JUN30, HIGH_WINDOW_USD, HIGH_PER_MONTH, D("200"), True, "webhook")]
    state = con.sql("SELECT status, window_spend_usd_per_month FROM ops.alert_state").fetchall()
    assert state == [("fired", HIGH_PER_MONTH)]


def test_below_threshold_sends_nothing(con):
    with Receiver() as rx:
        assert alert.evaluate(con, cfg(rx.url, threshold=300), as_of=APR30).sent == 0  # 243.74 < 300
    assert rx.posts == 0
    assert con.sql("SELECT status, window_spend_usd_per_month FROM ops.alert_state").fetchall() == [("armed", HIGH_PER_MONTH)]
    low = alert.subjects(con, cfg(), MAY30)[0]
    assert low.window_spend_usd_per_month == LOW_PER_MONTH


def _post_fast(url: str, payload: dict) -> str | None:
    return alert.post_json(url, payload, timeout_s=0.5)


@pytest.mark.parametrize("failure", [500, "timeout", "refused"])
def test_failed_delivery_is_retried_next_time_and_never_marked_delivered(con, failure):
    if failure == "refused":
        url, rx = closed_port_url(), None
    else:
        rx = Receiver(statuses=[500] if failure == 500 else [], delay_s=2.0 if failure == "timeout" else 0.0)
        rx.__enter__()
        url = rx.url
    try:
        out = alert.evaluate(con, cfg(url), as_of=APR30, post=_post_fast)
        assert (out.sent, out.delivered, out.failed) == (1, 0, 1)
        expected = {500: "HTTP 500", "timeout": "timeout after 0.5 s", "refused": "unreachable"}[failure]
        assert expected in out.errors[0]
        assert con.sql("SELECT delivered, error IS NOT NULL FROM ops.alerts").fetchall() == [(False, True)]
        assert con.sql("SELECT status FROM ops.alert_state").fetchall() == [("pending",)]
        if rx is not None:
            rx.delay_s = 0.0
            retry = alert.evaluate(con, cfg(url), as_of=APR30, post=_post_fast)
            assert (retry.sent, retry.delivered) == (1, 1)
            assert con.sql("SELECT delivered FROM ops.alerts ORDER BY fired_at").fetchall() == [(False,), (True,)]
            assert alert.evaluate(con, cfg(url), as_of=APR30).sent == 0  # delivered: silent now
    finally:
        if rx is not None:
            rx.__exit__()


def test_pending_alert_is_dropped_when_spend_falls_back(con):
    out = alert.evaluate(con, cfg(closed_port_url()), as_of=APR30)
    assert out.failed == 1
    with Receiver() as rx:
        assert alert.evaluate(con, cfg(rx.url), as_of=MAY30).rearmed == 1  # below now: no stale alert
    assert rx.posts == 0


def test_no_webhook_logs_once(con, caplog):
    caplog.set_level(logging.INFO, logger="thinktax.alert")
    first = alert.evaluate(con, cfg(""), as_of=APR30)
    assert (first.logged, first.sent) == (1, 0)
    assert "logged instead of sent" in caplog.text and "$243.74/month" in caplog.text
    assert alert.evaluate(con, cfg(""), as_of=APR30).logged == 0
    assert con.sql("SELECT delivered, channel FROM ops.alerts").fetchall() == [(False, "log")]


# -- per-model thresholds from marts.self_host_breakeven --------------------------------------

def _breakeven(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""CREATE TABLE marts.self_host_breakeven AS SELECT * FROM (VALUES
        (DATE '2025-03-01', 'o3', 'h100x8', CAST(10 AS DECIMAL(18,6)), 'self_host'),
        (DATE '2025-04-01', 'o3', 'h100x8', CAST(150 AS DECIMAL(18,6)), 'self_host'),
        (DATE '2025-04-01', 'o3', 'a100x8', CAST(120 AS DECIMAL(18,6)), 'stay_on_api'),
        (DATE '2025-04-01', 'o3', 'l4x1', CAST(50 AS DECIMAL(18,6)), 'infeasible'),
        (DATE '2025-05-01', 'o3', 'h100x8', CAST(5 AS DECIMAL(18,6)), 'self_host')
    ) AS t(month, model, deployment, self_host_usd_per_month, verdict)""")


def test_per_model_threshold_is_the_cheapest_feasible_deployment(con, caplog):
    _breakeven(con)
    caplog.set_level(logging.INFO, logger="thinktax.alert")
    with Receiver() as rx:
        out = alert.evaluate(con, cfg(rx.url, threshold=0), as_of=APR30)
    # newest month up to Apr 30 is 2025-04; l4x1 is infeasible; a100x8 ($120) beats h100x8 ($150)
    # o3 alone: 240 x 730 / 720 = 243.333333 > 120. mystery-r1 has no deployment: no threshold.
    assert (out.evaluated, out.sent, rx.posts) == (1, 1, 1)
    body = rx.bodies[0]
    assert (body["model"], body["cheapest_deployment"], body["threshold_usd_per_month"]) == ("o3", "a100x8", 120.0)
    assert body["window_spend_usd_per_month"] == 243.33 and body["threshold_source"] == "self_host_breakeven"
    assert "a100x8" in body["recommendation"] and "$123.33/month cheaper" in body["recommendation"]
    assert "mystery-r1 has no feasible self-hosted deployment" in caplog.text


def test_without_the_mart_and_without_a_threshold_nothing_is_compared(con, caplog):
    caplog.set_level(logging.INFO, logger="thinktax.alert")
    with Receiver() as rx:
        out = alert.evaluate(con, cfg(rx.url, threshold=0), as_of=APR30)
    assert (out.evaluated, rx.posts) == (0, 0)
    assert "marts.self_host_breakeven does not exist" in caplog.text


# -- inside `thinktax run`: never fails the data run ----------------------------------------

def test_thinktax_run_delivers_once_after_a_500(tmp_path: Path, monkeypatch):
    landing = alert_landing(tmp_path / "landing", MONTHS[:1])
    wh = tmp_path / "wh" / "t.duckdb"
    with Receiver(statuses=[500]) as rx:
        toml = config_file(tmp_path / "thinktax.toml", rx.url, threshold=200)
        args = ["run", "--landing", str(landing), "--warehouse", str(wh), "--config", str(toml), "--quiet"]
        assert main(args) == 0  # the receiver answers 500: the run still succeeds and publishes
        assert (rx.posts, rx.answered) == (1, [500])
        assert main(args) == 0  # retried, delivered
        assert (rx.posts, rx.answered) == (2, [500, 200])
        assert main(args) == 0  # delivered before (state published with the warehouse): nothing
        assert rx.posts == 2
    with duckdb.connect(str(wh), read_only=True) as c:
        assert c.sql("SELECT delivered, error FROM ops.alerts ORDER BY fired_at").fetchall() == [
            (False, "HTTP 500"), (True, None)]
        assert c.sql("SELECT count(*) FROM ops.runs WHERE published_at IS NOT NULL").fetchall() == [(3,)]


@pytest.mark.parametrize("as_of", ["not-a-day", "2025-04-30"])
def test_the_alert_asset_never_raises(tmp_path: Path, monkeypatch, as_of):
    import dagster as dg

    from pipelines.defs.alerts import AlertConfig, breakeven_alert
    from pipelines.defs.resources import ThinktaxResource

    def broken(*a, **k):
        raise RuntimeError("alert exploded")

    monkeypatch.setattr(alert, "evaluate", broken)
    (tmp_path / "wh").mkdir()
    result = breakeven_alert(dg.build_asset_context(), config=AlertConfig(as_of=as_of),
                             thinktax=ThinktaxResource(warehouse=str(tmp_path / "wh" / "t.duckdb")))
    error = result.metadata["error"]
    assert ("Invalid isoformat" in error) if as_of == "not-a-day" else (error == "RuntimeError: alert exploded")
