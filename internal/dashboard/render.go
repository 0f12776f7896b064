package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// pages are the parsed page templates, each with the layout.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if t == nil || t.IsZero() {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		}
		return fmt.Sprint(v)
	},
	"join": func(v any) string {
		switch s := v.(type) {
		case []string:
			return strings.Join(s, ", ")
		case fmt.Stringer:
			return s.String()
		}
		return strings.Trim(fmt.Sprint(v), "[]")
	},
	"size": humanBytes,
	"score": func(f float64) string {
		return fmt.Sprintf("%.3f", f)
	},
	"prefix":    func() string { return Prefix },
	"breakable": breakable,
}

// longToken is the longest run of characters without a break opportunity
// that breakable leaves whole.
const longToken = 24

// breakable is a file name or URI, escaped, with break opportunities
// (<wbr>) where a name may wrap sensibly: after a path separator,
// underscore, hyphen or dot, and inside a run of more than longToken
// characters with none of them. A table cell then wraps a long name at
// those points only: the CSS breaks no word anywhere else, so a short
// name stays on one line.
func breakable(s string) template.HTML {
	var b strings.Builder
	run := 0
	for _, r := range s {
		if run >= longToken {
			b.WriteString("<wbr>")
			run = 0
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
		run++
		switch r {
		case '/', '\\', '_', '-', '.', '?', '&', '=', ':':
			b.WriteString("<wbr>")
			run = 0
		}
	}
	return template.HTML(b.String())
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func loadPages() (*pages, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", base, err)
		}
		p.byName[strings.TrimSuffix(base, ".html")] = t
	}
	return p, nil
}

// view is what every page template receives.
type view struct {
	Title   string
	Nav     string // the active navigation entry
	Session *session
	Version string
	Notice  string
	Error   string
	Data    any
}

// render writes a page with the layout.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	t, ok := h.pages.byName[page]
	if !ok {
		h.log.ErrorContext(r.Context(), "dashboard: no such template", "page", page)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v.Version = h.cfg.Version
	if v.Notice == "" {
		v.Notice = notices[r.URL.Query().Get("notice")]
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		h.log.ErrorContext(r.Context(), "dashboard: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	h.render(w, r, status, "error", view{Title: http.StatusText(status), Session: s, Error: msg})
}

// notices are the fixed messages a redirect can ask a page to show
// (?notice=code): codes, never text from the URL.
var notices = map[string]string{
	"signed-out":        "You have signed out.",
	"key-revoked":       "The key was revoked. Requests with it are refused from now on.",
	"capsule-created":   "The capsule was created.",
	"capsule-deleted":   "The capsule was deleted.",
	"item-deleted":      "The item was deleted.",
	"uploaded":          "The upload was received. Items are indexed in the background; reload to see their status.",
	"namespace-deleted": "The namespace was deleted.",
	"memory-deleted":    "The memory was deleted.",
}

// redirect sends the browser to a dashboard path with a notice code.
func redirect(w http.ResponseWriter, r *http.Request, p, notice string) {
	if notice != "" {
		p += "?notice=" + notice
	}
	http.Redirect(w, r, p, http.StatusSeeOther)
}

// asset serves an embedded static file.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := assetFS.ReadFile("assets/" + name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}
