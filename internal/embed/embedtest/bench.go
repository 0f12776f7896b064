package embedtest

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchSentences are short sentences (about 10–15 word pieces each).
var benchSentences = []string{
	"A man is eating food.",
	"The new movie is awesome and everyone should see it.",
	"Vitamin D deficiency is linked to bone loss in older adults.",
	"How do I reset my password on the website?",
	"The stock market fell sharply today after the announcement.",
	"A cheetah is running behind its prey across the savanna.",
	"Mutations in TP53 occur in more than half of human tumours.",
	"Please send the quarterly report to the finance team by Friday.",
}

const chunkSource = "Glioblastoma is the most common malignant primary brain tumour in adults, and despite surgery, " +
	"radiotherapy and temozolomide chemotherapy the median survival remains around fifteen months. " +
	"Recent single-cell RNA sequencing studies revealed substantial intratumoral heterogeneity, " +
	"with cellular states resembling neural progenitors, oligodendrocyte precursors and astrocytes. " +
	"These states are plastic and influenced by the microenvironment, including hypoxia and immune infiltration. "

// Chunk returns a text of about n word pieces as counted by count.
func Chunk(n int, count func(string) int) string {
	words := strings.Fields(strings.Repeat(chunkSource, 1+n/60))
	lo, hi := 1, len(words)
	for lo < hi { // smallest prefix with at least n pieces
		mid := (lo + hi) / 2
		if count(strings.Join(words[:mid], " ")) >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return strings.Join(words[:lo], " ")
}

// BenchSentences embeds batches of batch short sentences and reports
// sentences/s.
func BenchSentences(b *testing.B, e Embedder, batch int) {
	texts := make([]string, batch)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s (%d)", benchSentences[i%len(benchSentences)], i)
	}
	bench(b, e, texts, "sentences/s")
}

// BenchChunks embeds batches of batch chunks of about 200 word pieces and
// reports chunks/s.
func BenchChunks(b *testing.B, e Embedder, batch int, count func(string) int) {
	chunk := Chunk(200, count)
	texts := make([]string, batch)
	for i := range texts {
		texts[i] = fmt.Sprintf("%d %s", i, chunk)
	}
	bench(b, e, texts, "chunks/s")
}

func bench(b *testing.B, e Embedder, texts []string, unit string) {
	ctx := context.Background()
	if _, err := e.Embed(ctx, texts); err != nil { // warm up
		b.Fatal(err)
	}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * len(texts))
	b.ReportMetric(n/b.Elapsed().Seconds(), unit)
	// Per CPU-second of this process: a figure that other load on the
	// machine does not distort (as long as the runtime does not spin).
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(n/cpu, strings.TrimSuffix(unit, "/s")+"/cpu-s")
	}
}

// cpuSeconds is the user+system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return d.Seconds()
}
