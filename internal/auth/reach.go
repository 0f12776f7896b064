package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"capsuled/internal/domain"
)

// Who manages which keys. A credential acting on keys (through the API or
// the dashboard) reaches a key when the key's access is within its own: every
// scope of the key is one the credential has (admin has them all), and each
// allow-list of the key is a subset of the credential's (an empty list
// allows everything, so only a credential with an empty list reaches a key
// with an empty list). A credential creates only keys it reaches, and sees,
// revokes and mints tokens for only keys it reaches. So an unrestricted admin
// manages every key, and an admin limited to capsule a can neither create a
// wider key nor revoke the unrestricted first-start key; it can revoke keys
// as narrow as itself whoever created them, which gives it nothing it could
// not mint. The CLI (capsuled keys) acts as the operator and reaches every
// key.

// Reaches reports whether p's access covers k's: k's scopes and allow-lists
// are within p's.
func Reaches(p *domain.Principal, k domain.Key) bool {
	return reachError(p, k.Scopes, k.Capsules, k.Namespaces) == nil
}

// reachError says why a key of these scopes and allow-lists is beyond p.
func reachError(p *domain.Principal, scopes []domain.Scope, capsules, namespaces []string) error {
	if p == nil {
		return &domain.Error{Kind: domain.KindForbidden, Code: "key_not_allowed", Message: "no credential"}
	}
	for i, sc := range scopes {
		if !p.Has(sc) {
			return &domain.Error{Kind: domain.KindForbidden, Code: "key_not_allowed", Param: fmt.Sprintf("scopes[%d]", i),
				Message: fmt.Sprintf("this credential does not have the %s scope, so it cannot give it", sc)}
		}
	}
	if err := subset("capsules", p.Capsules, capsules); err != nil {
		return err
	}
	return subset("namespaces", p.Namespaces, namespaces)
}

func subset(field string, own, want []string) error {
	if len(own) == 0 {
		return nil
	}
	if len(want) == 0 {
		return &domain.Error{Kind: domain.KindForbidden, Code: "key_not_allowed", Param: field,
			Message: fmt.Sprintf("this credential may use only the %s %s, so the key must list some of them (an empty list allows all)", field, strings.Join(own, ", "))}
	}
	for i, w := range want {
		if !slices.Contains(own, w) {
			return &domain.Error{Kind: domain.KindForbidden, Code: "key_not_allowed", Param: fmt.Sprintf("%s[%d]", field, i),
				Message: fmt.Sprintf("this credential may not use %q, so it cannot give it", w)}
		}
	}
	return nil
}

// CreateKeyAs creates a key on behalf of by: the key's scopes and
// allow-lists must be within by's (403 key_not_allowed otherwise).
func (s *Service) CreateKeyAs(ctx context.Context, by *domain.Principal, in NewKey) (domain.Key, string, error) {
	if err := reachError(by, in.Scopes, in.Capsules, in.Namespaces); err != nil {
		return domain.Key{}, "", err
	}
	return s.CreateKey(ctx, in)
}

// ListKeysAs lists the keys by reaches, newest first.
func (s *Service) ListKeysAs(ctx context.Context, by *domain.Principal) ([]domain.Key, error) {
	keys, err := s.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := keys[:0]
	for _, k := range keys {
		if Reaches(by, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// GetKeyAs returns a key by reaches (403 key_not_allowed for another).
func (s *Service) GetKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error) {
	k, err := s.GetKey(ctx, id)
	if err != nil {
		return domain.Key{}, err
	}
	if !Reaches(by, k) {
		return domain.Key{}, &domain.Error{Kind: domain.KindForbidden, Code: "key_not_allowed",
			Message: fmt.Sprintf("key %s has access beyond this credential's, so this credential cannot manage it", id)}
	}
	return k, nil
}

// RevokeKeyAs revokes a key by reaches (403 key_not_allowed for another).
func (s *Service) RevokeKeyAs(ctx context.Context, by *domain.Principal, id string) (domain.Key, error) {
	if _, err := s.GetKeyAs(ctx, by, id); err != nil {
		return domain.Key{}, err
	}
	return s.RevokeKey(ctx, id)
}

// PrincipalOf is the principal of a key used directly.
func PrincipalOf(k domain.Key) *domain.Principal {
	return &domain.Principal{KeyID: k.ID, KeyName: k.Name, Scopes: k.Scopes, Capsules: k.Capsules, Namespaces: k.Namespaces}
}
