package builtin

import (
	"strings"
)

// Parallel questions: a question whose hops are facts side by side rather
// than a chain of names ("Does the Oslo report say X, while the Lyon memo
// says Y?", "Which supplier did both Acme and Globex drop?"). Each fact has
// its own evidence, and one search for the whole question tends to find the
// documents of the fact its words favour. The policy searches each
// sub-question apart and keeps each one's best hit in the ranking and in
// the report.

// clauseMarks separate the clauses of a comparison or conjunction, strongest
// first.
var clauseMarks = func() []string {
	out := []string{"; ", ", while ", ", whereas ", " whereas ", ", but ", " compared to ", " compared with ",
		" in contrast to ", " as opposed to "}
	// "…, and did Lyon …", "… by Acme and is sold …": a new verb after "and"
	for _, aux := range []string{"did", "does", "do", "is", "are", "was", "were", "has", "have", "had"} {
		out = append(out, ", and "+aux+" ", " and "+aux+" ")
	}
	return out
}()

// subQuestions returns the sub-questions of a parallel question: its
// clauses (each with at least three content words) and, within a clause,
// one per subject of a conjunction of names ("both Acme and Globex", "Oslo,
// Lyon and Turin"): the clause with the conjunction replaced by the one
// name. A question with neither gives none.
func subQuestions(q string) []string {
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(q), "?.!"))
	clauses := splitClauses(q)
	var out []string
	seen := map[string]bool{normQuery(q): true}
	add := func(s string) {
		s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), ",;"))
		if k := normQuery(s); s != "" && !seen[k] && len(terms(s)) >= 2 {
			seen[k] = true
			out = append(out, s)
		}
	}
	for _, c := range clauses {
		if subs := conjunctionSubjects(c); len(subs) > 1 {
			for _, s := range subs {
				add(s)
			}
			continue
		}
		if len(clauses) > 1 {
			add(c)
		}
	}
	return out
}

// splitClauses splits q at its clause marks, keeping a split only when
// every piece keeps at least three content words.
func splitClauses(q string) []string {
	parts := []string{q}
	for _, m := range clauseMarks {
		var next []string
		for _, p := range parts {
			if !strings.Contains(p, m) {
				next = append(next, p)
				continue
			}
			pieces := strings.Split(p, m)
			ok := true
			for _, x := range pieces {
				if len(terms(x)) < 3 {
					ok = false
					break
				}
			}
			if !ok {
				next = append(next, p)
				continue
			}
			next = append(next, pieces...)
		}
		parts = next
	}
	return parts
}

// conjunctionSubjects finds a run of two or more names joined by "and",
// "or" or commas in c and returns c once per name, the run replaced by that
// name (and a "both" or "either" before it dropped). None when c has no
// such run.
func conjunctionSubjects(c string) []string {
	type span struct {
		name       string
		start, end int
	}
	var spans []span
	for _, cs := range candidates(c) {
		if cs.kind != candName {
			continue
		}
		// "Acme and Globex" is read as one name: its parts are the names
		a := cs.start
		for a < cs.end {
			b := cs.end
			for _, sep := range []string{" and ", " or ", " & "} {
				if k := strings.Index(c[a:cs.end], sep); k >= 0 && a+k < b {
					b = a + k
				}
			}
			i := a
			if strings.HasSuffix(c[:i], "The ") { // "The Verge": the article belongs to the name
				i -= len("The ")
			}
			spans = append(spans, span{c[i:b], i, b})
			a = b
			for _, sep := range []string{" and ", " or ", " & "} {
				if strings.HasPrefix(c[a:], sep) {
					a += len(sep)
					break
				}
			}
		}
	}
	for i := 0; i < len(spans); i++ {
		j := i
		for j+1 < len(spans) && joins(c[spans[j].end:spans[j+1].start]) {
			j++
		}
		if j == i {
			continue
		}
		start, end := spans[i].start, spans[j].end
		// a closing quote of the last name belongs to the run
		for end < len(c) && strings.ContainsRune(`'"’”`, rune(c[end])) {
			end++
		}
		before := strings.TrimRight(c[:start], ` '"‘“`)
		for _, w := range []string{"both", "either", "Both", "Either"} {
			if strings.HasSuffix(before, " "+w) || before == w {
				before = strings.TrimSuffix(before, w)
				break
			}
		}
		var out []string
		after := c[end:]
		if !strings.HasPrefix(after, ",") && !strings.HasPrefix(after, " ") {
			after = " " + after
		}
		for _, s := range spans[i : j+1] {
			out = append(out, strings.TrimSpace(strings.TrimSpace(before)+" "+s.name+after))
		}
		return out
	}
	return nil
}

// joins says whether the text between two names joins them in a
// conjunction: "and", "or", "&" or a comma, with quotes around the names
// allowed.
func joins(between string) bool {
	b := strings.TrimSpace(strings.Trim(strings.TrimSpace(between), `'"‘’“”`))
	b = strings.TrimSpace(strings.Trim(b, `'"‘’“”`))
	switch strings.ToLower(b) {
	case "and", "or", "&", ",", ", and", ", or", "and the", "or the", ", and the":
		return true
	}
	return false
}

// subLists returns, for each sub-question, the first result list that
// searched it in the question's own turn (-1 where none did).
func (st *state) subLists() []int {
	out := make([]int, len(st.subs))
	for i := range out {
		out[i] = -1
	}
	for i, s := range st.subs {
		k := normQuery(s)
		for j, l := range st.lists {
			if l.hop == 0 && normQuery(l.query) == k {
				out[i] = j
				break
			}
		}
	}
	return out
}

// firsts are the documents the ranking's best ReportLimit always hold, for
// a parallel question (one with sub-questions): the first AnchorKeep hits of
// the question's own search when it has several clauses, then the first
// SubKeep of each sub-question's, in that order. A chain question has none.
func (e *Engine) firsts(st *state) []string {
	var out []string
	seen := map[string]bool{}
	take := func(l, n int) {
		if l < 0 {
			return
		}
		for _, h := range st.lists[l].hits[:min(n, len(st.lists[l].hits))] {
			if !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h.ID)
			}
		}
	}
	if e.cfg.AnchorKeep > 0 && len(st.subs) > 0 && st.clauses > 1 {
		// a question of several clauses states each of its facts, so its
		// own search holds their evidence; a chain's later hops, and the
		// subjects of a bare conjunction ("Which film's director was born
		// later, A or B?"), are reached by the hops, and keeping the
		// question's hits there costs the chain its last documents
		take(st.anchor(), e.cfg.AnchorKeep)
	}
	if e.cfg.SubKeep > 0 {
		for _, l := range st.subLists() {
			take(l, e.cfg.SubKeep)
		}
	}
	return out
}

// keepFirsts moves each of firsts that ranks below the best ReportLimit
// into it, in place of the lowest-ranked document there that is not one of
// firsts: the loop's ranking never loses the top of the question's own
// search, nor any sub-question's best evidence, to documents the hops
// heaped up (a dozen articles on one story, found by every bridge).
func (e *Engine) keepFirsts(st *state, out []scored) {
	n := min(e.cfg.ReportLimit, len(out))
	if n == 0 {
		return
	}
	fs := e.firsts(st)
	if len(fs) == 0 {
		return
	}
	pos := make(map[string]int, len(out))
	for i, r := range out {
		pos[r.id] = i
	}
	must := map[string]bool{}
	below := false
	for _, id := range fs {
		if i, seen := pos[id]; seen && len(must) < n {
			must[id] = true
			below = below || i >= n
		}
	}
	if !below {
		return
	}
	// the top: the documents kept, and the best others to fill it, each in
	// its fused order
	room := n - len(must)
	top := make([]scored, 0, n)
	rest := make([]scored, 0, len(out)-n)
	for _, r := range out {
		if must[r.id] || room > 0 {
			if !must[r.id] {
				room--
			}
			top = append(top, r)
			continue
		}
		rest = append(rest, r)
	}
	copy(out, append(top, rest...))
}

// keepSubs adds to keep, for each sub-question whose search found a
// document of the ranking, the best-ranked of its first three hits: a
// parallel question reports one document per fact it joins.
func (e *Engine) keepSubs(st *state, ranked []scored, keep []bool) {
	for _, l := range st.subLists() {
		if l < 0 {
			continue
		}
		hits := st.lists[l].hits
		best := -1
		for _, h := range hits[:min(3, len(hits))] {
			for i, r := range ranked {
				if r.id == h.ID && (best < 0 || i < best) {
					best = i
				}
			}
		}
		if best >= 0 {
			keep[best] = true
		}
	}
}
