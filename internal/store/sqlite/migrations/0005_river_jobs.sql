-- Ingestion moves to river's durable jobs (its tables come from river's own
-- migrations): an item is queued with an ingest_item job in the same
-- transaction, and claims with leases on items are gone. Items the old
-- queue left indexing are queued again; the Go step of this migration gives
-- every queued item its job.
UPDATE items SET status = 'queued' WHERE status = 'indexing';
ALTER TABLE items DROP COLUMN claimed_at;
