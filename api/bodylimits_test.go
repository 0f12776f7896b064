package api

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileBodies are bodies shaped to make validation expensive, each as large
// as MaxBodyBytes allows (4 MiB by default): the probe's 9,990-deep wishlist,
// the deepest nesting the depth check lets through, filled to the size
// limit, and very many chat messages.
func hostileBodies(limit int) []struct {
	name, method, path, body string
	status                   int
} {
	deep := func(n int) string {
		return `{"query":"x","wishlist":{"metadata":{"a":` + strings.Repeat(`{"eq":`, n) + `1` + strings.Repeat(`}`, n) + `}}}`
	}
	// A comb: chains of nested arrays MaxJSONDepth-5 deep (the body, the
	// wishlist, metadata, its key and the operator take five levels),
	// repeated until the body is full or holds as many containers as
	// allowed.
	chain := strings.Repeat("[", MaxJSONDepth-5) + "1" + strings.Repeat("]", MaxJSONDepth-5)
	var comb strings.Builder
	comb.WriteString(`{"query":"x","wishlist":{"metadata":{"a":{"in":[`)
	for n := 6; comb.Len() < limit-len(chain)-16 && n+2*MaxJSONDepth < MaxJSONContainers; n += MaxJSONDepth - 5 {
		comb.WriteString(chain + ",")
	}
	comb.WriteString(`1]}}}}`)
	msg := `{"role":"user","content":[{"type":"text","text":[[[[[[[[1]]]]]]]]}]},`
	messages := func(fits func(n, values int) bool) string {
		var b strings.Builder
		b.WriteString(`{"model":"svc-1","messages":[`)
		values := 4
		for fits(b.Len(), values) {
			b.WriteString(msg)
			values += 14
		}
		b.WriteString(`{"role":"user","content":"x"}]}`)
		return b.String()
	}
	// Scalars under a oneOf, as many as the value limit lets through.
	var scalars strings.Builder
	scalars.WriteString(`{"query":"x","wishlist":{"metadata":{"a":{"in":[`)
	for n := 8; n+8 < MaxJSONValues; n++ {
		scalars.WriteString(`1,`)
	}
	scalars.WriteString(`1]}}}}`)
	full := messages(func(n, _ int) bool { return n < limit-len(msg)-64 })
	// As many messages as the value and container limits let through (each
	// holds 14 values, 11 of them containers).
	most := messages(func(_, v int) bool { return v+30 < MaxJSONValues && v/14*11+30 < MaxJSONContainers })
	return []struct {
		name, method, path, body string
		status                   int
	}{
		{"query wishlist nested 9,990 deep", "POST", "/capsules/docs/query", deep(9990), http.StatusBadRequest},
		{"query wishlist nested to the depth limit", "POST", "/capsules/docs/query", deep(MaxJSONDepth - 4), http.StatusBadRequest},
		{"query wishlist filled with chains at the depth limit", "POST", "/capsules/docs/query", comb.String(), http.StatusBadRequest},
		{"query wishlist filled with scalars at the value limit", "POST", "/capsules/docs/query", scalars.String(), http.StatusBadRequest},
		{"chat messages filling the size limit", "POST", "/v1/chat/completions", full, http.StatusRequestEntityTooLarge},
		{"chat messages at the container limit", "POST", "/v1/chat/completions", most, http.StatusBadRequest},
		{"memory chat nested 3,000 deep", "POST", "/v1/memory/chat/completions?namespace=n", `{"model":"m","messages":[{"role":"user","content":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}]}`, http.StatusBadRequest},
	}
}

// TestHostileBodiesAllocateLittle checks that each hostile body, at the size
// limit, is refused (400 or 413) and allocates at most 64 MiB (on top of the
// body itself). Allocation, unlike time, is the same on a loaded machine;
// BenchmarkHostileBodies reports the time.
func TestHostileBodiesAllocateLittle(t *testing.T) {
	h, _ := newTestServer(t, Deps{})
	for _, hb := range hostileBodies(4 << 20) {
		t.Run(hb.name, func(t *testing.T) {
			if len(hb.body) > 4<<20 {
				t.Fatalf("the body is %d bytes, over the limit", len(hb.body))
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			w := serve(h, hb.method, hb.path, "k", hb.body)
			runtime.ReadMemStats(&after)
			if w.Code != hb.status {
				t.Fatalf("status %d, want %d: %.300s", w.Code, hb.status, w.Body)
			}
			if n := len(w.Body.Bytes()); n > 2048 {
				t.Errorf("the error body is %d bytes", n)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of body, %.1f MiB allocated: %s", len(hb.body), float64(alloc)/(1<<20), w.Body)
			if alloc > 64<<20 {
				t.Fatalf("%.1f MiB allocated, over 64 MiB", float64(alloc)/(1<<20))
			}
		})
	}
}

// BenchmarkHostileBodies measures the gate (depth check and validation) on
// each hostile body: the target is at most 50 ms and 64 MiB per request
// (cpu-ms/op is the process's CPU time per request, B/op the allocation).
//
//	go test ./api -run '^$' -bench HostileBodies -benchmem
func BenchmarkHostileBodies(b *testing.B) {
	h, _ := newTestServer(b, Deps{})
	for _, hb := range hostileBodies(4 << 20) {
		b.Run(hb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(hb.body)))
			cpu0 := cpuTime(b)
			for b.Loop() {
				r := httptest.NewRequest(hb.method, hb.path, strings.NewReader(hb.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer k")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != hb.status {
					b.Fatalf("status %d, want %d: %.300s", w.Code, hb.status, w.Body)
				}
			}
			// CPU time (user+system, GC included) per request: on a
			// shared machine wall time is mostly waiting for a core.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
