-- GPU nodes billed by the cloud (issue 25 item 4): a node of catalog/nodes.csv names its resource
-- on the cloud invoice; the compute lines of that resource (EC2 instance hours, Azure VM hours,
-- Compute Engine lines, kept in stg.cloud_bill_lines with bucket = 'instance_hours') price its
-- hours instead of usd_per_gpu_hour (sql/core/node_hours_cost.sql, node_cost_source = 'invoice').
-- NULL in rows loaded before this migration: the node keeps its catalog price.
ALTER TABLE stg.nodes ADD COLUMN IF NOT EXISTS cloud_resource_id VARCHAR;  -- the node's resource id on the cloud invoice (AWS instance id 'i-...', Azure VM ResourceId, GCP resource name), matched case-insensitively; its invoice lines price its hours (NULL: the catalog price)
