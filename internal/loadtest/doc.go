// Package loadtest is capsuled's open-loop load generator: requests start at
// a fixed arrival rate whatever the server's latency (so a slow server is
// not hidden by a slowed-down client), drawn from a weighted mix of
// operations; it reports per-operation p50/p99/max latency (measured from
// each request's scheduled start, so queueing in the client counts),
// errors and throughput, and the server's resident memory at start and end
// (VmRSS of /proc/PID/status). Targets are loopback addresses only, and
// every run is bounded in time and in requests in flight.
//
// It also holds a fake OpenAI-compatible upstream (FakeUpstream) for
// measuring the overhead of capsuled's svc-1 upstream path.
package loadtest
