-- API keys: only the SHA-256 of the secret is stored.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,            -- JSON array of scope names
    capsules     TEXT NOT NULL DEFAULT '[]', -- JSON array; empty allows all
    namespaces   TEXT NOT NULL DEFAULT '[]', -- JSON array; empty allows all
    created_at   INTEGER NOT NULL,         -- Unix milliseconds
    last_used_at INTEGER,
    revoked_at   INTEGER
);

-- Server secrets (for example the access-token signing key), created once.
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
