-- Memory: the memories of each namespace with their full-text index, and the
-- recorded failures of fact extraction.
CREATE TABLE memories (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text NOT NULL UNIQUE,
    namespace     text NOT NULL,
    kind          text NOT NULL,
    role          text,
    content       text NOT NULL,
    search_text   text NOT NULL,
    tsv           tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED,
    conversation  text,
    dedupe_key    text,
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    valid_from    timestamptz NOT NULL,
    invalid_from  timestamptz,
    superseded_by text,
    expires_at    timestamptz,
    vector        vector,
    vector_model  text
);
CREATE INDEX memories_namespace ON memories (namespace, created_at, seq);
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE UNIQUE INDEX memories_dedupe ON memories (namespace, coalesce(conversation, ''), dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX memories_tsv ON memories USING gin (tsv);

CREATE TABLE memory_failures (
    id           text PRIMARY KEY,
    namespace    text NOT NULL,
    stage        text NOT NULL,
    error        text NOT NULL,
    attempts     integer NOT NULL,
    conversation text,
    input        text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX memory_failures_namespace ON memory_failures (namespace, created_at);
