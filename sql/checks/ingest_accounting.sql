-- Every landed file is accounted for: rows_in = rows_loaded + rows_duplicate + rows_quarantined
-- + rows_skipped (a cloud invoice's non-AI lines, counted not kept; 0 elsewhere),
-- and the quarantine holds exactly rows_quarantined rows for it. Returns the files that break it.
-- asset: ops.ingested_files
SELECT f.file_id, f.file, f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined, f.rows_skipped,
       (SELECT count(*) FROM ops.quarantine q WHERE q.file_id = f.file_id) AS quarantine_rows
FROM ops.ingested_files f
WHERE f.rows_in <> f.rows_loaded + f.rows_duplicate + f.rows_quarantined + coalesce(f.rows_skipped, 0)
   OR f.rows_quarantined <> (SELECT count(*) FROM ops.quarantine q WHERE q.file_id = f.file_id)
