package detect

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// DOCX is the MIME type of Word documents (Office Open XML).
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

// mimeAliases maps names seen in the wild to the canonical name.
var mimeAliases = map[string]string{
	"text/x-markdown":             "text/markdown",
	"text/md":                     "text/markdown",
	"text/x-web-markdown":         "text/markdown",
	"application/markdown":        "text/markdown",
	"application/x-markdown":      "text/markdown",
	"application/xhtml+xml":       "text/html",
	"application/x-pdf":           "application/pdf",
	"application/acrobat":         "application/pdf",
	"text/pdf":                    "application/pdf",
	"text/json":                   "application/json",
	"application/x-json":          "application/json",
	"application/jsonl":           "application/x-ndjson",
	"application/x-jsonlines":     "application/x-ndjson",
	"application/jsonlines":       "application/x-ndjson",
	"application/json-lines":      "application/x-ndjson",
	"application/ndjson":          "application/x-ndjson",
	"text/x-ndjson":               "application/x-ndjson",
	"text/jsonl":                  "application/x-ndjson",
	"text/x-csv":                  "text/csv",
	"application/csv":             "text/csv",
	"application/x-csv":           "text/csv",
	"text/comma-separated-values": "text/csv",
	"text/tsv":                    "text/tab-separated-values",
	"text/x-tsv":                  "text/tab-separated-values",
	"application/javascript":      "text/javascript",
	"application/x-javascript":    "text/javascript",
	"application/ecmascript":      "text/javascript",
	"text/ecmascript":             "text/javascript",
	"application/typescript":      "text/x-typescript",
	"text/typescript":             "text/x-typescript",
	"application/x-sh":            "text/x-shellscript",
	"application/x-shellscript":   "text/x-shellscript",
	"text/x-sh":                   "text/x-shellscript",
	"application/x-python":        "text/x-python",
	"text/x-python3":              "text/x-python",
	"application/x-ruby":          "text/x-ruby",
	"text/x-c++src":               "text/x-c++",
	"text/x-csrc":                 "text/x-c",
	"text/x-chdr":                 "text/x-c",
	"text/x-c++hdr":               "text/x-c++",
	"text/x-java-source":          "text/x-java",
	"text/x-rustsrc":              "text/x-rust",
	"text/x-golang":               "text/x-go",
	"application/x-yaml":          "application/yaml",
	"text/yaml":                   "application/yaml",
	"text/x-yaml":                 "application/yaml",
	"application/x-toml":          "application/toml",
	"text/x-toml":                 "application/toml",
	"text/x-sql":                  "application/sql",
	"application/x-sql":           "application/sql",
	"text/xml":                    "application/xml",
	"application/vnd.ms-word.document.macroenabled.12": DOCX,
	"image/jpg":                    "image/jpeg",
	"image/pjpeg":                  "image/jpeg",
	"application/x-zip-compressed": "application/zip",
	"application/x-zip":            "application/zip",
	"text/x-log":                   "text/plain",
	"text/x-rst":                   "text/plain",
}

// codeExt maps source-code file extensions to their MIME types.
var codeExt = map[string]string{
	".go": "text/x-go", ".py": "text/x-python", ".pyi": "text/x-python",
	".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".jsx": "text/javascript",
	".ts": "text/x-typescript", ".tsx": "text/x-typescript", ".mts": "text/x-typescript",
	".java": "text/x-java", ".kt": "text/x-kotlin", ".kts": "text/x-kotlin", ".scala": "text/x-scala",
	".c": "text/x-c", ".h": "text/x-c", ".cc": "text/x-c++", ".cpp": "text/x-c++", ".cxx": "text/x-c++",
	".hpp": "text/x-c++", ".hh": "text/x-c++", ".cs": "text/x-csharp", ".rs": "text/x-rust",
	".rb": "text/x-ruby", ".php": "text/x-php", ".swift": "text/x-swift", ".lua": "text/x-lua",
	".pl": "text/x-perl", ".pm": "text/x-perl", ".r": "text/x-r", ".jl": "text/x-julia",
	".sh": "text/x-shellscript", ".bash": "text/x-shellscript", ".zsh": "text/x-shellscript",
	".ps1": "text/x-powershell", ".sql": "application/sql", ".yaml": "application/yaml",
	".yml": "application/yaml", ".toml": "application/toml", ".xml": "application/xml",
	".css": "text/css", ".scss": "text/css", ".proto": "text/x-protobuf", ".tf": "text/x-terraform",
	".ini": "text/x-ini", ".cfg": "text/x-ini", ".conf": "text/x-ini", ".mk": "text/x-makefile",
	".gradle": "text/x-groovy", ".groovy": "text/x-groovy", ".dart": "text/x-dart",
	".ex": "text/x-elixir", ".exs": "text/x-elixir", ".erl": "text/x-erlang", ".hs": "text/x-haskell",
	".ml": "text/x-ocaml", ".clj": "text/x-clojure", ".vue": "text/x-vue", ".svelte": "text/x-svelte",
	".diff": "text/x-diff", ".patch": "text/x-diff", ".zig": "text/x-zig", ".nim": "text/x-nim",
}

// codeNames maps whole file names (no extension) to source-code types.
var codeNames = map[string]string{
	"makefile": "text/x-makefile", "dockerfile": "text/x-dockerfile", "gnumakefile": "text/x-makefile",
	"jenkinsfile": "text/x-groovy", "rakefile": "text/x-ruby", "gemfile": "text/x-ruby",
}

// docExt maps document extensions to MIME types.
var docExt = map[string]string{
	".txt": "text/plain", ".text": "text/plain", ".log": "text/plain", ".rst": "text/plain",
	".md": "text/markdown", ".markdown": "text/markdown", ".mdown": "text/markdown", ".mkd": "text/markdown", ".mdx": "text/markdown",
	".html": "text/html", ".htm": "text/html", ".xhtml": "text/html",
	".pdf": "application/pdf", ".docx": DOCX,
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".tab": "text/tab-separated-values",
	".json": "application/json", ".jsonl": "application/x-ndjson", ".ndjson": "application/x-ndjson",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".zip": "application/zip", ".gz": "application/gzip", ".tar": "application/x-tar",
	".doc": "application/msword", ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".exe":  "application/vnd.microsoft.portable-executable", ".mp3": "audio/mpeg", ".mp4": "video/mp4",
}

// CodeTypes lists the MIME types of source code (by extension or file
// name), unsorted.
func CodeTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{codeExt, codeNames} {
		for _, t := range m {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// NormalizeMIME returns the canonical form of a MIME type: parameters
// stripped, lower case, aliases mapped (text/x-markdown → text/markdown,
// application/x-pdf → application/pdf, …). It returns "" for a blank type.
func NormalizeMIME(t string) string {
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	t = strings.ToLower(strings.TrimSpace(t))
	if a, ok := mimeAliases[t]; ok {
		return a
	}
	return t
}

// typeByName returns the type a file name's extension implies, or "".
func typeByName(fileName string) string {
	base := strings.ToLower(path.Base(strings.ReplaceAll(fileName, "\\", "/")))
	ext := path.Ext(base)
	if t, ok := docExt[ext]; ok {
		return t
	}
	if t, ok := codeExt[ext]; ok {
		return t
	}
	if t, ok := codeNames[strings.TrimSuffix(base, ext)]; ok && (ext == "" || ext == ".txt") {
		return t
	}
	return ""
}

// ResolveType decides the MIME type of a file. A given type is normalised
// and kept, except that a blank type or application/octet-stream is replaced
// by Sniff, and text/plain is refined by the file name's extension when that
// names a more specific text format (browsers send text/plain for .md, .csv
// and source files).
func ResolveType(fileName, given string, head []byte) string {
	t := NormalizeMIME(given)
	switch t {
	case "", "application/octet-stream", "binary/octet-stream", "application/unknown":
		return Sniff(fileName, head)
	case "text/plain":
		if byName := typeByName(fileName); byName != "" && IsText(byName) {
			return byName
		}
	}
	return t
}

// IsText reports whether the canonical MIME type t is a text format (text/*,
// JSON, JSON lines, YAML, TOML, SQL, XML).
func IsText(t string) bool {
	if strings.HasPrefix(t, "text/") {
		return true
	}
	switch t {
	case "application/json", "application/x-ndjson", "application/yaml", "application/toml",
		"application/sql", "application/xml":
		return true
	}
	return false
}

// Sniff guesses the MIME type of a file from its name and its first bytes
// (512 are enough; more help JSON, CSV and zip contents). Magic numbers,
// recognised by github.com/gabriel-vasile/mimetype, win over the name for
// binary formats (a PNG named notes.txt is image/png); for text the name
// decides when it names a text format, and content rules decide when it does
// not (JSON, JSON lines, HTML, Markdown, CSV, else text/plain). Binary
// content of no known type is application/octet-stream (or the type the
// name implies, when that is a binary type).
func Sniff(fileName string, head []byte) string {
	byName := typeByName(fileName)
	m := mimetype.Detect(head)
	detected := NormalizeMIME(m.String())
	switch {
	case m.Is("application/zip"):
		// Office files are zips; a cut head may not reach word/document.xml.
		if detected == DOCX || byName == DOCX || bytes.Contains(head, []byte("word/")) || zipHas(head, "word/document.xml") {
			return DOCX
		}
		if strings.HasPrefix(byName, "application/vnd.openxmlformats") {
			return byName
		}
		return detected
	case m.Is("application/x-ole-storage"):
		if byName == "application/msword" {
			return byName
		}
		return detected
	case !isText(m) && !(detected == "application/octet-stream" && !IsBinary(head)):
		if detected == "application/octet-stream" && byName != "" && !IsText(byName) {
			return byName
		}
		return detected
	}
	if byName != "" && IsText(byName) {
		return byName
	}
	if detected == "text/html" {
		return detected
	}
	if m.Is("text/xml") {
		return sniffText(head, "application/xml")
	}
	return sniffText(head, "text/plain")
}

// isText reports whether mimetype found text: text/plain or a type under it
// (HTML, XML, JSON, CSV, …, in any charset it recognises).
func isText(m *mimetype.MIME) bool {
	for ; m != nil; m = m.Parent() {
		if m.Is("text/plain") {
			return true
		}
	}
	return false
}

// zipHas reports whether b is a whole zip archive with an entry of that name.
func zipHas(b []byte, name string) bool {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return false
	}
	for _, f := range zr.File {
		if f.Name == name {
			return true
		}
	}
	return false
}

// IsBinary reports whether head is not plausibly text: it is not UTF-16
// with a byte-order mark, and 5% or more of its bytes are control
// characters (ControlBytes). Text in any ASCII-compatible encoding passes;
// a stray NUL does not make a file binary.
func IsBinary(head []byte) bool {
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return false
	}
	return len(head) > 0 && ControlBytes(head)*20 >= len(head)
}

// ControlBytes counts the bytes of b that are control characters other than
// tab, newline, carriage return and form feed.
func ControlBytes(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' {
			n++
		}
	}
	return n
}

// sniffLimit is how much of a text file the content rules look at.
const sniffLimit = 64 << 10

// sniffText applies content rules to text without a telling name.
func sniffText(head []byte, fallback string) string {
	if len(head) > sniffLimit {
		head = head[:sniffLimit]
	}
	s := strings.TrimSpace(string(bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})))
	if s == "" {
		return "text/plain"
	}
	if s[0] == '{' || s[0] == '[' {
		if looksNDJSON(s) {
			return "application/x-ndjson"
		}
		if looksJSON(s) {
			return "application/json"
		}
	}
	if fallback == "application/xml" {
		return fallback
	}
	if looksMarkdown(s) {
		return "text/markdown"
	}
	if looksCSV(s) {
		return "text/csv"
	}
	return "text/plain"
}

// looksJSON reports whether s is a JSON value, or a prefix of one that the
// decoder reads without a syntax error before running out of input.
func looksJSON(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		_, err := dec.Token()
		if err != nil {
			// io.EOF or io.ErrUnexpectedEOF on a cut head are fine; syntax errors are not.
			_, syntax := err.(*json.SyntaxError)
			return !syntax
		}
	}
}

func looksNDJSON(s string) bool {
	lines := strings.Split(s, "\n")
	if len(lines) < 2 {
		return false
	}
	full := 0
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if l[0] != '{' && l[0] != '[' {
			return false
		}
		if json.Valid([]byte(l)) {
			full++
		} else if i != len(lines)-1 { // the last line may be cut
			return false
		}
	}
	return full >= 2
}

func looksMarkdown(s string) bool {
	score := 0
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			score += 2
		case atxRe.MatchString(l):
			score += 2
		case setextRe.MatchString(l) && len(t) >= 3:
			score++
		case strings.HasPrefix(t, "- [") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "- "):
			score++
		case strings.Contains(t, "](") && strings.Contains(t, "["):
			score++
		case tableDelimRe.MatchString(t) && strings.Contains(t, "|"):
			score += 2
		}
		if strings.Contains(t, "**") || strings.Contains(t, "`") {
			score++
		}
	}
	return score >= 2
}

// looksCSV reports whether the first lines of s have the same number (at
// least one) of commas, semicolons or tabs outside quotes.
func looksCSV(s string) bool {
	lines := strings.Split(s, "\n")
	if len(lines) > 1 && !strings.HasSuffix(s, "\n") {
		lines = lines[:len(lines)-1] // the last line may be cut
	}
	if len(lines) < 2 {
		return false
	}
	if len(lines) > 20 {
		lines = lines[:20]
	}
	for _, sep := range []byte{',', '\t', ';'} {
		n := -1
		ok := true
		for _, l := range lines {
			c := countOutsideQuotes(l, sep)
			if c == 0 || (n >= 0 && c != n) {
				ok = false
				break
			}
			n = c
		}
		if ok {
			return true
		}
	}
	return false
}

// CSVDelimiter picks the most frequent of , ; tab | outside quotes on the
// first line (comma on a tie or when none occurs).
func CSVDelimiter(text string) rune {
	first := text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		first = text[:i]
	}
	best, bestN := ',', countOutsideQuotes(first, ',')
	for _, d := range []byte{';', '\t', '|'} {
		if n := countOutsideQuotes(first, d); n > bestN {
			best, bestN = rune(d), n
		}
	}
	return best
}

func countOutsideQuotes(l string, sep byte) int {
	n, q := 0, false
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '"':
			q = !q
		case sep:
			if !q {
				n++
			}
		}
	}
	return n
}

// Markdown line shapes that looksMarkdown counts.
var (
	atxRe        = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRe     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	tableDelimRe = regexp.MustCompile(`^\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?$`)
)
