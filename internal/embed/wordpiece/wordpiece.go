package wordpiece

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultMaxLen is the sequence length all-MiniLM-L6-v2 was trained with,
// [CLS] and [SEP] included.
const DefaultMaxLen = 256

// maxInputCharsPerWord is the reference's max_input_chars_per_word: a longer
// word becomes [UNK].
const maxInputCharsPerWord = 100

// Encoding is the result of Encode: parallel slices, one entry per token.
type Encoding struct {
	IDs           []int64
	TypeIDs       []int64
	AttentionMask []int64
	// Offsets holds, for every token, the byte range [start, end) of the
	// original text it came from; [0, 0] for [CLS] and [SEP].
	Offsets [][2]int
}

// Len is the number of tokens, specials included.
func (e Encoding) Len() int { return len(e.IDs) }

// Tokenizer is a BERT uncased WordPiece tokenizer. It is safe for concurrent
// use.
type Tokenizer struct {
	vocab    map[string]int32 // word-initial pieces
	cont     map[string]int32 // continuation pieces, without the "##" prefix
	added    []addedToken     // literal special tokens, longest first
	pieces   []string         // by id
	maxPiece int              // longest piece in bytes (after the prefix)
	unk      int32
	cls      int32
	sep      int32
	pad      int32
	size     int
	scratch  sync.Pool
}

type addedToken struct {
	text string
	id   int32
}

// Load reads a vocabulary. path may be a vocab.txt file (one piece a line,
// the id is the line number), a tokenizer.json file, or a directory holding
// either (vocab.txt preferred).
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: load: %w", err)
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "vocab.txt")); err == nil {
			path = filepath.Join(path, "vocab.txt")
		} else {
			path = filepath.Join(path, "tokenizer.json")
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: load: %w", err)
	}
	defer f.Close()
	var pieces []string
	if strings.HasSuffix(path, ".json") {
		pieces, err = readTokenizerJSON(f)
	} else {
		pieces, err = readVocabTxt(f)
	}
	if err != nil {
		return nil, fmt.Errorf("wordpiece: load %s: %w", path, err)
	}
	return New(pieces)
}

func readVocabTxt(f *os.File) ([]string, error) {
	var pieces []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		pieces = append(pieces, strings.TrimRight(sc.Text(), "\r"))
	}
	return pieces, sc.Err()
}

func readTokenizerJSON(f *os.File) ([]string, error) {
	var doc struct {
		Model struct {
			Type  string           `json:"type"`
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("model type %q, want WordPiece", doc.Model.Type)
	}
	pieces := make([]string, len(doc.Model.Vocab))
	for p, id := range doc.Model.Vocab {
		if id < 0 || int(id) >= len(pieces) {
			return nil, fmt.Errorf("piece %q has id %d outside 0..%d", p, id, len(pieces)-1)
		}
		pieces[id] = p
	}
	return pieces, nil
}

// New builds a Tokenizer from a vocabulary given in id order. It must hold
// [UNK], [CLS] and [SEP]; [PAD] and [MASK] are optional.
func New(pieces []string) (*Tokenizer, error) {
	t := &Tokenizer{
		vocab: make(map[string]int32, len(pieces)),
		cont:  make(map[string]int32, len(pieces)/4),
		unk:   -1, cls: -1, sep: -1, pad: 0,
		size:   len(pieces),
		pieces: pieces,
	}
	for i, p := range pieces {
		id := int32(i)
		switch p {
		case "[UNK]":
			t.unk = id
		case "[CLS]":
			t.cls = id
		case "[SEP]":
			t.sep = id
		case "[PAD]":
			t.pad = id
		}
		if p == "[UNK]" || p == "[CLS]" || p == "[SEP]" || p == "[PAD]" || p == "[MASK]" {
			t.added = append(t.added, addedToken{p, id})
		}
		if rest, ok := strings.CutPrefix(p, "##"); ok && rest != "" {
			if _, dup := t.cont[rest]; !dup {
				t.cont[rest] = id
			}
			t.maxPiece = max(t.maxPiece, len(rest))
			continue
		}
		if _, dup := t.vocab[p]; !dup {
			t.vocab[p] = id
		}
		t.maxPiece = max(t.maxPiece, len(p))
	}
	if t.unk < 0 || t.cls < 0 || t.sep < 0 {
		return nil, errors.New("wordpiece: vocabulary lacks [UNK], [CLS] or [SEP]")
	}
	sort.Slice(t.added, func(i, j int) bool { return len(t.added[i].text) > len(t.added[j].text) })
	t.scratch.New = func() any { return new(scratch) }
	return t, nil
}

// HasWord reports whether word (lower case, as the uncased tokenizer
// normalises it) is a whole word of the vocabulary: one word-initial piece.
func (t *Tokenizer) HasWord(word string) bool {
	_, ok := t.vocab[word]
	return ok
}

// VocabSize is the number of pieces in the vocabulary.
func (t *Tokenizer) VocabSize() int { return t.size }

// PadID is the id of [PAD].
func (t *Tokenizer) PadID() int64 { return int64(t.pad) }

// scratch holds per-call buffers, pooled.
type scratch struct {
	word  []byte   // the current normalized word
	wOrig [][2]int // original byte span of every byte of word
	runes []byte   // decomposition buffer
	enc   []byte   // utf-8 buffer for one rune
}

// sink receives the tokens of a text in order: it counts them, or collects
// ids and offsets up to a limit.
type sink struct {
	countOnly bool
	n         int
	ids       []int64
	offs      [][2]int
	limit     int // max len(ids), [CLS] included; <0 means none
	pieces    []piece
}

type piece struct {
	id         int32
	start, end int
}

// token takes one token; it returns false when no more are wanted.
func (c *sink) token(id int32, start, end int) bool {
	if c.countOnly {
		c.n++
		return true
	}
	if c.limit >= 0 && len(c.ids) >= c.limit {
		return false
	}
	c.ids = append(c.ids, int64(id))
	c.offs = append(c.offs, [2]int{start, end})
	return c.limit < 0 || len(c.ids) < c.limit
}

// CountTokens is the number of word pieces text becomes, without [CLS] and
// [SEP] and without truncation.
func (t *Tokenizer) CountTokens(text string) int {
	c := sink{countOnly: true}
	t.run(text, &c)
	return c.n
}

// Encode tokenizes text into [CLS] pieces... [SEP], truncated so that the
// whole sequence holds at most maxLen tokens (maxLen <= 0: no limit; a
// positive maxLen below 2 is taken as 2).
func (t *Tokenizer) Encode(text string, maxLen int) Encoding {
	c := sink{limit: -1}
	if maxLen > 0 {
		c.limit = max(maxLen, 2) - 1
		c.ids = make([]int64, 1, min(maxLen, len(text)+2))
		c.offs = make([][2]int, 1, cap(c.ids))
	} else {
		c.ids = make([]int64, 1, len(text)/3+2)
		c.offs = make([][2]int, 1, cap(c.ids))
	}
	c.ids[0] = int64(t.cls)
	if c.limit != 1 {
		t.run(text, &c)
	}
	c.ids = append(c.ids, int64(t.sep))
	c.offs = append(c.offs, [2]int{})
	n := len(c.ids)
	mask := make([]int64, 2*n)
	for i := range n {
		mask[i] = 1
	}
	return Encoding{IDs: c.ids, Offsets: c.offs, AttentionMask: mask[:n:n], TypeIDs: mask[n:]}
}

// Tokens returns the word pieces of text as strings (continuations with
// "##"), without specials: a debugging aid.
func (t *Tokenizer) Tokens(text string) []string {
	c := sink{limit: -1}
	t.run(text, &c)
	out := make([]string, len(c.ids))
	for i, id := range c.ids {
		out[i] = t.pieces[id]
	}
	return out
}

// run feeds the tokens of text to s.
func (t *Tokenizer) run(text string, s *sink) {
	sc := t.scratch.Get().(*scratch)
	defer t.scratch.Put(sc)
	sc.word = sc.word[:0]
	sc.wOrig = sc.wOrig[:0]
	start := 0
	for i := 0; i < len(text); {
		if text[i] != '[' {
			j := strings.IndexByte(text[i:], '[')
			if j < 0 {
				break
			}
			i += j
			continue
		}
		matched := false
		for _, a := range t.added {
			if strings.HasPrefix(text[i:], a.text) {
				if !t.segment(text, start, i, sc, s) {
					return
				}
				if !s.token(a.id, i, i+len(a.text)) {
					return
				}
				i += len(a.text)
				start = i
				matched = true
				break
			}
		}
		if !matched {
			i++
		}
	}
	t.segment(text, start, len(text), sc, s)
}

// segment tokenizes text[from:to], which holds no added token. It returns
// false when the sink asked to stop.
func (t *Tokenizer) segment(text string, from, to int, sc *scratch, s *sink) bool {
	for i := from; i < to; {
		b := text[i]
		if b < utf8.RuneSelf {
			switch {
			case b == ' ' || b == '\t' || b == '\n' || b == '\r':
				if !t.flush(sc, s) {
					return false
				}
			case b < 0x20 || b == 0x7f: // controls are dropped
			case isASCIIPunct(b):
				if !t.flush(sc, s) {
					return false
				}
				sc.word = append(sc.word, b)
				sc.wOrig = append(sc.wOrig, [2]int{i, i + 1})
				if !t.flush(sc, s) {
					return false
				}
			default:
				if 'A' <= b && b <= 'Z' {
					b += 'a' - 'A'
				}
				sc.word = append(sc.word, b)
				sc.wOrig = append(sc.wOrig, [2]int{i, i + 1})
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		span := [2]int{i, i + size}
		i += size
		switch {
		case r == utf8.RuneError || isControl(r):
			continue
		case unicode.IsSpace(r):
			if !t.flush(sc, s) {
				return false
			}
			continue
		case isChinese(r):
			if !t.flush(sc, s) {
				return false
			}
			t.appendNormalized(sc, r, span)
			if !t.flush(sc, s) {
				return false
			}
			continue
		}
		t.appendNormalized(sc, r, span)
	}
	return t.flush(sc, s)
}

// appendNormalized appends r, decomposed (NFD), stripped of non-spacing
// marks and lower-cased, to the current word, splitting at punctuation.
func (t *Tokenizer) appendNormalized(sc *scratch, r rune, span [2]int) {
	sc.enc = utf8.AppendRune(sc.enc[:0], r)
	sc.runes = norm.NFD.Append(sc.runes[:0], sc.enc...)
	for k := 0; k < len(sc.runes); {
		d, n := utf8.DecodeRune(sc.runes[k:])
		k += n
		if unicode.Is(unicode.Mn, d) {
			continue
		}
		d = unicode.ToLower(d)
		if isPunct(d) {
			// punctuation is a word of its own; flushing needs a sink, so
			// mark it with a split and let the caller's flush emit it.
			sc.word = append(sc.word, splitMark)
			sc.wOrig = append(sc.wOrig, span)
			sc.word = utf8.AppendRune(sc.word, d)
			for range utf8.RuneLen(d) - 1 {
				sc.wOrig = append(sc.wOrig, span)
			}
			sc.wOrig = append(sc.wOrig, span)
			sc.word = append(sc.word, splitMark)
			sc.wOrig = append(sc.wOrig, span)
			continue
		}
		before := len(sc.word)
		sc.word = utf8.AppendRune(sc.word, d)
		for range len(sc.word) - before {
			sc.wOrig = append(sc.wOrig, span)
		}
	}
}

// splitMark separates words inside the word buffer; it cannot occur in
// normalized text because control characters are dropped.
const splitMark = 0x01

// flush turns the buffered word(s) into word pieces.
func (t *Tokenizer) flush(sc *scratch, s *sink) bool {
	w := sc.word
	orig := sc.wOrig
	sc.word = sc.word[:0]
	sc.wOrig = sc.wOrig[:0]
	for len(w) > 0 {
		j := 0
		for j < len(w) && w[j] != splitMark {
			j++
		}
		if j > 0 && !t.wordPieces(w[:j], orig[:j], s) {
			return false
		}
		if j < len(w) {
			j++
		}
		w, orig = w[j:], orig[j:]
	}
	return true
}

// wordPieces emits the greedy longest-match pieces of one normalized word.
func (t *Tokenizer) wordPieces(w []byte, orig [][2]int, s *sink) bool {
	if utf8.RuneCount(w) > maxInputCharsPerWord {
		return s.token(t.unk, orig[0][0], orig[len(orig)-1][1])
	}
	// First pass: check the whole word can be covered; the reference emits
	// a single [UNK] for the word otherwise.
	pieces := s.pieces[:0]
	defer func() { s.pieces = pieces[:0] }()
	for start := 0; start < len(w); {
		dict := t.vocab
		if start > 0 {
			dict = t.cont
		}
		end := min(len(w), start+t.maxPiece)
		for end > start && !utf8.RuneStart(safeAt(w, end)) {
			end--
		}
		found := false
		for end > start {
			if id, ok := dict[string(w[start:end])]; ok {
				pieces = append(pieces, piece{id, start, end})
				found = true
				break
			}
			end--
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		if !found {
			return s.token(t.unk, orig[0][0], orig[len(orig)-1][1])
		}
		start = end
	}
	for _, p := range pieces {
		if !s.token(p.id, orig[p.start][0], orig[p.end-1][1]) {
			return false
		}
	}
	return true
}

func safeAt(w []byte, i int) byte {
	if i >= len(w) {
		return 0
	}
	return w[i]
}

func isASCIIPunct(b byte) bool {
	return (b >= 33 && b <= 47) || (b >= 58 && b <= 64) || (b >= 91 && b <= 96) || (b >= 123 && b <= 126)
}

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIPunct(byte(r))
	}
	return unicode.IsPunct(r)
}

// isControl reports the characters the reference drops: Unicode Cc, Cf, Co
// and unassigned code points (tab, newline and carriage return excepted,
// but those are ASCII and handled before).
func isControl(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cs)
}

func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
