// Package postgres is capsuled's storage backend for many replicas: one
// PostgreSQL database (15 or newer) with the pgvector extension, reached
// through a pgx connection pool, that any number of stateless capsuled
// processes share.
//
// The schema is a sequence of versioned migrations embedded in the binary
// (migrations/NNNN_name.sql). Open applies the pending ones, each in its own
// transaction and recorded in schema_migrations, while holding a PostgreSQL
// advisory lock, so that replicas starting together apply each migration
// exactly once (the others wait, then find it recorded). The tables live in
// the first schema of the connection's search_path, so one database can hold
// several independent installations (the tests use a schema each).
//
// Chunk vectors are pgvector vectors (any width; chunks of 384 dimensions,
// the default embedding model's, have an HNSW index with cosine distance).
// The store searches them itself (retrieval.StoreSearcher): dense top-k
// through the HNSW index with pgvector's iterative scan, the wishlist's item
// filters translated to SQL (itemFilter) and applied inside the scan, so
// that the retrieval engine of each replica holds no vectors. The index's
// build parameters (m, ef_construction) are an operator's choice (SetHNSW)
// kept in its definition, which DeferIndexes and BuildIndexes keep too.
// Keyword search uses the BM25 index of the pg_textsearch extension, with
// the index's own scores, when the server has it (it must be in
// shared_preload_libraries), and otherwise
// PostgreSQL's own full-text search (a stored tsvector, GIN index,
// ts_rank_cd ranking).
//
// The package implements the store interfaces that the services declare
// (auth.Store, capsule.Store, memory.Store), with the behaviour the shared
// suites of internal/storetest pin down for every backend; interpret maps
// driver errors to domain.ErrNotFound and domain.ErrConflict in one place.
package postgres
