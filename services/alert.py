"""The break-even alert: reasoning API spend crossing what self-hosting would cost.

After the marts are built, for every reasoning model bought through an API:

    window      = the trailing ``window_days`` UTC days ending with the latest day of calls
                  (or ``--as-of DAY``)
    per month   = window spend x hours_per_month / (24 x window_days)
                  (spend at the cloud invoice's net rate where one shows it, as
                  ``marts.self_host_breakeven.api_spend_usd``; else at list)
                  e.g. $240 over 30 days at 730 h/month: 240 x 730 / 720 = $243.33/month
    threshold   = the monthly cost of the model's cheapest feasible deployment
                  (``marts.self_host_breakeven``: verdict <> 'infeasible', newest month up to the
                  window's end), or ``alert.threshold_usd_per_month`` when > 0, which is then
                  compared with all reasoning API spend together (model '*').

A reasoning model is one marked ``reasoning`` in models.csv or, when the catalog does not say,
one whose calls report thinking tokens.

Each subject (alert, model) is a small state machine kept in ``ops.alert_state``:

    armed   --above-->  send  --2xx-->        fired    (one row in ops.alerts, delivered true)
                              --failure-->    pending  (row delivered false; retried next run)
                              --no webhook--> fired    (logged once; row delivered false, channel 'log')
    pending --above-->  send again (same as armed)
    fired   --above-->  nothing: one alert per crossing
    any     --not above--> armed (re-armed: the next crossing fires again)

"Above" is strictly above the threshold. The same machine, with the same once-per-crossing and retry
rules, runs for three more kinds (``ops.alert_state.alert``), each subject keyed as noted:

* ``breakeven_ahead`` (model ``'<model> -> <to_model>'``): "above" while the expected crossing of
  ``marts.breakeven_outlook`` (its earliest-crossing deployment of the pair) is at most
  ``[alert] warn_months`` months after the first forecast month, or already crossed (so a pair
  that moves from "ahead" to "crossed" is not warned twice); re-armed when it moves out again.
* ``budget_soft`` / ``budget_hard`` (model ``'<team> <YYYY-MM>'``: a new month is a new subject):
  "above" when the month's spend in ``marts.budget_status`` reaches ``soft_pct`` % of the budget /
  the budget (>=); the message also gives the month's chosen forecast (``marts.budget_outlook``).
* ``invoice_mismatch`` (model ``'<provider> <YYYY-MM>'``): "above" when the cloud invoice's
  unexplained difference of the month (``marts.invoice_mismatch``, issue 25) is strictly above both
  ``[alert] invoice_mismatch_usd`` and ``invoice_mismatch_pct`` % of the month's invoice usage, in
  absolute value (the invoice above or below the logs).

* ``spend_anomaly`` (model: the episode id of ``marts.spend_anomalies``, ``<metric>:<scope>=<value>:<first
  day>``, issue 42): every episode of a series in ``[anomaly] alert_scopes`` without feedback
  (catalog/anomaly_feedback.csv) whose last anomalous day is within ANOMALY_RECENT_DAYS of the mart's
  last day is "above": sent once, with the series, the days, the impact in USD and percent and the
  root cause; a new episode of the same series is a new subject.

The state lives in the run's build file and is
published with it; if a run fails after sending (before publishing), the next run sends again:
at least once, never silently lost.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol

import duckdb

from services.config import Config
from warehouse.parts import has_table

ALERT = "breakeven"
ALL_MODELS = "*"
POST_TIMEOUT_S = 10.0
_USD6 = Decimal("0.000001")

log = logging.getLogger("thinktax.alert")


class Logger(Protocol):
    def info(self, msg: str) -> None: ...
    def warning(self, msg: str) -> None: ...


# -- pure logic ------------------------------------------------------------------------------

def per_month(window_spend_usd: Decimal, window_days: int, hours_per_month: float) -> Decimal:
    """Window spend scaled to a month: spend x hours_per_month / (24 x window_days)."""
    return (Decimal(window_spend_usd) * Decimal(str(hours_per_month)) / (24 * window_days)).quantize(_USD6)


@dataclass(frozen=True)
class Subject:
    """One thing the alert watches in this run: a model (or all reasoning models, '*')."""

    model: str
    window_start: dt.date
    window_end: dt.date
    window_days: int
    window_spend_usd: Decimal
    window_spend_usd_per_month: Decimal
    threshold_usd_per_month: Decimal
    deployment: str | None = None  # cheapest feasible deployment, if known
    threshold_source: str = "configured"  # 'configured' or 'self_host_breakeven'
    top_model: str | None = None  # '*' subjects: the model with the largest spend
    top_model_usd_per_month: Decimal | None = None

    @property
    def above(self) -> bool:
        return self.window_spend_usd_per_month > self.threshold_usd_per_month


def next_action(status: str | None, above: bool) -> str:
    """'send', 'rearm' or 'none' for a subject in ``status`` ('armed', 'fired', 'pending', None)."""
    status = status or "armed"
    if not above:
        return "none" if status == "armed" else "rearm"
    return "none" if status == "fired" else "send"


def _usd(x: Decimal | None) -> str:
    return "n/a" if x is None else f"${x:,.2f}"


def message(s: Subject) -> dict:
    """The Slack-compatible payload: ``text`` for people, the fields for machines."""
    period = f"last {s.window_days} days to {s.window_end.isoformat()}"
    if s.model == ALL_MODELS:
        what = "Reasoning-model API spend"
        against = f"the configured threshold of {_usd(s.threshold_usd_per_month)}/month"
        rec = (f"Largest: {s.top_model} at {_usd(s.top_model_usd_per_month)}/month; "
               + (f"its cheapest self-hosted deployment is {s.deployment}. " if s.deployment else "")
               + "Compare self-hosting it in marts.self_host_breakeven.")
    else:
        what = f"API spend on reasoning model {s.model}"
        against = (f"the {_usd(s.threshold_usd_per_month)}/month its cheapest feasible self-hosted deployment"
                   f" ({s.deployment}) would cost" if s.deployment
                   else f"the configured threshold of {_usd(s.threshold_usd_per_month)}/month")
        saving = s.window_spend_usd_per_month - s.threshold_usd_per_month
        rec = (f"Self-host {s.model} on {s.deployment}: about {_usd(saving)}/month cheaper at the current volume."
               if s.deployment else f"Review self-hosting {s.model} in marts.self_host_breakeven.")
    text = (f"thinktax alert: {what} is {_usd(s.window_spend_usd_per_month)}/month ({period}), "
            f"above {against}. {rec}")
    return {
        "text": text,
        "alert": ALERT,
        "model": s.model,
        "window_days": s.window_days,
        "window_start": s.window_start.isoformat(),
        "window_end": s.window_end.isoformat(),
        "window_spend_usd": float(round(s.window_spend_usd, 2)),
        "window_spend_usd_per_month": float(round(s.window_spend_usd_per_month, 2)),
        "threshold_usd_per_month": float(round(s.threshold_usd_per_month, 2)),
        "threshold_source": s.threshold_source,
        "cheapest_deployment": s.deployment,
        "recommendation": rec,
    }


# -- delivery --------------------------------------------------------------------------------

def post_json(url: str, payload: dict, timeout_s: float = POST_TIMEOUT_S) -> str | None:
    """POST ``payload`` as JSON. None when the receiver answered 2xx, else why it failed."""
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode("utf-8"), method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "thinktax-alert"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            resp.read()
            return None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except urllib.error.URLError as exc:
        return f"unreachable: {exc.reason}"
    except TimeoutError:
        return f"timeout after {timeout_s:g} s"
    except OSError as exc:  # connection reset, and other socket errors
        return f"{type(exc).__name__}: {exc}"


# -- reading the warehouse -------------------------------------------------------------------

# API spend per provider x model x day, at the invoice's net rate where a cloud invoice shows one
# (warehouse/economics.py net_rate_sql), as marts.self_host_breakeven compares it
_API_DAYS_SQL = """
    SELECT provider, model, day, sum(cost_usd) AS cost_usd, bool_or(thinking_tokens > 0) AS thinks
    FROM core.call_costs WHERE serving = 'api' GROUP BY ALL
"""
_SPEND_SQL = """
WITH api AS (
    SELECT model, day, net_cost_usd AS cost_usd, thinks FROM ({api_days})
),
catalog AS (
    SELECT model_key, bool_or(reasoning) AS reasoning FROM core.dim_models GROUP BY model_key
),
models AS (
    SELECT api.model, coalesce(any_value(catalog.reasoning), bool_or(api.thinks)) AS reasoning
    FROM api LEFT JOIN catalog ON catalog.model_key = api.model
    GROUP BY api.model
),
final AS (
    SELECT m.model,
           coalesce(sum(a.cost_usd) FILTER (a.day BETWEEN $start AND $end), 0) AS window_spend_usd
    FROM models m JOIN api a USING (model)
    WHERE m.reasoning
    GROUP BY m.model
)
SELECT * FROM final ORDER BY model
"""

_CHEAPEST_SQL = """
WITH feasible AS (
    SELECT core.model_key(model) AS model, deployment, month,
           CAST(self_host_usd_per_month AS DECIMAL(18,6)) AS self_host_usd_per_month
    FROM marts.self_host_breakeven
    WHERE verdict <> 'infeasible' AND self_host_usd_per_month IS NOT NULL
      AND CAST(month AS VARCHAR) <= $as_of
),
latest AS (
    SELECT * FROM feasible QUALIFY month = max(month) OVER (PARTITION BY model)
),
final AS (
    SELECT model, arg_min(deployment, (self_host_usd_per_month, deployment)) AS deployment,
           min(self_host_usd_per_month) AS self_host_usd_per_month
    FROM latest GROUP BY model
)
SELECT * FROM final
"""


def window_end(con: duckdb.DuckDBPyConnection, as_of: dt.date | None) -> dt.date | None:
    """``as_of``, else the latest UTC day with calls (None: no calls at all)."""
    if as_of is not None:
        return as_of
    return con.execute("SELECT max(day) FROM core.call_costs").fetchall()[0][0]


def reasoning_spend(con: duckdb.DuckDBPyConnection, start: dt.date, end: dt.date) -> dict[str, Decimal]:
    """API spend per reasoning model (model key) over [start, end]; 0 for models without calls in it."""
    from warehouse.economics import net_rate_sql  # noqa: PLC0415 - the alert alone needs no economics at import

    rows = con.execute(_SPEND_SQL.format(api_days=net_rate_sql(con, _API_DAYS_SQL)), {"start": start, "end": end}).fetchall()
    return {m: Decimal(v) for m, v in rows}


def cheapest_deployments(con: duckdb.DuckDBPyConnection, as_of: dt.date) -> dict[str, tuple[str, Decimal]] | None:
    """model key -> (deployment, USD/month) of its cheapest feasible deployment; None if the mart is missing."""
    if not has_table(con, "marts.self_host_breakeven"):
        return None
    rows = con.execute(_CHEAPEST_SQL, {"as_of": as_of.isoformat()}).fetchall()
    return {m: (d, Decimal(v)) for m, d, v in rows}


def subjects(con: duckdb.DuckDBPyConnection, cfg: Config, as_of: dt.date | None, logger: Logger = log) -> list[Subject]:
    """What to compare this run (see the module docstring)."""
    end = window_end(con, as_of)
    if end is None:
        logger.info("alert: no calls in the warehouse; nothing to evaluate")
        return []
    days = cfg.alert.window_days
    start = end - dt.timedelta(days=days - 1)
    spend = reasoning_spend(con, start, end)
    if not spend:
        logger.info("alert: no reasoning model is bought through an API; nothing to evaluate")
        return []
    monthly = {m: per_month(v, days, cfg.hours_per_month) for m, v in spend.items()}
    try:
        cheapest = cheapest_deployments(con, end)
    except duckdb.Error as exc:
        logger.warning(f"alert: cannot read marts.self_host_breakeven ({exc}); no per-model thresholds")
        cheapest = None
    global_threshold = Decimal(str(cfg.alert.threshold_usd_per_month)).quantize(_USD6)
    common = {"window_start": start, "window_end": end, "window_days": days}
    if global_threshold > 0:
        top = max(monthly, key=lambda m: (monthly[m], m))
        total = sum(spend.values(), Decimal(0))
        return [Subject(
            ALL_MODELS, window_spend_usd=total, window_spend_usd_per_month=per_month(total, days, cfg.hours_per_month),
            threshold_usd_per_month=global_threshold, top_model=top, top_model_usd_per_month=monthly[top],
            deployment=(cheapest or {}).get(top, (None,))[0], **common)]
    if cheapest is None:
        logger.warning("alert: marts.self_host_breakeven does not exist, so no model has a per-model threshold, "
                       "and alert.threshold_usd_per_month is 0: nothing to compare with")
        return []
    out = []
    for model in sorted(spend):
        if model not in cheapest:
            logger.info(f"alert: {model} has no feasible self-hosted deployment; no threshold")
            continue
        deployment, usd = cheapest[model]
        out.append(Subject(model, window_spend_usd=spend[model], window_spend_usd_per_month=monthly[model],
                           threshold_usd_per_month=usd, deployment=deployment,
                           threshold_source="self_host_breakeven", **common))
    return out


# -- one evaluation --------------------------------------------------------------------------

@dataclass
class Outcome:
    evaluated: int = 0
    sent: int = 0  # POSTs attempted
    delivered: int = 0
    failed: int = 0
    logged: int = 0  # no webhook: written to the log instead
    rearmed: int = 0
    errors: list[str] = field(default_factory=list)

    def as_metadata(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "errors"} | {"errors": "; ".join(self.errors)}


def _status(con: duckdb.DuckDBPyConnection, model: str, alert: str = ALERT) -> str | None:
    rows = con.execute("SELECT status FROM ops.alert_state WHERE alert = ? AND model = ?", [alert, model]).fetchall()
    return rows[0][0] if rows else None


def _save_state(con: duckdb.DuckDBPyConnection, s: Subject, status: str, now: dt.datetime) -> None:
    con.execute(
        "INSERT OR REPLACE INTO ops.alert_state VALUES (?, ?, ?, ?, ?, ?, ?)",
        [ALERT, s.model, status, s.window_spend_usd_per_month, s.threshold_usd_per_month, s.window_end, now],
    )


def _record(con: duckdb.DuckDBPyConnection, s: Subject, now: dt.datetime, delivered: bool, channel: str,
            text: str, error: str | None) -> None:
    con.execute(
        """INSERT INTO ops.alerts (alert, model, fired_at, window_spend_usd, threshold_usd, delivered, message,
                                   window_spend_usd_per_month, window_days, window_end, deployment, channel, error)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [ALERT, s.model, now, s.window_spend_usd.quantize(_USD6), s.threshold_usd_per_month, delivered, text,
         s.window_spend_usd_per_month, s.window_days, s.window_end, s.deployment, channel, error],
    )


@dataclass(frozen=True)
class Warning_:
    """One subject of the breakeven_ahead / budget_* kinds (module docstring)."""

    alert: str
    key: str
    above: bool
    value_usd: Decimal            # forecast or spent USD (ops.alerts.window_spend_usd)
    threshold_usd: Decimal
    as_of: dt.date | None
    deployment: str | None
    payload: dict




def ahead_warnings(con: duckdb.DuckDBPyConnection, cfg: Config) -> list[Warning_]:
    """breakeven_ahead subjects: per (model, to_model) the deployment crossing first."""
    if not has_table(con, "marts.breakeven_outlook"):
        return []
    rows = con.execute("""
        SELECT model, to_model, deployment, threshold_usd_per_month, crossing_month_expected,
               crossing_month_earliest, crossing_month_latest, status, months_until_expected, offer
        FROM marts.breakeven_outlook
        WHERE status IN ('crossed', 'within_horizon', 'not_within_horizon')
        QUALIFY row_number() OVER (PARTITION BY model, to_model
                                   ORDER BY status <> 'crossed', crossing_month_expected NULLS LAST,
                                            threshold_usd_per_month, deployment) = 1
        ORDER BY model, to_model""").fetchall()
    out = []
    for model, to_model, dep, threshold, exp, early, late, status, months, offer in rows:
        above = status == "crossed" or (months is not None and months <= cfg.alert.warn_months)
        target = model if model == to_model else f"{to_model} (substitution)"
        def ym(d: dt.date | None) -> str:
            return "after the horizon" if d is None else f"{d:%Y-%m}"
        text = (f"thinktax warning: API spend on {model} is forecast to reach the ${threshold:,.2f}/month of "
                f"self-hosting {target} on {dep} in {ym(exp)} (95 % interval {ym(early)} .. {ym(late)})."
                if status != "crossed" else
                f"thinktax warning: API spend on {model} already reached the ${threshold:,.2f}/month of self-hosting "
                f"{target} on {dep} in {ym(exp)}.")
        payload = {"text": text, "alert": "breakeven_ahead", "model": model, "to_model": to_model, "deployment": dep,
                   "offer": offer, "threshold_usd_per_month": float(round(threshold, 2)),
                   "crossing_month_expected": None if exp is None else exp.isoformat(),
                   "crossing_month_earliest": None if early is None else early.isoformat(),
                   "crossing_month_latest": None if late is None else late.isoformat(),
                   "status": status, "warn_months": cfg.alert.warn_months}
        out.append(Warning_("breakeven_ahead", model if model == to_model else f"{model} -> {to_model}", above,
                            Decimal(threshold), Decimal(threshold),
                            exp, dep, payload))
    return out


def budget_warnings(con: duckdb.DuckDBPyConnection) -> list[Warning_]:
    """budget_soft / budget_hard subjects: one per team and month of marts.budget_status."""
    if not has_table(con, "marts.budget_status"):
        return []
    out = []
    ahead: dict[tuple[str, dt.date], tuple] = {}
    if has_table(con, "marts.budget_outlook"):  # the chosen forecast of the month (issue 28)
        ahead = {(t, m): (f, lo, hi) for t, m, f, lo, hi in con.execute(
            "SELECT team, month, forecast_usd, lo95_usd, hi95_usd FROM marts.budget_outlook").fetchall()}
    for team, month, budget, soft, spent, runs_out, projected in con.execute(
            "SELECT team, month, budget_usd, soft_usd, spent_usd, runs_out_on, projected_month_end_usd "
            "FROM marts.budget_status ORDER BY team, month").fetchall():
        key = f"{team} {month:%Y-%m}"
        fc = ahead.get((team, month))
        for kind, limit in (("budget_soft", soft), ("budget_hard", budget)):
            what = "its soft limit" if kind == "budget_soft" else "its budget"
            text = (f"thinktax budget: team {team} has spent ${spent:,.2f} in {month:%Y-%m}, reaching {what} of "
                    f"${limit:,.2f} (budget ${budget:,.2f}; projected month end ${projected:,.2f}"
                    + (f"; forecast month end ${fc[0]:,.2f}" + (f", 95 % ${fc[1]:,.2f} .. ${fc[2]:,.2f}" if fc[1] is not None else "")
                       if fc else "")
                    + (f"; runs out on {runs_out}" if runs_out else "") + ").")
            payload = {"text": text, "alert": kind, "team": team, "month": month.isoformat(),
                       "spent_usd": float(round(spent, 2)), "limit_usd": float(round(limit, 2)),
                       "budget_usd": float(round(budget, 2)), "projected_month_end_usd": float(round(projected, 2)),
                       "runs_out_on": None if runs_out is None else runs_out.isoformat(),
                       "forecast_month_end_usd": None if not fc else float(round(fc[0], 2)),
                       "forecast_month_end_hi95_usd": None if not fc or fc[2] is None else float(round(fc[2], 2))}
            out.append(Warning_(kind, key, spent >= limit, Decimal(spent), Decimal(limit), month, None, payload))
    return out


def invoice_warnings(con: duckdb.DuckDBPyConnection, cfg: Config) -> list[Warning_]:
    """invoice_mismatch subjects: one per provider and month of marts.invoice_mismatch."""
    if not has_table(con, "marts.invoice_mismatch"):
        return []
    usd_limit = Decimal(str(cfg.alert.invoice_mismatch_usd))
    pct_limit = cfg.alert.invoice_mismatch_pct
    out = []
    for provider, month, usage, logs, unexplained, pct in con.execute(
            "SELECT provider, month, invoice_usage_usd, logs_usd, unexplained_usd, unexplained_pct "
            "FROM marts.invoice_mismatch ORDER BY provider, month").fetchall():
        unexplained = Decimal(unexplained or 0)
        above = abs(unexplained) > usd_limit and (pct is None or abs(pct) > pct_limit)
        text = (f"thinktax invoice: the {provider} invoice of {month:%Y-%m} differs from the usage logs by "
                f"${unexplained:,.2f} that no credit, discount, tax, rounding, missing call, provisioned or "
                f"unattributed line explains ({'n/a' if pct is None else f'{pct:.2f} %'} of ${Decimal(usage or 0):,.2f} "
                f"invoice usage; logs ${Decimal(logs or 0):,.2f}). See marts.invoice_reconciliation.")
        payload = {"text": text, "alert": "invoice_mismatch", "provider": provider, "month": month.isoformat(),
                   "unexplained_usd": float(round(unexplained, 2)), "unexplained_pct": pct,
                   "invoice_usage_usd": float(round(Decimal(usage or 0), 2)), "logs_usd": float(round(Decimal(logs or 0), 2)),
                   "threshold_usd": float(usd_limit), "threshold_pct": pct_limit}
        out.append(Warning_("invoice_mismatch", f"{provider} {month:%Y-%m}", above, unexplained, usd_limit, month,
                            None, payload))
    return out


# spend_anomaly: an episode is sent while its last anomalous day is within this many days ending the
# mart's last day; the episodes of older history (a first run over months of data) are not sent
ANOMALY_RECENT_DAYS = 7
_METRIC_WORDS = {"cost_usd": "API spend", "calls": "calls", "reasoning_tokens_per_call": "reasoning tokens per call"}


# a bare scope in [anomaly] alert_scopes: its spend and its thinking (a spike of calls is also one of
# spend: 'calls' is sent only when named, e.g. 'team:calls')
BARE_SCOPE_METRICS = ("cost_usd", "reasoning_tokens_per_call")


def _alert_scopes(cfg: Config) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for entry in cfg.anomaly.alert_scopes:
        scope, _, metric = entry.partition(":")
        out += [(scope, m) for m in ((metric,) if metric else BARE_SCOPE_METRICS) if (scope, m) not in out]
    return out


def anomaly_warnings(con: duckdb.DuckDBPyConnection, cfg: Config) -> list[Warning_]:
    """spend_anomaly subjects: one per episode of marts.spend_anomalies (key: its episode_id) of a
    series in ``[anomaly] alert_scopes``, without feedback, that is still recent (ANOMALY_RECENT_DAYS);
    always "above", so the state machine sends each episode once (a new episode is a new key)."""
    if not has_table(con, "marts.spend_anomalies"):
        return []
    wanted = _alert_scopes(cfg)
    if not wanted:
        return []
    match = " OR ".join("(scope = ? AND metric = ?)" for _ in wanted)
    params: list[object] = [x for pair in wanted for x in pair]
    rows = con.execute(f"""
        WITH eps AS (
            SELECT episode_id, metric, scope, scope_value, min(day) AS first_day, max(day) AS last_day,
                   count(*) AS days, sum(impact_usd) AS impact_usd,
                   100 * sum(actual - expected) / nullif(sum(expected), 0) AS impact_pct,
                   arg_max(root_cause, impact_usd) AS root_cause, arg_max(root_cause_share, impact_usd) AS share
            FROM marts.spend_anomalies
            WHERE is_anomaly AND feedback IS NULL AND ({match})
            GROUP BY ALL
        )
        SELECT * FROM eps
        WHERE last_day > (SELECT max(day) FROM marts.spend_anomalies) - {ANOMALY_RECENT_DAYS}
        ORDER BY first_day, episode_id""", params).fetchall()
    floor = Decimal(str(cfg.anomaly.min_impact_usd))
    out = []
    for ep, metric, scope, value, first, last, days, impact, pct, cause, share in rows:
        series = f"{_METRIC_WORDS.get(metric, metric)} of {scope} {value}" if scope != "all" else \
            f"{_METRIC_WORDS.get(metric, metric)} of all teams"
        when = first.isoformat() if first == last else f"{first.isoformat()} .. {last.isoformat()}"
        pct_text = "n/a (nothing expected)" if pct is None else f"{pct:+.1f} %"
        cause_text = (f"root cause {cause} ({share * 100:.0f} % of the excess)" if cause and share is not None
                      else "no single root cause")
        text = (f"thinktax anomaly: {series} above its expected band on {when} ({days} anomalous day"
                f"{'s' if days != 1 else ''}): {_usd(Decimal(impact))} over the expected, {pct_text}; {cause_text}. "
                f"If it is known, label it in catalog/anomaly_feedback.csv. See marts.spend_anomalies.")
        payload = {"text": text, "alert": "spend_anomaly", "episode_id": ep, "metric": metric, "scope": scope,
                   "scope_value": value, "first_day": first.isoformat(), "last_day": last.isoformat(),
                   "anomalous_days": days, "impact_usd": float(round(Decimal(impact), 2)),
                   "impact_pct": None if pct is None else round(float(pct), 1),
                   "root_cause": cause, "root_cause_share": share}
        out.append(Warning_("spend_anomaly", ep, True, Decimal(impact), floor, last, None, payload))
    return out


def _evaluate_warnings(con: duckdb.DuckDBPyConnection, warnings_: list[Warning_], webhook: str, now: dt.datetime,
                       out: Outcome, logger: Logger, post) -> None:
    for w in warnings_:
        out.evaluated += 1
        status = _status(con, w.key, w.alert)
        action = next_action(status, w.above)
        if action == "rearm":
            out.rearmed += 1
        if action != "send":
            con.execute("INSERT OR REPLACE INTO ops.alert_state VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [w.alert, w.key, "armed" if not w.above else status or "armed", w.value_usd, w.threshold_usd,
                         w.as_of, now])
            continue
        error, channel = None, "log"
        if webhook:
            out.sent += 1
            channel = "webhook"
            error = post(webhook, w.payload)
        else:
            logger.warning(f"{w.payload['text']} (no alert.webhook_url: logged instead of sent)")
            out.logged += 1
        con.execute("BEGIN")
        con.execute(
            """INSERT INTO ops.alerts (alert, model, fired_at, window_spend_usd, threshold_usd, delivered, message,
                                       window_spend_usd_per_month, window_days, window_end, deployment, channel, error)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)""",
            [w.alert, w.key, now, w.value_usd, w.threshold_usd, bool(webhook) and error is None, w.payload["text"],
             w.value_usd, w.as_of, w.deployment, channel, error])
        con.execute("INSERT OR REPLACE INTO ops.alert_state VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [w.alert, w.key, "pending" if error else "fired", w.value_usd, w.threshold_usd, w.as_of, now])
        con.execute("COMMIT")
        if webhook and error is None:
            out.delivered += 1
        elif error:
            out.failed += 1
            out.errors.append(f"{w.alert} {w.key}: {error}")
            logger.warning(f"alert: {w.alert} delivery for {w.key} failed ({error}); it will be retried on the next run")


def evaluate(con: duckdb.DuckDBPyConnection, cfg: Config, *, as_of: dt.date | None = None,
             now: dt.datetime | None = None, logger: Logger = log, post=post_json) -> Outcome:
    """Compare, send what crossed, record it. Raises only on warehouse errors (the caller logs them)."""
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    out = Outcome()
    webhook = cfg.alert.webhook_url.strip()
    for s in subjects(con, cfg, as_of, logger):
        out.evaluated += 1
        status = _status(con, s.model)
        action = next_action(status, s.above)
        if action == "rearm":
            logger.info(f"alert: {s.model} back below the threshold "
                        f"({_usd(s.window_spend_usd_per_month)} <= {_usd(s.threshold_usd_per_month)}/month): re-armed")
            out.rearmed += 1
        if action != "send":
            _save_state(con, s, "armed" if not s.above else status or "armed", now)
            continue
        payload = message(s)
        if not webhook:
            logger.warning(f"{payload['text']} (no alert.webhook_url: logged instead of sent)")
            out.logged += 1
            con.execute("BEGIN")
            _record(con, s, now, False, "log", payload["text"], None)
            _save_state(con, s, "fired", now)
            con.execute("COMMIT")
            continue
        out.sent += 1
        error = post(webhook, payload)
        con.execute("BEGIN")
        _record(con, s, now, error is None, "webhook", payload["text"], error)
        _save_state(con, s, "fired" if error is None else "pending", now)
        con.execute("COMMIT")
        if error is None:
            out.delivered += 1
            logger.info(f"alert: sent for {s.model}: {payload['text']}")
        else:
            out.failed += 1
            out.errors.append(f"{s.model}: {error}")
            logger.warning(f"alert: delivery for {s.model} failed ({error}); it will be retried on the next run")
    _evaluate_warnings(con, ahead_warnings(con, cfg) + budget_warnings(con) + invoice_warnings(con, cfg)
                       + anomaly_warnings(con, cfg), webhook, now, out, logger, post)
    return out
