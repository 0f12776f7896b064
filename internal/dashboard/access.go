package dashboard

import (
	"fmt"
	"net/http"

	"capsuled/internal/domain"
)

// The signed-in key's allow-lists bind the dashboard as they bind the API:
// lists show only the capsules and namespaces the key may use, and every
// page and action on another answers 403.

// allowedCapsules keeps the capsules the session's key may use.
func allowedCapsules(s *session, list []domain.Capsule) []domain.Capsule {
	p := s.principal()
	out := make([]domain.Capsule, 0, len(list))
	for _, c := range list {
		if p.CanCapsule(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// allowedNamespaces keeps the namespaces the session's key may use.
func allowedNamespaces(s *session, list []domain.Namespace) []domain.Namespace {
	p := s.principal()
	out := make([]domain.Namespace, 0, len(list))
	for _, n := range list {
		if p.CanNamespace(n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// capsuleAllowed answers 403 and returns false when the session's key may
// not use the capsule.
func (h *Handler) capsuleAllowed(w http.ResponseWriter, r *http.Request, s *session, name string) bool {
	if s.principal().CanCapsule(name) {
		return true
	}
	h.fail(w, r, s, http.StatusForbidden, fmt.Sprintf("The key you signed in with may not use the capsule “%s”.", name))
	return false
}

// namespaceAllowed answers 403 and returns false when the session's key may
// not use the namespace.
func (h *Handler) namespaceAllowed(w http.ResponseWriter, r *http.Request, s *session, ns string) bool {
	if s.principal().CanNamespace(ns) {
		return true
	}
	h.fail(w, r, s, http.StatusForbidden, fmt.Sprintf("The key you signed in with may not use the namespace “%s”.", ns))
	return false
}
