package loadtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseMix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
		n       int
	}{
		{"models=5,tokens=1,healthz=2", "", 3},
		{"models", "", 1},
		{"models=0,healthz=1", "", 1},
		{"", "no operation", 0},
		{"models=0", "no operation", 0},
		{"nope=1", "unknown operation", 0},
		{"models=-1", "not a number", 0},
		{"models=x", "not a number", 0},
	} {
		m, err := ParseMix(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseMix(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(m) != tc.n {
			t.Errorf("ParseMix(%q) = %v, %v; want %d ops", tc.in, m, err, tc.n)
		}
	}
}

func TestMixPickFollowsWeights(t *testing.T) {
	t.Parallel()
	m, err := ParseMix("models=3,healthz=1")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := 0; i < 1000; i++ {
		counts[m.pick(float64(i)/1000)]++
	}
	if counts["models"] != 750 || counts["healthz"] != 250 {
		t.Fatalf("counts %v, want 750/250", counts)
	}
}

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.3.2.1:1", true},
		{"http://localhost:9", true},
		{"http://[::1]:80", true},
		{"http://10.0.0.1:80", false},
		{"http://192.168.1.1", false},
		{"http://example.com", false},
		{"ftp://127.0.0.1", false},
		{"::", false},
	} {
		if err := CheckLoopback(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if q := quantile(d, 0.5); q != 50*time.Millisecond {
		t.Errorf("p50 %v", q)
	}
	if q := quantile(d, 0.99); q != 99*time.Millisecond {
		t.Errorf("p99 %v", q)
	}
	if q := quantile(nil, 0.5); q != 0 {
		t.Errorf("empty p50 %v", q)
	}
}

func TestRSSOfThisProcess(t *testing.T) {
	t.Parallel()
	kb, err := RSSKB(os.Getpid())
	if err != nil || kb <= 0 {
		t.Fatalf("RSSKB = %d, %v", kb, err)
	}
}

// TestRunIsOpenLoop runs 1 s at 200 req/s against a server that takes 50 ms
// a request: an open-loop generator still starts about 200 requests (a
// closed loop of a few workers would start far fewer) and the latencies
// include the server's delay.
func TestRunIsOpenLoop(t *testing.T) {
	t.Parallel()
	up := &FakeUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		up.ServeHTTP(w, r)
	}))
	defer srv.Close()
	mix, err := ParseMix("healthz=1,models=1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{URL: srv.URL, Rate: 200, Duration: time.Second, Mix: mix, PID: os.Getpid(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total.Requests != 200 {
		t.Errorf("requests %d, want 200", res.Total.Requests)
	}
	// /healthz is not served by the fake: 404s count as errors.
	var health, models OpResult
	for _, o := range res.Ops {
		switch o.Op {
		case "healthz":
			health = o
		case "models":
			models = o
		}
	}
	if models.Errors != 0 || models.Statuses["200"] != models.Requests || health.Statuses["404"] != health.Errors || health.Errors == 0 {
		t.Errorf("models %+v healthz %+v", models, health)
	}
	if res.Total.P50ms < 50 {
		t.Errorf("p50 %.1f ms, want ≥ the server's 50 ms", res.Total.P50ms)
	}
	if res.RSSStartKB <= 0 || res.RSSEndKB <= 0 || res.RSSPeakKB < res.RSSEndKB {
		t.Errorf("rss %d %d %d", res.RSSStartKB, res.RSSEndKB, res.RSSPeakKB)
	}
}

func TestRunRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	mix, _ := ParseMix("healthz")
	for _, cfg := range []Config{
		{URL: "http://10.1.2.3:80", Rate: 1, Duration: time.Second, Mix: mix},
		{URL: "http://127.0.0.1:1", Rate: 0, Duration: time.Second, Mix: mix},
		{URL: "http://127.0.0.1:1", Rate: 1, Duration: 2 * time.Hour, Mix: mix},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) ran", cfg)
		}
	}
}

func TestFakeUpstream(t *testing.T) {
	t.Parallel()
	up := &FakeUpstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m\"x","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := jsonDecode(resp, &out); err != nil {
		t.Fatal(err)
	}
	if out.Model != `m"x` || out.Choices[0].FinishReason != "tool_calls" || out.Choices[0].Message.ToolCalls[0].Function.Name != "search" || up.Requests() != 1 {
		t.Fatalf("%+v", out)
	}
	resp2, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad json: %d", resp2.StatusCode)
	}
}

// TestAttackOpsAreCountedApart: the attack operations send the hostile
// bodies they name, and Result.Ordinary counts only the other operations.
func TestAttackOpsAreCountedApart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{} // Content-Type and size class of each attack body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		switch {
		case strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/"):
			seen["multipart"]++
		case len(b) > 4<<20:
			seen["oversized"]++
		case bytes.Contains(b, []byte(strings.Repeat(`{"eq":`, 100))):
			seen["deep"]++
		case bytes.Count(b, []byte(",")) > 150000:
			seen["values"]++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	mix := Mix{{Op: "healthz", Weight: 1}}
	for _, op := range AttackOps() {
		if !IsAttack(op) || Ops[op] == nil {
			t.Fatalf("%s is not an operation", op)
		}
		mix = append(mix, Weighted{Op: op, Weight: 1})
	}
	res, err := Run(context.Background(), Config{URL: srv.URL, Rate: 50, Duration: time.Second, Mix: mix, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	attacks := 0
	for _, o := range res.Ops {
		if IsAttack(o.Op) {
			attacks += o.Requests
		}
	}
	if res.Ordinary.Requests+attacks != res.Total.Requests || res.Ordinary.Requests == 0 || attacks == 0 {
		t.Fatalf("ordinary %d + attacks %d != total %d", res.Ordinary.Requests, attacks, res.Total.Requests)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"multipart", "oversized", "deep", "values"} {
		if seen[k] == 0 {
			t.Errorf("no %s attack body arrived (%v)", k, seen)
		}
	}
}
