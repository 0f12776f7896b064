package auth

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"capsuled/internal/domain"
)

// fakeStore is an in-memory fake of Store for the unit tests of this
// package. The real backends are tested against the shared store suite.
type fakeStore struct {
	mu      sync.Mutex
	keys    []domain.Key
	secrets map[string][]byte
	touched int
}

func newFakeStore() *fakeStore { return &fakeStore{secrets: map[string][]byte{}} }

func (f *fakeStore) CreateKey(_ context.Context, k domain.Key) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.keys {
		if x.ID == k.ID {
			return domain.ErrConflict
		}
	}
	f.keys = append(f.keys, k)
	return nil
}

func (f *fakeStore) find(pred func(domain.Key) bool) (domain.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys {
		if pred(k) {
			return k, nil
		}
	}
	return domain.Key{}, domain.ErrNotFound
}

func (f *fakeStore) KeyByHash(_ context.Context, h []byte) (domain.Key, error) {
	return f.find(func(k domain.Key) bool { return bytes.Equal(k.Hash, h) })
}

func (f *fakeStore) GetKey(_ context.Context, id string) (domain.Key, error) {
	return f.find(func(k domain.Key) bool { return k.ID == id })
}

func (f *fakeStore) ListKeys(context.Context) ([]domain.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.keys)
	slices.Reverse(out)
	return out, nil
}

func (f *fakeStore) RevokeKey(_ context.Context, id string, at time.Time) (domain.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.keys {
		if f.keys[i].ID == id {
			if f.keys[i].RevokedAt == nil {
				f.keys[i].RevokedAt = &at
			}
			return f.keys[i], nil
		}
	}
	return domain.Key{}, domain.ErrNotFound
}

func (f *fakeStore) TouchKey(_ context.Context, id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched++
	for i := range f.keys {
		if f.keys[i].ID == id {
			f.keys[i].LastUsedAt = &at
		}
	}
	return nil
}

func (f *fakeStore) CountKeys(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.keys), nil
}

func (f *fakeStore) Secret(_ context.Context, name string, gen func() ([]byte, error)) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	s, err := gen()
	if err != nil {
		return nil, err
	}
	f.secrets[name] = s
	return s, nil
}
