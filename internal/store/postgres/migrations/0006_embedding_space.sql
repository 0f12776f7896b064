-- The embedding model that made the chunk vectors (one row): recorded when
-- a process with a model first starts on the store, and changed only by
-- capsuled reindex, which removes the old model's vectors in the same
-- transaction, so that vectors of two models are never mixed.
CREATE TABLE embedding_space (
    id         integer PRIMARY KEY CHECK (id = 1),
    model      text NOT NULL,
    dimensions integer NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Chunks still waiting for a vector (ingested while no model was
-- configured, or whose vectors a change of model removed).
CREATE INDEX chunks_without_vector ON chunks (item_id) WHERE embedding IS NULL;
