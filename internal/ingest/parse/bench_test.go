package parse

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkExtractMarkdown parses 200 sections of headings, prose, code and
// lists.
func BenchmarkExtractMarkdown(b *testing.B) {
	prose := strings.Repeat("Capsules hold items, and each item is chunked for search. ", 30) + "\n\n"
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "## Section %d\n\n%s\n```go\nfunc f%d() {}\n```\n\n- item *one*\n- item [two](http://x)\n\n", i, prose, i)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Extract(context.Background(), strings.NewReader(string(data)), "b.md", "", 0); err != nil {
			b.Fatal(err)
		}
	}
}
