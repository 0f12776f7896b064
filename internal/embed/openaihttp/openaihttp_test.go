package openaihttp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"capsuled/internal/domain"
	"capsuled/internal/embed/embedtest"
	"capsuled/internal/vecmath"
)

func TestSuiteAgainstFake(t *testing.T) {
	f := newFakeServer(t, 384, nil)
	e, err := New(context.Background(), Config{URL: f.URL + "/v1/", Model: "all-MiniLM-L6-v2", BatchSize: 2, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	embedtest.Run(t, e, embedtest.Options{MinCosine: -1, SkipSimilarity: true})
	if f.maxBatch.Load() > 2 {
		t.Errorf("a request carried %d inputs, BatchSize is 2", f.maxBatch.Load())
	}
	if got := f.lastAuth.Load(); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if e.ModelID() != "openai:all-MiniLM-L6-v2" {
		t.Errorf("ModelID %q", e.ModelID())
	}
}

func TestProbeDimension(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, 7, nil)
	e, err := New(context.Background(), Config{URL: f.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != 7 {
		t.Fatalf("Dim %d, want 7", e.Dim())
	}
	vs, err := e.Embed(context.Background(), []string{"a", "b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if vecmath.Cosine(vs[0], vs[2]) < 0.999999 || vecmath.Cosine(vs[0], vs[1]) > 0.99 {
		t.Error("vectors not in input order")
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	write := func(status int, body string, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}
	}
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantKind   domain.Kind
		wantMsg    string
		retryAfter int
	}{
		// The upstream's failures are mapped by internal/oai's one table
		// (tested there for every call); one row shows the embedder passes
		// them on.
		{"rate limited", write(429, `slow down`, "Retry-After", "3"), domain.KindRateLimited, "slow down", 3},
		{"garbage", write(200, `<html>hello</html>`), domain.KindUpstream, "does not follow the protocol", 0},
		{"wrong count", write(200, `{"data":[]}`), domain.KindUpstream, "0 embeddings for 1 inputs", 0},
		{"wrong dim", write(200, `{"data":[{"index":0,"embedding":[1,2]}]}`), domain.KindUpstream, "dimension 2", 0},
		{"bad index", write(200, `{"data":[{"index":5,"embedding":[1,2,3]}]}`), domain.KindUpstream, "index 5", 0},
		{"zero vector", write(200, `{"data":[{"index":0,"embedding":[0,0,0]}]}`), domain.KindUpstream, "all zeros", 0},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, domain.KindTimeout, "did not answer", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeServer(t, 3, tt.handler)
			e, err := New(context.Background(), Config{URL: f.URL, Model: "m", Dim: 3, Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(context.Background(), []string{"x"})
			de, ok := domain.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a *domain.Error", err, err)
			}
			if de.Kind != tt.wantKind || !strings.Contains(de.Error(), tt.wantMsg) || de.RetryAfter != tt.retryAfter {
				t.Fatalf("got %s %q retry %d; want %s containing %q retry %d", de.Kind, de.Error(), de.RetryAfter, tt.wantKind, tt.wantMsg, tt.retryAfter)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, 3, nil)
	url := f.URL
	f.Close()
	e, err := New(context.Background(), Config{URL: url, Model: "m", Dim: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"x"})
	if k := domain.KindOf(err); k != domain.KindUnavailable {
		t.Fatalf("kind %s (%v), want unavailable", k, err)
	}
	if _, err := New(context.Background(), Config{URL: url, Model: "m"}); domain.KindOf(err) != domain.KindUnavailable {
		t.Fatalf("probe of a closed server: %v", err)
	}
}

func TestCallerCancel(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, 3, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	e, err := New(context.Background(), Config{URL: f.URL, Model: "m", Dim: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the caller's deadline", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no url", Config{Model: "m", Dim: 3}},
		{"no model", Config{URL: "http://127.0.0.1:1", Dim: 3}},
		{"bad scheme", Config{URL: "ftp://x", Model: "m", Dim: 3}},
	}
	for _, tt := range tests {
		if _, err := New(context.Background(), tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}
