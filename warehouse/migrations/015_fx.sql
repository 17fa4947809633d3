-- Currency rates (fx/*.csv): USD per unit of a currency, from a date. Sheets and bills in another
-- currency are converted at the newest rate known when they are ingested.
-- grain: one row per (currency, effective_from).
CREATE TABLE IF NOT EXISTS stg.fx_rates (
    file_id        INTEGER NOT NULL,
    line           BIGINT NOT NULL,
    currency       VARCHAR NOT NULL,        -- ISO 4217, upper case, e.g. 'EUR'
    usd_per_unit   DECIMAL(18,9) NOT NULL,  -- USD for one unit of the currency
    effective_from DATE NOT NULL
);
