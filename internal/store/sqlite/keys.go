package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	_, err := s.db.write.ExecContext(ctx, "INSERT INTO api_keys ("+keyColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		k.ID, k.Name, k.Prefix, k.Hash, string(scopes), string(capsules), string(namespaces),
		millis(k.CreatedAt), nullMillis(k.LastUsedAt), nullMillis(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("insert key: %w", interpret(err))
	}
	return nil
}

// KeyByHash returns the key whose secret hashes to hash.
func (s *KeyStore) KeyByHash(ctx context.Context, hash []byte) (domain.Key, error) {
	return scanKey(s.db.read.QueryRowContext(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE hash = ?", hash))
}

// GetKey returns the key with the given id.
func (s *KeyStore) GetKey(ctx context.Context, id string) (domain.Key, error) {
	return scanKey(s.db.read.QueryRowContext(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE id = ?", id))
}

// ListKeys lists every key, newest first.
func (s *KeyStore) ListKeys(ctx context.Context) ([]domain.Key, error) {
	rows, err := s.db.read.QueryContext(ctx, "SELECT "+keyColumns+" FROM api_keys ORDER BY created_at DESC, id")
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return collect(rows, scanKey)
}

// RevokeKey marks a key revoked at the given time; revoking twice keeps the
// first time.
func (s *KeyStore) RevokeKey(ctx context.Context, id string, at time.Time) (domain.Key, error) {
	res, err := s.db.write.ExecContext(ctx, "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?", millis(at), id)
	if err != nil {
		return domain.Key{}, fmt.Errorf("revoke key: %w", interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.Key{}, domain.ErrNotFound
	}
	return scanKey(s.db.write.QueryRowContext(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE id = ?", id))
}

// TouchKey records the key's last use.
func (s *KeyStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.write.ExecContext(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", millis(at), id)
	return interpret(err)
}

// CountKeys counts keys, revoked ones included.
func (s *KeyStore) CountKeys(ctx context.Context) (int, error) {
	var n int
	err := s.db.read.QueryRowContext(ctx, "SELECT count(*) FROM api_keys").Scan(&n)
	return n, interpret(err)
}

// Secret returns the named server secret, creating it with generate the
// first time. Concurrent first calls (in this or another process) agree on
// one value.
func (s *KeyStore) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var v []byte
	err := s.db.read.QueryRowContext(ctx, "SELECT value FROM secrets WHERE name = ?", name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read secret: %w", interpret(err))
	}
	fresh, err := generate()
	if err != nil {
		return nil, err
	}
	if _, err := s.db.write.ExecContext(ctx, "INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
		name, fresh, millis(s.db.now())); err != nil {
		return nil, fmt.Errorf("store secret: %w", interpret(err))
	}
	if err := s.db.write.QueryRowContext(ctx, "SELECT value FROM secrets WHERE name = ?", name).Scan(&v); err != nil {
		return nil, fmt.Errorf("read secret: %w", interpret(err))
	}
	return v, nil
}

type scanner interface{ Scan(dest ...any) error }

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanKey(row scanner) (domain.Key, error) {
	var (
		k                            domain.Key
		scopes, capsules, namespaces string
		created                      int64
		lastUsed, revoked            sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &capsules, &namespaces, &created, &lastUsed, &revoked); err != nil {
		return domain.Key{}, interpret(err)
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: scopes: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(capsules), &k.Capsules); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: capsules: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(namespaces), &k.Namespaces); err != nil {
		return domain.Key{}, fmt.Errorf("key %s: namespaces: %w", k.ID, err)
	}
	k.CreatedAt = fromMillis(created)
	k.LastUsedAt = fromNullMillis(lastUsed)
	k.RevokedAt = fromNullMillis(revoked)
	return k, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
