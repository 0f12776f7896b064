package dashboard

import (
	"net/http"
	"strings"

	"capsuled/internal/domain"
)

type signinData struct {
	CSRF string
	Next string
}

// safeNext returns next when it is a dashboard path on this server, else the
// dashboard's home.
func safeNext(next string) string {
	if strings.HasPrefix(next, Prefix+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return Prefix + "/"
}

func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request) {
	if s, err := h.currentSession(r.Context(), r); err == nil && s != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	h.signInForm(w, r, http.StatusOK, r.URL.Query().Get("next"), "")
}

func (h *Handler) signInForm(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	tok, err := h.signinToken(w, r)
	if err != nil {
		h.log.ErrorContext(r.Context(), "dashboard sign-in token", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h.render(w, r, status, "signin", view{Title: "Sign in", Error: msg, Data: signinData{CSRF: tok, Next: safeNext(next)}})
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		h.signInForm(w, r, http.StatusBadRequest, "", "The form could not be read.")
		return
	}
	next := r.PostFormValue("next")
	if !h.checkSigninCSRF(r) {
		h.signInForm(w, r, http.StatusForbidden, next, "This sign-in form has expired or did not come from this dashboard. Try again.")
		return
	}
	cred := strings.TrimSpace(r.PostFormValue("key"))
	if cred == "" {
		h.signInForm(w, r, http.StatusBadRequest, next, "Enter an admin API key.")
		return
	}
	p, err := h.auth.Authenticate(r.Context(), cred)
	if err != nil {
		if domain.KindOf(err) == domain.KindUnauthenticated {
			h.signInForm(w, r, http.StatusUnauthorized, next, "That key is not valid, or it was revoked.")
			return
		}
		h.log.ErrorContext(r.Context(), "dashboard sign-in", "err", err)
		h.signInForm(w, r, http.StatusInternalServerError, next, "Signing in failed on the server; see its log.")
		return
	}
	if p.TokenID != "" {
		h.signInForm(w, r, http.StatusForbidden, next, "That is an access token. Sign in with an API key that has the admin scope.")
		return
	}
	k, err := h.auth.GetKey(r.Context(), p.KeyID)
	if err != nil {
		h.log.ErrorContext(r.Context(), "dashboard sign-in key", "key_id", p.KeyID, "err", err)
		h.signInForm(w, r, http.StatusInternalServerError, next, "Signing in failed on the server; see its log.")
		return
	}
	if !isAdmin(k) {
		h.log.InfoContext(r.Context(), "dashboard sign-in refused: not an admin key", "key_id", k.ID)
		h.signInForm(w, r, http.StatusForbidden, next, "The key “"+k.Name+"” does not have the admin scope. Only admin keys can sign in to the dashboard.")
		return
	}
	if err := h.startSession(r.Context(), w, r, k); err != nil {
		h.log.ErrorContext(r.Context(), "dashboard session", "err", err)
		h.signInForm(w, r, http.StatusInternalServerError, next, "Signing in failed on the server; see its log.")
		return
	}
	h.log.InfoContext(r.Context(), "dashboard sign-in", "key_id", k.ID)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	h.endSession(w, r, s)
	h.log.InfoContext(r.Context(), "dashboard sign-out", "key_id", s.Key.ID)
	redirect(w, r, Prefix+"/signin", "signed-out")
}
