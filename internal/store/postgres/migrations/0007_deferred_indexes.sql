-- The chunk indexes a bulk load dropped (DB.DeferIndexes), with the
-- definitions DB.BuildIndexes builds them from again.
CREATE TABLE deferred_indexes (
    name        text PRIMARY KEY,
    definition  text NOT NULL,
    deferred_at timestamptz NOT NULL
);
