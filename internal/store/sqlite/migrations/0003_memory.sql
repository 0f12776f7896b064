-- Memory: the memories of each namespace, their full-text index and the
-- recorded failures of fact extraction.
CREATE TABLE memories (
	seq           INTEGER PRIMARY KEY,
	id            TEXT NOT NULL UNIQUE,
	namespace     TEXT NOT NULL,
	kind          TEXT NOT NULL,
	role          TEXT,
	content       TEXT NOT NULL,
	search_text   TEXT NOT NULL,
	conversation  TEXT,
	dedupe_key    TEXT,
	metadata      TEXT NOT NULL DEFAULT '{}',
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	valid_from    INTEGER NOT NULL,
	invalid_from  INTEGER,
	superseded_by TEXT,
	expires_at    INTEGER,
	vector        BLOB,
	vector_model  TEXT
);
CREATE INDEX memories_namespace ON memories (namespace, created_at, seq);
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE UNIQUE INDEX memories_dedupe ON memories (namespace, conversation, dedupe_key) WHERE dedupe_key IS NOT NULL;

CREATE VIRTUAL TABLE memories_fts USING fts5(
	search_text, content='memories', content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts (rowid, search_text) VALUES (new.seq, new.search_text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text);
	INSERT INTO memories_fts (rowid, search_text) VALUES (new.seq, new.search_text);
END;

CREATE TABLE memory_failures (
	id           TEXT PRIMARY KEY,
	namespace    TEXT NOT NULL,
	stage        TEXT NOT NULL,
	error        TEXT NOT NULL,
	attempts     INTEGER NOT NULL,
	conversation TEXT,
	input        TEXT NOT NULL,
	created_at   INTEGER NOT NULL
);
CREATE INDEX memory_failures_namespace ON memory_failures (namespace, created_at);
