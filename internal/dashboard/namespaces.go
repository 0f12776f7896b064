package dashboard

import (
	"bytes"
	"net/http"
	"net/url"

	"capsuled/internal/domain"
)

const memoryUnavailable = "Memory is not available on this server."

// maxMemories is how many memories a namespace page lists.
const maxMemories = 200

type namespacesData struct {
	Namespaces []domain.Namespace
}

type namespaceData struct {
	CSRF      string
	Namespace string
	Search    string
	Memories  []domain.Memory
	Limit     int
}

func (h *Handler) namespacesPage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	list, err := h.memory.ListNamespaces(r.Context())
	if err != nil {
		h.serviceError(w, r, s, "list namespaces", err)
		return
	}
	h.render(w, r, http.StatusOK, "namespaces", view{Title: "Namespaces", Nav: "namespaces", Session: s, Data: namespacesData{Namespaces: allowedNamespaces(s, list)}})
}

func (h *Handler) namespacePage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns := r.PathValue("ns")
	if err := domain.ValidateNamespace(ns); err != nil {
		h.serviceError(w, r, s, "namespace", err)
		return
	}
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	q := r.URL.Query().Get("q")
	mems, err := h.memory.ListMemories(r.Context(), ns, q, maxMemories)
	if err != nil {
		h.serviceError(w, r, s, "list memories", err)
		return
	}
	h.render(w, r, http.StatusOK, "namespace", view{Title: "Namespace " + ns, Nav: "namespaces", Session: s,
		Data: namespaceData{CSRF: s.CSRF, Namespace: ns, Search: q, Memories: mems, Limit: maxMemories}})
}

func (h *Handler) exportNamespace(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns := r.PathValue("ns")
	if err := domain.ValidateNamespace(ns); err != nil {
		h.serviceError(w, r, s, "namespace", err)
		return
	}
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	// Buffered, so that a failure is still an error page and not half a file.
	var buf bytes.Buffer
	if err := h.memory.ExportNamespace(r.Context(), ns, &buf); err != nil {
		h.serviceError(w, r, s, "export namespace", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+ns+`.jsonl"`)
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) deleteNamespacePage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns := r.PathValue("ns")
	if err := domain.ValidateNamespace(ns); err != nil {
		h.serviceError(w, r, s, "namespace", err)
		return
	}
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	h.render(w, r, http.StatusOK, "confirm", view{Title: "Delete namespace", Nav: "namespaces", Session: s, Data: confirmData{
		CSRF:    s.CSRF,
		Heading: "Delete the namespace “" + ns + "”?",
		Body:    "Every memory in it is deleted. Export it first to keep a copy. This cannot be undone.",
		Action:  Prefix + "/namespaces/" + url.PathEscape(ns) + "/delete",
		Button:  "Delete namespace",
		Back:    Prefix + "/namespaces/" + url.PathEscape(ns),
	}})
}

func (h *Handler) deleteNamespace(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns := r.PathValue("ns")
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	if err := h.memory.DeleteNamespace(r.Context(), ns); err != nil {
		h.serviceError(w, r, s, "delete namespace", err)
		return
	}
	h.log.InfoContext(r.Context(), "dashboard: namespace deleted", "namespace", ns, "by", s.Key.ID)
	redirect(w, r, Prefix+"/namespaces", "namespace-deleted")
}

func (h *Handler) deleteMemoryPage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns, id := r.PathValue("ns"), r.PathValue("id")
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	h.render(w, r, http.StatusOK, "confirm", view{Title: "Delete memory", Nav: "namespaces", Session: s, Data: confirmData{
		CSRF:    s.CSRF,
		Heading: "Delete the memory " + id + "?",
		Body:    "It is removed from the namespace “" + ns + "”. This cannot be undone.",
		Action:  Prefix + "/namespaces/" + url.PathEscape(ns) + "/memories/" + url.PathEscape(id) + "/delete",
		Button:  "Delete memory",
		Back:    Prefix + "/namespaces/" + url.PathEscape(ns),
	}})
}

func (h *Handler) deleteMemory(w http.ResponseWriter, r *http.Request, s *session) {
	if h.memory == nil {
		h.unavailable(w, r, s, "namespaces", "Namespaces", memoryUnavailable)
		return
	}
	ns := r.PathValue("ns")
	if !h.namespaceAllowed(w, r, s, ns) {
		return
	}
	if err := h.memory.DeleteMemory(r.Context(), ns, r.PathValue("id")); err != nil {
		h.serviceError(w, r, s, "delete memory", err)
		return
	}
	redirect(w, r, Prefix+"/namespaces/"+url.PathEscape(ns), "memory-deleted")
}
