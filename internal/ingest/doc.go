// Package ingest holds the data model of file ingestion: a Document is a
// file's clean text and its structure as Blocks (headings with their paths,
// paragraphs, code, lists, tables, rows, pages).
//
// The work is done by three packages under it, in this order:
//
//   - detect decides a file's MIME type from what the client said, the file
//     name and the first bytes.
//   - parse turns the bytes of a detected type into a Document through a
//     registry of named parsers (one per MIME type), with the file's own
//     metadata (title, author, date, …) where the format carries it.
//   - chunk cuts a Document into token-budgeted chunks that follow its
//     structure, ready to embed and index.
//
// A new file type touches detect (its extension, aliases and magic) and
// parse (a parser and its registration in DefaultParsers); chunking works on
// any Document.
package ingest
