-- When an indexing item was claimed, or its claim last extended: a claim
-- older than the lease may be taken over by another worker.
ALTER TABLE items ADD COLUMN claimed_at INTEGER;
