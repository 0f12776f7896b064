-- The embedding model that made the chunk vectors (one row): recorded when
-- a process with a model first starts on the store, and changed only by
-- capsuled reindex, which removes the old model's vectors in the same
-- transaction, so that vectors of two models are never mixed.
CREATE TABLE embedding_space (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    model      TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    updated_at INTEGER NOT NULL             -- Unix milliseconds
);

-- Chunks still waiting for a vector (ingested while no model was
-- configured, or whose vectors a change of model removed).
CREATE INDEX chunks_without_vector ON chunks (item_id) WHERE vector IS NULL;
