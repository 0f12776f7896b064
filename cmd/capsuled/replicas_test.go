package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReplicas starts two capsuled serve processes on one PostgreSQL
// database (a fresh schema of CAPSULED_TEST_POSTGRES) and one shared data
// directory (the blobs), as replicas behind a load balancer run, and shows
// that what one does the other sees at once: an item added through one is
// found through the other, a key revoked through one is refused by the
// other, memory written through one is read through the other; then that
// killing one (SIGKILL) in the middle of ingestion loses no item: the
// ingestion jobs (river's, in the database) that the dead one held are
// rescued once their lease passes, and the other finishes them.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two capsuled processes")
	}
	base := os.Getenv("CAPSULED_TEST_POSTGRES")
	if base == "" {
		t.Skip("CAPSULED_TEST_POSTGRES is not set: run `bash .ci/postgres.sh` and source .cache/pg/env.sh")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "capsuled")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	store, db := replicaSchema(t, base)
	data := filepath.Join(dir, "data")
	const lease = 3 * time.Second

	a := startReplica(t, bin, store, data, lease)
	admin := regexp.MustCompile(`csk_[0-9A-Za-z]{43}`).FindString(a.stderr.String())
	if admin == "" {
		t.Fatalf("no admin key printed: %s", a.stderr.String())
	}
	b := startReplica(t, bin, store, data, lease)
	if strings.Contains(b.stderr.String(), "csk_") {
		t.Fatal("the second replica made another admin key")
	}

	t.Run("item added through one is found through the other", func(t *testing.T) {
		a.call(t, admin, "POST", "/v1/capsules", map[string]any{"name": "shared"}, 201, nil)
		b.call(t, admin, "GET", "/v1/capsules/shared", nil, 200, nil) // b loads the (empty) capsule
		var hits []map[string]any
		b.call(t, admin, "POST", "/capsules/shared/query", map[string]any{"query": "okapi"}, 200, &hits)
		if len(hits) != 0 {
			t.Fatalf("hits in an empty capsule: %v", hits)
		}
		var it struct{ ID, Status string }
		a.call(t, admin, "POST", "/v1/capsules/shared/items?wait=true", map[string]any{
			"content": "The okapi is a forest giraffe of the Congo.", "uri": "okapi"}, 0, &it)
		waitReady(t, a, admin, "shared", it.ID)
		b.call(t, admin, "POST", "/capsules/shared/query", map[string]any{"query": "okapi forest"}, 200, &hits)
		if len(hits) != 1 || hits[0]["uri"] != "okapi" {
			t.Fatalf("query through the other replica: %v", hits)
		}
		a.call(t, admin, "DELETE", "/v1/capsules/shared/items/"+it.ID, nil, 204, nil)
		b.call(t, admin, "POST", "/capsules/shared/query", map[string]any{"query": "okapi forest"}, 200, &hits)
		if len(hits) != 0 {
			t.Fatalf("deleted item found through the other replica: %v", hits)
		}
	})

	t.Run("key revoked through one is refused by the other", func(t *testing.T) {
		var k struct {
			Key    struct{ ID string } `json:"key"`
			Secret string              `json:"secret"`
		}
		a.call(t, admin, "POST", "/v1/keys", map[string]any{"name": "replica", "scopes": []string{"capsules:read"}}, 201, &k)
		b.call(t, k.Secret, "GET", "/v1/capsules", nil, 200, nil)
		a.call(t, admin, "DELETE", "/v1/keys/"+k.Key.ID, nil, 0, nil)
		b.call(t, k.Secret, "GET", "/v1/capsules", nil, 401, nil)
	})

	t.Run("memory written through one is read through the other", func(t *testing.T) {
		st := a.call(t, admin, "POST", "/v1/memory/namespaces/replicas/memories", map[string]any{"content": "The spare key is under the blue flowerpot."}, 0, nil)
		if st == http.StatusNotImplemented {
			t.Skip("this build has no memory service")
		}
		if st != http.StatusCreated {
			t.Fatalf("write memory: %d", st)
		}
		var found struct {
			Data []struct{ Content string } `json:"data"`
		}
		b.call(t, admin, "GET", "/v1/memory/namespaces/replicas/memories?q="+url.QueryEscape("where is the spare key"), nil, 200, &found)
		if len(found.Data) == 0 || !strings.Contains(found.Data[0].Content, "blue flowerpot") {
			t.Fatalf("memory through the other replica: %+v", found)
		}
	})

	t.Run("killing one in the middle of ingestion loses no item", func(t *testing.T) {
		a.call(t, admin, "POST", "/v1/capsules", map[string]any{"name": "bulk"}, 201, nil)
		const n = 60
		para := strings.Repeat("Replicas share one queue; a dead one's claims expire and the other takes them. ", 40)
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for i := w; i < n; i += 6 {
					a.call(t, admin, "POST", "/v1/capsules/bulk/items", map[string]any{
						"content": fmt.Sprintf("Document %d.\n\n%s\n\n%s", i, para, strings.Repeat(fmt.Sprintf("word%d ", i), 6000)),
						"uri":     fmt.Sprint("doc-", i)}, 0, nil)
				}
			})
		}
		wg.Wait()
		// Kill a while items are still queued or being indexed.
		// countBy runs a query of (key, count) rows and returns the counts.
		countBy := func(query string) map[string]int {
			rows, err := db.Query(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for rows.Next() {
				var s string
				var c int
				if err := rows.Scan(&s, &c); err != nil {
					t.Fatal(err)
				}
				out[s] = c
			}
			return out
		}
		counts := func() map[string]int {
			return countBy("SELECT status, count(*) FROM items i JOIN capsules c ON c.id = i.capsule_id WHERE c.name = 'bulk' GROUP BY status")
		}
		for deadline := time.Now().Add(60 * time.Second); counts()["ready"] < 3 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		a.kill()
		before := counts()
		t.Logf("killed one replica with items %v", before)
		if before["ready"] == n {
			t.Skip("ingestion finished before the kill; nothing to test on this machine")
		}
		deadline := time.Now().Add(3*time.Minute + lease)
		for counts()["ready"] < n {
			if time.Now().After(deadline) {
				t.Fatalf("items did not finish on the surviving replica: %v", counts())
			}
			time.Sleep(100 * time.Millisecond)
		}
		// No chunk is orphaned or doubled: each ready item holds exactly
		// its chunks.
		var bad int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM items i WHERE i.chunk_count <> (SELECT count(*) FROM chunks k WHERE k.item_id = i.id)`).Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("%d items whose chunk count is not their chunks (%v)", bad, err)
		}
		// Every job ends completed: none is left running, waiting or
		// discarded (river marks a job completed just after its step).
		jobs := func() map[string]int {
			return countBy(`SELECT state::text, count(*) FROM river_job WHERE kind = 'ingest_item' AND args->>'item_id' IN
				(SELECT i.id FROM items i JOIN capsules c ON c.id = i.capsule_id WHERE c.name = 'bulk') GROUP BY state`)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			j := jobs()
			if j["completed"] == n && len(j) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("jobs by state: %v, want %d completed", j, n)
			}
		}
		var hits []map[string]any
		b.call(t, admin, "POST", "/capsules/bulk/query", map[string]any{"query": "word7"}, 200, &hits)
		if len(hits) == 0 || hits[0]["uri"] != "doc-7" {
			t.Fatalf("query on the surviving replica: %v", hits)
		}
		if !strings.Contains(b.stderr.String(), "item ready") && before["indexing"] > 0 {
			t.Logf("surviving replica log: %s", b.stderr.String())
		}
	})
}

// replicaSchema creates a fresh schema, dropped at the end, and returns a
// store URL whose search_path starts with it and a connection to it.
func replicaSchema(t *testing.T, base string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "replicas_" + hex.EncodeToString(b)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET search_path TO "+schema+",public"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
		conn.Close(ctx)
	})
	return u.String(), conn
}

type replica struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
}

// startReplica runs capsuled serve on a free port with the store and data
// directory, and waits until it listens.
func startReplica(t *testing.T, bin, store, data string, lease time.Duration) *replica {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--store", store,
		"--embedder", "off", "--ingest-workers", "1", "--ingest-lease", lease.String(), "--log-level", "debug")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	r := &replica{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = r.stderr
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	listening := regexp.MustCompile(`addr=http://(127\.0\.0\.1:\d+)`)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m := listening.FindStringSubmatch(r.stderr.String()); m != nil {
			r.url = "http://" + m[1]
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica did not start: %s", r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *replica) kill() {
	if r.cmd.Process != nil && r.cmd.ProcessState == nil {
		r.cmd.Process.Signal(syscall.SIGKILL)
		r.cmd.Wait()
	}
}

// call sends a JSON request; want 0 accepts any 2xx. It returns the status.
func (r *replica) call(t *testing.T, key, method, path string, body any, want int, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, r.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotImplemented && want == 0 {
		return resp.StatusCode
	}
	if (want == 0 && resp.StatusCode/100 != 2) || (want != 0 && resp.StatusCode != want) {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

func waitReady(t *testing.T, r *replica, key, capsule, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var it struct{ Status string }
		r.call(t, key, "GET", "/v1/capsules/"+capsule+"/items/"+id, nil, 200, &it)
		if it.Status == "ready" {
			return
		}
	}
	t.Fatalf("item %s not ready", id)
}

// TestIndexesCommands defers the chunk search indexes of a PostgreSQL store
// and builds them again, and refuses what it cannot do.
func TestIndexesCommands(t *testing.T) {
	for _, args := range [][]string{
		{"indexes"},         // a subcommand
		{"indexes", "drop"}, // defer or build
		{"indexes", "defer", "--store", "sqlite"}, // PostgreSQL only
		{"indexes", "build", "--store", "postgres://x", "extra"},
		{"indexes", "defer", "--store", "postgres://x", "--hnsw-m", "24"}, // a build flag
		{"indexes", "build", "--store", "postgres://x", "--hnsw-ef-construction", "-1"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 1 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 1 and a message", args, code, stderr)
		}
	}
	base := os.Getenv("CAPSULED_TEST_POSTGRES")
	if base == "" {
		t.Skip("CAPSULED_TEST_POSTGRES is not set: source .cache/pg/env.sh")
	}
	store, conn := replicaSchema(t, base)
	exists := func() bool {
		t.Helper()
		var ok bool
		if err := conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT FROM pg_indexes WHERE indexname = 'chunks_hnsw' AND schemaname = (current_schemas(false))[1])").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	code, out, stderr := runCLI(t, "indexes", "defer", "--store", store)
	if code != 0 || !strings.Contains(out, "chunks_hnsw") {
		t.Fatalf("defer: %d %q %q", code, out, stderr)
	}
	if exists() {
		t.Fatal("chunks_hnsw still exists after defer")
	}
	if code, out, _ := runCLI(t, "indexes", "defer", "--store", store); code != 0 || !strings.Contains(out, "no index") {
		t.Errorf("defer again: %d %q", code, out)
	}
	if code, _, stderr := runCLI(t, "indexes", "build", "--store", store, "--maintenance-work-mem", "lots"); code != 1 || !strings.Contains(stderr, "maintenance_work_mem") {
		t.Errorf("build with a bad maintenance_work_mem: %d %q", code, stderr)
	}
	code, out, stderr = runCLI(t, "indexes", "build", "--store", store, "--workers", "2", "--maintenance-work-mem", "128MB")
	if code != 0 || !strings.Contains(out, "built chunks_hnsw") {
		t.Fatalf("build: %d %q %q", code, out, stderr)
	}
	if !exists() {
		t.Fatal("chunks_hnsw missing after build")
	}
	if code, out, _ := runCLI(t, "indexes", "build", "--store", store); code != 0 || !strings.Contains(out, "no deferred index") {
		t.Errorf("build again: %d %q", code, out)
	}
	// Other HNSW parameters: refused outside pgvector's bounds, else the
	// index is rebuilt with them (the one not given is kept).
	if code, _, stderr := runCLI(t, "indexes", "build", "--store", store, "--hnsw-m", "40"); code != 1 || !strings.Contains(stderr, "ef_construction 64: want at least twice m") {
		t.Errorf("build with m 40 over ef_construction 64: %d %q", code, stderr)
	}
	code, out, stderr = runCLI(t, "indexes", "build", "--store", store, "--hnsw-m", "24", "--hnsw-ef-construction", "128")
	if code != 0 || !strings.Contains(out, "chunks_hnsw: m 24, ef_construction 128") || !strings.Contains(out, "built chunks_hnsw") {
		t.Fatalf("build with m 24, ef_construction 128: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "indexes", "build", "--store", store, "--hnsw-ef-construction", "100")
	if code != 0 || !strings.Contains(out, "chunks_hnsw: m 24, ef_construction 100") {
		t.Fatalf("build with ef_construction 100: %d %q %q", code, out, stderr)
	}
	var def string
	if err := conn.QueryRow(context.Background(), "SELECT pg_get_indexdef(to_regclass('chunks_hnsw'))").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "m='24', ef_construction='100'") {
		t.Errorf("chunks_hnsw after the rebuilds: %q", def)
	}
}
