"""The break-even alert (asset ops/alerts): after every mart, before publish (see services/alert.py).

Evaluated by the models step (pipelines/defs/warehouse_assets.py, ``warehouse_models``) once every
table is built, also on a run that rebuilt nothing. It writes ops.alerts and ops.alert_state in
the run's build, so its state is published with the warehouse. It never fails the run: any error
is logged and the data is published anyway. A failed blocking check skips it, like publish (no
alert from data that failed its checks).
"""

import datetime as dt

import dagster as dg

from pipelines import progress
from pipelines.defs.resources import ThinktaxResource
from services import alert


class AlertConfig(dg.Config):
    as_of: str = ""  # YYYY-MM-DD: end the window on this UTC day instead of the latest day with calls


DESCRIPTION = ("Break-even alert: reasoning API spend per month vs. the cheapest feasible self-hosted "
               "deployment (or the configured threshold); one webhook POST per crossing; never fails the run.")


def breakeven_alert(context: dg.AssetExecutionContext, config: AlertConfig, thinktax: ThinktaxResource) -> dg.MaterializeResult:
    progress.report("alert", "break-even")
    try:
        as_of = dt.date.fromisoformat(config.as_of) if config.as_of else None
        with thinktax.build(context.op_execution_context.run_id).connect() as con:  # "EPHEMERAL" when invoked directly
            outcome = alert.evaluate(con, thinktax.config(), as_of=as_of, logger=context.log)
        meta = outcome.as_metadata()
    except Exception as exc:  # noqa: BLE001 - the alert must never fail the data run
        context.log.error(f"alert evaluation failed; the warehouse is published anyway: {type(exc).__name__}: {exc}")
        meta = {"error": f"{type(exc).__name__}: {exc}"}
    return dg.MaterializeResult(metadata=meta)
