-- Leases on indexing items: when the item was claimed or its claim last
-- extended; a claim older than the lease may be taken over by another
-- replica (its worker stopped).
ALTER TABLE items ADD COLUMN claimed_at timestamptz;

-- A capsule's generation changes (to a value never used before, by any
-- capsule) whenever its searchable items change, in the same transaction:
-- replicas compare it with the generation of their in-memory index on each
-- query and reload a capsule another replica changed.
CREATE SEQUENCE capsule_generations;
ALTER TABLE capsules ADD COLUMN generation bigint NOT NULL DEFAULT nextval('capsule_generations');
