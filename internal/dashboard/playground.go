package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"capsuled/api"
	"capsuled/gen"
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

// buildQuery turns the form into the API's query request (gen.QueryRequest,
// for the equivalent curl command) and converts that with the API's own
// conversion, so the playground and the API apply the same rules. An
// error's Param is the form field's name (the wishlist key).
func buildQuery(f playgroundForm) (domain.Query, gen.QueryRequest, error) {
	wq := gen.QueryRequest{Query: strings.TrimSpace(f.Query)}
	if wq.Query == "" {
		return domain.Query{}, wq, domain.Invalid("query", "type a query")
	}
	if len(wq.Query) > domain.MaxQueryBytes {
		return domain.Query{}, wq, domain.Invalid("query", "the query is longer than %d bytes", domain.MaxQueryBytes)
	}
	if f.Limit != "" {
		n, err := strconv.Atoi(f.Limit)
		if err != nil || n < 1 || n > domain.MaxQueryLimit {
			return domain.Query{}, wq, domain.Invalid("limit", "limit must be a whole number from 1 to %d", domain.MaxQueryLimit)
		}
		wq.Limit = &n
	}
	var w gen.Wishlist
	empty := true
	set := func() { empty = false }
	if f.Mode != "" && f.Mode != string(domain.ModeHybrid) { // hybrid is the default: it stays out of the request
		m := gen.WishlistMode(f.Mode)
		w.Mode = &m
		set()
	}
	if len(f.Kinds) > 0 {
		kinds := make([]gen.ItemKind, len(f.Kinds))
		for i, k := range f.Kinds {
			kinds[i] = gen.ItemKind(k)
		}
		w.Kinds = &kinds
		set()
	}
	if types := splitList(f.FileTypes); len(types) > 0 {
		w.FileTypes = &types
		set()
	}
	if p := strings.TrimSpace(f.URIPrefix); p != "" {
		w.UriPrefix = &p
		set()
	}
	var err error
	if w.AddedAfter, err = parseTime("added_after", f.AddedAfter); err != nil {
		return domain.Query{}, wq, err
	}
	if w.AddedBefore, err = parseTime("added_before", f.AddedBefore); err != nil {
		return domain.Query{}, wq, err
	}
	if w.AddedAfter != nil || w.AddedBefore != nil {
		set()
	}
	if f.MaxChunksPerItem != "" {
		n, err := strconv.Atoi(f.MaxChunksPerItem)
		if err != nil {
			return domain.Query{}, wq, domain.Invalid("max_chunks_per_item", "max chunks per item must be a whole number from 1 to 100")
		}
		w.MaxChunksPerItem = &n
		set()
	}
	if f.MinScore != "" {
		v, err := strconv.ParseFloat(f.MinScore, 64)
		if err != nil {
			return domain.Query{}, wq, domain.Invalid("min_score", "min score must be a number from 0 to 1")
		}
		w.MinScore = &v
		set()
	}
	for _, line := range strings.Split(f.Metadata, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return domain.Query{}, wq, domain.Invalid("metadata", "write metadata filters as key=value, one a line")
		}
		if w.Metadata == nil {
			w.Metadata = &map[string]gen.MetadataCondition{}
		}
		var c gen.MetadataCondition
		if err := c.FromMetadataCondition0(v); err != nil {
			return domain.Query{}, wq, domain.Invalid("metadata", "%v", err)
		}
		(*w.Metadata)[k] = c
		set()
	}
	if !empty {
		wq.Wishlist = &w
	}
	q, err := api.QueryFromWire(wq)
	if e, ok := domain.AsError(err); ok {
		e2 := *e
		e2.Param = strings.TrimPrefix(e.Param, "wishlist.")
		if i := strings.IndexByte(e2.Param, '.'); i >= 0 { // metadata.<key>.<op>: the metadata field
			e2.Param = e2.Param[:i]
		}
		return q, wq, &e2
	}
	return q, wq, err
}

// curlCommand is the API request equivalent to a playground query. Every
// value from the request (host, capsule, body) is single-quoted for the
// shell; only $CAPSULED_API_KEY is left for the shell to expand.
func curlCommand(r *http.Request, public *url.URL, capsule string, wq gen.QueryRequest) string {
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
