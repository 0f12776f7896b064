// Package jobs owns capsuled's durable job queue: river
// (github.com/riverqueue/river) on the store's own database, over pgx for
// PostgreSQL and database/sql for SQLite, with one job API for both.
//
// Ingestion is the one kind of job: ingest_item{item_id, content_hash},
// inserted by the store in the same transaction as the item write that
// queued the item (EnqueueTx), and worked by the capsule service's per-item
// step (Start). Any replica may work any job; river locks a job for one
// worker at a time, retries a failed one with backoff, and rescues one whose
// worker died (RescueStuckJobsAfter; on a database owned by one process, at
// Start).
package jobs
