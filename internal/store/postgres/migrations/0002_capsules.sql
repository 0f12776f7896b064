-- Capsules, their items, chunks with their vectors and full-text index, item
-- texts and the embedding cache.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE capsules (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);

-- An item's original bytes live in the blob store under their content hash;
-- the row says where ingestion stands.
CREATE TABLE items (
    id            text PRIMARY KEY,            -- itm_<time-ordered hex>
    capsule_id    bigint NOT NULL REFERENCES capsules(id) ON DELETE CASCADE,
    kind          text NOT NULL,
    uri           text NOT NULL,
    file_name     text NOT NULL DEFAULT '',
    file_type     text NOT NULL DEFAULT '',
    size          bigint NOT NULL,
    content_hash  text NOT NULL,               -- hex sha256 of the original bytes
    metadata      jsonb NOT NULL DEFAULT '{}',
    time_added    timestamptz NOT NULL,
    time_authored timestamptz,
    time_updated  timestamptz NOT NULL,
    status        text NOT NULL,               -- queued, indexing, ready, failed
    error         text,
    chunk_count   integer NOT NULL DEFAULT 0,
    indexed_hash  text,                        -- content_hash of the chunks now searchable
    UNIQUE (capsule_id, uri)
);
CREATE INDEX items_by_capsule ON items (capsule_id, id);
CREATE INDEX items_by_status ON items (status, time_updated, id);
CREATE INDEX items_by_hash ON items (content_hash);

-- Chunks of searchable items, written in the transaction that makes their
-- item ready. embedding is NULL when semantic search is off.
CREATE TABLE chunks (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id    text NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    capsule_id bigint NOT NULL REFERENCES capsules(id) ON DELETE CASCADE,
    idx        integer NOT NULL,
    text       text NOT NULL,
    start_off  integer NOT NULL,
    end_off    integer NOT NULL,
    tokens     integer NOT NULL,
    embedding  vector,
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    UNIQUE (item_id, idx)
);
CREATE INDEX chunks_by_capsule ON chunks (capsule_id);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
-- Approximate nearest neighbours for the default model's 384 dimensions
-- (vectors of another width are stored and scanned, not indexed).
CREATE INDEX chunks_hnsw ON chunks USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WITH (m = 16, ef_construction = 64) WHERE vector_dims(embedding) = 384;

-- BM25 through pg_textsearch where the server has it loaded.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_textsearch')
       OR (EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_textsearch')
           AND current_setting('pg_textsearch.library_version', true) IS NOT NULL) THEN
        CREATE EXTENSION IF NOT EXISTS pg_textsearch;
        CREATE INDEX chunks_bm25 ON chunks USING bm25 (text) WITH (text_config = 'english');
    END IF;
END
$$;

-- The item's full extracted text (what GET .../text and the read tool return).
CREATE TABLE item_texts (
    item_id text PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    text    text NOT NULL
);

-- Embeddings by model and sha256 of the embedded text: unchanged content is
-- never embedded twice.
CREATE TABLE embedding_cache (
    model  text NOT NULL,
    hash   bytea NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (model, hash)
);
