-- Issue 25 item 6 (the FOCUS 1.3 Contract Commitment dataset): the reservation a cloud invoice line
-- belongs to, as the export writes it (Azure ReservationId: a reserved PTU, its purchase and the
-- usage it covers), so that a commitment bought through the cloud has an identifier of its own.
-- NULL in rows loaded before this migration and in lines without one.
ALTER TABLE stg.cloud_bill_lines ADD COLUMN IF NOT EXISTS reservation_id VARCHAR;  -- Azure ReservationId: the reservation the line's charge belongs to (a reserved PTU's purchase, its usage); NULL when the export names none
-- the rows a re-issued export replaced keep it too (warehouse/ingest.py moves them by column name)
ALTER TABLE ops.replaced_cloud_bill_lines ADD COLUMN IF NOT EXISTS reservation_id VARCHAR;  -- as stg.cloud_bill_lines.reservation_id
