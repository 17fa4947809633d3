-- Bill against usage over the last 30 days: what each provider billed per model against usage x
-- the price in force, largest gap first.
-- grain: one row per (provider, model).
-- difference_usd = billed - computed; difference_pct = 100 x difference_usd / billed_usd (percent,
-- recomputed from the window's sums, not averaged); days_off = days whose own difference
-- exceeds one cent.
-- Days with usage but no bill (billed_usd NULL) count as billed 0: usage the bill does not cover
-- shows as a negative difference. The window is the 30 days ending with the latest day that has
-- a bill (bills arrive later than usage; see spend_by_team_tier_30d.sql for the window).
-- reads: marts.bill_reconciliation
WITH last_day AS (
    SELECT max(day) FILTER (WHERE billed_usd IS NOT NULL) AS day FROM marts.bill_reconciliation
),
window_rows AS (
    SELECT r.*
    FROM marts.bill_reconciliation r, last_day
    WHERE r.day > last_day.day - INTERVAL 30 DAY AND r.day <= last_day.day
),
final AS (
    SELECT provider,
           model,
           count(*) AS days,
           sum(coalesce(billed_usd, 0)) AS billed_usd,
           sum(coalesce(computed_usd, 0)) AS computed_usd,
           sum(coalesce(billed_usd, 0)) - sum(coalesce(computed_usd, 0)) AS difference_usd,
           100 * CAST(sum(coalesce(billed_usd, 0)) - sum(coalesce(computed_usd, 0)) AS DOUBLE)
               / nullif(CAST(sum(coalesce(billed_usd, 0)) AS DOUBLE), 0) AS difference_pct,
           count(*) FILTER (WHERE abs(coalesce(billed_usd, 0) - coalesce(computed_usd, 0)) > 0.01) AS days_off
    FROM window_rows
    GROUP BY provider, model
)
SELECT * FROM final
ORDER BY abs(difference_usd) DESC, provider, model
