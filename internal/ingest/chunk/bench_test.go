package chunk

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"capsuled/internal/ingest/parse"
)

// benchText is n bytes or so of plain English-like prose in paragraphs.
func benchText(n int) string {
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more can out other into only some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three")
	var sb strings.Builder
	for sb.Len() < n {
		for range 3 + rng.IntN(5) {
			k := 8 + rng.IntN(20)
			for j := range k {
				w := words[rng.IntN(len(words))]
				if j == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				sb.WriteString(w)
				if j < k-1 {
					sb.WriteByte(' ')
				}
			}
			sb.WriteString(". ")
		}
		sb.WriteString("\n\n")
	}
	return sb.String()
}

// BenchmarkChunkPlainText reports chunks/s for plain prose with the fake
// WordPiece counter (the real tokenizer lives in internal/embed/wordpiece).
func BenchmarkChunkPlainText(b *testing.B) {
	doc, err := parse.Extract(context.Background(), strings.NewReader(benchText(1<<20)), "b.txt", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	tc := fakeWordPieceCounter{}
	n := 0
	b.SetBytes(int64(len(doc.Text)))
	b.ResetTimer()
	for b.Loop() {
		n += len(Split(doc, tc, Options{HeadingContext: true}))
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "chunks/s")
}
