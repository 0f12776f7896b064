package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"capsuled/internal/domain"
)

// itemFilter translates a wishlist's item filters into one SQL condition on
// the items row aliased i, appending its parameters to args: "" when the
// wishlist has no filter the database can apply. The condition accepts at
// least every item retrieval.Compile accepts (the engine checks each
// candidate against that predicate too), and exactly those except where
// noted:
//
//   - kinds, item ids: exact;
//   - file types: exact for ASCII types (compared lower-cased, as Compile
//     does); a non-ASCII one leaves the filter to the engine;
//   - URI prefix: exact (starts_with);
//   - added and authored times: exact (the bounds are widened to the
//     database's microseconds, so a bound's nanoseconds never exclude an
//     item that Compile keeps);
//   - metadata: exists exactly; eq, ne, in, nin, gt, gte, lt and lte with
//     numbers, booleans (eq/ne/in/nin) and strings through jsonpath in strict
//     mode (a scalar, or any element of an array, as MatchMetadata: numbers
//     numerically, strings by code point, mismatched types never equal nor
//     ordered). A filter whose value is an RFC 3339 time (compared as a time
//     by MatchMetadata), null, an object or a nested array is left to the
//     engine.
//
// indexed reports whether the condition includes a conjunct that an index
// of items answers (item ids: the primary key; metadata eq and in: the GIN
// index items_metadata, jsonb_path_ops, through a lax jsonpath test that
// accepts a superset of what the exact test does): the items that pass can
// then be listed without reading every item of the capsule
// (acceptedItems).
func itemFilter(w domain.Wishlist, args []any) (cond string, _ []any, indexed bool) {
	return buildItemFilter(w, args, false)
}

// laxItemFilter is itemFilter with metadata eq and in tested by the lax
// jsonpath alone: a superset of the items itemFilter accepts (elements that
// are themselves arrays are unwrapped), for listing a selective filter's
// items through items_metadata without a second jsonpath on each. Callers
// hand the engine items it checks again (retrieval.StoreSearcher).
func laxItemFilter(w domain.Wishlist, args []any) (cond string, _ []any, indexed bool) {
	return buildItemFilter(w, args, true)
}

func buildItemFilter(w domain.Wishlist, args []any, lax bool) (cond string, _ []any, indexed bool) {
	var conds []string
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(w.Kinds) > 0 {
		kinds := make([]string, len(w.Kinds))
		for i, k := range w.Kinds {
			kinds[i] = string(k)
		}
		conds = append(conds, "i.kind = ANY("+arg(kinds)+"::text[])")
	}
	if len(w.FileTypes) > 0 && allASCII(w.FileTypes) {
		types := make([]string, len(w.FileTypes))
		for i, t := range w.FileTypes {
			types[i] = strings.ToLower(strings.TrimSpace(t))
		}
		conds = append(conds, "lower(i.file_type) = ANY("+arg(types)+"::text[])")
	}
	if len(w.ItemIDs) > 0 {
		conds = append(conds, "i.id = ANY("+arg(w.ItemIDs)+"::text[])")
		indexed = true
	}
	if w.URIPrefix != "" {
		conds = append(conds, "starts_with(i.uri, "+arg(w.URIPrefix)+"::text)")
	}
	timeRange := func(col string, after, before *time.Time) {
		if after != nil {
			conds = append(conds, col+" > "+arg(after.Truncate(time.Microsecond))+"::timestamptz")
		}
		if before != nil {
			b := before.Truncate(time.Microsecond)
			if b.Before(*before) {
				b = b.Add(time.Microsecond)
			}
			conds = append(conds, col+" < "+arg(b)+"::timestamptz")
		}
	}
	timeRange("i.time_added", w.AddedAfter, w.AddedBefore)
	timeRange("coalesce(i.time_authored, i.time_added)", w.AuthoredAfter, w.AuthoredBefore)
	for _, f := range w.Metadata {
		if c, ix := metadataCond(f, arg, lax); c != "" {
			conds = append(conds, c)
			indexed = indexed || ix
		}
	}
	return strings.Join(conds, " AND "), args, indexed
}

// metadataCond is one metadata filter as SQL, or "" where it is left to the
// engine (see itemFilter); indexed when the GIN index items_metadata
// answers it; with lax, eq and in are the lax test alone.
func metadataCond(f domain.MetadataFilter, arg func(any) string, lax bool) (cond string, indexed bool) {
	if f.Op == domain.OpExists {
		want, ok := f.Value.(bool)
		if !ok {
			return "", false
		}
		// jsonb_path_ops indexes paths to values, not keys alone: a key's
		// presence is tested on each item.
		c := "i.metadata ? " + arg(f.Key) + "::text"
		if !want {
			c = "NOT (" + c + ")"
		}
		return c, false
	}
	var values []any
	var cmp string
	switch f.Op {
	case domain.OpEq, domain.OpNe:
		values, cmp = []any{f.Value}, "=="
	case domain.OpIn, domain.OpNin:
		list, ok := f.Value.([]any)
		if !ok {
			return "", false
		}
		values, cmp = list, "=="
	case domain.OpGt:
		values, cmp = []any{f.Value}, ">"
	case domain.OpGte:
		values, cmp = []any{f.Value}, ">="
	case domain.OpLt:
		values, cmp = []any{f.Value}, "<"
	case domain.OpLte:
		values, cmp = []any{f.Value}, "<="
	default:
		return "", false
	}
	ordered := cmp != "=="
	for i, v := range values {
		s, ok := jsonScalar(v, ordered)
		if !ok {
			return "", false
		}
		values[i] = s
	}
	if len(values) == 0 {
		// in [] matches nothing, nin [] everything.
		if f.Op == domain.OpIn {
			return "false", false
		}
		return "", false
	}
	var pre string
	if f.Op == domain.OpEq || f.Op == domain.OpIn {
		var ok bool
		if pre, ok = laxEquals(f.Key, values); ok && lax {
			return "i.metadata @? " + arg(pre) + "::jsonpath", true
		}
	}
	vars, err := json.Marshal(map[string]any{"x": values})
	if err != nil {
		return "", false
	}
	// The key's value as an array (a scalar wrapped; a missing key gives
	// [null], which equals and orders against nothing below), any element
	// compared, strictly: an element that is itself an array or an object
	// is an error, so unknown, so no match, as in MatchMetadata.
	// Each value is its own comparison, ORed: in strict mode one
	// comparison of a sequence with mismatched types would be unknown as a
	// whole.
	tests := make([]string, len(values))
	for i := range values {
		tests[i] = fmt.Sprintf("@ %s $x[%d]", cmp, i)
	}
	v := "i.metadata -> " + arg(f.Key) + "::text"
	match := "jsonb_path_exists(CASE jsonb_typeof(" + v + ") WHEN 'array' THEN " + v + " ELSE jsonb_build_array(" + v + ") END, " +
		arg("strict $[*] ? ("+strings.Join(tests, " || ")+")") + "::jsonpath, " + arg(string(vars)) + "::jsonb, true)"
	if f.Op == domain.OpNe || f.Op == domain.OpNin {
		return "NOT " + match, false
	}
	if pre == "" {
		return match, false
	}
	// First, so that the cheaper test rejects most items.
	return "i.metadata @? " + arg(pre) + "::jsonpath AND " + match, true
}

// laxEquals is a jsonpath that items_metadata (GIN, jsonb_path_ops) answers: key
// equal to any of values, in lax mode, where an array's elements are
// compared and errors (mismatched types) are false. It accepts every
// document the strict test of metadataCond accepts (and more: an element
// that is itself an array is unwrapped), so it only narrows the items that
// test reads. The key and string values are written as JSON strings, which
// jsonpath reads with the same escapes.
func laxEquals(key string, values []any) (string, bool) {
	k, err := jsonText(key)
	if err != nil {
		return "", false
	}
	tests := make([]string, len(values))
	for i, v := range values {
		lit, err := jsonText(v)
		if err != nil {
			return "", false
		}
		tests[i] = "@ == " + lit
	}
	return "$." + k + " ? (" + strings.Join(tests, " || ") + ")", true
}

// jsonText is v as JSON without HTML escaping.
func jsonText(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// jsonScalar returns v as a JSON scalar that jsonpath compares as
// MatchMetadata does, and false for values it does not: null, objects,
// arrays, RFC 3339 strings (compared as times), and booleans when ordered.
func jsonScalar(v any, ordered bool) (any, bool) {
	switch x := v.(type) {
	case float64, float32, int, int64:
		return x, true
	case bool:
		return x, !ordered
	case string:
		if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return nil, false
		}
		return x, utf8.ValidString(x)
	}
	return nil, false
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return false
			}
		}
	}
	return true
}
