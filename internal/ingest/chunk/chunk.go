package chunk

import (
	"strings"
	"unicode/utf8"

	"capsuled/internal/ingest"
)

// A TokenCounter measures text in the embedding model's tokens. The
// production one is the model's WordPiece tokenizer. Split works with any
// counter; it is exact for counters whose count of a text is the sum of the
// counts of its white-space separated pieces plus a constant (such as
// WordPiece with or without [CLS]/[SEP]), and still guarantees the budget for
// others by measuring each chunk once more.
type TokenCounter interface {
	CountTokens(text string) int
}

// Defaults of Options.
const (
	DefaultMaxTokens     = 200
	DefaultOverlapTokens = 32
)

// Options tunes Split.
type Options struct {
	// MaxTokens is the most tokens of a chunk, as the counter measures its
	// whole Text (heading prefix included). 0 means DefaultMaxTokens.
	MaxTokens int
	// OverlapTokens is the most tokens of trailing sentences (or lines) of a
	// chunk that the next chunk of the same section repeats. 0 means
	// DefaultOverlapTokens, a negative value no overlap. It is capped at a
	// quarter of MaxTokens.
	OverlapTokens int
	// HeadingContext prefixes each chunk's Text with its heading path
	// ("Install > Linux\n\n") when the chunk does not itself begin with that
	// heading.
	HeadingContext bool
}

// A Chunk is a slice of a Document's text, ready to embed.
type Chunk struct {
	Idx int // 0-based position in the document
	// Text is what to embed and index: Prefix followed by
	// Document.Text[Start:End].
	Text       string
	Start, End int      // byte offsets in ingest.Document.Text
	Tokens     int      // the counter's count of Text
	PrefixLen  int      // bytes of heading prefix at the start of Text (0 without HeadingContext)
	Headings   []string // heading path of the chunk's section; read-only
}

// unit is an indivisible piece of text for chunking: a whole block, or a
// line, sentence or word of a block too big (or prose) to keep whole.
type unit struct {
	start, end int
	tokens     int // without the counter's constant overhead
	block      int // index into the blocks chunked
	heading    bool
	blockStart bool // the first unit of its block
}

// Split cuts doc into chunks of at most opts.MaxTokens tokens as tc counts
// them. The rules:
//
//   - Chunks follow the blocks: a heading starts a new chunk (a run of
//     headings with nothing between them stays together), so no chunk mixes
//     two sections; small consecutive blocks of a section are merged up to
//     the budget.
//   - Code blocks, table rows, list items and CSV/JSON rows are never cut: a
//     code, list or table block that fits is kept whole, and one that does
//     not is split only between lines. Prose (paragraphs, PDF pages) is
//     measured sentence by sentence and may break between sentences; when a
//     block does not fit what is left of a chunk that is already half full,
//     the chunk ends at the block boundary instead.
//   - A piece still over the budget alone (a giant sentence or line) is split
//     between words, and a giant word between characters.
//   - When a chunk ends for lack of room (not at a heading), the next one
//     starts by repeating the trailing sentences/lines of the previous one,
//     up to OverlapTokens, within the same section.
//   - With HeadingContext, Text starts with the heading path joined by " > "
//     and a blank line (PrefixLen bytes); a chunk that begins with its own
//     heading gets only the headings above it. Start and End never cover the
//     prefix: Text[PrefixLen:] == doc.Text[Start:End] always. A prefix that
//     would take more than half of the budget is left out.
//
// Each text is counted once (per block, or per sentence for prose), sums
// are used while packing, and each finished chunk is counted once more to
// make sure; so Tokens is exact and never over MaxTokens (unless MaxTokens
// is smaller than the counter's count of a single character). The result
// is deterministic.
func Split(doc ingest.Document, tc TokenCounter, opts Options) []Chunk {
	c := newChunker(doc, tc, opts)
	return c.run()
}

type chunker struct {
	text     string
	tc       TokenCounter
	max      int
	overlap  int
	headings bool
	base     int // the counter's count of ""
	blocks   []ingest.Block
	prefix   map[string]prefixInfo
	units    []unit
	blockTok []int // tokens of each block's units
}

type prefixInfo struct {
	text   string
	tokens int
}

func newChunker(doc ingest.Document, tc TokenCounter, opts Options) *chunker {
	c := &chunker{text: doc.Text, tc: tc, max: opts.MaxTokens, overlap: opts.OverlapTokens, headings: opts.HeadingContext}
	if c.max <= 0 {
		c.max = DefaultMaxTokens
	}
	if c.overlap == 0 {
		c.overlap = DefaultOverlapTokens
	}
	if c.overlap < 0 {
		c.overlap = 0
	}
	c.overlap = min(c.overlap, c.max/4)
	c.base = tc.CountTokens("")
	c.prefix = map[string]prefixInfo{}
	c.blocks = sanitizeBlocks(doc)
	return c
}

// sanitizeBlocks returns doc's blocks clipped to the text, in order and not
// overlapping; a document with text but no blocks is one paragraph per run
// of lines.
func sanitizeBlocks(doc ingest.Document) []ingest.Block {
	n := len(doc.Text)
	if len(doc.Blocks) == 0 {
		return ingest.ParagraphBlocks(doc.Text, nil)
	}
	out := make([]ingest.Block, 0, len(doc.Blocks))
	prev := 0
	for _, b := range doc.Blocks {
		b.Start = max(b.Start, prev)
		b.End = min(b.End, n)
		if b.Start >= b.End {
			continue
		}
		// keep offsets on rune boundaries
		for b.Start < b.End && !utf8.RuneStart(doc.Text[b.Start]) {
			b.Start++
		}
		for b.End < n && !utf8.RuneStart(doc.Text[b.End]) {
			b.End++
		}
		if strings.TrimSpace(doc.Text[b.Start:b.End]) == "" {
			continue
		}
		out = append(out, b)
		prev = b.End
	}
	return out
}

func (c *chunker) count(s string) int {
	return c.tc.CountTokens(s) - c.base
}

// prefixFor returns the heading prefix for a path (cached per call).
func (c *chunker) prefixFor(path []string) prefixInfo {
	if !c.headings || len(path) == 0 {
		return prefixInfo{}
	}
	key := strings.Join(path, "\x00")
	if p, ok := c.prefix[key]; ok {
		return p
	}
	text := strings.Join(path, " > ") + "\n\n"
	p := prefixInfo{text: text, tokens: c.count(text)}
	if p.tokens > (c.max-c.base)/2 {
		p = prefixInfo{}
	}
	c.prefix[key] = p
	return p
}

// budget is the room for units in a chunk whose first unit is u.
func (c *chunker) budget(u unit) int {
	return c.max - c.base - c.prefixFor(c.chunkPath(u)).tokens
}

// chunkPath is the prefix path of a chunk starting with u.
func (c *chunker) chunkPath(u unit) []string {
	b := c.blocks[u.block]
	if b.Kind == ingest.BlockHeading && len(b.Path) > 0 {
		return b.Path[:len(b.Path)-1]
	}
	return b.Path
}

func (c *chunker) run() []Chunk {
	c.buildUnits()
	var out []Chunk
	i := 0
	overlapOK := false
	for i < len(c.units) {
		first := i
		if overlapOK {
			first = c.overlapStart(i)
		}
		j, full := c.pack(first, i)
		// measure the chunk; shrink it if the sum was optimistic
		for {
			ch := c.make(first, j)
			if ch.Tokens <= c.max {
				ch.Idx = len(out)
				out = append(out, ch)
				break
			}
			if first < i {
				first = i // drop the overlap first
				continue
			}
			if j > i+1 {
				j--
				full = true
				continue
			}
			if c.splitFiner(i) { // one unit alone is over: split it finer
				j, full = c.pack(first, i)
				continue
			}
			ch.Idx = len(out) // a single character over budget: nothing smaller exists
			out = append(out, ch)
			break
		}
		i = j
		overlapOK = full
	}
	return out
}

// pack extends a chunk that starts at first (overlap units first..i-1, then
// new units from i) as far as the rules allow; it returns the end and
// whether the chunk ended for lack of room.
func (c *chunker) pack(first, i int) (int, bool) {
	budget := c.budget(c.units[first])
	tokens := 0
	for k := first; k < i; k++ {
		tokens += c.units[k].tokens
	}
	headingsOnly := true
	for k := first; k < i; k++ {
		if !c.units[k].heading {
			headingsOnly = false
		}
	}
	j := i
	for j < len(c.units) {
		u := c.units[j]
		if j > i && u.heading && u.blockStart && !headingsOnly {
			return j, false
		}
		if j > i && tokens+u.tokens > budget {
			return j, true
		}
		if j > i && u.blockStart && !u.heading && !headingsOnly && tokens+c.blockTok[u.block] > budget && tokens >= budget/2 {
			return j, true
		}
		tokens += u.tokens
		if !u.heading {
			headingsOnly = false
		}
		j++
	}
	return j, false
}

// overlapStart returns where the chunk starting at i begins when it repeats
// trailing units of the previous chunk: units of the same section, not
// headings, within the overlap budget and leaving room for unit i.
func (c *chunker) overlapStart(i int) int {
	if c.overlap <= 0 || i == 0 {
		return i
	}
	cur := c.units[i]
	if cur.heading {
		return i
	}
	section := c.sectionOf(cur.block)
	budget := c.budget(cur)
	sum := 0
	k := i
	for k > 0 {
		p := c.units[k-1]
		if p.heading || c.sectionOf(p.block) != section || sum+p.tokens > c.overlap || sum+p.tokens+cur.tokens > budget {
			break
		}
		sum += p.tokens
		k--
	}
	return k
}

// sectionOf identifies a block's section by its heading path slice (blocks of
// one section share it).
func (c *chunker) sectionOf(block int) string {
	return strings.Join(c.blocks[block].Path, "\x00")
}

func (c *chunker) make(first, j int) Chunk {
	start, end := c.units[first].start, c.units[j-1].end
	p := c.prefixFor(c.chunkPath(c.units[first]))
	text := c.text[start:end]
	if p.text != "" {
		text = p.text + text
	}
	b := c.blocks[c.units[j-1].block]
	return Chunk{Text: text, Start: start, End: end, Tokens: c.tc.CountTokens(text), PrefixLen: len(p.text), Headings: b.Path}
}

// buildUnits turns blocks into units, measuring each once.
func (c *chunker) buildUnits() {
	c.units = make([]unit, 0, len(c.blocks)*2)
	c.blockTok = make([]int, len(c.blocks))
	for bi, b := range c.blocks {
		from := len(c.units)
		heading := b.Kind == ingest.BlockHeading
		budget := c.max - c.base - c.prefixFor(b.Path).tokens
		if heading {
			budget = c.max - c.base - c.prefixFor(b.Path[:max(len(b.Path)-1, 0)]).tokens
		}
		switch b.Kind {
		case ingest.BlockParagraph, ingest.BlockPage:
			for _, s := range sentences(c.text, b.Start, b.End) {
				c.addUnit(s[0], s[1], bi, heading, budget)
			}
		default:
			t := c.count(c.text[b.Start:b.End])
			if t <= budget {
				c.units = append(c.units, unit{start: b.Start, end: b.End, tokens: t, block: bi, heading: heading})
			} else {
				for _, l := range lineSpans(c.text, b.Start, b.End) {
					c.addUnit(l[0], l[1], bi, heading, budget)
				}
			}
		}
		if len(c.units) > from {
			c.units[from].blockStart = true
		}
		for k := from; k < len(c.units); k++ {
			c.blockTok[bi] += c.units[k].tokens
		}
	}
}

// addUnit measures text[s:e] and appends it as one unit, or as words (then
// characters) when it alone exceeds the budget.
func (c *chunker) addUnit(s, e, block int, heading bool, budget int) {
	t := c.count(c.text[s:e])
	if t <= budget || e-s <= 1 {
		c.units = append(c.units, unit{start: s, end: e, tokens: t, block: block, heading: heading})
		return
	}
	words := wordSpans(c.text, s, e)
	if len(words) > 1 {
		for _, w := range words {
			c.addUnit(w[0], w[1], block, heading, budget)
		}
		return
	}
	// one giant word: halve on a rune boundary
	mid := s + (e-s)/2
	for mid > s && !utf8.RuneStart(c.text[mid]) {
		mid--
	}
	if mid == s { // the first rune is over half: cut after it
		_, size := utf8.DecodeRuneInString(c.text[s:e])
		mid = s + size
	}
	if mid >= e {
		c.units = append(c.units, unit{start: s, end: e, tokens: t, block: block, heading: heading})
		return
	}
	c.addUnit(s, mid, block, heading, budget)
	c.addUnit(mid, e, block, heading, budget)
}

// splitFiner replaces unit i by smaller units; false when it cannot be
// split.
func (c *chunker) splitFiner(i int) bool {
	u := c.units[i]
	saved := c.units
	c.units = nil
	// a budget one below the unit's own count forces a split
	c.addUnit(u.start, u.end, u.block, u.heading, u.tokens-1)
	parts := c.units
	c.units = saved
	if len(parts) <= 1 {
		return false
	}
	parts[0].blockStart = u.blockStart
	rest := append([]unit(nil), c.units[i+1:]...)
	c.units = append(append(c.units[:i], parts...), rest...)
	return true
}

// sentences splits text[s:e] into trimmed sentence spans: after . ! ? (and
// closing quotes or brackets) followed by white space, and at blank lines.
func sentences(text string, s, e int) [][2]int {
	var out [][2]int
	start := -1
	for i := s; i < e; i++ {
		ch := text[i]
		if start < 0 {
			if ch == ' ' || ch == '\t' || ch == '\n' {
				continue
			}
			start = i
		}
		boundary := false
		next := i + 1
		switch ch {
		case '.', '!', '?':
			for next < e && strings.IndexByte(`"')]`, text[next]) >= 0 {
				next++
			}
			boundary = next >= e || text[next] == ' ' || text[next] == '\n' || text[next] == '\t'
		case '\n':
			boundary = next < e && text[next] == '\n'
			next = i
		}
		if boundary {
			end := next
			for end > start && (text[end-1] == ' ' || text[end-1] == '\n' || text[end-1] == '\t') {
				end--
			}
			if end > start {
				out = append(out, [2]int{start, end})
			}
			start = -1
			i = next - 1
			if ch == '\n' {
				i = next
			}
		}
	}
	if start >= 0 {
		end := e
		for end > start && (text[end-1] == ' ' || text[end-1] == '\n' || text[end-1] == '\t') {
			end--
		}
		if end > start {
			out = append(out, [2]int{start, end})
		}
	}
	return out
}

// lineSpans splits text[s:e] into non-blank lines (trailing blanks trimmed,
// indentation kept).
func lineSpans(text string, s, e int) [][2]int {
	var out [][2]int
	for s < e {
		nl := strings.IndexByte(text[s:e], '\n')
		le := e
		if nl >= 0 {
			le = s + nl
		}
		end := le
		for end > s && (text[end-1] == ' ' || text[end-1] == '\t') {
			end--
		}
		if end > s && strings.TrimSpace(text[s:end]) != "" {
			out = append(out, [2]int{s, end})
		}
		s = le + 1
	}
	return out
}

// wordSpans splits text[s:e] at white space.
func wordSpans(text string, s, e int) [][2]int {
	var out [][2]int
	start := -1
	for i := s; i < e; i++ {
		sp := text[i] == ' ' || text[i] == '\n' || text[i] == '\t'
		if sp && start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		} else if !sp && start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, e})
	}
	return out
}
