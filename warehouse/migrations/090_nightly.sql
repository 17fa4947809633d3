-- Bookkeeping for nightly operation: the days each landed file touched (daily partitions) and
-- the break-even alert's state (thinktax/alert.py). Extends ops.alerts; its contract columns stay.

-- grain: one row per landed file x UTC day its rows fall on (telemetry and bills only).
CREATE TABLE IF NOT EXISTS ops.ingested_days (
    file_id INTEGER NOT NULL,
    day     DATE NOT NULL,
    rows    BIGINT NOT NULL            -- rows of the file on that day (a row spanning days counts on each)
);

-- ops.alerts: one row per delivery attempt. delivered is true only when the webhook answered 2xx.
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS window_spend_usd_per_month DECIMAL(18,6);  -- window spend x hours_per_month / (24 x window_days)
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS window_days INTEGER;
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS window_end DATE;            -- last UTC day of the window
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS deployment VARCHAR;         -- cheapest feasible deployment, if known
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS channel VARCHAR;            -- 'webhook' or 'log' (no webhook configured)
ALTER TABLE ops.alerts ADD COLUMN IF NOT EXISTS error VARCHAR;              -- why delivery failed (HTTP 500, timeout, refused)

-- grain: one row per alert subject (alert x model; model '*' = all reasoning models together).
-- status: 'armed'   spend is below the threshold (or never crossed): the next crossing fires;
--         'fired'   the alert for the current crossing went out (or was logged): silent until spend drops below;
--         'pending' spend is above but delivery failed: the next run tries again.
CREATE TABLE IF NOT EXISTS ops.alert_state (
    alert                      VARCHAR NOT NULL,
    model                      VARCHAR NOT NULL,
    status                     VARCHAR NOT NULL,
    window_spend_usd_per_month DECIMAL(18,6),
    threshold_usd_per_month    DECIMAL(18,6),
    window_end                 DATE,
    updated_at                 TIMESTAMP NOT NULL,
    PRIMARY KEY (alert, model)
);
