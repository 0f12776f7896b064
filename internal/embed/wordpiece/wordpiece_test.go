package wordpiece

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// modelDir is the sentence-transformers folder of all-MiniLM-L6-v2, from
// CAPSULED_MODEL_DIR (see .ci/fetch-model.sh).
func modelDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CAPSULED_MODEL_DIR")
	if dir == "" {
		t.Skip("CAPSULED_MODEL_DIR is not set: run .ci/fetch-model.sh and source .cache/env.sh to test against the real vocabulary")
	}
	return dir
}

func loadModel(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Load(modelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type golden struct {
	Text    string   `json:"text"`
	MaxLen  int      `json:"max_len"`
	IDs     []int64  `json:"ids"`
	Offsets [][2]int `json:"offsets"`
	Count   int      `json:"count"`
}

func readGolden(t *testing.T) []golden {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []golden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// TestGolden compares with ids and offsets produced by the Hugging Face
// tokenizers package on the model's own tokenizer.json (testdata/gen_golden.py).
func TestGolden(t *testing.T) {
	t.Parallel()
	tok := loadModel(t)
	for _, g := range readGolden(t) {
		name := g.Text
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			enc := tok.Encode(g.Text, g.MaxLen)
			if !slices.Equal(enc.IDs, g.IDs) {
				t.Errorf("ids\n got %v\nwant %v\ntokens %q", enc.IDs, g.IDs, tok.Tokens(g.Text))
			}
			if !slices.Equal(enc.Offsets, g.Offsets) {
				t.Errorf("offsets\n got %v\nwant %v", enc.Offsets, g.Offsets)
			}
			if n := tok.CountTokens(g.Text); n != g.Count {
				t.Errorf("CountTokens = %d, want %d", n, g.Count)
			}
			if len(enc.AttentionMask) != len(enc.IDs) || len(enc.TypeIDs) != len(enc.IDs) {
				t.Errorf("mask/type lengths %d/%d, want %d", len(enc.AttentionMask), len(enc.TypeIDs), len(enc.IDs))
			}
		})
	}
}

// tinyVocab is a vocabulary small enough to reason about by hand.
func tinyVocab(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := New([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
		"un", "##aff", "##able", "hello", "world", ",", "!", "cafe", "中", "a", "##a", ".", "##b"})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncodeTiny(t *testing.T) {
	t.Parallel()
	tok := tinyVocab(t)
	tests := []struct {
		name    string
		text    string
		maxLen  int
		ids     []int64
		offsets [][2]int
	}{
		{"empty", "", 0, []int64{2, 3}, [][2]int{{}, {}}},
		{"pieces", "unaffable", 0, []int64{2, 5, 6, 7, 3}, [][2]int{{}, {0, 2}, {2, 5}, {5, 9}, {}}},
		{"case and punct", "Hello, WORLD!", 0, []int64{2, 8, 10, 9, 11, 3}, [][2]int{{}, {0, 5}, {5, 6}, {7, 12}, {12, 13}, {}}},
		{"accents", "Café", 0, []int64{2, 12, 3}, [][2]int{{}, {0, 5}, {}}},
		{"cjk", "a中a", 0, []int64{2, 14, 13, 14, 3}, [][2]int{{}, {0, 1}, {1, 4}, {4, 5}, {}}},
		{"unknown word", "hellox world", 0, []int64{2, 1, 9, 3}, [][2]int{{}, {0, 6}, {7, 12}, {}}},
		{"truncation", "hello world hello", 4, []int64{2, 8, 9, 3}, [][2]int{{}, {0, 5}, {6, 11}, {}}},
		{"truncation to specials", "hello", 1, []int64{2, 3}, [][2]int{{}, {}}},
		{"added token", "hello[SEP]world", 0, []int64{2, 8, 3, 9, 3}, [][2]int{{}, {0, 5}, {5, 10}, {10, 15}, {}}},
		{"controls dropped", "hel\x00lo\u200b", 0, []int64{2, 8, 3}, [][2]int{{}, {0, 6}, {}}},
		{"long word", strings.Repeat("a", 101), 0, []int64{2, 1, 3}, [][2]int{{}, {0, 101}, {}}},
		{"hundred chars", strings.Repeat("a", 100), 0, append(append([]int64{2, 14}, slices.Repeat([]int64{15}, 99)...), 3), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enc := tok.Encode(tt.text, tt.maxLen)
			if !slices.Equal(enc.IDs, tt.ids) {
				t.Errorf("ids = %v, want %v", enc.IDs, tt.ids)
			}
			if tt.offsets != nil && !slices.Equal(enc.Offsets, tt.offsets) {
				t.Errorf("offsets = %v, want %v", enc.Offsets, tt.offsets)
			}
			if tt.maxLen == 0 {
				if n := tok.CountTokens(tt.text); n != len(tt.ids)-2 {
					t.Errorf("CountTokens = %d, want %d", n, len(tt.ids)-2)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "vocab.txt")
	if err := os.WriteFile(bad, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
	}{
		{"missing", filepath.Join(dir, "nope")},
		{"no specials", bad},
		{"dir without vocab", t.TempDir()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Load(tt.path); err == nil {
				t.Fatal("Load succeeded, want error")
			}
		})
	}
}

func TestLoadTokenizerJSONMatchesVocab(t *testing.T) {
	t.Parallel()
	dir := modelDir(t)
	a, err := Load(filepath.Join(dir, "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := "Tokenizers from vocab.txt and tokenizer.json agree, naïvely 中文."
	if x, y := a.Encode(text, 0).IDs, b.Encode(text, 0).IDs; !slices.Equal(x, y) {
		t.Fatalf("vocab.txt %v != tokenizer.json %v", x, y)
	}
}

func checkEncoding(t *testing.T, text string, enc Encoding) {
	t.Helper()
	prev := 0
	for i, o := range enc.Offsets {
		if i == 0 || i == len(enc.Offsets)-1 {
			if o != [2]int{} {
				t.Fatalf("special offsets %v", o)
			}
			continue
		}
		if o[0] < 0 || o[1] > len(text) || o[0] >= o[1] || o[0] < prev {
			t.Fatalf("offset %d = %v out of order or range (len %d, prev %d)", i, o, len(text), prev)
		}
		prev = o[0]
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "Café 中文 😀", "a\x00b\u200bc", "[CLS]x[SEP", strings.Repeat("ab", 80), "\xff\xfe"} {
		f.Add(s)
	}
	tok := tinyVocab(f)
	if dir := os.Getenv("CAPSULED_MODEL_DIR"); dir != "" {
		if real, err := Load(dir); err == nil {
			tok = real
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		enc := tok.Encode(text, 0)
		checkEncoding(t, text, enc)
		if n := tok.CountTokens(text); n != enc.Len()-2 {
			t.Fatalf("CountTokens %d != %d", n, enc.Len()-2)
		}
		short := tok.Encode(text, 16)
		if short.Len() > 16 || !slices.Equal(short.IDs[:short.Len()-1], enc.IDs[:short.Len()-1]) {
			t.Fatalf("truncated encoding is not a prefix: %v vs %v", short.IDs, enc.IDs)
		}
		_ = utf8.ValidString(text)
	})
}

func BenchmarkCountTokens(b *testing.B) {
	tok := loadModel(b)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, naïvely; p53 regulates apoptosis. ", 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.CountTokens(text)
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := loadModel(b)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, naïvely; p53 regulates apoptosis. ", 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, 256)
	}
}

func TestHasWord(t *testing.T) {
	t.Parallel()
	tok := loadModel(t)
	for w, want := range map[string]bool{"sea": true, "rise": true, "volcano": true, "htrpml2": false, "schimmelpenning": false, "##s": false, "": false} {
		if got := tok.HasWord(w); got != want {
			t.Errorf("HasWord(%q) = %v, want %v", w, got, want)
		}
	}
}
