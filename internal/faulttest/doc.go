// Package faulttest holds capsuled's fault tests: slow and half-open clients
// against the real server's time-outs, SIGKILL of a `capsuled serve`
// subprocess in the middle of key revocations and creations (then a restart,
// PRAGMA integrity_check and the all-or-nothing check of every revocation),
// and a data directory that turns read-only or fills up under a running
// server (503 storage_read_only / storage_full, no corruption).
//
// The package has no non-test code. The subprocess tests build capsuled with
// `go build` into a temporary directory once per run and skip under
// -short; the storage tests need root to mount a small tmpfs and skip
// without it.
package faulttest
