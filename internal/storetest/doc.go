// Package storetest is the conformance suite that every storage backend
// passes: the same test functions run against SQLite and PostgreSQL (and
// against in-memory fakes where a service's unit tests use one), so that the
// backends cannot drift apart.
//
// A backend's test calls, for example,
//
//	storetest.AuthStore(t, func(t *testing.T) auth.Store { return openFresh(t).Keys() })
//
// where the constructor returns an empty store for each subtest.
package storetest
