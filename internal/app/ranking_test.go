package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"capsuled/internal/app"
)

// Ranking in small capsules with the real embedding model, through the HTTP
// API (issue 20, points 4 and 8): a single low-coverage keyword match does
// not beat a clearly better dense match, the limit is never padded with
// unrelated chunks, and recency reorders relevant hits only.

// rankClient talks to one capsule of a test server.
type rankClient struct {
	t            *testing.T
	root, admin  string
	capsule      string
	lastResponse string
}

type rankHit struct {
	URI     string  `json:"uri"`
	Score   float64 `json:"score"`
	Content string  `json:"content"`
}

// realModelCapsule starts a server with the real model and creates a
// capsule; it skips without the model.
func realModelCapsule(t *testing.T, capsule string) *rankClient {
	t.Helper()
	onnx := os.Getenv("CAPSULED_ONNX_DIR")
	if onnx == "" || os.Getenv("CAPSULED_ORT_LIB") == "" {
		t.Skip("needs the embedding model (CAPSULED_ONNX_DIR, CAPSULED_ORT_LIB; run .ci/fetch-model.sh)")
	}
	base, admin := serveWithAdmin(t, app.Config{Capsules: app.CapsulesConfig{ONNXDir: onnx}})
	c := &rankClient{t: t, root: strings.TrimSuffix(base, "v1/"), admin: admin, capsule: capsule}
	c.post("v1/capsules", map[string]any{"name": capsule}, http.StatusCreated)
	return c
}

func (c *rankClient) post(path string, body any, status int) []byte {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", c.root+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+c.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		c.t.Fatalf("POST %s: %d, want %d: %s", path, resp.StatusCode, status, out)
	}
	return out
}

// add stores a text item under uri, authored at authored when it is set.
func (c *rankClient) add(uri, text string, authored time.Time) {
	c.t.Helper()
	body := map[string]any{"content": text, "uri": uri}
	if !authored.IsZero() {
		body["time_authored"] = authored.UTC().Format(time.RFC3339)
	}
	var it struct{ Status string }
	if err := json.Unmarshal(c.post("v1/capsules/"+c.capsule+"/items?wait=true&wait_timeout_seconds=60", body, http.StatusCreated), &it); err != nil || it.Status != "ready" {
		c.t.Fatalf("item %s: %+v %v", uri, it, err)
	}
}

// query returns the hits' URIs, best first (each once), and the hits.
func (c *rankClient) query(body map[string]any) ([]string, []rankHit) {
	c.t.Helper()
	var hits []rankHit
	out := c.post("capsules/"+c.capsule+"/query", body, http.StatusOK)
	if err := json.Unmarshal(out, &hits); err != nil {
		c.t.Fatal(err)
	}
	var uris []string
	seen := map[string]bool{}
	for _, h := range hits {
		if !seen[h.URI] {
			seen[h.URI] = true
			uris = append(uris, h.URI)
		}
	}
	c.lastResponse = fmt.Sprintf("%+v", hits)
	return uris, hits
}

func (c *rankClient) first(body map[string]any, want string) {
	c.t.Helper()
	uris, _ := c.query(body)
	if len(uris) == 0 || uris[0] != want {
		c.t.Errorf("query %v: ranks %v, want %s first (%s)", body, uris, want, c.lastResponse)
	}
}

// The report's case: three documents, and a question none of whose words
// the right one uses. Semantic search ranks the tides first; hybrid used to
// rank the volcanoes first, their one keyword match ("rises") scoring a
// third of the query's keyword weight.
func TestSmallCapsuleFusionDocuments(t *testing.T) {
	t.Parallel()
	c := realModelCapsule(t, "science")
	c.add("doc:tides", "Tides are the regular movements of the ocean's surface along a coast. "+
		"They are caused mainly by the gravitational pull of the Moon, and to a lesser degree the Sun, on the Earth's oceans. "+
		"Most coastlines see two high tides and two low tides about every 25 hours. "+
		"When the Sun and the Moon line up, the pull is strongest and the spring tides are larger.", time.Time{})
	c.add("doc:photosynthesis", "Photosynthesis is how green plants, algae and some bacteria turn light into chemical energy. "+
		"Chlorophyll in the leaves absorbs sunlight, which drives the conversion of carbon dioxide and water into glucose. "+
		"Oxygen is released as a by-product. "+
		"Almost every food chain on Earth depends on this process.", time.Time{})
	c.add("doc:volcanoes", "A volcano forms where molten rock from deep inside the Earth reaches the surface. "+
		"Magma rises through cracks in the crust and collects in a chamber below the mountain. "+
		"When the pressure of the gases becomes too great, the volcano erupts lava, ash and rock. "+
		"Many volcanoes lie along the edges of tectonic plates, as around the Pacific.", time.Time{})
	q := "why does the sea rise and fall"
	c.first(map[string]any{"query": q, "wishlist": map[string]any{"mode": "semantic"}}, "doc:tides")
	c.first(map[string]any{"query": q}, "doc:tides")
	// A query the keywords do answer still ranks by them.
	c.first(map[string]any{"query": "magma chamber pressure"}, "doc:volcanoes")
	c.first(map[string]any{"query": "chlorophyll glucose"}, "doc:photosynthesis")
}

// Notes: a few one-line notes, a question that shares only an incidental
// word with the wrong one.
func TestSmallCapsuleFusionNotes(t *testing.T) {
	t.Parallel()
	c := realModelCapsule(t, "notes")
	notes := map[string]string{
		"note:dentist":  "Dentist moved my check-up to Thursday at 3pm, bring the insurance card.",
		"note:shopping": "Buy oat milk, eggs, rye bread and coffee beans on the way home.",
		"note:plumber":  "Call the plumber about the leaking kitchen tap before the weekend.",
		"note:museum":   "See the new exhibition at the city museum with Ana, tickets are free on Sundays.",
		"note:car":      "The car is due for its annual inspection in March.",
	}
	for uri, text := range notes {
		c.add(uri, text, time.Time{})
	}
	c.first(map[string]any{"query": "when should I see someone about my teeth"}, "note:dentist")
	c.first(map[string]any{"query": "what groceries do I need"}, "note:shopping")
	c.first(map[string]any{"query": "leaking tap"}, "note:plumber")
}

// Chat-log lines: one item per line of a team chat. "today" is the only
// word of the first question that the log holds, in a line about lunch; the
// line that answers it shares none of its words.
func TestSmallCapsuleFusionChatLog(t *testing.T) {
	t.Parallel()
	c := realModelCapsule(t, "chatlog")
	lines := []string{
		"maria: the deploy is blocked until the database migration finishes",
		"tom: lunch at the thai place today?",
		"maria: reminder that the office is closed on friday for the holiday",
		"li: I pushed the fix for the login timeout, can someone review it",
		"tom: the printer on the second floor is out of toner again",
		"li: standup moves to 10:30 tomorrow because of the all-hands",
		"ana: the client call went well, they want the quote by monday",
		"tom: who took the last coffee filter",
	}
	for i, l := range lines {
		c.add(fmt.Sprintf("chat:%d", i), l, time.Time{})
	}
	c.first(map[string]any{"query": "what is holding up the deployment today"}, "chat:0")
	c.first(map[string]any{"query": "where are we eating today"}, "chat:1")
	c.first(map[string]any{"query": "is the building closed at the end of the week"}, "chat:2")
	c.first(map[string]any{"query": "who can review my code"}, "chat:3")
}

// No relevance, no result: hybrid and semantic queries return only chunks
// with some relevance, never the limit padded with score-0 chunks; and
// recency reorders relevant hits only, so `recency: {}` does not lift new,
// unrelated items above an older relevant one.
func TestNoZeroRelevancePadding(t *testing.T) {
	t.Parallel()
	c := realModelCapsule(t, "padding")
	now := time.Now()
	c.add("doc:old-tides", "Tides are the regular movements of the ocean's surface, caused by the gravitational pull of the Moon and the Sun.", now.AddDate(-1, 0, 0))
	for i, s := range []string{
		"Quarterly invoice for office chairs, payable within thirty days.",
		"The team's favourite pizza topping is mushroom and olive.",
		"Password reset instructions: open settings, then security.",
		"Parking permits for the north garage are renewed every January.",
		"Knitting pattern: cast on forty stitches and purl two rows.",
		"Remember to water the fern on the windowsill twice a week.",
	} {
		c.add(fmt.Sprintf("doc:new-%d", i), s, now.Add(-time.Duration(i)*time.Hour))
	}
	q := "what makes the ocean tides happen"
	for _, mode := range []string{"hybrid", "semantic", "keyword"} {
		_, hits := c.query(map[string]any{"query": q, "limit": 10, "wishlist": map[string]any{"mode": mode}})
		for _, h := range hits {
			if h.Score <= 0 {
				t.Errorf("%s: a hit of score %v: %s", mode, h.Score, c.lastResponse)
			}
		}
		if len(hits) == 0 || hits[0].URI != "doc:old-tides" {
			t.Errorf("%s: %s", mode, c.lastResponse)
		}
	}
	// Keyword mode: only the chunks that match.
	if uris, _ := c.query(map[string]any{"query": "tides moon", "limit": 10, "wishlist": map[string]any{"mode": "keyword"}}); len(uris) != 1 {
		t.Errorf("keyword: %v", uris)
	}
	// Recency with its defaults keeps the relevant (older) item first, and
	// the scores of the new ones stay below their relevance.
	uris, hits := c.query(map[string]any{"query": q, "limit": 10, "wishlist": map[string]any{"recency": map[string]any{}}})
	if len(uris) == 0 || uris[0] != "doc:old-tides" {
		t.Errorf("recency {}: %v (%s)", uris, c.lastResponse)
	}
	_, plain := c.query(map[string]any{"query": q, "limit": 10})
	relevance := map[string]float64{}
	for _, h := range plain {
		relevance[h.URI] = h.Score
	}
	for _, h := range hits {
		if h.Score > relevance[h.URI]+1e-9 {
			t.Errorf("recency raised %s from %v to %v", h.URI, relevance[h.URI], h.Score)
		}
	}
	// Among equally relevant items, recency does reorder: the same text
	// authored now and two years ago.
	c.add("doc:tides-new", "Tides are regular movements of the ocean surface, caused by the gravitational pull of the Moon and Sun.", now)
	c.first(map[string]any{"query": q, "wishlist": map[string]any{"recency": map[string]any{}}}, "doc:tides-new")
}
