package dashboard

import (
	"net/http"
	"strconv"
)

type statusData struct {
	Status Status
	Keys   []Figure
}

func (h *Handler) statusPage(w http.ResponseWriter, r *http.Request, s *session) {
	st := Status{Version: h.cfg.Version}
	if h.status != nil {
		st = h.status(r.Context())
		if st.Version == "" {
			st.Version = h.cfg.Version
		}
	}
	var figs []Figure
	if keys, err := h.auth.ListKeysAs(r.Context(), s.principal()); err == nil {
		active := 0
		for _, k := range keys {
			if k.RevokedAt == nil {
				active++
			}
		}
		figs = append(figs, Figure{"Active API keys", strconv.Itoa(active)}, Figure{"Revoked API keys", strconv.Itoa(len(keys) - active)})
	} else {
		h.log.WarnContext(r.Context(), "dashboard status: list keys", "err", err)
	}
	if h.capsules != nil {
		if cs, err := h.capsules.ListCapsules(r.Context()); err == nil {
			cs = allowedCapsules(s, cs)
			items, chunks := 0, 0
			for _, c := range cs {
				items += c.ItemCount
				chunks += c.ChunkCount
			}
			figs = append(figs, Figure{"Capsules", strconv.Itoa(len(cs))}, Figure{"Items", strconv.Itoa(items)}, Figure{"Chunks", strconv.Itoa(chunks)})
		}
	}
	if h.memory != nil {
		if ns, err := h.memory.ListNamespaces(r.Context()); err == nil {
			ns = allowedNamespaces(s, ns)
			mems := 0
			for _, n := range ns {
				mems += n.MemoryCount
			}
			figs = append(figs, Figure{"Namespaces", strconv.Itoa(len(ns))}, Figure{"Memories", strconv.Itoa(mems)})
		}
	}
	h.render(w, r, http.StatusOK, "status", view{Title: "Status", Nav: "status", Session: s, Data: statusData{Status: st, Keys: figs}})
}
