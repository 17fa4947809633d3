"""`thinktax export focus`: marts.focus_costs as monthly FOCUS files (Parquet or CSV), FOCUS 1.3
(the default) or 1.2 (``--spec 1.2``).

One file per calendar month of ChargePeriodStart: ``focus_costs_YYYY-MM.parquet`` (or ``.csv``).

* ``--spec 1.2``: every FOCUS column of the mart is written as it is, plus the custom columns
  ``x_Source`` and ``x_BuildId`` (the mart's build_id: FOCUS custom columns carry the ``x_``
  prefix) -- the files thinktax wrote before FOCUS 1.3, byte for byte. They pass
  ``focus-validator`` 2.2.1 (rule set 1.2.0.1) up to the one InvoiceId rule the validator cannot
  pass on any non-empty dataset (docs/bi.md).
* ``--spec 1.3``: the same rows and columns plus the 1.3 columns (FOCUS13_SQL below):
  ``ServiceProviderName`` and ``HostProviderName`` (both the provider key of ProviderName:
  thinktax sees no reseller, so the host is the service provider; ProviderName and PublisherName
  stay, deprecated in 1.3), ``ContractApplied`` (below), and the split cost allocation columns ``AllocatedMethodId``,
  ``AllocatedMethodDetails``, ``AllocatedResourceId``, ``AllocatedResourceName``,
  ``AllocatedTags``: a self-hosted node-day whose cost thinktax allocated to calls
  (core.self_hosted_allocation: each paid hour over the calls of that hour by token share, the
  idle hours of a busy day over that day's calls) is written as one allocated row per team
  instead of the origin row. The allocated rows keep every column of the origin row but the
  costs (the team's micro-dollars, which add up exactly to the origin's), the quantities (the
  origin's times the team's ratio, the largest share taking the rounding so they add up exactly)
  and the Allocated* columns (AllocatedResourceId = AllocatedResourceName = the team,
  AllocatedTags = {"team": ...}, AllocatedMethodDetails = {"Elements": [{"AllocatedRatio",
  "UsageQuantity" (the team's tokens on the node that day), "UsageUnit": "Tokens"}]}). Node-days
  without calls (idle) and every other row keep NULL Allocated* columns. Beside the monthly
  files, the Contract Commitment dataset: ``focus_contract_commitment.<format>`` with the 1.3
  columns (COMMITMENT_COLUMNS), one row per provisioned-throughput commitment the cloud invoices
  bill (core.cloud_bill_lines.commitment_id; CONTRACTS_CTE) whose lines meet the exported months:
  ContractCommitmentId = ContractId = that id; cost = its lines as invoiced (USD); category Usage
  with its unit-hours as quantity when it has hourly lines, else Spend; the period of its lines
  (an invoice states no term). Offers of catalog/commitments.csv are left out: not contracts.
  ``ContractApplied``: on the API usage rows of provisioned calls (price basis 'provisioned'), the
  one commitment of the same provider and model family (else the provider's commitment naming no
  model) in force that day, with the row's tokens as ContractCommitmentAppliedQuantity; NULL on
  every other row. docs/bi.md has the details.
  ``x_CostCenter`` (issue 41; the last FOCUS-custom column before x_BuildId): the cost center
  (core.call_costs.cost_center) of the row. An API usage row is written once per cost center of
  its calls (COST_CENTER_CTE: that cost center's tokens, and its share of the row's cost in
  micro-dollars by largest remainder, so the parts add up exactly to the 1.2 row); a self-hosted
  allocated row is per team and cost center; every other row (idle node-days, bill lines) NULL:
  marts.chargeback spreads those. FOCUS 1.3 defines no cost-center column and requires the
  Allocated* columns to be null on any charge no split cost allocation made, so the cost center is a
  custom column (FOCUS: custom columns are prefixed ``x_`` and listed after the FOCUS columns).

Each file is written to a temporary name in the output folder and renamed into place, so a file
that exists is complete.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import duckdb

from services.config import resolve_paths
from warehouse.db import read_only

NAME = "export"
HELP = "Export a standard dataset from the published warehouse: 'focus' writes monthly FOCUS 1.3 (or 1.2) files."
SPECS = ("1.3", "1.2")

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", choices=["focus"], help="'focus': marts.focus_costs as FOCUS cost and usage files")
    p.add_argument("--spec", choices=SPECS, default="1.3",
                   help="FOCUS version: 1.3 (default; adds the 1.3 columns and the Contract Commitment file) "
                        "or 1.2 (the files of thinktax before 1.3, unchanged)")
    p.add_argument("--out", required=True, help="folder to write the files into (created if missing)")
    p.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    p.add_argument("--month", help="only this month of ChargePeriodStart (YYYY-MM); default: every month")
    p.add_argument("--warehouse", help="warehouse file (default $THINKTAX_WAREHOUSE or ./var/thinktax.duckdb)")


# The provisioned-throughput commitments the cloud invoices bill (core.cloud_bill_lines.commitment_id:
# a Bedrock provisioned model's ARN, an Azure reservation or PTU account, a GCP resource, else an id
# thinktax makes), one row each: the invoice's lines as billed (in_invoice, gross of credits),
# unit-hours where the unit is hours (as marts.commitments counts them), the period of its lines.
CONTRACTS_CTE = """
contract_lines AS (
    SELECT provider, commitment_id, model, region, usage_start, usage_end, amount_usd,
           CASE WHEN regexp_matches(lower(coalesce(unit, '')), 'hrs?|hours?')
                THEN quantity * coalesce(CAST(nullif(regexp_extract(unit, '^ *([0-9]+) ', 1), '') AS DECIMAL(18,0)), 1)
           END AS unit_hours
    FROM core.cloud_bill_lines
    WHERE commitment_id IS NOT NULL AND NOT is_line_credit AND in_invoice
),
contracts AS (
    SELECT provider, commitment_id,
           CASE WHEN count(model) = count(*) AND count(DISTINCT model) = 1 THEN min(model) END AS model,
           string_agg(DISTINCT region, ', ' ORDER BY region) AS regions,
           min(usage_start) AS period_start, max(usage_end) AS period_end,
           sum(amount_usd) AS cost_usd, sum(unit_hours) AS unit_hours, count(*) AS lines
    FROM contract_lines
    GROUP BY provider, commitment_id
)"""

# The month's ($m) marts.focus_costs rows as ``f``, with the custom column x_CostCenter (issue 41;
# FOCUS: "All custom columns MUST be prefixed with a consistent x_ prefix"; the Allocated* columns
# are for split cost allocation only and MUST be null on every other charge, so a cost center is
# not one of them): each API usage row is split into one row per cost center of its calls
# (core.daily_call_totals.cost_center), with that cost center's tokens (exact) and its share of the
# row's cost in micro-dollars by largest remainder (weights: the cost center's exact bucket cost,
# else its tokens), so that the parts add up exactly to the row. Only rows whose parts' tokens add
# up to the row's are split; a split row in more than one part says its own tokens and calls in
# ChargeDescription. Every other row: x_CostCenter NULL (a self-hosted node-day's allocated rows
# get theirs below).
COST_CENTER_CTE = """
cc_calls AS (
    SELECT day, provider, model, price_version_id, coalesce(price_basis, 'standard') AS price_basis, cost_center,
           CAST(sum(calls) AS BIGINT) AS calls,
           -- the text types count only the text tokens, as marts.focus_costs does (issue 44: the
           -- audio / image / video parts are charges of their own, in tokens or else images / seconds)
           sum(uncached_input_tokens - coalesce(audio_input_tokens, 0) - coalesce(image_input_tokens, 0)
               - coalesce(video_input_tokens, 0)) AS q_input, sum(uncached_input_cost_usd) AS c_input,
           sum(cached_input_tokens - coalesce(cached_audio_input_tokens, 0)) AS q_cached, sum(cached_input_cost_usd) AS c_cached,
           sum(cache_write_5m_tokens) AS q_write, sum(cache_write_5m_cost_usd) AS c_write,
           sum(cache_write_1h_tokens) AS q_write_1h, sum(cache_write_1h_cost_usd) AS c_write_1h,
           sum(thinking_tokens) AS q_thinking, sum(thinking_cost_usd) AS c_thinking,
           sum(output_tokens - coalesce(audio_output_tokens, 0) - coalesce(image_output_tokens, 0)
               - coalesce(video_output_tokens, 0)) AS q_output, sum(output_cost_usd) AS c_output,
           sum(web_search_requests) AS q_search, sum(request_fees_usd) AS c_search,
           sum(coalesce(audio_input_tokens, 0) + coalesce(cached_audio_input_tokens, 0) + coalesce(audio_output_tokens, 0)) AS q_audio,
           sum(audio_cost_usd) AS c_audio,
           sum(coalesce(image_input_tokens, 0) + coalesce(image_output_tokens, 0)) AS q_image,
           sum(coalesce(output_images, 0)) AS u_image, sum(image_cost_usd) AS c_image,
           sum(coalesce(video_input_tokens, 0) + coalesce(video_output_tokens, 0)) AS q_video,
           sum(coalesce(output_video_seconds, 0)) AS u_video, sum(video_cost_usd) AS c_video
    FROM core.daily_call_totals
    WHERE serving = 'api' AND priced AND strftime(day, '%Y-%m') = $m
    GROUP BY ALL
),
cc_types AS (
    SELECT c.day, c.provider, c.model, c.price_basis, c.cost_center, c.calls, t.token_type,
           c.price_version_id || '|' || c.price_basis || '|' || t.token_type AS sku_price_id,
           CASE t.token_type WHEN 'input' THEN q_input WHEN 'cached-input' THEN q_cached WHEN 'cache-write' THEN q_write
                WHEN 'cache-write-1h' THEN q_write_1h WHEN 'reasoning-output' THEN q_thinking WHEN 'output' THEN q_output
                WHEN 'audio' THEN q_audio WHEN 'image' THEN q_image WHEN 'video' THEN q_video
                ELSE q_search END AS q,
           -- an image / video row without tokens is in Images / Seconds (marts.focus_costs)
           CASE t.token_type WHEN 'image' THEN u_image WHEN 'video' THEN u_video END AS q_units,
           CASE t.token_type WHEN 'input' THEN c_input WHEN 'cached-input' THEN c_cached WHEN 'cache-write' THEN c_write
                WHEN 'cache-write-1h' THEN c_write_1h WHEN 'reasoning-output' THEN c_thinking WHEN 'output' THEN c_output
                WHEN 'audio' THEN c_audio WHEN 'image' THEN c_image WHEN 'video' THEN c_video
                ELSE c_search END AS cost
    FROM cc_calls c
    CROSS JOIN (VALUES ('input'), ('cached-input'), ('cache-write'), ('cache-write-1h'), ('reasoning-output'), ('output'),
                       ('web-search'), ('audio'), ('image'), ('video')) AS t(token_type)
),
cc_matched AS (
    SELECT f.*, t.cost_center AS k_cc, t.calls AS k_calls, t.token_type AS k_type, t.price_basis AS k_basis, t.cost AS k_cost,
           CASE WHEN f.ConsumedUnit IN ('Images', 'Seconds') THEN t.q_units ELSE t.q END AS k_q
    FROM f_all f
    JOIN cc_types t
      ON f.x_Source = 'api_usage' AND f.ChargePeriodStart = CAST(t.day AS TIMESTAMP)
     AND f.ProviderName IS NOT DISTINCT FROM t.provider AND f.ResourceId IS NOT DISTINCT FROM t.model
     AND f.SkuPriceId = t.sku_price_id
),
cc_parts AS (
    SELECT * EXCLUDE (k_cost),
           CAST(round(BilledCost * 1000000) AS HUGEINT) AS k_origin,
           greatest(CAST(round(coalesce(k_cost, 0) * 1000000000) AS HUGEINT), 0) AS k_cost_w,
           count(*) OVER o AS k_parts,
           sum(k_q) OVER o AS k_q_sum
    FROM cc_matched
    WHERE k_q > 0
    WINDOW o AS (PARTITION BY ChargePeriodStart, ProviderName, ResourceId, SkuPriceId)
    QUALIFY sum(k_q) OVER o = ConsumedQuantity
),
cc_weighted AS (
    SELECT *, CASE WHEN sum(k_cost_w) OVER o > 0 THEN k_cost_w ELSE CAST(k_q AS HUGEINT) END AS k_w
    FROM cc_parts
    WINDOW o AS (PARTITION BY ChargePeriodStart, ProviderName, ResourceId, SkuPriceId)
),
cc_floored AS (
    SELECT *, k_origin * k_w // sum(k_w) OVER o AS k_floor, k_origin * k_w % sum(k_w) OVER o AS k_rem
    FROM cc_weighted
    WINDOW o AS (PARTITION BY ChargePeriodStart, ProviderName, ResourceId, SkuPriceId)
),
cc_split AS (
    SELECT *,
           k_floor + CASE WHEN row_number() OVER (PARTITION BY ChargePeriodStart, ProviderName, ResourceId, SkuPriceId
                                                  ORDER BY k_rem DESC, k_cc)
                               <= k_origin - sum(k_floor) OVER (PARTITION BY ChargePeriodStart, ProviderName, ResourceId, SkuPriceId)
                          THEN 1 ELSE 0 END AS k_micro
    FROM cc_floored
),
f AS (
    SELECT * EXCLUDE (k_cc, k_q, k_calls, k_type, k_basis, k_origin, k_cost_w, k_parts, k_q_sum, k_w, k_floor, k_rem, k_micro)
               REPLACE (CAST(CAST(k_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS BilledCost,
                        CAST(CAST(k_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS EffectiveCost,
                        CAST(CAST(k_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ListCost,
                        CAST(CAST(k_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ContractedCost,
                        CASE WHEN k_parts = 1 THEN PricingQuantity
                             WHEN PricingUnit = '1000000 Tokens'
                             THEN CAST(CAST(k_q AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(38,10))
                             ELSE CAST(k_q AS DECIMAL(38,10)) END AS PricingQuantity,
                        CAST(k_q AS DECIMAL(38,10)) AS ConsumedQuantity,
                        CASE WHEN k_parts = 1 THEN ChargeDescription
                             ELSE 'API usage of ' || ResourceId || ', ' || k_type || ': '
                                  || CASE WHEN k_q = round(k_q) THEN CAST(CAST(k_q AS HUGEINT) AS VARCHAR) ELSE CAST(k_q AS VARCHAR) END
                                  || ' ' || lower(ConsumedUnit)
                                  || ' in ' || k_calls || ' calls at the ' || replace(k_basis, '_', ' ')
                                  || ' list price in force (computed by thinktax), cost center ' || k_cc END AS ChargeDescription),
           k_cc AS x_CostCenter
    FROM cc_split
    UNION ALL BY NAME
    SELECT f_all.*, CAST(NULL AS VARCHAR) AS x_CostCenter
    FROM f_all
    ANTI JOIN (SELECT DISTINCT ChargePeriodStart, ProviderName, ResourceId, SkuPriceId FROM cc_split) x
        ON f_all.x_Source = 'api_usage' AND f_all.ChargePeriodStart = x.ChargePeriodStart
       AND f_all.ProviderName IS NOT DISTINCT FROM x.ProviderName AND f_all.ResourceId IS NOT DISTINCT FROM x.ResourceId
       AND f_all.SkuPriceId = x.SkuPriceId
)"""

# FOCUS 1.3 rows of one month ($m) from marts.focus_costs: see the module docstring.
FOCUS13_SQL = """
WITH f_all AS (
    SELECT * FROM marts.focus_costs WHERE strftime(ChargePeriodStart, '%Y-%m') = $m
),
""" + COST_CENTER_CTE + """,
origin AS (
    -- self-hosted node-days, one row per node and day (a node-day exported as several rows, the
    -- node having changed model or price that day, is left whole)
    SELECT *, ResourceId AS a_node, CAST(ChargePeriodStart AS DATE) AS a_day,
           CAST(round(BilledCost * 1000000) AS BIGINT) AS a_origin_micro
    FROM f
    WHERE x_Source = 'self_hosted'
    QUALIFY count(*) OVER (PARTITION BY ResourceId, CAST(ChargePeriodStart AS DATE)) = 1
),
shares AS (
    -- what core.self_hosted_allocation gave each team's calls on each node-day (idle rows excluded)
    -- (a call has a row per pool it shares: its hour's and its day's idle hours)
    SELECT a.node_id AS a_node, a.day AS a_day, c.team AS a_team, cc.cost_center AS a_cc,
           sum(a.micro) AS a_micro, sum(c.total_tokens) AS a_tokens
    FROM (SELECT node_id, day, request_id, sum(allocated_micro_usd) AS micro
          FROM core.self_hosted_allocation
          WHERE request_id IS NOT NULL AND strftime(day, '%Y-%m') = $m
          GROUP BY ALL) a
    JOIN core.calls c USING (request_id)
    JOIN (SELECT request_id, cost_center FROM core.call_costs WHERE strftime(day, '%Y-%m') = $m) cc USING (request_id)
    GROUP BY ALL
),
split AS (
    -- only node-days whose allocation adds up to the exported cost, to the micro-dollar
    SELECT o.*, s.a_team, s.a_cc, s.a_micro, s.a_tokens,
           row_number() OVER (PARTITION BY o.a_node, o.a_day ORDER BY s.a_micro DESC, s.a_team, s.a_cc) AS a_rank,
           CAST(round(s.a_micro / o.a_origin_micro, 12) AS DECIMAL(38,12)) AS a_ratio0,
           CAST(round(o.PricingQuantity * s.a_micro / o.a_origin_micro, 10) AS DECIMAL(38,10)) AS a_pq0,
           CAST(round(o.ConsumedQuantity * s.a_micro / o.a_origin_micro, 10) AS DECIMAL(38,10)) AS a_cq0
    FROM origin o JOIN shares s ON s.a_node = o.a_node AND s.a_day = o.a_day
    WHERE o.a_origin_micro > 0
    QUALIFY sum(s.a_micro) OVER (PARTITION BY o.a_node, o.a_day) = o.a_origin_micro
),
balanced AS (
    -- the largest share takes the rounding, so ratios add up to 1 and quantities to the origin's
    SELECT *,
           CASE WHEN a_rank = 1 THEN 1 - (sum(a_ratio0) OVER w - a_ratio0) ELSE a_ratio0 END AS a_ratio,
           CASE WHEN a_rank = 1 THEN PricingQuantity - (sum(a_pq0) OVER w - a_pq0) ELSE a_pq0 END AS a_pq,
           CASE WHEN a_rank = 1 THEN ConsumedQuantity - (sum(a_cq0) OVER w - a_cq0) ELSE a_cq0 END AS a_cq
    FROM split
    WINDOW w AS (PARTITION BY a_node, a_day)
),
allocated AS (
    SELECT * EXCLUDE (a_node, a_day, a_origin_micro, a_team, a_cc, a_micro, a_tokens, a_rank, a_ratio0, a_pq0, a_cq0,
                      a_ratio, a_pq, a_cq)
               REPLACE (a_cc AS x_CostCenter,
                        CAST(CAST(a_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS BilledCost,
                        CAST(CAST(a_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS EffectiveCost,
                        CAST(CAST(a_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ListCost,
                        CAST(CAST(a_micro AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(38,6)) AS DECIMAL(18,6)) AS ContractedCost,
                        CAST(a_pq AS DECIMAL(38,10)) AS PricingQuantity,
                        CAST(a_cq AS DECIMAL(38,10)) AS ConsumedQuantity),
           'thinktax-token-share' AS AllocatedMethodId,
           CAST(json_object('Elements', json_array(json_object(
               'AllocatedRatio', a_ratio, 'UsageQuantity', a_tokens, 'UsageUnit', 'Tokens'))) AS VARCHAR) AS AllocatedMethodDetails,
           a_team AS AllocatedResourceId, a_team AS AllocatedResourceName,
           CAST(json_object('team', a_team) AS VARCHAR) AS AllocatedTags
    FROM balanced
),
whole AS (
    SELECT f.*,
           CAST(NULL AS VARCHAR) AS AllocatedMethodId, CAST(NULL AS VARCHAR) AS AllocatedMethodDetails,
           CAST(NULL AS VARCHAR) AS AllocatedResourceId, CAST(NULL AS VARCHAR) AS AllocatedResourceName,
           CAST(NULL AS VARCHAR) AS AllocatedTags
    FROM f
    ANTI JOIN (SELECT DISTINCT ResourceId, ChargePeriodStart FROM allocated) x
        ON f.x_Source = 'self_hosted' AND f.ResourceId = x.ResourceId AND f.ChargePeriodStart = x.ChargePeriodStart
),
rows AS (
    SELECT * FROM whole
    UNION ALL BY NAME
    SELECT * FROM allocated
),
""" + CONTRACTS_CTE + """,
provisioned_rows AS (
    -- API usage paid by provisioned throughput (price basis 'provisioned': 0 per token), with the
    -- provider and model family keys the invoice lines are read with
    SELECT ChargePeriodStart, ProviderName, ResourceId, SkuPriceId, x_CostCenter, ConsumedQuantity, ConsumedUnit,
           core.provider_key(ProviderName) AS c_provider, core.cloud_model_key(ResourceId) AS c_model
    FROM f
    WHERE x_Source = 'api_usage' AND string_split(SkuPriceId, '|')[-2] = 'provisioned'
),
applied AS (
    -- the one commitment each such row consumed: same provider, same model family (else the
    -- provider's commitment that names no model, an Azure PTU pool), in force that day; of several,
    -- the one naming the model, then the larger, then the first id
    SELECT r.ChargePeriodStart, r.ProviderName, r.ResourceId, r.SkuPriceId, r.x_CostCenter,
           CAST(json_object('Elements', json_array(json_object(
               'ContractID', c.commitment_id, 'ContractCommitmentID', c.commitment_id,
               'ContractCommitmentAppliedQuantity', CAST(r.ConsumedQuantity AS BIGINT),
               'ContractCommitmentAppliedUnit', r.ConsumedUnit))) AS VARCHAR) AS ContractApplied
    FROM provisioned_rows r
    JOIN contracts c
      ON c.provider = r.c_provider AND (c.model = r.c_model OR c.model IS NULL)
     AND r.ChargePeriodStart >= date_trunc('day', c.period_start) AND r.ChargePeriodStart < c.period_end
    QUALIFY row_number() OVER (PARTITION BY r.ChargePeriodStart, r.ProviderName, r.ResourceId, r.SkuPriceId, r.x_CostCenter
                               ORDER BY c.model IS NULL, c.cost_usd DESC, c.commitment_id) = 1
)
SELECT rows.* EXCLUDE (build_id, AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId, AllocatedResourceName, AllocatedTags,
                       x_CostCenter),
       rows.ProviderName AS ServiceProviderName, rows.ProviderName AS HostProviderName,
       a.ContractApplied,
       AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId, AllocatedResourceName, AllocatedTags,
       rows.x_CostCenter,
       build_id AS x_BuildId
FROM rows
LEFT JOIN applied a
  ON rows.x_Source = 'api_usage' AND a.ChargePeriodStart = rows.ChargePeriodStart AND a.ProviderName = rows.ProviderName
 AND a.ResourceId = rows.ResourceId AND a.SkuPriceId = rows.SkuPriceId AND a.x_CostCenter IS NOT DISTINCT FROM rows.x_CostCenter
"""
FOCUS13_ORDER = ("ChargePeriodStart, x_Source, ProviderName, ResourceId, SkuPriceId, ChargeDescription, AllocatedResourceId, "
                 "x_CostCenter")

# The FOCUS 1.3 Contract Commitment dataset (its 13 columns, in the specification's order of
# definition): one row per commitment of CONTRACTS_CTE whose period meets the exported months
# ($first inclusive, $last exclusive); see the module docstring.
COMMITMENT_COLUMNS = (
    ("BillingCurrency", "VARCHAR"), ("ContractCommitmentCategory", "VARCHAR"),
    ("ContractCommitmentCost", "DECIMAL(18,6)"), ("ContractCommitmentDescription", "VARCHAR"),
    ("ContractCommitmentId", "VARCHAR"), ("ContractCommitmentPeriodEnd", "TIMESTAMP"),
    ("ContractCommitmentPeriodStart", "TIMESTAMP"), ("ContractCommitmentQuantity", "DECIMAL(38,10)"),
    ("ContractCommitmentType", "VARCHAR"), ("ContractCommitmentUnit", "VARCHAR"), ("ContractId", "VARCHAR"),
    ("ContractPeriodEnd", "TIMESTAMP"), ("ContractPeriodStart", "TIMESTAMP"),
)
COMMITMENT_SQL = "WITH " + CONTRACTS_CTE + """
SELECT 'USD' AS BillingCurrency,
       CASE WHEN unit_hours IS NOT NULL THEN 'Usage' ELSE 'Spend' END AS ContractCommitmentCategory,
       CAST(round(cost_usd, 6) AS DECIMAL(18,6)) AS ContractCommitmentCost,
       'Provisioned throughput for ' || coalesce(model, 'any model of the account (a PTU pool)') || ' on ' || provider
           || coalesce(' in ' || regions, '') || ', as billed on the cloud invoice (' || lines || ' line'
           || CASE WHEN lines = 1 THEN '' ELSE 's' END || ')' AS ContractCommitmentDescription,
       commitment_id AS ContractCommitmentId,
       period_end AS ContractCommitmentPeriodEnd, period_start AS ContractCommitmentPeriodStart,
       CAST(unit_hours AS DECIMAL(38,10)) AS ContractCommitmentQuantity,
       CASE provider WHEN 'bedrock' THEN 'Amazon Bedrock Provisioned Throughput'
                     WHEN 'azure' THEN 'Azure OpenAI Provisioned Throughput Units'
                     ELSE 'Vertex AI Provisioned Throughput' END AS ContractCommitmentType,
       CASE WHEN unit_hours IS NOT NULL THEN
           CASE provider WHEN 'bedrock' THEN 'Model Unit-Hours' WHEN 'azure' THEN 'PTU-Hours' ELSE 'GSU-Hours' END
       END AS ContractCommitmentUnit,
       commitment_id AS ContractId, period_end AS ContractPeriodEnd, period_start AS ContractPeriodStart
FROM contracts
WHERE period_start < CAST($last AS TIMESTAMP) AND period_end > CAST($first AS TIMESTAMP)
ORDER BY provider, commitment_id"""


def _copy(con: duckdb.DuckDBPyConnection, sql: str, params: dict, path: Path, fmt: str) -> None:
    """COPY a query to path through a temporary name in the same folder, renamed into place."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true, TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%SZ'"
    con.execute(f"COPY ({sql}) TO '{tmp.as_posix()}' ({options})", params)
    os.replace(tmp, path)


def export_focus(con: duckdb.DuckDBPyConnection, out: Path, fmt: str = "parquet", month: str | None = None,
                 spec: str = "1.3") -> list[tuple[Path, int]]:
    """Write the monthly files (and, for 1.3, the Contract Commitment file); returns (path, rows)
    for each file written. Nothing is written when there is no FOCUS row (in that month)."""
    if spec not in SPECS:
        raise ValueError(f"FOCUS spec must be one of {SPECS}, got {spec!r}")
    out.mkdir(parents=True, exist_ok=True)
    where = "" if month is None else "WHERE strftime(ChargePeriodStart, '%Y-%m') = $month"
    params = {} if month is None else {"month": month}
    months = [r[0] for r in con.execute(
        f"SELECT DISTINCT strftime(ChargePeriodStart, '%Y-%m') AS m FROM marts.focus_costs {where} ORDER BY m", params
    ).fetchall()]
    written = []
    for m in months:
        path = out / f"focus_costs_{m}.{fmt}"
        if spec == "1.2":
            # ORDER BY: the same warehouse always gives the same file
            _copy(con, """SELECT * EXCLUDE (build_id), build_id AS x_BuildId FROM marts.focus_costs
                      WHERE strftime(ChargePeriodStart, '%Y-%m') = $m
                      ORDER BY ChargePeriodStart, x_Source, ProviderName, ResourceId, SkuPriceId, ChargeDescription""",
                  {"m": m}, path, fmt)
            rows = con.execute("SELECT count(*) FROM marts.focus_costs WHERE strftime(ChargePeriodStart, '%Y-%m') = $m",
                               {"m": m}).fetchone()[0]
        else:
            _copy(con, f"{FOCUS13_SQL} ORDER BY {FOCUS13_ORDER}", {"m": m}, path, fmt)
            rows = con.execute(f"SELECT count(*) FROM ({FOCUS13_SQL})", {"m": m}).fetchone()[0]
        written.append((path, rows))
    if spec == "1.3" and written:
        path = out / f"focus_contract_commitment.{fmt}"
        bounds = {"first": f"{months[0]}-01", "last": f"{months[-1]}-01"}
        bounds["last"] = con.execute("SELECT CAST(CAST($d AS DATE) + INTERVAL 1 MONTH AS DATE)::VARCHAR",
                                     {"d": bounds["last"]}).fetchone()[0]
        _copy(con, COMMITMENT_SQL, bounds, path, fmt)
        rows = con.execute(f"SELECT count(*) FROM ({COMMITMENT_SQL})", bounds).fetchone()[0]
        written.append((path, rows))
    return written


def run(args: argparse.Namespace) -> int:
    if args.month is not None and not _MONTH.fullmatch(args.month):
        print(f"thinktax: --month must be YYYY-MM, got {args.month!r}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"thinktax: --out {out} is a file; --out names the folder the FOCUS files are written into",
              file=sys.stderr)
        return 2
    _, warehouse = resolve_paths(None, args.warehouse)
    try:
        with read_only(warehouse) as con:
            written = export_focus(con, out, args.format, args.month, args.spec)
    except FileNotFoundError as exc:
        print(f"thinktax: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out under a file, or not writable
        print(f"thinktax: cannot write into --out {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except duckdb.Error as exc:
        print(f"thinktax: export failed: {exc}", file=sys.stderr)
        return 1
    if not written:
        print(f"thinktax: no FOCUS rows{' in ' + args.month if args.month else ''} in {warehouse}", file=sys.stderr)
        return 1
    for path, rows in written:
        print(f"{path}: {rows:,} rows")
    return 0
