package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"capsuled/gen"
	"capsuled/internal/domain"
)

// QueryFromWire converts a capsule query request into a domain.Query. The
// HTTP layer and the dashboard's playground both use it.
func QueryFromWire(b gen.QueryRequest) (domain.Query, error) {
	q := domain.Query{Text: b.Query, Limit: domain.DefaultQueryLimit}
	if b.Limit != nil {
		q.Limit = *b.Limit
	}
	w, err := WishlistFromWire(b.Wishlist)
	if err != nil {
		return q, err
	}
	q.Wishlist = w
	return q, nil
}

// WishlistFromWire converts a query's wishlist (nil: none) into a
// domain.Wishlist. It checks every rule itself, so that a wishlist built
// without the spec's validation (the dashboard's) meets the same rules.
// Every error is a 400 *domain.Error whose Param names the field, such as
// "wishlist.metadata.year.gte".
func WishlistFromWire(in *gen.Wishlist) (domain.Wishlist, error) {
	var w domain.Wishlist
	if in == nil {
		return w, nil
	}
	if in.Mode != nil {
		switch m := domain.SearchMode(*in.Mode); m {
		case domain.ModeHybrid, domain.ModeSemantic, domain.ModeKeyword:
			w.Mode = m
		default:
			return w, domain.Invalid("wishlist.mode", "mode must be hybrid, semantic or keyword, not %q", m)
		}
	}
	if in.Kinds != nil {
		for _, k := range *in.Kinds {
			if k != gen.ItemKindText && k != gen.ItemKindFile {
				return w, domain.Invalid("wishlist.kinds", "kind must be text or file, not %q", k)
			}
			w.Kinds = append(w.Kinds, domain.ItemKind(k))
		}
	}
	if in.FileTypes != nil {
		w.FileTypes = *in.FileTypes
	}
	if in.ItemIds != nil {
		w.ItemIDs = *in.ItemIds
	}
	if in.UriPrefix != nil {
		w.URIPrefix = *in.UriPrefix
	}
	w.AddedAfter, w.AddedBefore = in.AddedAfter, in.AddedBefore
	w.AuthoredAfter, w.AuthoredBefore = in.AuthoredAfter, in.AuthoredBefore
	if n := in.MaxChunksPerItem; n != nil {
		if *n < 1 || *n > 100 {
			return w, domain.Invalid("wishlist.max_chunks_per_item", "max_chunks_per_item must be an integer from 1 to 100")
		}
		w.MaxChunksPerItem = *n
	}
	if s := in.MinScore; s != nil {
		if *s < 0 || *s > 1 {
			return w, domain.Invalid("wishlist.min_score", "min_score must be between 0 and 1")
		}
		w.MinScore = *s
	}
	if in.Recency != nil {
		r, err := recencyFromWire(*in.Recency)
		if err != nil {
			return domain.Wishlist{}, err
		}
		w.Recency = r
	}
	if in.Metadata != nil {
		m, err := metadataFromWire(*in.Metadata)
		if err != nil {
			return domain.Wishlist{}, err
		}
		w.Metadata = m
	}
	if w.AddedAfter != nil && w.AddedBefore != nil && !w.AddedAfter.Before(*w.AddedBefore) {
		return domain.Wishlist{}, domain.Invalid("wishlist.added_before", "added_before must be later than added_after")
	}
	if w.AuthoredAfter != nil && w.AuthoredBefore != nil && !w.AuthoredAfter.Before(*w.AuthoredBefore) {
		return domain.Wishlist{}, domain.Invalid("wishlist.authored_before", "authored_before must be later than authored_after")
	}
	return w, nil
}

func recencyFromWire(in gen.Recency) (*domain.Recency, error) {
	r := &domain.Recency{Field: string(gen.TimeAuthored), HalfLife: 30 * 24 * time.Hour, Weight: 0.3}
	if in.Field != nil {
		if *in.Field != gen.TimeAuthored && *in.Field != gen.TimeAdded {
			return nil, domain.Invalid("wishlist.recency.field", "field must be time_authored or time_added")
		}
		r.Field = string(*in.Field)
	}
	if d := in.HalfLifeDays; d != nil {
		if *d < 0.001 || *d > 36500 {
			return nil, domain.Invalid("wishlist.recency.half_life_days", "half_life_days must be from 0.001 to 36500")
		}
		r.HalfLife = time.Duration(*d * float64(24*time.Hour))
	}
	if w := in.Weight; w != nil {
		if *w < 0 || *w > 1 {
			return nil, domain.Invalid("wishlist.recency.weight", "weight must be between 0 and 1")
		}
		r.Weight = *w
	}
	return r, nil
}

// metadataFromWire reads {"key": scalar | {op: value, …}, …}, in key order.
// A condition's value is read from its JSON, so numbers keep float64
// precision.
func metadataFromWire(in map[string]gen.MetadataCondition) ([]domain.MetadataFilter, error) {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []domain.MetadataFilter
	for _, k := range keys {
		p := "wishlist.metadata." + k
		if k == "" {
			return nil, domain.Invalid(p, "metadata keys must not be empty")
		}
		raw, err := in[k].MarshalJSON()
		var cond any
		if err == nil {
			err = json.Unmarshal(raw, &cond)
		}
		if err != nil {
			return nil, domain.Invalid(p, "a condition is a string, number, boolean or an object of operators")
		}
		switch c := cond.(type) {
		case string, float64, bool:
			out = append(out, domain.MetadataFilter{Key: k, Op: domain.OpEq, Value: c})
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
