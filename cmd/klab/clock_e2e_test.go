package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// klab clock does from a terminal what the TUI's clock keys do: pause every
// member's raft clock, step it, slow it down, resume it.
func TestClockCommand(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	i18n.SetLang(i18n.English)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: "clk", Masters: 3, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)
	t.Setenv("KLAB_CLUSTER", "clk")

	run := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := klab(t, append([]string{"clock"}, args...)...)
		if code != 0 {
			t.Fatalf("klab clock %v exited %d: %s", args, code, stderr)
		}
		return stdout
	}
	ticks := func(out string) map[string]string {
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 {
				t.Fatalf("clock line %q", line)
			}
			got[f[0]] = f[4] // name, "tick", interval, state, count, ...
		}
		return got
	}

	paused := run("pause")
	if strings.Count(paused, "paused") != 3 {
		t.Fatalf("klab clock pause:\n%s", paused)
	}
	before := ticks(run("show"))
	after := ticks(run("step", "3"))
	for name, b := range before {
		var nb, na int
		_, _ = fmtSscan(b, &nb), fmtSscan(after[name], &na)
		if na != nb+3 {
			t.Errorf("%s: %d ticks before step 3, %d after", name, nb, na)
		}
	}
	if out := run("speed", "10"); strings.Count(out, "tick 1s") != 3 {
		t.Errorf("klab clock speed 10:\n%s", out)
	}
	if out := run("resume"); strings.Count(out, "running") != 3 {
		t.Errorf("klab clock resume:\n%s", out)
	}
}

func fmtSscan(s string, v *int) error {
	_, err := fmt.Sscan(s, v)
	return err
}
