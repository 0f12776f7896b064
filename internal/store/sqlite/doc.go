// Package sqlite is capsuled's embedded storage backend: one SQLite database
// file in the data directory, opened through the pure-Go driver
// modernc.org/sqlite (no cgo), in WAL mode.
//
// The schema is a sequence of versioned migrations embedded in the binary
// (migrations/NNNN_name.sql), each applied once, in its own transaction, and
// recorded in schema_migrations.
//
// Writes go through a pool of one connection, so that SQLite's single writer
// never sees lock contention from this process (busy_timeout covers other
// processes); reads use a pool of several connections.
//
// Keyword search is FTS5's (chunks_fts, BM25); a capsule whose chunks span
// DefaultKeywordIndexMin rowids or more is answered from an in-process
// index of the same tokens with the same scores (kwindex.go), kept up to
// date by this process's writes and kept between runs in kwindex/ beside
// the database (kwfile.go), read back when the capsule's chunk_writes count
// (a trigger counts its chunk rows' changes) is the file's.
//
// Each item keeps the count and CRC-32C of its chunk vectors (vec_count,
// vec_crc, VectorSums), set with its chunks and forgotten by triggers on
// any other change of them: the retrieval engine checks its vectors files
// against them.
//
// The package implements the store interfaces that the services declare
// (auth.Store, and those of capsules and memory); each store method maps
// sql.ErrNoRows to domain.ErrNotFound and unique-constraint violations to
// domain.ErrConflict, so services never see driver errors for those cases.
package sqlite
