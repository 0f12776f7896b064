package retrieval

import (
	"encoding/json"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// Predicate reports whether an item may appear in a query's results.
type Predicate func(it *domain.Item) bool

// Compile turns a wishlist's filters into a predicate. A wishlist without
// filters gives nil (everything passes).
func Compile(w domain.Wishlist) Predicate {
	var tests []Predicate
	if len(w.Kinds) > 0 {
		kinds := w.Kinds
		tests = append(tests, func(it *domain.Item) bool {
			for _, k := range kinds {
				if it.Kind == k {
					return true
				}
			}
			return false
		})
	}
	if len(w.FileTypes) > 0 {
		set := make(map[string]bool, len(w.FileTypes))
		for _, t := range w.FileTypes {
			set[strings.ToLower(strings.TrimSpace(t))] = true
		}
		tests = append(tests, func(it *domain.Item) bool { return set[strings.ToLower(it.FileType)] })
	}
	if len(w.ItemIDs) > 0 {
		set := make(map[string]bool, len(w.ItemIDs))
		for _, id := range w.ItemIDs {
			set[id] = true
		}
		tests = append(tests, func(it *domain.Item) bool { return set[it.ID] })
	}
	if w.URIPrefix != "" {
		p := w.URIPrefix
		tests = append(tests, func(it *domain.Item) bool { return strings.HasPrefix(it.URI, p) })
	}
	if w.AddedAfter != nil || w.AddedBefore != nil {
		after, before := w.AddedAfter, w.AddedBefore
		tests = append(tests, func(it *domain.Item) bool { return inRange(it.TimeAdded, after, before) })
	}
	if w.AuthoredAfter != nil || w.AuthoredBefore != nil {
		after, before := w.AuthoredAfter, w.AuthoredBefore
		tests = append(tests, func(it *domain.Item) bool { return inRange(authored(it), after, before) })
	}
	for _, f := range w.Metadata {
		f := f
		tests = append(tests, func(it *domain.Item) bool { return MatchMetadata(it.Metadata, f) })
	}
	switch len(tests) {
	case 0:
		return nil
	case 1:
		return tests[0]
	}
	return func(it *domain.Item) bool {
		for _, t := range tests {
			if !t(it) {
				return false
			}
		}
		return true
	}
}

// authored is the item's authored time, or its time added when unknown.
func authored(it *domain.Item) time.Time {
	if it.TimeAuthored != nil {
		return *it.TimeAuthored
	}
	return it.TimeAdded
}

// inRange: after is exclusive, before is exclusive.
func inRange(t time.Time, after, before *time.Time) bool {
	if after != nil && !t.After(*after) {
		return false
	}
	if before != nil && !t.Before(*before) {
		return false
	}
	return true
}

// MatchMetadata reports whether metadata satisfies one filter. Numbers
// compare numerically, two RFC 3339 strings as times, other strings
// lexically; values of different types are unequal and unordered. An array
// value matches eq/in/gt… when any element does. A missing key satisfies
// only ne, nin and exists:false.
func MatchMetadata(meta map[string]any, f domain.MetadataFilter) bool {
	v, ok := meta[f.Key]
	switch f.Op {
	case domain.OpExists:
		want, _ := f.Value.(bool)
		return ok == want
	case domain.OpNe:
		return !ok || !anyElem(v, func(x any) bool { return equal(x, f.Value) })
	case domain.OpNin:
		list, _ := f.Value.([]any)
		return !ok || !anyElem(v, func(x any) bool { return contains(list, x) })
	}
	if !ok {
		return false
	}
	switch f.Op {
	case domain.OpEq:
		return anyElem(v, func(x any) bool { return equal(x, f.Value) })
	case domain.OpIn:
		list, _ := f.Value.([]any)
		return anyElem(v, func(x any) bool { return contains(list, x) })
	case domain.OpGt, domain.OpGte, domain.OpLt, domain.OpLte:
		return anyElem(v, func(x any) bool {
			c, ok := compare(x, f.Value)
			if !ok {
				return false
			}
			switch f.Op {
			case domain.OpGt:
				return c > 0
			case domain.OpGte:
				return c >= 0
			case domain.OpLt:
				return c < 0
			default:
				return c <= 0
			}
		})
	}
	return false
}

func anyElem(v any, fn func(any) bool) bool {
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if fn(x) {
				return true
			}
		}
		return false
	}
	return fn(v)
}

func contains(list []any, x any) bool {
	for _, y := range list {
		if equal(x, y) {
			return true
		}
	}
	return false
}

func equal(a, b any) bool {
	if c, ok := compare(a, b); ok {
		return c == 0
	}
	ab, aok := a.(bool)
	bb, bok := b.(bool)
	return aok && bok && ab == bb
}

// compare orders two scalars of the same type: -1, 0 or 1, and false when
// they are not comparable.
func compare(a, b any) (int, bool) {
	if x, ok := toFloat(a); ok {
		y, ok := toFloat(b)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	x, ok := a.(string)
	if !ok {
		return 0, false
	}
	y, ok := b.(string)
	if !ok {
		return 0, false
	}
	if tx, err := time.Parse(time.RFC3339Nano, x); err == nil {
		if ty, err := time.Parse(time.RFC3339Nano, y); err == nil {
			return tx.Compare(ty), true
		}
	}
	return strings.Compare(x, y), true
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// filterKey names a wishlist's filters (what Compile reads): equal keys,
// equal predicates. "" for none.
func filterKey(w domain.Wishlist) string {
	f := struct {
		Kinds                         []domain.ItemKind
		FileTypes, ItemIDs            []string
		URIPrefix                     string
		AddedAfter, AddedBefore       *time.Time
		AuthoredAfter, AuthoredBefore *time.Time
		Metadata                      []domain.MetadataFilter
	}{w.Kinds, w.FileTypes, w.ItemIDs, w.URIPrefix, w.AddedAfter, w.AddedBefore, w.AuthoredAfter, w.AuthoredBefore, w.Metadata}
	b, err := json.Marshal(f)
	if err != nil {
		return "" // never cached
	}
	return string(b)
}

// accepted is the part of a capsule a filter passes: its items' ids, its
// entries with vectors and their chunks, as of the capsule's accGen.
type accepted struct {
	gen    uint64
	ids    []string
	ens    []*entry
	chunks int
}

// maxAccepted bounds each capsule's cache of filters' accepted sets.
const maxAccepted = 32

// acceptedFor is the part of the capsule that pred (of filter key) passes,
// from the capsule's cache while no item changed since it was computed:
// one pass over the items per filter and change, not one per query and
// retriever (under a microsecond an item, but 70–100 ms a query at
// 131,000 items). Callers hold ci.mu (either way).
func (ci *capIndex) acceptedFor(key string, pred Predicate) *accepted {
	ci.accMu.Lock()
	a := ci.acc[key]
	ci.accMu.Unlock()
	if key != "" && a != nil && a.gen == ci.accGen {
		return a
	}
	a = &accepted{gen: ci.accGen}
	for id, en := range ci.items {
		if pred(&en.item) {
			a.ids = append(a.ids, id)
			if len(en.idxs) > 0 {
				a.ens = append(a.ens, en)
				a.chunks += len(en.idxs)
			}
		}
	}
	if key != "" {
		ci.accMu.Lock()
		if ci.acc == nil || len(ci.acc) >= maxAccepted {
			ci.acc = map[string]*accepted{}
		}
		ci.acc[key] = a
		ci.accMu.Unlock()
	}
	return a
}
