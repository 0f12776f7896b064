package terms

import (
	"slices"
	"strings"
	"testing"
)

func TestCapsule(t *testing.T) {
	t.Parallel()
	got := Capsule(`The "quick" (brown) fox -- NEAR(fox) OR the FOX*`)
	if want := []string{"quick", "brown", "fox", "near"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	// "you", "my" and "had" are memory stopwords, not capsule ones.
	text := "Had you seen my dog? You had: the dog's name is Rex-2."
	if got, want := Memory(text), []string{"seen", "dog", "s", "name", "rex", "2"}; !slices.Equal(got, want) {
		t.Errorf("Memory = %v, want %v", got, want)
	}
	if got, want := Capsule(text), []string{"had", "you", "seen", "my", "dog", "s", "name", "rex", "2"}; !slices.Equal(got, want) {
		t.Errorf("Capsule = %v, want %v", got, want)
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	if got, want := Words("Ana: ÉTÉ, été  x2"), []string{"ana", "été", "été", "x2"}; !slices.Equal(got, want) {
		t.Errorf("Words = %v, want %v", got, want)
	}
	if got := Words(" -- "); len(got) != 0 {
		t.Errorf("Words of punctuation = %v", got)
	}
}

func TestMaxQuery(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 2 * MaxQuery {
		b.WriteString("w")
		b.WriteString(strings.Repeat("x", i+1))
		b.WriteString(" ")
	}
	if got := Capsule(b.String()); len(got) != MaxQuery || got[0] != "wx" {
		t.Errorf("Capsule kept %d terms, first %q", len(got), got[0])
	}
	// A long capsule query keeps the terms it repeats, wherever they are.
	long := b.String() + strings.Repeat("tides moon ", 3)
	got := Capsule(long)
	if len(got) != MaxQuery || !slices.Contains(got, "tides") || !slices.Contains(got, "moon") || got[0] != "wx" {
		t.Errorf("a long query's repeated late terms were dropped: %v", got)
	}
	if got := Memory(b.String()); len(got) != MaxQuery {
		t.Errorf("Memory kept %d terms", len(got))
	}
}

func FuzzTerms(f *testing.F) {
	f.Add(`The "quick" (brown) fox -- NEAR(fox) OR the FOX*`)
	f.Add("a\x00b\xffc")
	f.Fuzz(func(t *testing.T, s string) {
		for _, ts := range [][]string{Capsule(s), Memory(s)} {
			if len(ts) > MaxQuery {
				t.Fatalf("%d terms", len(ts))
			}
			seen := map[string]bool{}
			for _, w := range ts {
				if w == "" || seen[w] || strings.ContainsAny(w, `"*() :`) {
					t.Fatalf("term %q in %v", w, ts)
				}
				seen[w] = true
			}
		}
	})
}
