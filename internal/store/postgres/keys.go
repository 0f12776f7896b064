package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"capsuled/internal/domain"
)

// KeyStore implements auth.Store on the database.
type KeyStore struct{ db *DB }

// Keys returns the key and secret store.
func (db *DB) Keys() *KeyStore { return &KeyStore{db: db} }

const keyColumns = "id, name, prefix, hash, scopes, capsules, namespaces, created_at, last_used_at, revoked_at"

// CreateKey stores a new key.
func (s *KeyStore) CreateKey(ctx context.Context, k domain.Key) error {
	scopes, _ := json.Marshal(orEmpty(k.Scopes))
	capsules, _ := json.Marshal(orEmpty(k.Capsules))
	namespaces, _ := json.Marshal(orEmpty(k.Namespaces))
	_, err := s.db.pool.Exec(ctx, "INSERT INTO api_keys ("+keyColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
		k.ID, k.Name, k.Prefix, k.Hash, string(scopes), string(capsules), string(namespaces),
		k.CreatedAt, k.LastUsedAt, k.RevokedAt)
	if err != nil {
		return fmt.Errorf("insert key: %w", interpret(err))
	}
	return nil
}

// KeyByHash returns the key whose secret hashes to hash.
func (s *KeyStore) KeyByHash(ctx context.Context, hash []byte) (domain.Key, error) {
	return scanKey(s.db.pool.QueryRow(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE hash = $1", hash))
}

// GetKey returns the key with the given id.
func (s *KeyStore) GetKey(ctx context.Context, id string) (domain.Key, error) {
	return scanKey(s.db.pool.QueryRow(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE id = $1", id))
}

// ListKeys lists every key, newest first.
func (s *KeyStore) ListKeys(ctx context.Context) ([]domain.Key, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT "+keyColumns+" FROM api_keys ORDER BY created_at DESC, id")
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []domain.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey marks a key revoked at the given time; revoking twice keeps the
// first time.
func (s *KeyStore) RevokeKey(ctx context.Context, id string, at time.Time) (domain.Key, error) {
	return scanKey(s.db.pool.QueryRow(ctx, "UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 RETURNING "+keyColumns, at, id))
}

// TouchKey records the key's last use.
func (s *KeyStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.pool.Exec(ctx, "UPDATE api_keys SET last_used_at = $1 WHERE id = $2", at, id)
	return interpret(err)
}

// CountKeys counts keys, revoked ones included.
func (s *KeyStore) CountKeys(ctx context.Context) (int, error) {
	var n int
	err := s.db.pool.QueryRow(ctx, "SELECT count(*) FROM api_keys").Scan(&n)
	return n, interpret(err)
}

// Secret returns the named server secret, creating it with generate the
// first time. Concurrent first calls (in this or another replica) agree on
// one value.
func (s *KeyStore) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var v []byte
	err := s.db.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read secret: %w", interpret(err))
	}
	fresh, err := generate()
	if err != nil {
		return nil, err
	}
	if _, err := s.db.pool.Exec(ctx, "INSERT INTO secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
		name, fresh, s.db.now()); err != nil {
		return nil, fmt.Errorf("store secret: %w", interpret(err))
	}
	if err := s.db.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&v); err != nil {
		return nil, fmt.Errorf("read secret: %w", interpret(err))
	}
	return v, nil
}

func scanKey(row pgx.Row) (domain.Key, error) {
	var (
		k                            domain.Key
		scopes, capsules, namespaces []byte
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &capsules, &namespaces, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt); err != nil {
		return domain.Key{}, interpret(err)
	}
	if err := json.Unmarshal(scopes, &k.Scopes); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: scopes: %w", k.ID, err)
	}
	if err := json.Unmarshal(capsules, &k.Capsules); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: capsules: %w", k.ID, err)
	}
	if err := json.Unmarshal(namespaces, &k.Namespaces); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: namespaces: %w", k.ID, err)
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = utc(k.CreatedAt), utcPtr(k.LastUsedAt), utcPtr(k.RevokedAt)
	return k, nil
}
