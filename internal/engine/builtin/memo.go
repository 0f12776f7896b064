package builtin

import (
	"strings"
	"sync"

	"capsuled/internal/toolresult"
)

// A memo remembers, across requests, what the engine derives from the text
// of the messages alone: the hits of a tool message, the features of a
// document's text (lower-cased, its lead title and lead name, its speaker),
// which of a question's terms a document holds, and the tools a system
// prompt describes. A conversation's later turns carry every earlier tool
// message again, so without it each turn would derive them all anew and a
// turn's cost would grow with the documents seen (a long article read
// whole is lower-cased and scanned again on every turn). Each value is a
// function of its key, so a reply is the same with or without the memo;
// the memo only saves the work. Its size is bounded (see cache).
type memo struct {
	hits  cache[string, []toolresult.Hit]
	feats cache[string, textFeat]
	has   cache[hasKey, []bool]
	tools cache[string, toolset]
	short cache[string, map[string]string]
}

// memoBytes bounds the bytes of keys one generation of each cache holds.
const memoBytes = 8 << 20

func newMemo() *memo {
	m := &memo{}
	m.hits.max, m.feats.max, m.has.max, m.tools.max, m.short.max = memoBytes, memoBytes, memoBytes, memoBytes/8, memoBytes
	m.hits.cost = func(k string) int { return len(k) }
	m.feats.cost = func(k string) int { return len(k) }
	m.has.cost = func(k hasKey) int { return len(k.terms) + len(k.title) + len(k.text) }
	m.tools.cost = func(k string) int { return len(k) }
	m.short.cost = func(k string) int { return len(k) }
	return m
}

// textFeat is what the engine reads from a document's text, whatever the
// question.
type textFeat struct {
	low    string // lower-cased (lower)
	lead   string // a title the text starts with (leadTitle)
	entity string // the name the text starts with (leadEntity)
	nick   string // the name the entity goes by, from a quoted nickname (definedLead)
	spk    string // a chat turn's speaker (speaker)
}

func featuresOf(text string) textFeat {
	def, nick := definedLead(text) // read once for both leads
	f := textFeat{low: lower(text), lead: leadTitleOf(text, def), entity: leadEntityOf(text, def), spk: speaker(text)}
	if def == f.entity {
		f.nick = nick
	}
	return f
}

// hasKey is a question's terms (joined by NUL, with its aliases, see
// aliasKey) and a document's title and text: the key of which of the terms
// the document holds.
type hasKey struct{ terms, title, text string }

// parse is toolresult.Parse, remembered. The hits are shared: read only.
func (m *memo) parse(content string) []toolresult.Hit {
	if m == nil {
		return toolresult.Parse(content)
	}
	return m.hits.get(content, func() []toolresult.Hit { return toolresult.Parse(content) })
}

// features is featuresOf, remembered.
func (m *memo) features(text string) textFeat {
	if m == nil {
		return featuresOf(text)
	}
	return m.feats.get(text, func() textFeat { return featuresOf(text) })
}

// toolsFor is toolsFor, remembered for a prompt without tool definitions.
// The toolset is shared: read only.
func (m *memo) toolsFor(prompt string, defs []ToolDef) toolset {
	if m == nil || len(defs) > 0 {
		return toolsFor(prompt, defs)
	}
	return m.tools.get(prompt, func() toolset { return toolsFor(prompt, nil) })
}

// shortForms is shortFormsOf, remembered. The map is shared: read only.
func (m *memo) shortForms(text string) map[string]string {
	if m == nil {
		return shortFormsOf(text)
	}
	return m.short.get(text, func() map[string]string { return shortFormsOf(text) })
}

// hasTerms is the question terms' flags of a document (state.has),
// remembered. The flags are shared: read only.
func (m *memo) hasTerms(qt []string, aliases []alias, title, text string, f func() []bool) []bool {
	if m == nil {
		return f()
	}
	return m.has.get(hasKey{strings.Join(qt, "\x00") + aliasKey(aliases), title, text}, f)
}

// A cache is a map bounded by the cost of its keys, in two generations:
// when the current one's keys cost more than max, it becomes the old one
// (the one before is dropped), and a key found in the old one moves back
// to the current one. So it holds at most about 2*max of keys, and what
// the requests of the moment use stays. Safe for concurrent use.
type cache[K comparable, V any] struct {
	mu       sync.Mutex
	cur, old map[K]V
	size     int
	max      int
	cost     func(K) int
}

// get returns the value of k, computing it with f when it is not there.
func (c *cache[K, V]) get(k K, f func() V) V {
	c.mu.Lock()
	if v, ok := c.cur[k]; ok {
		c.mu.Unlock()
		return v
	}
	if v, ok := c.old[k]; ok {
		c.put(k, v)
		c.mu.Unlock()
		return v
	}
	c.mu.Unlock()
	v := f()
	c.mu.Lock()
	c.put(k, v)
	c.mu.Unlock()
	return v
}

func (c *cache[K, V]) put(k K, v V) {
	if c.cur == nil {
		c.cur = map[K]V{}
	}
	if _, ok := c.cur[k]; ok {
		return
	}
	c.cur[k] = v
	c.size += c.cost(k)
	if c.size > c.max {
		c.old, c.cur, c.size = c.cur, map[K]V{}, 0
	}
}
