package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"capsuled/internal/domain"
)

// Store is what the auth service needs from a storage backend.
type Store interface {
	CreateKey(ctx context.Context, k domain.Key) error
	KeyByHash(ctx context.Context, hash []byte) (domain.Key, error)
	GetKey(ctx context.Context, id string) (domain.Key, error)
	ListKeys(ctx context.Context) ([]domain.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) (domain.Key, error)
	TouchKey(ctx context.Context, id string, at time.Time) error
	CountKeys(ctx context.Context) (int, error)
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Token lifetimes.
const (
	DefaultTokenTTL = time.Hour
	MinTokenTTL     = time.Minute
	MaxTokenTTL     = 24 * time.Hour
)

const (
	keyPrefix      = "csk_"
	tokenPrefix    = "cst_"
	visiblePrefix  = 12
	secretName     = "access-token-signing-key"
	touchInterval  = time.Minute
	maxCredential  = 4096
	base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Service manages keys and tokens.
type Service struct {
	store Store
	now   func() time.Time
	log   *slog.Logger

	mu sync.Mutex
	// signingKeys sign tokens (the first) and verify them (any): the
	// operator's, or else one generated and kept in the store.
	signingKeys [][]byte
	lastTouch   map[string]time.Time
}

// New returns a Service over st. now may be nil (time.Now).
func New(st Store, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, now: now, log: log, lastTouch: map[string]time.Time{}}
}

// NewKey describes a key to create.
type NewKey struct {
	Name       string
	Scopes     []domain.Scope
	Capsules   []string
	Namespaces []string
}

// CreateKey creates a key and returns it with its secret, which is not stored
// and cannot be shown again.
func (s *Service) CreateKey(ctx context.Context, in NewKey) (domain.Key, string, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return domain.Key{}, "", domain.Invalid("name", "key name must be 1 to 100 characters")
	}
	if len(in.Scopes) == 0 {
		return domain.Key{}, "", domain.Invalid("scopes", "a key needs at least one scope")
	}
	for i, sc := range in.Scopes {
		if _, ok := domain.ParseScope(string(sc)); !ok {
			return domain.Key{}, "", domain.Invalid(fmt.Sprintf("scopes[%d]", i), "unknown scope %q", sc)
		}
	}
	for i, c := range in.Capsules {
		if err := domain.ValidateCapsuleName(c); err != nil {
			return domain.Key{}, "", domain.Invalid(fmt.Sprintf("capsules[%d]", i), "%s", err.(*domain.Error).Message)
		}
	}
	for i, ns := range in.Namespaces {
		if err := domain.ValidateNamespace(ns); err != nil {
			return domain.Key{}, "", domain.Invalid(fmt.Sprintf("namespaces[%d]", i), "%s", err.(*domain.Error).Message)
		}
	}
	secret, err := randomBase62(43)
	if err != nil {
		return domain.Key{}, "", err
	}
	secret = keyPrefix + secret
	id, err := randomBase62(16)
	if err != nil {
		return domain.Key{}, "", err
	}
	sum := sha256.Sum256([]byte(secret))
	k := domain.Key{
		ID:         "key_" + id,
		Name:       name,
		Prefix:     secret[:visiblePrefix],
		Hash:       sum[:],
		Scopes:     dedupe(in.Scopes),
		Capsules:   dedupe(in.Capsules),
		Namespaces: dedupe(in.Namespaces),
		CreatedAt:  s.now().UTC().Truncate(time.Millisecond),
	}
	if err := s.store.CreateKey(ctx, k); err != nil {
		return domain.Key{}, "", fmt.Errorf("create key: %w", err)
	}
	return k, secret, nil
}

// EnsureAdminKey creates an admin key when the store has no key at all, and
// returns its secret; created is false when keys already exist.
func (s *Service) EnsureAdminKey(ctx context.Context) (secret string, created bool, err error) {
	n, err := s.store.CountKeys(ctx)
	if err != nil {
		return "", false, fmt.Errorf("count keys: %w", err)
	}
	if n > 0 {
		return "", false, nil
	}
	_, secret, err = s.CreateKey(ctx, NewKey{Name: "admin (created at first start)", Scopes: []domain.Scope{domain.ScopeAdmin}})
	if err != nil {
		return "", false, err
	}
	return secret, true, nil
}

// ListKeys lists every key, newest first.
func (s *Service) ListKeys(ctx context.Context) ([]domain.Key, error) {
	return s.store.ListKeys(ctx)
}

// GetKey returns one key.
func (s *Service) GetKey(ctx context.Context, id string) (domain.Key, error) {
	k, err := s.store.GetKey(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Key{}, domain.NotFound("key", id)
	}
	return k, err
}

// RevokeKey revokes a key; it and its tokens are refused from the next request on.
func (s *Service) RevokeKey(ctx context.Context, id string) (domain.Key, error) {
	k, err := s.store.RevokeKey(ctx, id, s.now().UTC().Truncate(time.Millisecond))
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Key{}, domain.NotFound("key", id)
	}
	return k, err
}

var errUnauthenticated = &domain.Error{Kind: domain.KindUnauthenticated, Code: "invalid_api_key", Message: "invalid, revoked or expired credential"}

// Authenticate resolves a bearer credential (an API key or an access token)
// to a Principal, or returns a 401-class error.
func (s *Service) Authenticate(ctx context.Context, credential string) (*domain.Principal, error) {
	switch {
	case credential == "":
		return nil, &domain.Error{Kind: domain.KindUnauthenticated, Code: "missing_credential", Message: "missing credential: send Authorization: Bearer <API key or access token>"}
	case len(credential) > maxCredential:
		return nil, errUnauthenticated
	case strings.HasPrefix(credential, tokenPrefix):
		return s.authenticateToken(ctx, credential)
	case strings.HasPrefix(credential, keyPrefix):
		return s.authenticateKey(ctx, credential)
	default:
		return nil, errUnauthenticated
	}
}

func (s *Service) authenticateKey(ctx context.Context, secret string) (*domain.Principal, error) {
	sum := sha256.Sum256([]byte(secret))
	k, err := s.store.KeyByHash(ctx, sum[:])
	if errors.Is(err, domain.ErrNotFound) {
		return nil, errUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("look up key: %w", err)
	}
	if subtle.ConstantTimeCompare(k.Hash, sum[:]) != 1 || k.RevokedAt != nil {
		return nil, errUnauthenticated
	}
	s.touch(ctx, k.ID)
	return &domain.Principal{KeyID: k.ID, KeyName: k.Name, Scopes: k.Scopes, Capsules: k.Capsules, Namespaces: k.Namespaces}, nil
}

// touch records a key's last use, at most once a minute per key per process.
func (s *Service) touch(ctx context.Context, id string) {
	now := s.now().UTC()
	s.mu.Lock()
	last, ok := s.lastTouch[id]
	if ok && now.Sub(last) < touchInterval {
		s.mu.Unlock()
		return
	}
	s.lastTouch[id] = now
	s.mu.Unlock()
	if err := s.store.TouchKey(ctx, id, now.Truncate(time.Millisecond)); err != nil {
		s.log.WarnContext(ctx, "record key use", "key_id", id, "err", err)
	}
}

type claims struct {
	ID         string   `json:"jti"`
	KeyID      string   `json:"kid"`
	Namespaces []string `json:"ns,omitempty"`
	IssuedAt   int64    `json:"iat"`
	ExpiresAt  int64    `json:"exp"`
}

// MintToken mints an access token for p, which must be an API key (not a
// token) with the memory scope. namespaces narrows the key's allow-list; ttl 0
// means DefaultTokenTTL.
func (s *Service) MintToken(ctx context.Context, p *domain.Principal, namespaces []string, ttl time.Duration) (string, domain.AccessToken, error) {
	if p.TokenID != "" {
		return "", domain.AccessToken{}, &domain.Error{Kind: domain.KindForbidden, Code: "token_cannot_mint", Message: "access tokens cannot mint access tokens; use an API key"}
	}
	if !p.Has(domain.ScopeMemory) {
		return "", domain.AccessToken{}, &domain.Error{Kind: domain.KindForbidden, Code: "missing_scope", Message: "minting an access token needs a key with the memory scope"}
	}
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return "", domain.AccessToken{}, domain.Invalid("ttl_seconds", "ttl must be between %d and %d seconds", int(MinTokenTTL.Seconds()), int(MaxTokenTTL.Seconds()))
	}
	ns := p.Namespaces
	if len(namespaces) > 0 {
		for i, n := range namespaces {
			if err := domain.ValidateNamespace(n); err != nil {
				return "", domain.AccessToken{}, domain.Invalid(fmt.Sprintf("namespaces[%d]", i), "%s", err.(*domain.Error).Message)
			}
			if !p.CanNamespace(n) {
				return "", domain.AccessToken{}, &domain.Error{Kind: domain.KindForbidden, Code: "namespace_not_allowed", Param: fmt.Sprintf("namespaces[%d]", i), Message: fmt.Sprintf("the key may not use namespace %q", n)}
			}
		}
		ns = dedupe(namespaces)
	}
	id, err := randomBase62(16)
	if err != nil {
		return "", domain.AccessToken{}, err
	}
	now := s.now().UTC().Truncate(time.Second)
	c := claims{ID: "tok_" + id, KeyID: p.KeyID, Namespaces: ns, IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	keys, err := s.keys(ctx)
	if err != nil {
		return "", domain.AccessToken{}, err
	}
	key := keys[0]
	payload, err := json.Marshal(c)
	if err != nil {
		return "", domain.AccessToken{}, fmt.Errorf("encode token: %w", err)
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	tok := tokenPrefix + body + "." + base64.RawURLEncoding.EncodeToString(sign(key, body))
	return tok, domain.AccessToken{ID: c.ID, KeyID: c.KeyID, Namespaces: ns, IssuedAt: now, ExpiresAt: now.Add(ttl)}, nil
}

func (s *Service) authenticateToken(ctx context.Context, tok string) (*domain.Principal, error) {
	body, sig, ok := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	if !ok {
		return nil, errUnauthenticated
	}
	gotSig, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return nil, errUnauthenticated
	}
	keys, err := s.keys(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(keys, func(k []byte) bool { return hmac.Equal(gotSig, sign(k, body)) }) {
		return nil, errUnauthenticated
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return nil, errUnauthenticated
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil || c.KeyID == "" {
		return nil, errUnauthenticated
	}
	if s.now().Unix() >= c.ExpiresAt {
		return nil, errUnauthenticated.WithCode("token_expired")
	}
	k, err := s.store.GetKey(ctx, c.KeyID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, errUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("look up token key: %w", err)
	}
	if k.RevokedAt != nil {
		return nil, errUnauthenticated
	}
	s.touch(ctx, k.ID)
	return &domain.Principal{KeyID: k.ID, KeyName: k.Name, Scopes: []domain.Scope{domain.ScopeMemory}, Namespaces: c.Namespaces, TokenID: c.ID}, nil
}

// UseSigningKeys makes the service sign tokens with keys[0] and accept
// tokens signed with any of keys, instead of the key it generates and keeps
// in the store: to rotate, put a new key first and keep the old ones until
// their tokens have expired (at most MaxTokenTTL).
func (s *Service) UseSigningKeys(keys [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signingKeys = slices.Clone(keys)
}

// keys returns the token signing keys, creating one in the store on first
// use when the operator gave none.
func (s *Service) keys(ctx context.Context) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.signingKeys) > 0 {
		return s.signingKeys, nil
	}
	k, err := s.store.Secret(ctx, secretName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("load token signing key: %w", err)
	}
	s.signingKeys = [][]byte{k}
	return s.signingKeys, nil
}

func sign(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

func randomBase62(n int) (string, error) {
	b := make([]byte, n)
	max := big.NewInt(int64(len(base62Alphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("random: %w", err)
		}
		b[i] = base62Alphabet[v.Int64()]
	}
	return string(b), nil
}

func dedupe[T comparable](in []T) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
