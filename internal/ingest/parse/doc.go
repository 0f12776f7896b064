// Package parse turns a file's bytes into an ingest.Document: clean text
// with its structure.
//
// Extract reads at most maxBytes (more is a domain.KindTooLarge error) and
// hands the bytes to the parser registered for the type (detect.ResolveType
// decides the type). Every parser yields a Document: Text is UTF-8 with "\n" newlines, no NULs or other control
// characters but tab and newline, invalid UTF-8 repaired (input that is
// plainly 8-bit is read as Windows-1252, stray bad bytes become U+FFFD), and
// Blocks lists its structure as flat, ordered, non-overlapping byte ranges of
// Text, each with its kind and the path of the headings above it. Blocks are
// separated in Text by a blank line.
//
// What each format yields:
//
//   - text/plain: the text verbatim; paragraphs split on blank lines.
//   - text/markdown: parsed by github.com/yuin/goldmark (CommonMark with
//     GitHub tables and strike-through) and its syntax tree walked: headings
//     (ATX and setext) become heading blocks without their markers (inside a
//     block quote they are paragraphs); fenced and indented code blocks are
//     kept verbatim as one code block; lists become one list block with an
//     item a line ("- " or "N. " markers, nested items indented two spaces a
//     level; adjacent lists are one block); tables become one table block
//     with a row a line rendered "header: value; …"; emphasis, code spans,
//     inline HTML, link and image syntax are stripped: a link keeps only its
//     text and an image its alt text (URLs are noise to retrieval), an
//     autolink keeps its URL; escapes and character references are resolved;
//     raw HTML blocks keep their text. Front matter, reference definitions
//     and thematic breaks are dropped.
//   - text/html: parsed with golang.org/x/net/html after charset detection
//     (BOM, Content-Type, <meta>). script, style, noscript, template, head,
//     nav, footer, svg, iframe, forms and hidden elements are dropped;
//     h1–h6 are headings, pre is code, ul/ol are lists, tables as in
//     Markdown, everything else is paragraphs with whitespace collapsed.
//   - application/pdf: github.com/ledongthuc/pdf; one page block a page,
//     text in content-stream order with lines and word gaps recovered from
//     glyph positions. Encrypted and corrupt files fail; panics inside the
//     library are recovered.
//   - DOCX: word/document.xml read with archive/zip and encoding/xml:
//     paragraphs, headings from Heading1..9/Title styles (also by style name
//     from word/styles.xml, and outline levels), list paragraphs, tables,
//     tabs and line breaks. Entry count and decompressed size are bounded.
//   - text/csv, text/tab-separated-values: the first record is the header;
//     every other record becomes a row block "header: value; …" (empty values
//     left out). The delimiter of text/csv is sniffed among , ; tab |. A
//     record of more than MaxColumns (4,096) columns fails the document.
//   - application/json, application/x-ndjson: flattened "path: value" lines
//     (path like a.b[2].c), one row block per top-level element (array item,
//     object member, or line of JSON lines).
//   - source code (text/x-go, text/x-python, …, YAML, TOML, SQL, XML): the
//     text verbatim, code blocks split at blank lines that precede an
//     unindented line (top-level declarations, roughly).
//
// Anything else (images, archives, executables, random bytes) and corrupt
// files return a *domain.Error of KindUnprocessable whose message says why,
// e.g. "unsupported file type image/png" or "corrupt PDF: …". Content of a
// text type that is binary (5% or more control bytes, or, read as UTF-8,
// more than 10% invalid bytes) is refused with code binary_content rather
// than indexed as mojibake; unrecognised binary (application/octet-stream)
// is an unsupported file type. No input makes a parser panic: each runs
// behind a recover that turns a panic into such an error.
//
// # Metadata
//
// ReadMetadata reads what a file says about itself, reading only the part
// that holds it: Markdown front matter (YAML), an HTML head (<title> and
// <meta> author, description, keywords and date names), a PDF's document
// information dictionary, a DOCX file's docProps/core.xml. The result is an
// ingest.Metadata (title, author, description, keywords, date), bounded in
// size; docs/ingestion.md has the mapping of each format's fields.
package parse
