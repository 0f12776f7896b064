package toolresult

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Hit
	}{
		{"empty", "", nil},
		{"whitespace", "  \n ", nil},
		{"malformed json", `[{"id": "a"`, nil},
		{"no ids", `[{"content": "x"}]`, nil},
		{"array with id", `[{"id":"a","content":"alpha","score":1.5},{"id":"b","text":"beta"}]`,
			[]Hit{{ID: "a", Text: "alpha", Score: 1.5}, {ID: "b", Text: "beta"}}},
		{"underscore id and snippet", `[{"_id":"x1","snippet":"s","title":"T"}]`, []Hit{{ID: "x1", Text: "s", Title: "T"}}},
		{"numeric ids", `[{"doc_id":12,"content":"c"}]`, []Hit{{ID: "12", Text: "c"}}},
		{"item_id preferred over chunk id", `[{"id":"chk_1","item_id":"itm_1","content":"c"}]`, []Hit{{ID: "itm_1", Text: "c"}}},
		{"wrapped hits", `{"hits":[{"id":"a"}],"total":1}`, []Hit{{ID: "a"}}},
		{"single object", `{"id":"only","content":"the text..."}`, []Hit{{ID: "only", Text: "the text...", Truncated: true}}},
		{"list of ids", `["a","b","a"]`, []Hit{{ID: "a"}, {ID: "b"}}},
		{"metadata id", `[{"page_content":"pc","metadata":{"doc_id":"m1","title":"MT"}}]`, []Hit{{ID: "m1", Text: "pc", Title: "MT"}}},
		{"duplicates merged", `[{"id":"a","content":"one"},{"id":"a","content":"two words"}]`, []Hit{{ID: "a", Text: "one\ntwo words"}}},
		{"plain keyed", "id: doc-1 | First paragraph\nid: doc-2 | Second", []Hit{{ID: "doc-1", Text: "First paragraph"}, {ID: "doc-2", Text: "Second"}}},
		{"plain bracket", "[a1] Alpha: text one\n[b2] Beta", []Hit{{ID: "a1", Title: "Alpha", Text: "Alpha: text one"}, {ID: "b2", Text: "Beta"}}},
		{"citation numbers are not ids", "[1] some text without ids", nil},
		{"no results text", "No results found.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Parse(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		ids  []string
	}{
		{"capsule_query.json", []string{"itm_abc", "itm_def"}},
		{"wrapped.json", []string{"d1", "d2"}},
		{"plain.txt", []string{"doc-17", "doc-4", "doc-9"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			hits := Parse(string(b))
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.ID)
				if h.ID == "d1" && (h.Title != "Ed Wood" || h.Score != 12.5) {
					t.Errorf("d1: %+v", h)
				}
			}
			if diff := cmp.Diff(tt.ids, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "[]", "{}", `[{"id":"a","content":"x"}]`, "[a] b\nid: c", `{"results":[{"_id":1}]}`, `[[[[[[[[[[{"id":"deep"}]]]]]]]]]]`} {
		f.Add(s)
	}
	if b, err := os.ReadFile("testdata/plain.txt"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		hits := Parse(s)
		seen := map[string]bool{}
		for _, h := range hits {
			if h.ID == "" || seen[h.ID] {
				t.Fatalf("empty or repeated id in %+v", hits)
			}
			seen[h.ID] = true
		}
	})
}

// generalJSON is Parse's general JSON path alone.
func generalJSON(s string) ([]Hit, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || strings.TrimSpace(s[dec.InputOffset():]) != "" {
		return nil, false
	}
	return dedupe(fromJSON(v, 0, nil)), true
}

// FuzzParseFlat checks that the flat scanner reads what the general JSON
// path reads from every input it accepts.
func FuzzParseFlat(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[{}]`, `[{"id":"a","content":"x","score":0.5}]`, `[{"id":"a","id":"b"}]`,
		`[{"id":1e3,"title":null,"text":true,"content":"  ","snippet":"s"}]`, `[{"_id":"a\u00e9\n","content":"caf\u00e9 \"q\" …","score":"7","_score":-0.25e-2}]`,
		"[{\"id\":\"a\xff\",\"content\":\"b\xfe\"}]", `[{"id":"a"},{"id":"a","content":"longer text"}]`, `[{"id":"x","metadata":{"id":"y"}}]`, `[01]`, `[{"id":"a"}] x`,
		`[{"doc_id":" ","id":"k","score":1e999,"relevance":2}]`, `[{"ID":"a"}]`, `["a","b"]`, `[{"id":"a\tb"}]`, "[{\"id\":\"a\x01\"}]",
		`{"id":"d1","content":"caf\u00e9 \"q\" \ud83d\ude00 \ud83d x"}`, `{"id":"d1","content":{"x":1}}`, `{"content":"no id"}`, `{"id":"a"} {}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.TrimSpace(s)
		got, ok := parseFlat(s)
		if !ok {
			return
		}
		got = dedupe(got)
		want, valid := generalJSON(s)
		if !valid {
			t.Fatalf("flat reader accepted invalid JSON %q", s)
		}
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nflat    %+v\ngeneral %+v", s, got, want)
		}
	})
}

// FuzzUnquote checks that unquote decodes a JSON string's inside as
// encoding/json does, and refuses what it refuses.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{``, `plain`, `caf\u00e9`, `\"q\" \\ \/ \b\f\n\r\t`, `\ud83d\ude00`, `\ud83d x`, `\ud83d\u0041`, `\ude00`,
		`\u12`, `\x`, "a\xffb", "tab\there", `\`, `…`, `\u00ZZ`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for i := 0; i < len(raw); i++ {
			if raw[i] == '\\' {
				i++
			} else if raw[i] == '"' {
				return // not the inside of one JSON string as the scanner cuts it
			}
		}
		got, ok := unquote(raw)
		var want string
		valid := json.Unmarshal([]byte(`"`+raw+`"`), &want) == nil
		if ok != valid || ok && got != want {
			t.Fatalf("unquote(%q) = %q, %v; encoding/json %q, %v", raw, got, ok, want, valid)
		}
	})
}

func TestLooksTruncated(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"text…": true, "text...": true, "text [Truncated] ": true, strings.Repeat("é", 100) + "[TRUNCATED]": true,
		strings.Repeat("é", 100) + "[truncate]": false, "[…]": true, "text": false, "": false} {
		if got := looksTruncated(s); got != want {
			t.Errorf("looksTruncated(%q) = %v", s, got)
		}
	}
}
