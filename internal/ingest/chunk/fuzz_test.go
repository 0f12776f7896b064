package chunk

import (
	"context"
	"testing"

	"capsuled/internal/domain"
	"capsuled/internal/ingest/parse"
)

// FuzzChunk parses arbitrary bytes as Markdown, plain text, HTML and CSV and
// chunks what parses under random options, with both an additive and a
// non-additive counter; every chunk must keep the promises of Split.
func FuzzChunk(f *testing.F) {
	for _, s := range []string{"sample.md", "sample.txt", "sample.go", "sample.html", "sample.csv"} {
		f.Add(readFixture(f, s), uint8(40), uint8(8), true, false)
	}
	f.Add([]byte("a b c d e f g h i j k l m n o p"), uint8(3), uint8(1), false, true)
	reg := parse.NewDefaultRegistry()
	f.Fuzz(func(t *testing.T, data []byte, maxTok, overlap uint8, headings, bytesCounter bool) {
		var tc TokenCounter = fakeWordPieceCounter{}
		if bytesCounter {
			tc = fakeByteCounter{}
		}
		opts := Options{MaxTokens: int(maxTok) + 4, OverlapTokens: int(overlap) - 8, HeadingContext: headings}
		for _, typ := range []string{"text/markdown", "text/plain", "text/html", "text/csv"} {
			doc, err := reg.Parse(context.Background(), data, "f", typ)
			if err != nil {
				// Markdown and plain text refuse binary content only.
				if de, ok := domain.AsError(err); (typ == "text/markdown" || typ == "text/plain") && (!ok || de.Code != "binary_content") {
					t.Fatalf("%s: %v", typ, err)
				}
				continue
			}
			checkChunks(t, doc, tc, opts, Split(doc, tc, opts))
		}
	})
}
