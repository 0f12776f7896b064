-- Capsules, their items, chunks, the BM25 index and the embedding cache.
CREATE TABLE capsules (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL            -- Unix milliseconds
);

-- An item's original bytes live in the data directory under their content
-- hash; the row says where ingestion stands.
CREATE TABLE items (
    id            TEXT PRIMARY KEY,         -- itm_<time-ordered hex>
    capsule_id    INTEGER NOT NULL REFERENCES capsules(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    uri           TEXT NOT NULL,
    file_name     TEXT NOT NULL DEFAULT '',
    file_type     TEXT NOT NULL DEFAULT '',
    size          INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,            -- hex sha256 of the original bytes
    metadata      TEXT NOT NULL DEFAULT '{}',
    time_added    INTEGER NOT NULL,
    time_authored INTEGER,
    time_updated  INTEGER NOT NULL,
    status        TEXT NOT NULL,            -- queued, indexing, ready, failed
    error         TEXT,
    chunk_count   INTEGER NOT NULL DEFAULT 0,
    indexed_hash  TEXT,                     -- content_hash of the chunks now searchable
    UNIQUE (capsule_id, uri)
);
CREATE INDEX items_by_capsule ON items (capsule_id, id);
CREATE INDEX items_by_status ON items (status, time_updated);
CREATE INDEX items_by_hash ON items (content_hash);

-- Chunks of searchable items, written in the transaction that makes their
-- item ready. vector is little-endian float32, NULL when semantic search is off.
CREATE TABLE chunks (
    id         INTEGER PRIMARY KEY,         -- also the rowid of chunks_fts
    item_id    TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    capsule_id INTEGER NOT NULL,
    idx        INTEGER NOT NULL,
    text       TEXT NOT NULL,
    start_off  INTEGER NOT NULL,
    end_off    INTEGER NOT NULL,
    tokens     INTEGER NOT NULL,
    vector     BLOB,
    UNIQUE (item_id, idx)
);
CREATE INDEX chunks_by_capsule ON chunks (capsule_id);

-- BM25: body is the chunk text; cap holds the token "c<capsule id>" so that a
-- MATCH can stay inside one capsule (bm25 weight 0).
CREATE VIRTUAL TABLE chunks_fts USING fts5(body, cap, tokenize = 'porter unicode61 remove_diacritics 2');

-- The item's full extracted text (what GET .../text and the read tool return).
CREATE TABLE item_texts (
    item_id TEXT PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    text    TEXT NOT NULL
);

-- Embeddings by model and sha256 of the embedded text: unchanged content is
-- never embedded twice.
CREATE TABLE embedding_cache (
    model   TEXT NOT NULL,
    hash    BLOB NOT NULL,
    vector  BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
