package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memRow is the part of a stored memory the kill test reads back.
type memRow struct {
	ID           string  `json:"id"`
	Kind         string  `json:"kind"`
	Role         *string `json:"role"`
	Content      string  `json:"content"`
	Conversation *string `json:"conversation_id"`
}

// TestKillDuringMemoryWrites kills `capsuled serve` with SIGKILL in the
// middle of concurrent memory chat turns (model memory-extractive, each
// worker resending its whole conversation so far, as chat clients do) and
// direct memory writes, twice over one data directory. After each restart
// the database passes PRAGMA integrity_check, every acknowledged turn and
// note is there (0 lost memories), every turn is stored once within its
// conversation and every note once (no duplicates).
func TestKillDuringMemoryWrites(t *testing.T) {
	t.Parallel()
	bin := capsuledBin(t)
	dir := t.TempDir()
	_, key := createKey(t, bin, dir, "memory", "memory")
	c := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()
	const ns = "kill-ns"

	ackedTurns := map[string]string{} // content → conversation, acknowledged 200
	ackedNotes := map[string]string{} // id → content, acknowledged 201
	for round := 0; round < 2; round++ {
		p := startServer(t, bin, dir)
		if round == 0 {
			st, body, err := call(ctx, c, "GET", p.url+"/v1/models", key, nil)
			if err != nil || st != http.StatusOK || !json.Valid(body) || !strings.Contains(string(body), "memory-extractive") {
				t.Fatalf("GET /v1/models: %d %v %s", st, err, body)
			}
		}
		var (
			mu      sync.Mutex
			acked   atomic.Int32
			wg      sync.WaitGroup
			killNow = make(chan struct{})
			once    sync.Once
		)
		ack := func() {
			if acked.Add(1) >= 150 {
				once.Do(func() { close(killNow) })
			}
		}
		// Chat workers: one conversation each, the history resent every turn.
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				conv := fmt.Sprintf("conv-%d-%d", round, w)
				var msgs []map[string]any
				for i := 0; i < 1000; i++ {
					content := fmt.Sprintf("round %d worker %d turn %d: my favourite number is %d", round, w, i, round*100000+w*1000+i)
					msgs = append(msgs, map[string]any{"role": "user", "content": content})
					st, body, err := call(ctx, c, "POST", p.url+"/v1/memory/chat/completions?namespace="+ns, key, map[string]any{
						"model": "memory-extractive", "messages": msgs, "memory": map[string]any{"conversation_id": conv},
					})
					if err != nil {
						return // the server is gone
					}
					if st != http.StatusOK {
						t.Errorf("memory chat: status %d: %s", st, body)
						return
					}
					mu.Lock()
					ackedTurns[content] = conv
					mu.Unlock()
					ack()
				}
			}(w)
		}
		// Direct writers.
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 1000; i++ {
					content := fmt.Sprintf("note round %d writer %d number %d", round, w, i)
					st, body, err := call(ctx, c, "POST", p.url+"/v1/memory/namespaces/"+ns+"/memories", key, map[string]any{"content": content})
					if err != nil {
						return
					}
					if st != http.StatusCreated {
						t.Errorf("create memory: status %d: %s", st, body)
						return
					}
					var m memRow
					if err := json.Unmarshal(body, &m); err != nil || m.ID == "" || m.Content != content {
						t.Errorf("create memory: %v: %s", err, body)
						return
					}
					mu.Lock()
					ackedNotes[m.ID] = content
					mu.Unlock()
					ack()
				}
			}(w)
		}
		select {
		case <-killNow:
		case <-time.After(30 * time.Second):
			t.Fatal("the burst did not get going")
		}
		p.kill()
		wg.Wait()
		integrityCheck(t, dir)

		p = startServer(t, bin, dir)
		all := listMemories(t, c, p.url, key, ns)
		turns := map[string]int{} // conversation + role + content → count
		notes := map[string]int{} // content → count
		byID := map[string]memRow{}
		for _, m := range all {
			byID[m.ID] = m
			switch m.Kind {
			case "turn":
				conv, role := "", ""
				if m.Conversation != nil {
					conv = *m.Conversation
				}
				if m.Role != nil {
					role = *m.Role
				}
				turns[conv+"\x00"+role+"\x00"+m.Content]++
			case "note":
				notes[m.Content]++
			}
		}
		for k, n := range turns {
			if n > 1 {
				t.Errorf("round %d: turn %q stored %d times", round, k, n)
			}
		}
		for k, n := range notes {
			if n > 1 {
				t.Errorf("round %d: note %q stored %d times", round, k, n)
			}
		}
		lost := 0
		for content, conv := range ackedTurns {
			if turns[conv+"\x00user\x00"+content] != 1 {
				lost++
				t.Errorf("round %d: acknowledged turn %q of %s is lost", round, content, conv)
			}
		}
		for id, content := range ackedNotes {
			if m, ok := byID[id]; !ok || m.Content != content || m.Kind != "note" {
				lost++
				t.Errorf("round %d: acknowledged note %s (%q) is lost", round, id, content)
			}
		}
		t.Logf("round %d: %d writes acknowledged in the round (%d turns, %d notes in all); after restart %d memories, %d lost",
			round, acked.Load(), len(ackedTurns), len(ackedNotes), len(all), lost)
		p.kill()
		integrityCheck(t, dir)
	}
}

// listMemories pages through every memory of the namespace.
func listMemories(t *testing.T, c *http.Client, base, key, ns string) []memRow {
	t.Helper()
	var all []memRow
	cursor := ""
	for {
		u := base + "/v1/memory/namespaces/" + ns + "/memories?limit=200&include_superseded=true&include_expired=true"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, body, err := call(context.Background(), c, "GET", u, key, nil)
		if err != nil || st != http.StatusOK {
			t.Fatalf("list memories: %d %v %s", st, err, body)
		}
		var page struct {
			Data []memRow `json:"data"`
			Next *string  `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Data...)
		if page.Next == nil || *page.Next == "" {
			return all
		}
		cursor = *page.Next
	}
}
