package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// playgroundForm is the query playground's form, as sent (GET parameters).
type playgroundForm struct {
	Capsule          string
	Query            string
	Limit            string
	Mode             string
	Kinds            []string
	FileTypes        string
	URIPrefix        string
	AddedAfter       string
	AddedBefore      string
	MaxChunksPerItem string
	MinScore         string
	Metadata         string // key=value lines
}

type playgroundData struct {
	Form     playgroundForm
	Capsules []domain.Capsule
	Modes    []string
	Ran      bool
	Hits     []domain.Hit
	Curl     string
}

// wireWishlist is the wishlist as the capsule query takes it (openapi.yaml
// Wishlist), for the equivalent curl command.
type wireWishlist struct {
	Mode             string            `json:"mode,omitempty"`
	Kinds            []string          `json:"kinds,omitempty"`
	FileTypes        []string          `json:"file_types,omitempty"`
	URIPrefix        string            `json:"uri_prefix,omitempty"`
	AddedAfter       string            `json:"added_after,omitempty"`
	AddedBefore      string            `json:"added_before,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	MaxChunksPerItem int               `json:"max_chunks_per_item,omitempty"`
	MinScore         float64           `json:"min_score,omitempty"`
}

type wireQuery struct {
	Query    string        `json:"query"`
	Limit    int           `json:"limit,omitempty"`
	Wishlist *wireWishlist `json:"wishlist,omitempty"`
}

func parseTime(param, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, domain.Invalid(param, "%q is not a date or an RFC 3339 time", v)
}

// buildQuery turns the form into a domain query and its wire form.
func buildQuery(f playgroundForm) (domain.Query, wireQuery, error) {
	q := domain.Query{Text: strings.TrimSpace(f.Query), Limit: domain.DefaultQueryLimit}
	wq := wireQuery{Query: q.Text}
	ww := wireWishlist{}
	if q.Text == "" {
		return q, wq, domain.Invalid("query", "type a query")
	}
	if len(q.Text) > domain.MaxQueryBytes {
		return q, wq, domain.Invalid("query", "the query is longer than %d bytes", domain.MaxQueryBytes)
	}
	if f.Limit != "" {
		n, err := strconv.Atoi(f.Limit)
		if err != nil || n < 1 || n > domain.MaxQueryLimit {
			return q, wq, domain.Invalid("limit", "limit must be a whole number from 1 to %d", domain.MaxQueryLimit)
		}
		q.Limit, wq.Limit = n, n
	}
	switch m := domain.SearchMode(f.Mode); m {
	case "", domain.ModeHybrid:
	case domain.ModeSemantic, domain.ModeKeyword:
		q.Wishlist.Mode, ww.Mode = m, string(m)
	default:
		return q, wq, domain.Invalid("mode", "mode must be hybrid, semantic or keyword")
	}
	for _, k := range f.Kinds {
		switch domain.ItemKind(k) {
		case domain.ItemText, domain.ItemFile:
			q.Wishlist.Kinds = append(q.Wishlist.Kinds, domain.ItemKind(k))
			ww.Kinds = append(ww.Kinds, k)
		default:
			return q, wq, domain.Invalid("kinds", "kind must be text or file")
		}
	}
	q.Wishlist.FileTypes = splitList(f.FileTypes)
	ww.FileTypes = q.Wishlist.FileTypes
	q.Wishlist.URIPrefix = strings.TrimSpace(f.URIPrefix)
	ww.URIPrefix = q.Wishlist.URIPrefix
	var err error
	if q.Wishlist.AddedAfter, err = parseTime("added_after", f.AddedAfter); err != nil {
		return q, wq, err
	}
	if q.Wishlist.AddedBefore, err = parseTime("added_before", f.AddedBefore); err != nil {
		return q, wq, err
	}
	if t := q.Wishlist.AddedAfter; t != nil {
		ww.AddedAfter = t.UTC().Format(time.RFC3339)
	}
	if t := q.Wishlist.AddedBefore; t != nil {
		ww.AddedBefore = t.UTC().Format(time.RFC3339)
	}
	if f.MaxChunksPerItem != "" {
		n, err := strconv.Atoi(f.MaxChunksPerItem)
		if err != nil || n < 1 || n > 100 {
			return q, wq, domain.Invalid("max_chunks_per_item", "max chunks per item must be a whole number from 1 to 100")
		}
		q.Wishlist.MaxChunksPerItem, ww.MaxChunksPerItem = n, n
	}
	if f.MinScore != "" {
		v, err := strconv.ParseFloat(f.MinScore, 64)
		if err != nil || v < 0 || v > 1 {
			return q, wq, domain.Invalid("min_score", "min score must be a number from 0 to 1")
		}
		q.Wishlist.MinScore, ww.MinScore = v, v
	}
	for _, line := range strings.Split(f.Metadata, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return q, wq, domain.Invalid("metadata", "write metadata filters as key=value, one a line")
		}
		q.Wishlist.Metadata = append(q.Wishlist.Metadata, domain.MetadataFilter{Key: k, Op: domain.OpEq, Value: v})
		if ww.Metadata == nil {
			ww.Metadata = map[string]string{}
		}
		ww.Metadata[k] = v
	}
	if b, _ := json.Marshal(ww); string(b) != "{}" {
		wq.Wishlist = &ww
	}
	return q, wq, nil
}

// curlCommand is the API request equivalent to a playground query. Every
// value from the request (host, capsule, body) is single-quoted for the
// shell; only $CAPSULED_API_KEY is left for the shell to expand.
func curlCommand(r *http.Request, public *url.URL, capsule string, wq wireQuery) string {
	base := "http://" + r.Host
	switch {
	case public != nil:
		base = public.Scheme + "://" + public.Host
	case r.TLS != nil:
		base = "https://" + r.Host
	}
	body, _ := json.Marshal(wq)
	u := base + "/capsules/" + url.PathEscape(capsule) + "/query"
	return "curl -sS " + shellQuote(u) + " \\\n" +
		"  -H \"Authorization: Bearer $CAPSULED_API_KEY\" \\\n" +
		"  -H 'Content-Type: application/json' \\\n" +
		"  -d " + shellQuote(string(body))
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (h *Handler) playgroundPage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "playground", "Query playground", capsulesUnavailable)
		return
	}
	qs := r.URL.Query()
	f := playgroundForm{
		Capsule: qs.Get("capsule"), Query: qs.Get("query"), Limit: qs.Get("limit"), Mode: qs.Get("mode"),
		Kinds: qs["kinds"], FileTypes: qs.Get("file_types"), URIPrefix: qs.Get("uri_prefix"),
		AddedAfter: qs.Get("added_after"), AddedBefore: qs.Get("added_before"),
		MaxChunksPerItem: qs.Get("max_chunks_per_item"), MinScore: qs.Get("min_score"), Metadata: qs.Get("metadata"),
	}
	list, err := h.capsules.ListCapsules(r.Context())
	if err != nil {
		h.serviceError(w, r, s, "list capsules", err)
		return
	}
	d := playgroundData{Form: f, Capsules: allowedCapsules(s, list), Modes: []string{"hybrid", "semantic", "keyword"}}
	v := view{Title: "Query playground", Nav: "playground", Session: s}
	status := http.StatusOK
	if f.Capsule != "" || f.Query != "" {
		q, wq, err := buildQuery(f)
		switch {
		case err != nil:
		case f.Capsule == "":
			err = domain.Invalid("capsule", "choose a capsule")
		case domain.ValidateCapsuleName(f.Capsule) != nil:
			err = domain.ValidateCapsuleName(f.Capsule)
		case !s.principal().CanCapsule(f.Capsule):
			err = &domain.Error{Kind: domain.KindForbidden, Code: "capsule_not_allowed", Param: "capsule",
				Message: fmt.Sprintf("the key you signed in with may not use the capsule %q", f.Capsule)}
		}
		if err == nil {
			d.Curl = curlCommand(r, h.public, f.Capsule, wq)
			d.Hits, err = h.capsules.Query(r.Context(), f.Capsule, q)
			d.Ran = err == nil
		}
		if err != nil {
			e, ok := domain.AsError(err)
			if !ok || e.Kind == domain.KindInternal {
				h.internal(w, r, s, "query", err)
				return
			}
			v.Error, status = userMessage(e), statusOf(e.Kind)
		}
	}
	v.Data = d
	h.render(w, r, status, "playground", v)
}
