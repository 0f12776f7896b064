// Package encbatch groups tokenized texts into padded batches for the
// in-process runtimes: texts are ordered by length so that each batch is
// padded only to its own longest sequence, and every batch remembers where
// its rows go in the caller's order.
package encbatch
