// Package capsule is the capsule service: capsules and their items,
// ingestion (extract, chunk, embed, index) and the capsule query.
//
// # Items
//
// An item's original bytes (a text item's text, a file item's upload) are
// written once to the data directory under their SHA-256 (blobs/ab/abcd…),
// then its row is stored queued. Adding to a URI the capsule already has is an
// update: new content queues the item again, the same content changes only its
// metadata. Workers (Config.Workers) claim queued items one at a time, extract
// clean text with package ingest, cut it into chunks measured in the embedding
// model's tokens, embed the chunks in batches (through an embedding cache keyed
// by model and text hash, so unchanged text is never embedded twice) and hand
// everything to the store's CompleteItem, which writes chunks, vectors, BM25
// rows, text and status ready in one transaction. A process killed mid-way
// leaves the item indexing; Start puts such items back in the queue, so no
// item is ever half indexed and no ready item is lost.
//
// # Queries
//
// Query validates the query and hands it to a retrieval.Engine, which the
// service keeps current after each commit. ParseWishlist turns the wire
// wishlist (JSON) into a domain.Wishlist, naming the field of any error.
package capsule
