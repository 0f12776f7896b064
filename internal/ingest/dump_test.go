package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
)

func TestDumpFixtures(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		t.Skip()
	}
	ents, _ := os.ReadDir("testdata")
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		data := readFixture(t, e.Name())
		typ := ResolveType(e.Name(), "", data)
		doc, err := Extract(context.Background(), bytes.NewReader(data), e.Name(), "", 0)
		fmt.Printf("=== %s (%s) err=%v\n%q\n", e.Name(), typ, err, doc.Text)
		for _, b := range doc.Blocks {
			fmt.Printf("  %s L%d P%d %q %q\n", b.Kind, b.Level, b.Page, b.Path, doc.Text[b.Start:b.End])
		}
	}
}
