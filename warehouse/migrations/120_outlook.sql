-- Looking ahead (issue 18): substitutions and team budgets (catalog/*.csv). The newest file of each
-- kind is the catalog in force.

-- catalog/substitutions.csv: move the observed traffic of from_model (an API model) to a
-- self-hosted deployment of to_model; thinking and visible output tokens scale by the ratios.
CREATE TABLE IF NOT EXISTS stg.substitutions (
    file_id        INTEGER NOT NULL,
    line           BIGINT NOT NULL,
    from_model     VARCHAR NOT NULL,
    to_model       VARCHAR NOT NULL,
    thinking_ratio DOUBLE NOT NULL,   -- to_model thinking tokens per from_model thinking token
    output_ratio   DOUBLE NOT NULL,   -- to_model visible output tokens per from_model output token
    note           VARCHAR
);

-- catalog/budgets.csv: a team's monthly budget and its soft (warning) threshold.
CREATE TABLE IF NOT EXISTS stg.budgets (
    file_id     INTEGER NOT NULL,
    line        BIGINT NOT NULL,
    team        VARCHAR NOT NULL,
    monthly_usd DECIMAL(18,6) NOT NULL,  -- USD per calendar month
    soft_pct    DOUBLE NOT NULL          -- percent of monthly_usd at which budget_soft fires (default 80)
);
