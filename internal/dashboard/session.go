package dashboard

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
	"net/http"
	"net/url"
	"strings"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

const (
	sessionCookie = "capsuled_session"
	signinCookie  = "capsuled_signin"
	secretName    = "dashboard-session-key"
	csrfField     = "csrf_token"
	maxCookie     = 1024
)

// session is a signed-in operator.
type session struct {
	Key  domain.Key
	ID   string // random session id
	CSRF string // the synchronizer token of this session
}

// principal is the session's key as a principal: every page and action is
// bound by its scopes and allow-lists, as the API is.
func (s *session) principal() *domain.Principal { return auth.PrincipalOf(s.Key) }

// claims are what the session cookie carries, signed.
type claims struct {
	KeyID     string `json:"k"`
	SessionID string `json:"s"`
	Expires   int64  `json:"e"`
}

// signingKey returns the key that signs new sessions.
func (h *Handler) signingKey(ctx context.Context) ([]byte, error) {
	keys, err := h.sessionKeys(ctx)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// sessionKeys returns the session keys: Config.SessionKeys, or else one
// created in the store on first use. The first signs; any verifies.
func (h *Handler) sessionKeys(ctx context.Context) ([][]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) > 0 {
		return h.keys, nil
	}
	k, err := h.secrets.Secret(ctx, secretName, func() ([]byte, error) { return randomBytes(32) })
	if err != nil {
		return nil, fmt.Errorf("load dashboard session key: %w", err)
	}
	h.keys = [][]byte{k}
	return h.keys, nil
}

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("random: %w", err)
	}
	return b, nil
}

func randomToken() (string, error) {
	b, err := randomBytes(18)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// encodeSession returns the signed cookie value for c.
func encodeSession(key []byte, c claims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode session: %w", err)
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(key, "session", body)), nil
}

// decodeSession verifies a cookie value and returns its claims; it does not
// check the expiry.
func decodeSession(key []byte, v string) (claims, bool) {
	if len(v) > maxCookie {
		return claims{}, false
	}
	body, sig, ok := strings.Cut(v, ".")
	if !ok {
		return claims{}, false
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, "session", body)) {
		return claims{}, false
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return claims{}, false
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil || c.KeyID == "" || c.SessionID == "" {
		return claims{}, false
	}
	return c, true
}

// csrfToken is the synchronizer token of a session.
func csrfToken(key []byte, sessionID string) string {
	return base64.RawURLEncoding.EncodeToString(mac(key, "csrf", sessionID))
}

// secure reports whether cookies on this request should be Secure: over TLS,
// or when the public URL is https (behind a TLS-terminating proxy).
func (h *Handler) secure(r *http.Request) bool {
	return r.TLS != nil || (h.public != nil && h.public.Scheme == "https")
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     Prefix,
		HttpOnly: true,
		Secure:   h.secure(r),
		SameSite: http.SameSiteStrictMode,
	}
	if ttl > 0 {
		c.MaxAge = int(ttl.Seconds())
		c.Expires = h.cfg.Now().Add(ttl).UTC()
	} else {
		c.MaxAge = -1
		c.Expires = time.Unix(1, 0)
	}
	http.SetCookie(w, c)
}

// startSession signs k in: it sets the session cookie.
func (h *Handler) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, k domain.Key) error {
	key, err := h.signingKey(ctx)
	if err != nil {
		return err
	}
	sid, err := randomToken()
	if err != nil {
		return err
	}
	exp := h.cfg.Now().Add(h.cfg.SessionTTL)
	v, err := encodeSession(key, claims{KeyID: k.ID, SessionID: sid, Expires: exp.Unix()})
	if err != nil {
		return err
	}
	h.setCookie(w, r, sessionCookie, v, h.cfg.SessionTTL)
	h.setCookie(w, r, signinCookie, "", 0)
	return nil
}

var errNoSession = errors.New("no session")

// currentSession returns the request's session, or errNoSession when there
// is none or it is invalid, expired, signed out, or its key is revoked or no
// longer admin.
func (h *Handler) currentSession(ctx context.Context, r *http.Request) (*session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, errNoSession
	}
	keys, err := h.sessionKeys(ctx)
	if err != nil {
		return nil, err
	}
	key := keys[0]
	var c claims
	ok := false
	for _, k := range keys {
		if c, ok = decodeSession(k, ck.Value); ok {
			break
		}
	}
	if !ok {
		return nil, errNoSession
	}
	now := h.cfg.Now()
	if now.Unix() >= c.Expires {
		return nil, errNoSession
	}
	h.mu.Lock()
	for id, exp := range h.signedOut {
		if now.After(exp) {
			delete(h.signedOut, id)
		}
	}
	_, out := h.signedOut[c.SessionID]
	h.mu.Unlock()
	if out {
		return nil, errNoSession
	}
	k, err := h.auth.GetKey(ctx, c.KeyID)
	if domain.KindOf(err) == domain.KindNotFound {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("look up session key: %w", err)
	}
	if k.RevokedAt != nil || !isAdmin(k) {
		return nil, errNoSession
	}
	return &session{Key: k, ID: c.SessionID, CSRF: csrfToken(key, c.SessionID)}, nil
}

// endSession signs the session out.
func (h *Handler) endSession(w http.ResponseWriter, r *http.Request, s *session) {
	h.mu.Lock()
	h.signedOut[s.ID] = h.cfg.Now().Add(h.cfg.SessionTTL)
	h.mu.Unlock()
	h.setCookie(w, r, sessionCookie, "", 0)
}

func isAdmin(k domain.Key) bool {
	for _, s := range k.Scopes {
		if s == domain.ScopeAdmin {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a state-changing request comes from the
// dashboard's own pages, by net/http's CrossOriginProtection: Sec-Fetch-Site
// same-origin (or none), or else an Origin whose host is the request's or the
// public URL's origin; requests without either (not from a browser) pass.
func (h *Handler) sameOrigin(r *http.Request) bool {
	return h.cop.Check(r) == nil
}

// checkCSRF verifies a POST of a signed-in session: origin and token.
func (h *Handler) checkCSRF(r *http.Request, s *session) bool {
	if !h.sameOrigin(r) {
		return false
	}
	got := r.PostFormValue(csrfField)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// signinToken returns the sign-in form's double-submit token, setting its
// cookie when the request has none.
func (h *Handler) signinToken(w http.ResponseWriter, r *http.Request) (string, error) {
	if ck, err := r.Cookie(signinCookie); err == nil && len(ck.Value) >= 20 && len(ck.Value) <= 64 {
		return ck.Value, nil
	}
	t, err := randomToken()
	if err != nil {
		return "", err
	}
	h.setCookie(w, r, signinCookie, t, time.Hour)
	return t, nil
}

// checkSigninCSRF verifies the sign-in form's origin and double-submit token.
func (h *Handler) checkSigninCSRF(r *http.Request) bool {
	if !h.sameOrigin(r) {
		return false
	}
	ck, err := r.Cookie(signinCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return subtle.ConstantTimeCompare([]byte(got), []byte(ck.Value)) == 1
}

// authedHandler is a handler that runs only for a signed-in operator.
type authedHandler func(w http.ResponseWriter, r *http.Request, s *session)

// authed wraps next: without a session GET requests go to the sign-in page
// and other requests get 401; POST requests must pass the CSRF check.
func (h *Handler) authed(next authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := h.currentSession(r.Context(), r)
		if err != nil {
			if !errors.Is(err, errNoSession) {
				h.log.ErrorContext(r.Context(), "dashboard session", "err", err)
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				next := r.URL.Path
				if r.URL.RawQuery != "" {
					next += "?" + r.URL.RawQuery
				}
				http.Redirect(w, r, Prefix+"/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
				return
			}
			h.setCookie(w, r, sessionCookie, "", 0)
			h.signInForm(w, r, http.StatusUnauthorized, "", "Your session has ended. Sign in again.")
			return
		}
		if r.Method == http.MethodPost {
			if err := h.parseForm(r); err != nil {
				h.fail(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if !h.checkCSRF(r, s) {
				h.fail(w, r, s, http.StatusForbidden, "This form has expired or did not come from this dashboard. Reload the page and try again.")
				return
			}
		}
		next(w, r, s)
	}
}

// parseForm parses a URL-encoded or multipart form within the upload limit.
func (h *Handler) parseForm(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "multipart/form-data") {
		r.Body = http.MaxBytesReader(nil, r.Body, h.cfg.MaxUploadBytes+1<<20)
		return r.ParseMultipartForm(8 << 20)
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	return r.ParseForm()
}
