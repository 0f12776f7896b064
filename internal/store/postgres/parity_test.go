package postgres_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capsuled/internal/capsule"
	"capsuled/internal/domain"
	"capsuled/internal/store/postgres"
	"capsuled/internal/store/sqlite"
)

// parityCorpus is a small capsule: texts with topics that overlap in words,
// metadata and authored times for the wishlist filters.
var parityCorpus = []struct {
	uri, text, topic string
	year             int
}{
	{"doc://bees", "Honey bees pollinate flowering plants and make honey from nectar in the hive.", "biology", 2019},
	{"doc://wasps", "Wasps are predators of other insects; unlike bees they make no honey.", "biology", 2020},
	{"doc://ants", "Ant colonies farm aphids for honeydew and defend their nest with formic acid.", "biology", 2021},
	{"doc://volcano", "A volcano erupts when magma rises through the crust and pressure is released.", "geology", 2018},
	{"doc://quake", "Earthquakes release stress along faults in the crust; seismometers record the waves.", "geology", 2022},
	{"doc://tides", "Ocean tides follow the pull of the moon and the sun on the water of the earth.", "physics", 2017},
	{"doc://orbit", "The moon orbits the earth in about twenty-seven days, the earth orbits the sun in a year.", "physics", 2023},
	{"doc://go", "Go programs start goroutines cheaply; channels carry values between goroutines.", "computing", 2021},
	{"doc://sql", "PostgreSQL and SQLite are relational databases; both answer SQL queries over tables.", "computing", 2024},
	{"doc://index", "An inverted index maps each term to the documents that contain it, for BM25 ranking.", "computing", 2024},
	{"doc://vectors", "Vector search finds the nearest embeddings by cosine similarity, often with an HNSW graph.", "computing", 2025},
	{"doc://bread", "Bread rises because yeast ferments sugar and releases carbon dioxide in the dough.", "cooking", 2016},
	{"doc://cheese", "Cheese is made by curdling milk with rennet and ageing the curds in a cave.", "cooking", 2015},
	{"doc://honeycake", "A honey cake needs honey, flour, eggs and a slow oven; bees would approve.", "cooking", 2020},
	{"doc://long", strings.Repeat("The earth's crust moves slowly over the mantle, and mountains rise where plates meet. ", 30) +
		"Rivers carry sediment from the mountains to the sea.", "geology", 2019},
}

// parityQueries are the queries compared, each in every mode.
var parityQueries = []struct {
	name string
	text string
	wish domain.Wishlist
}{
	{"honey", "honey bees", domain.Wishlist{}},
	{"moon earth", "the moon and the earth", domain.Wishlist{}},
	{"databases", "SQL databases ranking", domain.Wishlist{}},
	{"crust", "crust of the earth", domain.Wishlist{MaxChunksPerItem: 1}},
	{"topic eq", "honey", domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "topic", Op: domain.OpEq, Value: "cooking"}}}},
	{"year gte", "earth sun moon", domain.Wishlist{Metadata: []domain.MetadataFilter{{Key: "year", Op: domain.OpGte, Value: 2020.0}}}},
	{"uri prefix", "cosine vector index", domain.Wishlist{URIPrefix: "doc://v"}},
	{"authored after", "bees wasps ants", domain.Wishlist{AuthoredAfter: ptr(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))}},
	{"min score", "goroutines channels", domain.Wishlist{MinScore: 0.05}},
}

func ptr[T any](v T) *T { return &v }

// paritySvc fills a capsule service on st with the corpus, one item at a
// time in the same order (ids sort alike on both backends).
func paritySvc(t *testing.T, st capsule.Store) *capsule.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := capsule.New(capsule.Config{Store: st, Embedder: capsule.NewFakeEmbedder(64), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if _, err := svc.CreateCapsule(ctx, "parity", ""); err != nil {
		t.Fatal(err)
	}
	for _, d := range parityCorpus {
		at := time.Date(d.year, 6, 1, 0, 0, 0, 0, time.UTC)
		it, _, err := svc.AddItem(ctx, "parity", capsule.NewItem{Kind: domain.ItemText, Text: d.text, URI: d.uri,
			TimeAuthored: &at, Metadata: map[string]any{"topic": d.topic, "year": d.year}})
		if err != nil {
			t.Fatal(err)
		}
		it, err = svc.WaitItem(ctx, "parity", it.ID, 30*time.Second)
		if err != nil || it.Status != domain.StatusReady {
			t.Fatalf("item %s: %v %+v", d.uri, err, it)
		}
	}
	return svc
}

// hitKey names a hit the same way on both backends (ids differ).
type parityHit struct {
	key   string // uri#idx
	score float64
}

func parityHits(t *testing.T, svc *capsule.Service, q domain.Query) []parityHit {
	t.Helper()
	hits, err := svc.Query(context.Background(), "parity", q)
	if err != nil {
		t.Fatalf("%q: %v", q.Text, err)
	}
	out := make([]parityHit, len(hits))
	for i, h := range hits {
		out[i] = parityHit{fmt.Sprintf("%s#%d", h.Item.URI, h.Idx), h.Score}
	}
	return out
}

// TestQueryParity puts the same items through the capsule service on SQLite
// and on PostgreSQL (with the same deterministic fake embedder) and shows
// that every query gives the same hits, in the same order up to ties, with
// scores within a tolerance: exact for semantic search (the same vectors),
// and within keywordTol for keyword and hybrid search, where the two BM25
// implementations (SQLite FTS5 with the porter stemmer; pg_textsearch with
// PostgreSQL's english configuration) differ slightly in IDF and document
// length. Limits above the number of matches keep cut-offs out of the
// comparison.
func TestQueryParity(t *testing.T) {
	t.Parallel()
	pg := openFresh(t, postgres.Options{})
	if pg.FullText() != postgres.FullTextBM25 {
		t.Skip("the database has no pg_textsearch: tsvector ranking is not BM25, so keyword scores are not comparable")
	}
	lite, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capsuled.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	a, b := paritySvc(t, lite.Capsules()), paritySvc(t, pg.Capsules())

	// Score tolerances, in the [0, 1] score space: semantic scores are the
	// same cosines; BM25 differs in the IDF of frequent terms (up to 0.084
	// measured on this corpus for keyword scores, halved by hybrid's mix).
	tol := map[domain.SearchMode]float64{domain.ModeSemantic: 1e-6, domain.ModeKeyword: 0.1, domain.ModeHybrid: 0.05}
	for _, q := range parityQueries {
		for _, mode := range []domain.SearchMode{domain.ModeKeyword, domain.ModeSemantic, domain.ModeHybrid} {
			t.Run(q.name+"/"+string(mode), func(t *testing.T) {
				w := q.wish
				w.Mode = mode
				query := domain.Query{Text: q.text, Limit: 50, Wishlist: w}
				got, want := parityHits(t, b, query), parityHits(t, a, query)
				if len(got) == 0 && mode != domain.ModeKeyword {
					t.Fatal("no hits")
				}
				compareHits(t, want, got, tol[mode], tol[mode])
			})
		}
	}
}

// compareHits fails unless sqlite and postgres hold the same hits with
// scores within tol, ordered the same up to ties (hits whose sqlite scores
// are within tie of each other may swap: the tests pass the score
// tolerance, as scores that close may cross between the backends).
func compareHits(t *testing.T, sqliteHits, pgHits []parityHit, tol, tie float64) {
	t.Helper()
	if len(sqliteHits) != len(pgHits) {
		t.Fatalf("sqlite %d hits, postgres %d:\n sqlite   %v\n postgres %v", len(sqliteHits), len(pgHits), sqliteHits, pgHits)
	}
	pgScore := map[string]float64{}
	pgRank := map[string]int{}
	for i, h := range pgHits {
		pgScore[h.key], pgRank[h.key] = h.score, i
	}
	worst := 0.0
	for _, h := range sqliteHits {
		s, ok := pgScore[h.key]
		if !ok {
			t.Fatalf("%s is a hit on sqlite, not on postgres:\n sqlite   %v\n postgres %v", h.key, sqliteHits, pgHits)
		}
		worst = max(worst, math.Abs(s-h.score))
		if math.Abs(s-h.score) > tol {
			t.Errorf("%s: sqlite score %.4f, postgres %.4f (tolerance %g)", h.key, h.score, s, tol)
		}
	}
	// Order: for any two hits that sqlite ranks apart by more than tie,
	// postgres ranks them the same way.
	for i := range sqliteHits {
		for j := i + 1; j < len(sqliteHits); j++ {
			x, y := sqliteHits[i], sqliteHits[j]
			if x.score-y.score > tie && pgRank[x.key] > pgRank[y.key] {
				t.Errorf("order: sqlite ranks %s (%.4f) above %s (%.4f), postgres below", x.key, x.score, y.key, y.score)
			}
		}
	}
	t.Logf("%d hits, largest score difference %.2g", len(sqliteHits), worst)
}
