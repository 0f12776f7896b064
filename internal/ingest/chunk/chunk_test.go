package chunk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"capsuled/internal/ingest"
	"capsuled/internal/ingest/parse"
)

// fakeWordPieceCounter imitates a BERT tokenizer's count closely enough for
// tests: every punctuation character is a token, a run of letters or digits
// is one token per started 6 bytes, plus [CLS] and [SEP]. Like the real one,
// the count of a text is the sum of the counts of its white-space separated
// pieces plus 2.
type fakeWordPieceCounter struct{}

func (fakeWordPieceCounter) CountTokens(s string) int {
	n, run := 2, 0
	flush := func() {
		if run > 0 {
			n += (run + 5) / 6
			run = 0
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			flush()
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			run += len(string(r))
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

// fakeByteCounter counts a token per started 4 bytes: not additive over
// pieces, so Chunk must re-measure to keep its promise.
type fakeByteCounter struct{}

func (fakeByteCounter) CountTokens(s string) int { return (len(s) + 3) / 4 }

// countingCounter counts calls and the bytes it was asked to measure.
type countingCounter struct {
	TokenCounter
	calls, bytes int
}

func (c *countingCounter) CountTokens(s string) int {
	c.calls++
	c.bytes += len(s)
	return c.TokenCounter.CountTokens(s)
}

// checkChunks asserts the promises of Split.
func checkChunks(t testing.TB, doc ingest.Document, tc TokenCounter, opts Options, chunks []Chunk) {
	t.Helper()
	max := opts.MaxTokens
	if max <= 0 {
		max = DefaultMaxTokens
	}
	prevStart := -1
	for i, c := range chunks {
		if c.Idx != i {
			t.Fatalf("chunk %d has Idx %d", i, c.Idx)
		}
		if c.Start < 0 || c.End > len(doc.Text) || c.Start >= c.End {
			t.Fatalf("chunk %d: bad span [%d,%d) of %d", i, c.Start, c.End, len(doc.Text))
		}
		if c.Start < prevStart {
			t.Fatalf("chunk %d starts at %d before the previous chunk's start %d", i, c.Start, prevStart)
		}
		prevStart = c.Start
		if c.Text[c.PrefixLen:] != doc.Text[c.Start:c.End] {
			t.Fatalf("chunk %d: Text[PrefixLen:] != doc.Text[Start:End]", i)
		}
		if got := tc.CountTokens(c.Text); got != c.Tokens {
			t.Fatalf("chunk %d: Tokens %d, counter says %d", i, c.Tokens, got)
		}
		if c.Tokens > max && len([]rune(c.Text[c.PrefixLen:])) > 1 {
			t.Fatalf("chunk %d: %d tokens > %d: %q", i, c.Tokens, max, c.Text)
		}
	}
	// every non-space byte of every block is in some chunk
	covered := make([]bool, len(doc.Text))
	for _, c := range chunks {
		for k := c.Start; k < c.End; k++ {
			covered[k] = true
		}
	}
	for _, b := range sanitizeBlocks(doc) {
		for k := b.Start; k < b.End; {
			r, size := utf8.DecodeRuneInString(doc.Text[k:b.End])
			if !unicode.IsSpace(r) {
				for j := k; j < k+size; j++ {
					if !covered[j] {
						t.Fatalf("byte %d of %q at %d, in block [%d,%d), is in no chunk", j, r, k, b.Start, b.End)
					}
				}
			}
			k += size
		}
	}
}

func mustExtract(t testing.TB, name, text string) ingest.Document {
	t.Helper()
	doc, err := parse.Extract(context.Background(), strings.NewReader(text), name, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func chunkTexts(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Text
	}
	return out
}

func TestChunkFollowsHeadings(t *testing.T) {
	md := "# Install\n\nShort intro.\n\n## Linux\n\nUse the tarball.\n\nThen run it.\n\n## macOS\n\nUse brew.\n"
	doc := mustExtract(t, "a.md", md)
	tc := fakeWordPieceCounter{}
	opts := Options{MaxTokens: 50, HeadingContext: true}
	chunks := Split(doc, tc, opts)
	checkChunks(t, doc, tc, opts, chunks)
	want := []string{
		"Install\n\nShort intro.",
		"Install\n\nLinux\n\nUse the tarball.\n\nThen run it.",
		"Install\n\nmacOS\n\nUse brew.",
	}
	if got := chunkTexts(chunks); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if chunks[1].PrefixLen != len("Install\n\n") || strings.Join(chunks[1].Headings, ">") != "Install>Linux" {
		t.Errorf("chunk 1: prefix %d headings %q", chunks[1].PrefixLen, chunks[1].Headings)
	}
	if chunks[0].PrefixLen != 0 {
		t.Errorf("a chunk that starts with its heading gets no prefix of it")
	}
	// without heading context no prefix at all
	plain := Split(doc, tc, Options{MaxTokens: 50})
	for _, c := range plain {
		if c.PrefixLen != 0 || c.Text != doc.Text[c.Start:c.End] {
			t.Errorf("unexpected prefix in %q", c.Text)
		}
	}
}

func TestChunkKeepsCodeWhole(t *testing.T) {
	code := "```go\n" + strings.Repeat("x := 1\n", 10) + "```\n"
	md := "# Code\n\n" + strings.Repeat("Some words here. ", 10) + "\n\n" + code + "\n" + strings.Repeat("More words. ", 5) + "\n"
	doc := mustExtract(t, "c.md", md)
	tc := fakeWordPieceCounter{}
	opts := Options{MaxTokens: 60, OverlapTokens: -1}
	chunks := Split(doc, tc, opts)
	checkChunks(t, doc, tc, opts, chunks)
	var codeBlock ingest.Block
	for _, b := range doc.Blocks {
		if b.Kind == ingest.BlockCode {
			codeBlock = b
		}
	}
	found := false
	for _, c := range chunks {
		if c.Start <= codeBlock.Start && c.End >= codeBlock.End {
			found = true
		} else if c.End > codeBlock.Start && c.Start < codeBlock.End {
			t.Errorf("chunk [%d,%d) cuts the code block [%d,%d)", c.Start, c.End, codeBlock.Start, codeBlock.End)
		}
	}
	if !found {
		t.Error("no chunk holds the whole code block")
	}
}

func TestChunkSplitsHugeCodeOnLines(t *testing.T) {
	src := "func f() {\n" + strings.Repeat("\tcall(argument, another)\n", 100) + "}\n"
	doc := mustExtract(t, "f.go", src)
	tc := fakeWordPieceCounter{}
	opts := Options{MaxTokens: 64}
	chunks := Split(doc, tc, opts)
	checkChunks(t, doc, tc, opts, chunks)
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for _, c := range chunks {
		if (c.Start > 0 && doc.Text[c.Start-1] != '\t' && doc.Text[c.Start-1] != '\n') || (c.End < len(doc.Text) && doc.Text[c.End] != '\n') {
			t.Errorf("chunk [%d,%d) does not sit on line boundaries: %q", c.Start, c.End, c.Text)
		}
	}
}

func TestChunkOverlap(t *testing.T) {
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "Sentence number %d is here. ", i)
	}
	doc := mustExtract(t, "o.txt", sb.String())
	tc := fakeWordPieceCounter{}
	opts := Options{MaxTokens: 40, OverlapTokens: 10}
	chunks := Split(doc, tc, opts)
	checkChunks(t, doc, tc, opts, chunks)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i := 1; i < len(chunks); i++ {
		if chunks[i].Start >= chunks[i-1].End {
			t.Errorf("chunk %d does not overlap chunk %d", i, i-1)
		}
		if !strings.HasPrefix(chunks[i].Text, "Sentence") {
			t.Errorf("chunk %d does not start at a sentence: %q", i, chunks[i].Text)
		}
	}
	none := Split(doc, tc, Options{MaxTokens: 40, OverlapTokens: -1})
	for i := 1; i < len(none); i++ {
		if none[i].Start < none[i-1].End {
			t.Errorf("overlap despite OverlapTokens < 0")
		}
	}
}

func TestChunkMergesSmallParagraphs(t *testing.T) {
	doc := mustExtract(t, "m.txt", "One.\n\nTwo.\n\nThree.\n\nFour.\n")
	chunks := Split(doc, fakeWordPieceCounter{}, Options{})
	if len(chunks) != 1 || chunks[0].Text != "One.\n\nTwo.\n\nThree.\n\nFour." || chunks[0].Tokens != 2+8 {
		t.Fatalf("got %+v", chunks)
	}
}

func TestChunkGiantWord(t *testing.T) {
	doc := mustExtract(t, "w.txt", "start "+strings.Repeat("x", 5000)+" end")
	for _, tc := range []TokenCounter{fakeWordPieceCounter{}, fakeByteCounter{}} {
		opts := Options{MaxTokens: 50}
		checkChunks(t, doc, tc, opts, Split(doc, tc, opts))
	}
}

func TestChunkEmpty(t *testing.T) {
	if got := Split(ingest.Document{}, fakeWordPieceCounter{}, Options{}); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
	// text without blocks is chunked as paragraphs
	got := Split(ingest.Document{Text: "a b c"}, fakeWordPieceCounter{}, Options{})
	if len(got) != 1 || got[0].Text != "a b c" {
		t.Fatalf("got %v", got)
	}
}

// randomDoc builds a Markdown document of random structure.
func randomDoc(rng *rand.Rand) string {
	words := []string{"retrieval", "capsule", "the", "a", "embedding", "chunk", "token", "über", "naïve", "x", "HTTP/2", "3.14", "—", "日本語"}
	var sb strings.Builder
	for range rng.IntN(30) + 1 {
		switch rng.IntN(6) {
		case 0:
			fmt.Fprintf(&sb, "%s %s\n\n", strings.Repeat("#", rng.IntN(4)+1), words[rng.IntN(len(words))])
		case 1:
			sb.WriteString("```\n")
			for range rng.IntN(40) {
				fmt.Fprintf(&sb, "code(%s, %d)\n", words[rng.IntN(len(words))], rng.IntN(1000))
			}
			sb.WriteString("```\n\n")
		case 2:
			for range rng.IntN(8) + 1 {
				fmt.Fprintf(&sb, "- %s %s\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))])
			}
			sb.WriteString("\n")
		default:
			for range rng.IntN(30) + 1 {
				for range rng.IntN(25) + 1 {
					sb.WriteString(words[rng.IntN(len(words))])
					sb.WriteByte(' ')
				}
				sb.WriteString(". ")
			}
			sb.WriteString("\n\n")
		}
	}
	return sb.String()
}

func TestChunkProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	counters := []TokenCounter{fakeWordPieceCounter{}, fakeByteCounter{}}
	for i := range 300 {
		md := randomDoc(rng)
		doc := mustExtract(t, "r.md", md)
		tc := counters[i%2]
		opts := Options{MaxTokens: 8 + rng.IntN(250), OverlapTokens: rng.IntN(40) - 5, HeadingContext: rng.IntN(2) == 0}
		a := Split(doc, tc, opts)
		checkChunks(t, doc, tc, opts, a)
		b := Split(doc, tc, opts)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatal("not deterministic")
		}
	}
}

func TestChunkCallsCounterSparingly(t *testing.T) {
	doc := mustExtract(t, "p.txt", benchText(200_000))
	cc := &countingCounter{TokenCounter: fakeWordPieceCounter{}}
	chunks := Split(doc, cc, Options{})
	// each byte is measured about twice: once per sentence, once per chunk
	if ratio := float64(cc.bytes) / float64(len(doc.Text)); ratio > 2.5 {
		t.Errorf("counter saw %.2fx the text (%d calls for %d chunks)", ratio, cc.calls, len(chunks))
	}
}

func TestChunkHugeLine(t *testing.T) {
	line := strings.Repeat("word ", 400_000) // 2 MB, one line
	doc, err := parse.Extract(context.Background(), strings.NewReader(line), "huge.txt", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Blocks) != 1 || doc.Text[doc.Blocks[0].Start:doc.Blocks[0].End] != strings.TrimSpace(line) {
		t.Fatalf("got %d blocks", len(doc.Blocks))
	}
	chunks := Split(doc, fakeWordPieceCounter{}, Options{})
	if len(chunks) < 400_000/200 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for _, c := range chunks {
		if c.Tokens > DefaultMaxTokens {
			t.Fatalf("chunk %d has %d tokens", c.Idx, c.Tokens)
		}
	}
}

// readFixture reads a file of the parsers' test data.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "parse", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
