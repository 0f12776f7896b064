package capsule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"capsuled/internal/domain"
)

// ParseWishlist reads a query's wishlist from its JSON (null or absent: no
// wishlist). Every error is a 400 *domain.Error whose Param names the field,
// such as "wishlist.metadata.year.gte".
func ParseWishlist(raw []byte) (domain.Wishlist, error) {
	var w domain.Wishlist
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return w, nil
	}
	var fields map[string]json.RawMessage
	if err := decodeStrict(raw, &fields); err != nil || fields == nil {
		return w, domain.Invalid("wishlist", "wishlist must be a JSON object")
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		p := "wishlist." + k
		var err error
		switch k {
		case "mode":
			var m string
			if err = decodeStrict(v, &m); err == nil {
				switch domain.SearchMode(m) {
				case domain.ModeHybrid, domain.ModeSemantic, domain.ModeKeyword:
					w.Mode = domain.SearchMode(m)
				default:
					err = fmt.Errorf("mode must be hybrid, semantic or keyword, not %q", m)
				}
			}
		case "kinds":
			var ks []string
			if err = decodeStrict(v, &ks); err == nil {
				for _, kk := range ks {
					if kk != string(domain.ItemText) && kk != string(domain.ItemFile) {
						err = fmt.Errorf("kind must be text or file, not %q", kk)
						break
					}
					w.Kinds = append(w.Kinds, domain.ItemKind(kk))
				}
			}
		case "file_types":
			err = decodeStrict(v, &w.FileTypes)
		case "item_ids":
			err = decodeStrict(v, &w.ItemIDs)
		case "uri_prefix":
			err = decodeStrict(v, &w.URIPrefix)
		case "added_after":
			w.AddedAfter, err = parseTime(v)
		case "added_before":
			w.AddedBefore, err = parseTime(v)
		case "authored_after":
			w.AuthoredAfter, err = parseTime(v)
		case "authored_before":
			w.AuthoredBefore, err = parseTime(v)
		case "max_chunks_per_item":
			var n float64
			if err = decodeStrict(v, &n); err == nil && (n != math.Trunc(n) || n < 1 || n > 100) {
				err = errors.New("max_chunks_per_item must be an integer from 1 to 100")
			}
			w.MaxChunksPerItem = int(n)
		case "min_score":
			if err = decodeStrict(v, &w.MinScore); err == nil && (w.MinScore < 0 || w.MinScore > 1) {
				err = errors.New("min_score must be between 0 and 1")
			}
		case "recency":
			w.Recency, err = parseRecency(v)
			if err != nil {
				if e, ok := domain.AsError(err); ok {
					return domain.Wishlist{}, e.WithParam("wishlist.recency" + suffix(e.Param))
				}
			}
		case "metadata":
			w.Metadata, err = parseMetadata(v)
			if e, ok := domain.AsError(err); ok {
				return domain.Wishlist{}, e
			}
		default:
			return domain.Wishlist{}, &domain.Error{Kind: domain.KindInvalid, Code: "unknown_field", Param: p,
				Message: fmt.Sprintf("unknown wishlist key %q", k)}
		}
		if err != nil {
			return domain.Wishlist{}, domain.Invalid(p, "%s", cleanErr(err))
		}
	}
	if w.AddedAfter != nil && w.AddedBefore != nil && !w.AddedAfter.Before(*w.AddedBefore) {
		return domain.Wishlist{}, domain.Invalid("wishlist.added_before", "added_before must be later than added_after")
	}
	if w.AuthoredAfter != nil && w.AuthoredBefore != nil && !w.AuthoredAfter.Before(*w.AuthoredBefore) {
		return domain.Wishlist{}, domain.Invalid("wishlist.authored_before", "authored_before must be later than authored_after")
	}
	return w, nil
}

func suffix(p string) string {
	if p == "" {
		return ""
	}
	return "." + p
}

// decodeStrict decodes one JSON value with numbers as float64 and no unknown
// fields or trailing data.
func decodeStrict(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

func cleanErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("wrong type: got %s, want %s", te.Value, te.Type.String())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func parseTime(v json.RawMessage) (*time.Time, error) {
	var s string
	if err := decodeStrict(v, &s); err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%q is not an RFC 3339 date-time", s)
	}
	return &t, nil
}

func parseRecency(v json.RawMessage) (*domain.Recency, error) {
	var in struct {
		Field        *string  `json:"field"`
		HalfLifeDays *float64 `json:"half_life_days"`
		Weight       *float64 `json:"weight"`
	}
	if err := decodeStrict(v, &in); err != nil {
		return nil, err
	}
	r := &domain.Recency{Field: "time_authored", HalfLife: 30 * 24 * time.Hour, Weight: 0.3}
	if in.Field != nil {
		if *in.Field != "time_authored" && *in.Field != "time_added" {
			return nil, domain.Invalid("field", "field must be time_authored or time_added")
		}
		r.Field = *in.Field
	}
	if d := in.HalfLifeDays; d != nil {
		if *d < 0.001 || *d > 36500 {
			return nil, domain.Invalid("half_life_days", "half_life_days must be from 0.001 to 36500")
		}
		r.HalfLife = time.Duration(*d * float64(24*time.Hour))
	}
	if w := in.Weight; w != nil {
		if *w < 0 || *w > 1 {
			return nil, domain.Invalid("weight", "weight must be between 0 and 1")
		}
		r.Weight = *w
	}
	return r, nil
}

// parseMetadata reads {"key": scalar | {op: value, …}, …}.
func parseMetadata(v json.RawMessage) ([]domain.MetadataFilter, error) {
	var m map[string]json.RawMessage
	if err := decodeStrict(v, &m); err != nil || m == nil {
		return nil, domain.Invalid("wishlist.metadata", "metadata must be an object of key: condition")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []domain.MetadataFilter
	for _, k := range keys {
		p := "wishlist.metadata." + k
		if k == "" {
			return nil, domain.Invalid(p, "metadata keys must not be empty")
		}
		var cond any
		if err := decodeStrict(m[k], &cond); err != nil {
			return nil, domain.Invalid(p, "%s", cleanErr(err))
		}
		switch c := cond.(type) {
		case string, float64, bool:
			out = append(out, domain.MetadataFilter{Key: k, Op: domain.OpEq, Value: c})
			continue
		case map[string]any:
			if len(c) == 0 {
				return nil, domain.Invalid(p, "a condition needs at least one operator")
			}
			ops := make([]string, 0, len(c))
			for op := range c {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			for _, op := range ops {
				f, err := metadataOp(k, op, c[op])
				if err != nil {
					return nil, domain.Invalid(p+"."+op, "%s", err)
				}
				out = append(out, f)
			}
		default:
			return nil, domain.Invalid(p, "a condition is a string, number, boolean or an object of operators")
		}
	}
	return out, nil
}

func metadataOp(key, op string, v any) (domain.MetadataFilter, error) {
	f := domain.MetadataFilter{Key: key, Op: domain.MetadataOp(op), Value: v}
	scalar := func(x any) bool {
		switch x.(type) {
		case string, float64, bool:
			return true
		}
		return false
	}
	switch f.Op {
	case domain.OpEq, domain.OpNe:
		if !scalar(v) {
			return f, fmt.Errorf("%s takes a string, number or boolean", op)
		}
	case domain.OpIn, domain.OpNin:
		list, ok := v.([]any)
		if !ok {
			return f, fmt.Errorf("%s takes an array", op)
		}
		for _, x := range list {
			if !scalar(x) {
				return f, fmt.Errorf("%s takes an array of strings, numbers or booleans", op)
			}
		}
	case domain.OpGt, domain.OpGte, domain.OpLt, domain.OpLte:
		switch v.(type) {
		case string, float64:
		default:
			return f, fmt.Errorf("%s takes a number or a string", op)
		}
	case domain.OpExists:
		if _, ok := v.(bool); !ok {
			return f, errors.New("exists takes a boolean")
		}
	default:
		return f, fmt.Errorf("unknown operator %q (want eq, ne, in, nin, gt, gte, lt, lte or exists)", op)
	}
	return f, nil
}
