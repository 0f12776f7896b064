// Package rank holds the ranking parts that capsule retrieval
// (internal/retrieval) and memory selection (internal/memory) share on
// purpose: the hybrid score formulas (fusion.go) and the selection of the k
// best of many scored candidates (TopK).
//
// Sharing is deliberate: memory's default fusion (memory.FusionCore) is the
// capsule retrieval's convex mix, measured to work for both (SciFact and
// HotpotQA for capsules, LoCoMo for memory; docs/benchmarks.md). A change
// here changes both rankings, so it is measured on both benchmarks.
package rank
