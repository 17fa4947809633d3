-- catalog/cost_centers.csv (issue 41): who pays for a call or a cloud bill line.
-- Catalog snapshot (catalog/cost_centers.csv): rules that put a call or a cloud bill line in a cost center; the first rule in file order that matches wins. grain: one row per rule (its line).
CREATE TABLE IF NOT EXISTS stg.cost_centers (
    file_id       INTEGER NOT NULL,  -- ops.ingested_files.file_id of the file the row came from
    line          BIGINT NOT NULL,  -- 1-based line of the record in its file (record number for JSON documents)
    cost_center   VARCHAR NOT NULL,  -- the cost center the rule assigns
    field         VARCHAR NOT NULL,  -- what the rule matches: team, api_key, user, end_user, project, workspace, agent, service, principal or tag:<key>
    pattern       VARCHAR NOT NULL,  -- a shell glob (* any text, ? one character, [abc] / [!abc] a set), case-sensitive
    pattern_regex VARCHAR NOT NULL  -- the glob as an anchored regular expression (what both engines match with)
);
