package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Op builds one request of an operation against base (the server root).
type Op func(ctx context.Context, base string, p Params) (*http.Request, error)

// Params are what the operations need besides the server's address.
type Params struct {
	Key       string // API key (Authorization: Bearer)
	Capsule   string // capsule of the query operation
	Namespace string // namespace of the memory operation
}

// Ops are the operations a mix can name.
var Ops = map[string]Op{
	"healthz": get("/healthz", false),
	"models":  get("/v1/models", true),
	"tokens":  post(func(Params) string { return "/v1/tokens" }, `{"ttl_seconds":600}`),
	"chat": post(func(Params) string { return "/v1/chat/completions" },
		`{"model":"svc-1","messages":[{"role":"system","content":"You are a retrieval agent. Tools: search, text_search, read, report_helpful_ids."},{"role":"user","content":"Which paper introduced the transformer?"}],"tools":[{"type":"function","function":{"name":"dummy"}}]}`),
	"query": post(func(p Params) string { return "/capsules/" + p.Capsule + "/query" },
		`{"query":"what is a retrieval model","limit":5}`),
	"memory": post(func(p Params) string { return "/v1/memory/chat/completions?namespace=" + p.Namespace },
		`{"model":"memory-extractive","messages":[{"role":"user","content":"What did I say about the load test?"}]}`),
}

// The attack operations (bench load --attack) send bodies the server must
// refuse cheaply: JSON nested 9,990 deep, a multipart body to a JSON route,
// a 5 MiB memory chat (over the 4 MiB limit), and a body of 200,000 values.
var attackOps = map[string]Op{
	"attack-deep": post(func(p Params) string { return "/capsules/" + p.Capsule + "/query" },
		`{"query":"x","wishlist":{"metadata":{"a":`+strings.Repeat(`{"eq":`, 9990)+`1`+strings.Repeat(`}`, 9990)+`}}}`),
	"attack-multipart": withType(post(func(Params) string { return "/v1/chat/completions" },
		"--xxxx\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n"+strings.Repeat("x", 1<<20)+"\r\n--xxxx--\r\n"),
		"multipart/form-data; boundary=xxxx"),
	"attack-oversized": post(func(p Params) string { return "/v1/memory/chat/completions?namespace=" + p.Namespace },
		`{"model":"memory-extractive","messages":[`+strings.Repeat(`{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 420)+`"},`, 1024)+`{"role":"user","content":"x"}]}`),
	"attack-values": post(func(Params) string { return "/v1/chat/completions" },
		`{"model":"svc-1","messages":[{"role":"user","content":"x"}],"allowed_token_ids":[`+strings.Repeat("1,", 200000)+`1]}`),
}

// AttackOps lists the attack operations, sorted.
func AttackOps() []string {
	out := make([]string, 0, len(attackOps))
	for n := range attackOps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsAttack reports whether op is an attack operation.
func IsAttack(op string) bool { return attackOps[op] != nil }

func init() {
	for n, op := range attackOps {
		Ops[n] = op
	}
}

func withType(op Op, contentType string) Op {
	return func(ctx context.Context, base string, p Params) (*http.Request, error) {
		r, err := op(ctx, base, p)
		if err == nil {
			r.Header.Set("Content-Type", contentType)
		}
		return r, err
	}
}

func get(path string, auth bool) Op {
	return func(ctx context.Context, base string, p Params) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err == nil && auth {
			r.Header.Set("Authorization", "Bearer "+p.Key)
		}
		return r, err
	}
}

func post(path func(Params) string, body string) Op {
	return func(ctx context.Context, base string, p Params) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path(p), strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+p.Key)
		return r, nil
	}
}

// Mix is a weighted choice of operations.
type Mix []Weighted

// Weighted is one operation of a mix and its weight.
type Weighted struct {
	Op     string
	Weight float64
}

// ParseMix reads "models=5,tokens=1,healthz=2" (weights need not sum to 1).
func ParseMix(s string) (Mix, error) {
	var m Mix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		weight := 1.0
		if ok {
			if _, err := fmt.Sscanf(w, "%g", &weight); err != nil || weight < 0 {
				return nil, fmt.Errorf("mix %q: weight of %s is not a number ≥ 0", s, name)
			}
		}
		if Ops[name] == nil {
			return nil, fmt.Errorf("mix %q: unknown operation %q (want one of %s)", s, name, strings.Join(OpNames(), ", "))
		}
		if weight > 0 {
			m = append(m, Weighted{Op: name, Weight: weight})
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("mix %q: no operation with a positive weight", s)
	}
	return m, nil
}

// OpNames lists the operations a mix can name, sorted.
func OpNames() []string {
	out := make([]string, 0, len(Ops))
	for n := range Ops {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// pick returns the operation for u in [0,1).
func (m Mix) pick(u float64) string {
	total := 0.0
	for _, w := range m {
		total += w.Weight
	}
	x := u * total
	for _, w := range m {
		if x < w.Weight {
			return w.Op
		}
		x -= w.Weight
	}
	return m[len(m)-1].Op
}
