// Package chunk cuts an ingest.Document into chunks that follow its
// structure (a heading starts a chunk; code, list items and table rows are
// never cut; prose breaks between sentences) and fit a token budget measured
// by a TokenCounter, in production the embedding model's WordPiece
// tokenizer. See Split for the rules.
package chunk
