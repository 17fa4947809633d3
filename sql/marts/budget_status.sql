-- Team budgets against spend, per calendar month (UTC): how fast each team burns its monthly budget
-- (catalog/budgets.csv, the newest file) and whether and when it runs out.
-- Spend is everything marts.daily_spend puts on the team: API calls at list price plus self-hosted
-- node cost allocated to its calls (api_bill rows, which bill the same usage, and 'idle' are left out).
--   last_day                 the latest day with calls in the warehouse (months after it have no row)
--   days_elapsed             days of the month from its first day with data (of any team) to last_day
--   burn_usd_per_day         spent_usd / days_elapsed
--   days_remaining           days of the month after last_day (0 for a past month)
--   projected_month_end_usd  spent_usd + burn_usd_per_day x days_remaining
--   interval (95 %)          projected -+ 1.96 x sd x sqrt(days_remaining), sd = the sample standard
--                            deviation of the team's daily spend in the month (0 on days without
--                            spend); the lower bound is never below spent_usd
--   runs_out_on              the first day whose cumulative spend reaches budget_usd: observed, else
--                            projected at the burn rate, last_day + ceil((budget - spent) / burn)
--                            when that falls inside the month; else NULL
-- Worked: budget $1,000, $50 a day from the 1st, last_day the 10th of a 30-day month: spent $500,
-- burn $50/day, projected 500 + 50 x 20 = $1,500; runs out on the 10th + ceil(500 / 50) = the 20th.
-- status: 'hard' (spent >= budget), 'soft' (spent >= soft_pct % of it), else 'ok'; budget_soft and
-- budget_hard alerts (thinktax/alert.py) fire once per team, month and crossing.
-- Money is DECIMAL(18,6); the interval is computed in DOUBLE and cast.
-- @kind: full
-- @grain: one row per budgeted team x month with data
WITH budgets AS (
    SELECT team, monthly_usd, soft_pct
    FROM stg.budgets
    WHERE file_id = (SELECT max(file_id) FROM stg.budgets)
    QUALIFY row_number() OVER (PARTITION BY team ORDER BY line DESC) = 1
),
bounds AS (
    SELECT min(day) AS first_day, max(day) AS last_day FROM core.call_costs
),
spine AS (
    -- every day of every month with data up to last_day, from the first day with data
    SELECT b.team, CAST(d AS DATE) AS day
    FROM budgets b, bounds,
         LATERAL (SELECT unnest(generate_series(bounds.first_day, bounds.last_day, INTERVAL 1 DAY)) AS d)
),
daily AS (
    SELECT s.team, s.day, CAST(date_trunc('month', s.day) AS DATE) AS month,
           coalesce(sum(ds.cost_usd), 0) AS spent_usd
    FROM spine s
    LEFT JOIN marts.daily_spend ds
           ON ds.team = s.team AND ds.day = s.day AND ds.source IN ('api_usage', 'self_hosted')
    GROUP BY ALL
),
cumulative AS (
    SELECT d.*, b.monthly_usd,
           sum(d.spent_usd) OVER (PARTITION BY d.team, d.month ORDER BY d.day ROWS UNBOUNDED PRECEDING) AS cumulative_usd
    FROM daily d JOIN budgets b USING (team)
),
per_month AS (
    SELECT team, month,
           sum(spent_usd) AS spent_usd,
           count(*) AS days_elapsed,
           coalesce(stddev_samp(CAST(spent_usd AS DOUBLE)), 0) AS sd_usd_per_day,
           min(day) FILTER (WHERE cumulative_usd >= monthly_usd AND monthly_usd > 0) AS observed_out_on
    FROM cumulative
    GROUP BY team, month
),
figures AS (
    SELECT p.team, p.month, b.monthly_usd AS budget_usd, b.soft_pct, p.spent_usd, p.days_elapsed,
           p.spent_usd / p.days_elapsed AS burn_usd_per_day,
           greatest(date_diff('day', bounds.last_day, CAST(p.month + INTERVAL 1 MONTH AS DATE)) - 1, 0) AS days_remaining,
           p.sd_usd_per_day, p.observed_out_on, bounds.last_day
    FROM per_month p JOIN budgets b USING (team), bounds
),
projected AS (
    SELECT *,
           spent_usd + burn_usd_per_day * days_remaining AS projected_usd,
           1.959963984540054 * sd_usd_per_day * sqrt(days_remaining) AS half_width_usd,
           CASE WHEN observed_out_on IS NOT NULL THEN observed_out_on
                WHEN burn_usd_per_day > 0 AND budget_usd > spent_usd
                     AND ceil((budget_usd - spent_usd) / burn_usd_per_day) <= days_remaining
                THEN CAST(last_day + to_days(CAST(ceil((budget_usd - spent_usd) / burn_usd_per_day) AS INTEGER)) AS DATE)
           END AS runs_out_on
    FROM figures
),
final AS (
    SELECT team, month,
           core.usd6(budget_usd) AS budget_usd, soft_pct,
           core.usd6(budget_usd * CAST(soft_pct AS DECIMAL(18,6)) / 100) AS soft_usd,
           core.usd6(spent_usd) AS spent_usd,
           days_elapsed, days_remaining,
           -- spent / days rounded half up to the micro-dollar in exact integer arithmetic: DuckDB divides
           -- a DECIMAL through DOUBLE (151.506159 / 6 = 25.2510265 came out 25.251026 on DuckDB and
           -- 25.251027 on Spark's exact DECIMAL; as marts.task_cost_breakdown's cost_per_task_usd)
           CASE WHEN days_elapsed > 0 THEN core.usd6(CAST((CAST(spent_usd * 1000000 AS HUGEINT) * 2 + days_elapsed)
                                                    // (2 * CAST(days_elapsed AS HUGEINT)) AS DECIMAL(38,0))
                                               * CAST(0.000001 AS DECIMAL(38,6))) END AS burn_usd_per_day,
           core.usd6(projected_usd) AS projected_month_end_usd,
           core.usd6(greatest(CAST(projected_usd AS DOUBLE) - half_width_usd, CAST(spent_usd AS DOUBLE))) AS projected_month_end_lo95_usd,
           core.usd6(CAST(projected_usd AS DOUBLE) + half_width_usd) AS projected_month_end_hi95_usd,
           CASE WHEN budget_usd > 0 THEN CAST(spent_usd AS DOUBLE) / CAST(budget_usd AS DOUBLE) END AS share_of_budget_spent,
           runs_out_on,
           observed_out_on IS NULL AND runs_out_on IS NOT NULL AS runs_out_projected,
           CASE WHEN spent_usd >= budget_usd THEN 'hard'
                WHEN spent_usd >= budget_usd * CAST(soft_pct AS DECIMAL(18,6)) / 100 THEN 'soft'
                ELSE 'ok' END AS status,
           last_day
    FROM projected
)
SELECT final.*, (SELECT build_id FROM ops.settings) AS build_id FROM final
