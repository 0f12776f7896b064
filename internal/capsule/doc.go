// Package capsule is the capsule service: capsules and their items,
// ingestion (extract, chunk, embed, index) and the capsule query.
//
// # Items
//
// An item's original bytes (a text item's text, a file item's upload) are
// written once to the data directory under their SHA-256 (blobs/ab/abcd…),
// then its row is stored queued, with its ingestion job (the store's durable
// Jobs, enqueued in the same transaction). Adding to a URI the capsule
// already has is an update: new content queues the item again with a new job,
// the same content changes only its metadata and queues nothing. Jobs run up
// to Config.Workers at once, one item each, in any process sharing the store:
// a job extracts clean text with package ingest, cuts it into chunks measured
// in the embedding model's tokens, embeds the chunks (through an embedding
// cache keyed by model and text hash, so unchanged text is never embedded
// twice; the embedder calls of concurrent jobs are joined into batches) and
// hands everything to the store's CompleteItem, which writes chunks, vectors,
// BM25 rows, text and status ready in one transaction, only while the item
// still holds the job's content. A process killed mid-way leaves the item
// indexing and its job running; the job is run again (at the next Start, or
// by another process after the store's lease), so no item is ever half
// indexed and no ready item is lost.
//
// # Queries
//
// Query validates the query and hands it to a retrieval.Engine, which the
// service keeps current after each commit. The HTTP layer converts the wire
// wishlist into the domain.Wishlist it takes (api.WishlistFromWire).
package capsule
