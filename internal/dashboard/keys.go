package dashboard

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"capsuled/internal/auth"
	"capsuled/internal/domain"
)

// keysData is the keys page.
type keysData struct {
	CSRF    string
	Keys    []keyRow
	Scopes  []scopeOption
	Form    keyForm
	Created *createdKey
	Token   *mintedToken
	TTLs    []ttlOption
}

type keyRow struct {
	domain.Key
	Current bool // the key this session signed in with
	Memory  bool // can mint access tokens
}

type scopeOption struct {
	Value   string
	Help    string
	Checked bool
}

type keyForm struct {
	Name, Capsules, Namespaces string
	Scopes                     []string
}

type createdKey struct {
	Key    domain.Key
	Secret string
}

type mintedToken struct {
	KeyName string
	Token   string
	Info    domain.AccessToken
}

type ttlOption struct {
	Seconds int
	Label   string
}

var scopeHelp = map[domain.Scope]string{
	domain.ScopeChat:          "retrieval chat (svc-1)",
	domain.ScopeMemory:        "memory chat and access tokens",
	domain.ScopeCapsulesRead:  "query and read capsules",
	domain.ScopeCapsulesWrite: "create capsules, add and delete items",
	domain.ScopeAdmin:         "manage keys and this dashboard; implies every scope",
}

var ttls = []ttlOption{
	{900, "15 minutes"}, {3600, "1 hour"}, {4 * 3600, "4 hours"}, {86400, "24 hours"},
}

func (h *Handler) keysView(r *http.Request, s *session, f keyForm) (keysData, error) {
	keys, err := h.auth.ListKeysAs(r.Context(), s.principal())
	if err != nil {
		return keysData{}, err
	}
	d := keysData{CSRF: s.CSRF, Form: f, TTLs: ttls}
	for _, k := range keys {
		d.Keys = append(d.Keys, keyRow{Key: k, Current: k.ID == s.Key.ID,
			Memory: k.RevokedAt == nil && (slices.Contains(k.Scopes, domain.ScopeMemory) || isAdmin(k))})
	}
	for _, sc := range domain.AllScopes {
		d.Scopes = append(d.Scopes, scopeOption{Value: string(sc), Help: scopeHelp[sc], Checked: slices.Contains(f.Scopes, string(sc))})
	}
	return d, nil
}

func (h *Handler) keysPage(w http.ResponseWriter, r *http.Request, s *session) {
	d, err := h.keysView(r, s, keyForm{})
	if err != nil {
		h.internal(w, r, s, "list keys", err)
		return
	}
	h.render(w, r, http.StatusOK, "keys", view{Title: "API keys", Nav: "keys", Session: s, Data: d})
}

// splitList splits a comma- or whitespace-separated list.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	f := keyForm{
		Name:       r.PostFormValue("name"),
		Scopes:     r.PostForm["scopes"],
		Capsules:   r.PostFormValue("capsules"),
		Namespaces: r.PostFormValue("namespaces"),
	}
	in := auth.NewKey{Name: f.Name, Capsules: splitList(f.Capsules), Namespaces: splitList(f.Namespaces)}
	for _, sc := range f.Scopes {
		in.Scopes = append(in.Scopes, domain.Scope(sc))
	}
	k, secret, err := h.auth.CreateKeyAs(r.Context(), s.principal(), in)
	if err != nil {
		h.keysFormError(w, r, s, f, err)
		return
	}
	h.log.InfoContext(r.Context(), "dashboard: key created", "key_id", k.ID, "by", s.Key.ID)
	d, err := h.keysView(r, s, keyForm{})
	if err != nil {
		h.internal(w, r, s, "list keys", err)
		return
	}
	d.Created = &createdKey{Key: k, Secret: secret}
	h.render(w, r, http.StatusCreated, "keys", view{Title: "API keys", Nav: "keys", Session: s, Data: d})
}

// keysFormError shows the keys page again with the form as sent and the
// client error, or a 500 for anything else.
func (h *Handler) keysFormError(w http.ResponseWriter, r *http.Request, s *session, f keyForm, err error) {
	e, ok := domain.AsError(err)
	if !ok || e.Kind == domain.KindInternal {
		h.internal(w, r, s, "create key", err)
		return
	}
	d, lerr := h.keysView(r, s, f)
	if lerr != nil {
		h.internal(w, r, s, "list keys", lerr)
		return
	}
	h.render(w, r, statusOf(e.Kind), "keys", view{Title: "API keys", Nav: "keys", Session: s, Error: userMessage(e), Data: d})
}

func (h *Handler) revokeKeyPage(w http.ResponseWriter, r *http.Request, s *session) {
	k, err := h.auth.GetKeyAs(r.Context(), s.principal(), r.PathValue("key"))
	if err != nil {
		h.serviceError(w, r, s, "get key", err)
		return
	}
	h.render(w, r, http.StatusOK, "confirm", view{Title: "Revoke key", Nav: "keys", Session: s, Data: confirmData{
		CSRF:    s.CSRF,
		Heading: "Revoke the key “" + k.Name + "”?",
		Body: "Requests with this key (" + k.Prefix + "…) and with access tokens minted from it are refused from the next request on. " +
			"This cannot be undone." + map[bool]string{true: " You signed in with this key: revoking it signs you out.", false: ""}[k.ID == s.Key.ID],
		Action: Prefix + "/keys/" + k.ID + "/revoke",
		Button: "Revoke key",
		Back:   Prefix + "/keys",
	}})
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, s *session) {
	k, err := h.auth.RevokeKeyAs(r.Context(), s.principal(), r.PathValue("key"))
	if err != nil {
		h.serviceError(w, r, s, "revoke key", err)
		return
	}
	h.log.InfoContext(r.Context(), "dashboard: key revoked", "key_id", k.ID, "by", s.Key.ID)
	if k.ID == s.Key.ID {
		h.endSession(w, r, s)
		redirect(w, r, Prefix+"/signin", "key-revoked")
		return
	}
	redirect(w, r, Prefix+"/keys", "key-revoked")
}

func (h *Handler) mintToken(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostFormValue("key")
	if id == "" {
		h.keysFormError(w, r, s, keyForm{}, domain.Invalid("key", "choose the key to mint a token for"))
		return
	}
	k, err := h.auth.GetKeyAs(r.Context(), s.principal(), id)
	if err != nil {
		h.keysFormError(w, r, s, keyForm{}, err)
		return
	}
	if k.RevokedAt != nil {
		h.keysFormError(w, r, s, keyForm{}, &domain.Error{Kind: domain.KindConflict, Message: "the key “" + k.Name + "” is revoked"})
		return
	}
	ttl, err := strconv.Atoi(r.PostFormValue("ttl_seconds"))
	if err != nil || ttl <= 0 {
		h.keysFormError(w, r, s, keyForm{}, domain.Invalid("ttl_seconds", "choose how long the token lasts"))
		return
	}
	tok, info, err := h.auth.MintToken(r.Context(), auth.PrincipalOf(k), splitList(r.PostFormValue("namespaces")), time.Duration(ttl)*time.Second)
	if err != nil {
		h.keysFormError(w, r, s, keyForm{}, err)
		return
	}
	h.log.InfoContext(r.Context(), "dashboard: access token minted", "key_id", k.ID, "token_id", info.ID, "by", s.Key.ID)
	d, err := h.keysView(r, s, keyForm{})
	if err != nil {
		h.internal(w, r, s, "list keys", err)
		return
	}
	d.Token = &mintedToken{KeyName: k.Name, Token: tok, Info: info}
	h.render(w, r, http.StatusCreated, "keys", view{Title: "API keys", Nav: "keys", Session: s, Data: d})
}
