package bench

import (
	"context"
	"database/sql"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the database/sql driver of the real-vector check
)

// participationRatio is (Σλ)²/Σλ² of the vectors' covariance spectrum,
// from its trace and Frobenius norm: how many directions the variance
// effectively spreads over.
func participationRatio(vs [][]float32) float64 {
	d := len(vs[0])
	mean := make([]float64, d)
	for _, v := range vs {
		for j, x := range v {
			mean[j] += float64(x) / float64(len(vs))
		}
	}
	c := make([]float64, d*d)
	x := make([]float64, d)
	for _, v := range vs {
		for j := range x {
			x[j] = float64(v[j]) - mean[j]
		}
		for a := range d {
			row := c[a*d : (a+1)*d]
			for b := range d {
				row[b] += x[a] * x[b]
			}
		}
	}
	tr, fro := 0.0, 0.0
	for a := range d {
		tr += c[a*d+a]
		for b := range d {
			fro += c[a*d+b] * c[a*d+b]
		}
	}
	return tr * tr / fro
}

// TestSynthSpectrum checks that the synthetic vectors of SciFact's
// passages spread their variance over about as few directions as a
// model's do (all-MiniLM-L6-v2: 71 on SciFact's chunks), and the flat ones
// over far more; with CAPSULED_REAL_VECTORS (a capsuled.db that `bench
// retrieval` built on SciFact with the model) it measures the model's too.
// The data: CAPSULED_SCIFACT, else the shared folder beside the repository.
func TestSynthSpectrum(t *testing.T) {
	dir := os.Getenv("CAPSULED_SCIFACT")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "data", "beir", "scifact")
	}
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl.gz")); err != nil {
		t.Skipf("no SciFact corpus: %v (set CAPSULED_SCIFACT)", err)
	}
	passages, err := scalePassages(dir)
	if err != nil {
		t.Fatal(err)
	}
	passages = passages[:min(3000, len(passages))]
	ratio := func(decay float64) float64 {
		vs, err := newSynthEmbedder(384, "x", decay).Embed(context.Background(), passages)
		if err != nil {
			t.Fatal(err)
		}
		return participationRatio(vs)
	}
	flat, decayed := ratio(0), ratio(synthDecay)
	t.Logf("participation ratio over %d passages: synthetic %.1f, flat %.1f", len(passages), decayed, flat)
	if decayed < 50 || decayed > 110 {
		t.Errorf("synthetic vectors: participation ratio %.1f, want 50–110 (a model's: 71)", decayed)
	}
	if flat < 200 {
		t.Errorf("flat synthetic vectors: participation ratio %.1f, want above 200", flat)
	}
	if db := os.Getenv("CAPSULED_REAL_VECTORS"); db != "" {
		real := readRealVectors(t, db)
		pr := participationRatio(real)
		t.Logf("model vectors: participation ratio %.1f over %d chunks", pr, len(real))
		if math.Abs(decayed-pr) > math.Abs(flat-pr) {
			t.Errorf("the synthetic vectors (%.1f) are further from the model's (%.1f) than the flat ones (%.1f)", decayed, pr, flat)
		}
	}
}

// readRealVectors reads the chunk vectors of a SQLite capsuled.db.
func readRealVectors(t *testing.T, path string) [][]float32 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT vector FROM chunks WHERE vector IS NOT NULL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]float32
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil || len(out) == 0 {
		t.Fatalf("%d vectors: %v", len(out), err)
	}
	return out
}
