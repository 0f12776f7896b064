package faulttest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capsuled/internal/loadtest"
)

// faultyUpstream is a fake OpenAI-compatible upstream whose chat completions
// misbehave in the way mode names; GET /v1/models always answers.
type faultyUpstream struct {
	mode atomic.Value // string: ok, stall, close, reset, garbage, notcompletion
	ok   loadtest.FakeUpstream
}

func (f *faultyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.ok.ServeHTTP(w, r)
		return
	}
	mode := f.mode.Load().(string)
	if mode == "ok" {
		f.ok.ServeHTTP(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	switch mode {
	case "stall": // never answers; ends when capsuled gives up
		<-r.Context().Done()
	case "close", "reset": // headers and half a body, then the connection ends
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choi")
		buf.Flush()
		if mode == "reset" {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST instead of FIN
			}
		}
		conn.Close()
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("\x00\xff<html>not json at all}{\x7f"))
	case "notcompletion":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hello":"world","choices":"none"}`))
	default:
		panic("unknown mode " + mode)
	}
}

// TestUpstreamFaults runs `capsuled serve --engine upstream` against a fake
// upstream that stalls, closes or resets the connection mid-response, or
// answers garbage. Each fault gives the spec's status (504 for the stall,
// 502 otherwise) with the spec's error body within the time-out, while
// /healthz and GET /v1/keys keep answering 200 at once; afterwards a healthy
// upstream is served again.
func TestUpstreamFaults(t *testing.T) {
	t.Parallel()
	bin := capsuledBin(t)
	dir := t.TempDir()
	_, admin := createKey(t, bin, dir, "admin", "admin")
	_, chatKey := createKey(t, bin, dir, "chat", "chat")
	fake := &faultyUpstream{}
	fake.mode.Store("ok")
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	const timeout = 2 * time.Second
	p := startServer(t, bin, dir, "--engine", "upstream", "--upstream-url", up.URL+"/v1",
		"--upstream-model", "fake", "--upstream-timeout", timeout.String())
	c := &http.Client{Timeout: 30 * time.Second}
	ctx := context.Background()
	turn := map[string]any{"model": "svc-1", "messages": []map[string]any{
		{"role": "system", "content": "You are a retrieval agent. Tools: search, text_search, read, report_helpful_ids."},
		{"role": "user", "content": "Which paper introduced the transformer?"},
	}}

	cases := []struct {
		mode   string
		status int
		codes  []string
		min    time.Duration // the earliest a correct answer can come
	}{
		{"ok", http.StatusOK, nil, 0},
		{"stall", http.StatusGatewayTimeout, []string{"upstream_timeout"}, timeout},
		{"close", http.StatusBadGateway, []string{"upstream_error", "upstream_bad_reply"}, 0},
		{"reset", http.StatusBadGateway, []string{"upstream_error", "upstream_bad_reply"}, 0},
		{"garbage", http.StatusBadGateway, []string{"upstream_bad_reply"}, 0},
		{"notcompletion", http.StatusBadGateway, []string{"upstream_bad_reply"}, 0},
		{"ok", http.StatusOK, nil, 0},
	}
	for _, tc := range cases {
		fake.mode.Store(tc.mode)
		stop := make(chan struct{})
		var (
			probes  atomic.Int32
			slowest atomic.Int64
			pw      sync.WaitGroup
		)
		// Probes: /healthz and a keys request every 100 ms while the faults run.
		pw.Add(1)
		go func() {
			defer pw.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				for _, path := range []string{"/healthz", "/v1/keys"} {
					start := time.Now()
					st, body, err := call(ctx, c, "GET", p.url+path, admin, nil)
					d := time.Since(start)
					if err != nil || st != http.StatusOK {
						t.Errorf("%s during %s: %d %v %s", path, tc.mode, st, err, body)
					}
					if d > 500*time.Millisecond {
						t.Errorf("%s during %s took %v", path, tc.mode, d)
					}
					if int64(d) > slowest.Load() {
						slowest.Store(int64(d))
					}
					probes.Add(1)
				}
			}
		}()
		var wg sync.WaitGroup
		var worst atomic.Int64
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				st, body, err := call(ctx, c, "POST", p.url+"/v1/chat/completions", chatKey, turn)
				d := time.Since(start)
				if int64(d) > worst.Load() {
					worst.Store(int64(d))
				}
				if err != nil {
					t.Errorf("%s: %v", tc.mode, err)
					return
				}
				if st != tc.status {
					t.Errorf("%s: status %d, want %d: %s", tc.mode, st, tc.status, body)
					return
				}
				if d < tc.min || d > timeout+time.Second {
					t.Errorf("%s: answered after %v, want between %v and the time-out %v (+1s)", tc.mode, d, tc.min, timeout)
				}
				if tc.status != http.StatusOK {
					checkErrorBody(t, tc.mode, body, tc.codes)
				}
			}()
		}
		wg.Wait()
		time.Sleep(300 * time.Millisecond) // probes after the faults too
		close(stop)
		pw.Wait()
		t.Logf("%-13s → %d in at most %v; %d probes of /healthz and /v1/keys, all 200, slowest %v",
			tc.mode, tc.status, time.Duration(worst.Load()).Round(time.Millisecond), probes.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	}
	select {
	case err := <-p.done:
		t.Fatalf("capsuled exited: %v", err)
	default:
	}
}

// checkErrorBody asserts the spec's error body: error.message, type, param
// (null here) and code, the code one of codes.
func checkErrorBody(t *testing.T, mode string, body []byte, codes []string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message *string         `json:"message"`
			Type    *string         `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    *string         `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" ||
		e.Error.Type == nil || e.Error.Code == nil || e.Error.Param == nil {
		t.Errorf("%s: not the spec's error body: %v: %s", mode, err, body)
		return
	}
	for _, c := range codes {
		if *e.Error.Code == c {
			return
		}
	}
	t.Errorf("%s: code %q, want one of %v: %s", mode, *e.Error.Code, codes, body)
}
