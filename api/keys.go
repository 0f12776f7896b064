package api

import (
	"context"
	"time"

	"capsuled/gen"
	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// ListKeys lists the API keys the caller reaches (see package auth).
func (s *Server) ListKeys(ctx context.Context, _ gen.ListKeysRequestObject) (gen.ListKeysResponseObject, error) {
	keys, err := s.auth.ListKeysAs(ctx, principal(ctx))
	if err != nil {
		return nil, err
	}
	out := gen.ListKeys200JSONResponse{Data: make([]gen.Key, 0, len(keys))}
	for _, k := range keys {
		out.Data = append(out.Data, keyToWire(k))
	}
	return out, nil
}

// CreateKey creates an API key within the caller's own access and returns
// its secret once.
func (s *Server) CreateKey(ctx context.Context, req gen.CreateKeyRequestObject) (gen.CreateKeyResponseObject, error) {
	b := req.Body
	in := auth.NewKey{Name: b.Name}
	for _, sc := range b.Scopes {
		in.Scopes = append(in.Scopes, domain.Scope(sc))
	}
	if b.Capsules != nil {
		in.Capsules = *b.Capsules
	}
	if b.Namespaces != nil {
		in.Namespaces = *b.Namespaces
	}
	k, secret, err := s.auth.CreateKeyAs(ctx, principal(ctx), in)
	if err != nil {
		return nil, err
	}
	return gen.CreateKey201JSONResponse{Key: keyToWire(k), Secret: secret}, nil
}

// GetKey returns one API key.
func (s *Server) GetKey(ctx context.Context, req gen.GetKeyRequestObject) (gen.GetKeyResponseObject, error) {
	k, err := s.auth.GetKeyAs(ctx, principal(ctx), req.Key)
	if err != nil {
		return nil, err
	}
	return gen.GetKey200JSONResponse(keyToWire(k)), nil
}

// RevokeKey revokes an API key.
func (s *Server) RevokeKey(ctx context.Context, req gen.RevokeKeyRequestObject) (gen.RevokeKeyResponseObject, error) {
	k, err := s.auth.RevokeKeyAs(ctx, principal(ctx), req.Key)
	if err != nil {
		return nil, err
	}
	return gen.RevokeKey200JSONResponse(keyToWire(k)), nil
}

// CreateAccessToken mints an access token from the calling key.
func (s *Server) CreateAccessToken(ctx context.Context, req gen.CreateAccessTokenRequestObject) (gen.CreateAccessTokenResponseObject, error) {
	var ns []string
	var ttl time.Duration
	if b := req.Body; b != nil {
		if b.Namespaces != nil {
			ns = *b.Namespaces
		}
		if b.TtlSeconds != nil {
			ttl = time.Duration(*b.TtlSeconds) * time.Second
		}
	}
	tok, info, err := s.auth.MintToken(ctx, principal(ctx), ns, ttl)
	if err != nil {
		return nil, err
	}
	return gen.CreateAccessToken201JSONResponse{
		Token:      tok,
		TokenType:  gen.Bearer,
		ExpiresAt:  info.ExpiresAt,
		ExpiresIn:  int(info.ExpiresAt.Sub(info.IssuedAt).Seconds()),
		Namespaces: orEmpty(info.Namespaces),
	}, nil
}

func keyToWire(k domain.Key) gen.Key {
	out := gen.Key{
		Id:         k.ID,
		Name:       k.Name,
		Prefix:     k.Prefix,
		Capsules:   orEmpty(k.Capsules),
		Namespaces: orEmpty(k.Namespaces),
		CreatedAt:  k.CreatedAt,
		LastUsedAt: k.LastUsedAt,
		RevokedAt:  k.RevokedAt,
		Scopes:     make([]gen.Scope, 0, len(k.Scopes)),
	}
	for _, sc := range k.Scopes {
		out.Scopes = append(out.Scopes, gen.Scope(sc))
	}
	return out
}

// orEmpty returns s, or an empty (non-nil) slice, so that JSON has [] not null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
