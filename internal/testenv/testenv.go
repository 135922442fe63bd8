// Package testenv tells klab's end-to-end tests from its unit tests.
//
// An end-to-end test starts the real thing: a cluster (in-process or in
// Docker), containers, or klab processes, and takes seconds to minutes.
// Each calls EndToEnd first, so that `go test -short ./...` runs the unit
// tests alone, quickly, and `make test` runs everything. A test that needs
// a Docker engine calls it before asking for the engine, so that -short
// never waits on one.
package testenv

import "testing"

// EndToEnd marks t as an end-to-end test and skips it under -short.
func EndToEnd(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts real components, processes or containers (skipped under -short)")
	}
}
