package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestEngineStatus(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(up.Close)

	builtin := (&App{}).engineStatus(context.Background())
	if len(builtin) != 2 || builtin[0].Kind != "builtin" || !builtin[0].OK || builtin[1].Kind != "builtin" || !builtin[1].OK {
		t.Fatalf("builtin engines: %+v", builtin)
	}

	a := &App{cfg: Config{
		Chat:   ChatConfig{Engine: "upstream", UpstreamURL: up.URL + "/v1", UpstreamKey: "k"},
		Memory: MemoryConfig{UpstreamURL: "http://127.0.0.1:1/v1"},
	}}
	got := a.engineStatus(context.Background())
	if !got[0].OK || got[0].Kind != "upstream" || got[0].URL != up.URL+"/v1" {
		t.Errorf("healthy svc-1 upstream: %+v", got[0])
	}
	if got[1].OK || got[1].Detail == "" {
		t.Errorf("unreachable memory upstream: %+v", got[1])
	}
	a.cfg.Chat.UpstreamKey = "wrong"
	if got := a.engineStatus(context.Background()); got[0].OK {
		t.Errorf("refused upstream reported healthy: %+v", got[0])
	}
}
