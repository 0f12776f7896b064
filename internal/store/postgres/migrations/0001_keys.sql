-- API keys: only the SHA-256 of the secret is stored.
CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    scopes       jsonb NOT NULL,                -- array of scope names
    capsules     jsonb NOT NULL DEFAULT '[]',   -- empty allows all
    namespaces   jsonb NOT NULL DEFAULT '[]',   -- empty allows all
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Server secrets (for example the access-token signing key), created once.
CREATE TABLE secrets (
    name       text PRIMARY KEY,
    value      bytea NOT NULL,
    created_at timestamptz NOT NULL
);
