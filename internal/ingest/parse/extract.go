package parse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"capsuled/internal/domain"
	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
)

// DefaultMaxBytes is the size limit Extract applies when given maxBytes <= 0.
const DefaultMaxBytes = 100 << 20

// A Parser turns a file's bytes into a Document. It may panic on hostile
// input: the Registry recovers.
type Parser interface {
	Parse(ctx context.Context, data []byte, fileName string) (ingest.Document, error)
}

// ParserFunc adapts a function to Parser.
type ParserFunc func(ctx context.Context, data []byte, fileName string) (ingest.Document, error)

// Parse calls f.
func (f ParserFunc) Parse(ctx context.Context, data []byte, fileName string) (ingest.Document, error) {
	return f(ctx, data, fileName)
}

// A MetadataReader reads what a file says about itself (see ReadMetadata),
// reading only the parts it needs. A Parser of a format that carries
// metadata implements it too.
type MetadataReader interface {
	ReadMetadata(ctx context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error)
}

// withMetadata is a parser with its format's metadata reader.
type withMetadata struct {
	ParserFunc
	meta func(ctx context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error)
}

// ReadMetadata calls the metadata reader.
func (p withMetadata) ReadMetadata(ctx context.Context, r io.ReaderAt, size int64) (ingest.Metadata, error) {
	return p.meta(ctx, r, size)
}

// A Registry maps canonical MIME types to parsers. It is immutable once built
// and safe for concurrent use.
type Registry struct {
	parsers map[string]Parser
}

var mimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$`)

// NewRegistry builds a registry. It fails when a key is not a canonical
// MIME type (lower case, type/subtype, no parameters, not an alias) or a
// parser is nil.
func NewRegistry(parsers map[string]Parser) (*Registry, error) {
	r := &Registry{parsers: make(map[string]Parser, len(parsers))}
	for name, p := range parsers {
		if !mimeName.MatchString(name) {
			return nil, fmt.Errorf("ingest: registry: %q is not a MIME type (want lower-case type/subtype without parameters)", name)
		}
		if canon := detect.NormalizeMIME(name); canon != name {
			return nil, fmt.Errorf("ingest: registry: %q is an alias of %q; register the canonical name", name, canon)
		}
		if p == nil {
			return nil, fmt.Errorf("ingest: registry: nil parser for %q", name)
		}
		r.parsers[name] = p
	}
	return r, nil
}

// Types lists the registered MIME types, sorted.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.parsers))
	for k := range r.parsers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Supports reports whether mimeType (normalised) has a parser.
func (r *Registry) Supports(mimeType string) bool {
	_, ok := r.parsers[detect.NormalizeMIME(mimeType)]
	return ok
}

// DefaultParsers returns the built-in parsers keyed by MIME type: a fresh
// map the caller may change before passing it to NewRegistry.
func DefaultParsers() map[string]Parser {
	m := map[string]Parser{
		"text/plain":                ParserFunc(parsePlain),
		"text/markdown":             withMetadata{parseMarkdown, markdownMetadata},
		"text/html":                 withMetadata{parseHTML, htmlMetadata},
		"application/pdf":           withMetadata{parsePDF, pdfMetadata},
		detect.DOCX:                 withMetadata{parseDOCX, docxMetadata},
		"text/csv":                  ParserFunc(parseCSV),
		"text/tab-separated-values": ParserFunc(parseTSV),
		"application/json":          ParserFunc(parseJSON),
		"application/x-ndjson":      ParserFunc(parseNDJSON),
	}
	for _, t := range detect.CodeTypes() {
		m[t] = ParserFunc(parseCode)
	}
	return m
}

// NewDefaultRegistry returns a registry of DefaultParsers.
func NewDefaultRegistry() *Registry {
	r, err := NewRegistry(DefaultParsers())
	if err != nil {
		panic(err) // a bug in this package; TestDefaultRegistry catches it
	}
	return r
}

var defaultRegistry = NewDefaultRegistry()

// Extract reads a file and returns its clean text and structure, using the
// built-in parsers. See Registry.Extract.
func Extract(ctx context.Context, r io.Reader, fileName, mimeType string, maxBytes int64) (ingest.Document, error) {
	return defaultRegistry.Extract(ctx, r, fileName, mimeType, maxBytes)
}

// Extract reads at most maxBytes of r (DefaultMaxBytes when maxBytes <= 0),
// resolves the type (see ResolveType) and runs its parser. Errors the client
// should see are *domain.Error: KindTooLarge over the limit, KindUnprocessable
// for unsupported types and corrupt files. A failing reader or a cancelled
// context is returned wrapped as it is.
func (r *Registry) Extract(ctx context.Context, rd io.Reader, fileName, mimeType string, maxBytes int64) (ingest.Document, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := ctx.Err(); err != nil {
		return ingest.Document{}, err
	}
	data, err := io.ReadAll(io.LimitReader(rd, maxBytes+1))
	if err != nil {
		return ingest.Document{}, fmt.Errorf("ingest: read %q: %w", fileName, err)
	}
	if int64(len(data)) > maxBytes {
		return ingest.Document{}, &domain.Error{Kind: domain.KindTooLarge, Code: "file_too_large",
			Message: fmt.Sprintf("file is larger than the limit of %d bytes", maxBytes)}
	}
	typ := detect.ResolveType(fileName, mimeType, data)
	return r.Parse(ctx, data, fileName, typ)
}

// Parse runs the parser of mimeType (normalised, not sniffed) on data,
// recovering from panics.
func (r *Registry) Parse(ctx context.Context, data []byte, fileName, mimeType string) (doc ingest.Document, err error) {
	typ := detect.NormalizeMIME(mimeType)
	if typ == "application/octet-stream" {
		return ingest.Document{}, unprocessable("unsupported_file_type", nil,
			"unsupported file type application/octet-stream: binary content that is neither text nor a known document format")
	}
	p, ok := r.parsers[typ]
	if !ok {
		if typ == "" {
			typ = "unknown"
		}
		return ingest.Document{}, unprocessable("unsupported_file_type", nil, "unsupported file type %s", typ)
	}
	if detect.IsText(typ) {
		if reason := binaryReason(data, typ); reason != "" {
			return ingest.Document{}, unprocessable("binary_content", nil,
				"binary content declared as %s: %s; upload text as UTF-8, or a supported document format", typ, reason)
		}
	}
	defer func() {
		if v := recover(); v != nil {
			doc = ingest.Document{}
			err = unprocessable("corrupt_file", fmt.Errorf("panic: %v\n%s", v, debug.Stack()),
				"cannot read %s file: the parser failed on malformed content", typ)
		}
	}()
	doc, err = p.Parse(ctx, data, fileName)
	if err != nil {
		if _, isDomain := domain.AsError(err); isDomain || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return ingest.Document{}, err
		}
		return ingest.Document{}, unprocessable("corrupt_file", err, "cannot read %s file: %v", typ, err)
	}
	doc.MIMEType = typ
	if doc.Text != "" && len(doc.Blocks) == 0 {
		doc.Blocks = ingest.ParagraphBlocks(doc.Text, nil)
	}
	return doc, nil
}

func unprocessable(code string, cause error, format string, args ...any) *domain.Error {
	return &domain.Error{Kind: domain.KindUnprocessable, Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// corrupt returns the error of a file of the named format that cannot be read.
func corrupt(format string, cause error, detail string, args ...any) *domain.Error {
	return unprocessable("corrupt_file", cause, "corrupt "+format+": "+detail, args...)
}

// builder accumulates a Document's text and blocks, keeping the heading path.
type builder struct {
	sb     strings.Builder
	blocks []ingest.Block
	stack  []heading
	path   []string // current heading path, shared by blocks until it changes
}

type heading struct {
	level int
	title string
}

// add appends a block; text is cleaned first, and dropped when blank.
// Headings are flattened to one line and update the heading path.
func (b *builder) add(kind ingest.BlockKind, level int, text string) {
	b.addPage(kind, level, 0, text)
}

func (b *builder) addPage(kind ingest.BlockKind, level, page int, text string) {
	text = cleanText(text)
	if kind == ingest.BlockHeading {
		text = strings.Join(strings.Fields(text), " ")
	} else if kind == ingest.BlockCode {
		text = trimBlankLines(text)
	} else {
		text = strings.TrimSpace(text)
	}
	if text == "" {
		return
	}
	if kind == ingest.BlockHeading {
		if level < 1 {
			level = 1
		}
		for len(b.stack) > 0 && b.stack[len(b.stack)-1].level >= level {
			b.stack = b.stack[:len(b.stack)-1]
		}
		b.stack = append(b.stack, heading{level, text})
		b.path = make([]string, len(b.stack))
		for i, h := range b.stack {
			b.path[i] = h.title
		}
	} else {
		level = 0
	}
	if b.sb.Len() > 0 {
		b.sb.WriteString("\n\n")
	}
	start := b.sb.Len()
	b.sb.WriteString(text)
	b.blocks = append(b.blocks, ingest.Block{Kind: kind, Level: level, Path: b.path, Page: page, Start: start, End: b.sb.Len()})
}

func (b *builder) doc() ingest.Document {
	return ingest.Document{Text: b.sb.String(), Blocks: b.blocks}
}

// trimBlankLines removes leading blank lines and trailing white space (any
// Unicode space, as strings.TrimSpace counts it: a no-break space alone is
// blank), keeping the indentation of the first line.
func trimBlankLines(s string) string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			return s
		}
		s = s[i+1:]
	}
}

// binarySample is how much of a file binaryReason looks at.
const binarySample = 64 << 10

// binaryReason says why data, declared as the text type typ, is binary
// rather than text, or "" when it is text: 5% or more control characters
// (detect.IsBinary), or, for types read as UTF-8 (all but HTML, which
// declares its own charset), more than 10% of bytes that are not valid UTF-8
// in a file that does hold valid multi-byte UTF-8 (a file with none is read
// as Windows-1252, a legitimate 8-bit encoding).
func binaryReason(data []byte, typ string) string {
	head := data[:min(len(data), binarySample)]
	if detect.IsBinary(head) {
		return fmt.Sprintf("%.0f%% of its first %d bytes are control characters", 100*float64(detect.ControlBytes(head))/float64(len(head)), len(head))
	}
	if typ == "text/html" || bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) ||
		utf8.Valid(head) || !hasMultibyteUTF8(head) {
		return ""
	}
	bad := 0
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
			bad++
		}
		i += n
	}
	if bad*10 > len(head) {
		return fmt.Sprintf("%.0f%% of its first %d bytes are not valid UTF-8", 100*float64(bad)/float64(len(head)), len(head))
	}
	return ""
}
