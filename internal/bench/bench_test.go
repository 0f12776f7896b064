package bench

import (
	"strings"
	"testing"
)

func TestRunUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"nope"}, {"-h"}} {
		code, _, stderr := runBench(t, args...)
		if code != 2 || !strings.Contains(stderr, "usage: capsuled bench retrieval|agent|memory|load|scale [flags]") {
			t.Errorf("bench %q: exit %d, stderr %q; want 2 and the usage", args, code, stderr)
		}
	}
	// A harness's own -h is a usage error too, after its flags' help.
	if code, _, stderr := runBench(t, "load", "-h"); code != 2 || !strings.Contains(stderr, "-mix") {
		t.Errorf("bench load -h: exit %d, stderr %q", code, stderr)
	}
}
