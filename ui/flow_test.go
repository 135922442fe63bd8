package ui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// flow drives a teatest program through a user's keys. The renderer
// writes only the lines that changed, and a teatest wait reads what
// arrived since the previous one: the transcript keeps it all, and each
// wait looks at what arrived since the key it follows.
type flow struct {
	t          *testing.T
	tm         *teatest.TestModel
	finished   bool
	transcript bytes.Buffer
	out        io.Reader
	start      time.Time
}

// flowOptions gives a flow test its own KLAB_HOME and a cluster name of
// its own (another run on the machine gets other loopback addresses), and
// Options as Run prepares them (embedded lessons, progress) after tune
// sets what the test needs.
func flowOptions(t *testing.T, prefix string, tune func(name string, o *Options)) (string, Options) {
	t.Helper()
	testHome(t)
	name := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	spec := lab.DefaultSpec()
	spec.Name, spec.NoFsync = name, true
	opts := Options{Spec: spec}
	tune(name, &opts)
	if err := opts.prepare(); err != nil {
		t.Fatal(err)
	}
	return name, opts
}

// newFlow runs the TUI with opts, in English, on a terminal of
// width×height. Should the test end before the program does (a failed
// wait leaves it and its cluster running), Ctrl-C stops the cluster
// keeping its data, then cleanup stops whatever the program left, as Run
// does.
func newFlow(t *testing.T, opts Options, width, height int) *flow {
	c := uitest.Setup(t, i18n.English)
	m := NewModel(context.Background(), c, opts, slog.New(slog.DiscardHandler))
	m.savePrefs = false
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(width, height))
	f := &flow{t: t, tm: tm, start: time.Now()}
	f.out = io.TeeReader(tm.Output(), &f.transcript)
	t.Cleanup(func() {
		if f.finished {
			return
		}
		tm.Send(uitest.Key("ctrl+c"))
		tm.WaitFinished(t, teatest.WithFinalTimeout(60*time.Second),
			teatest.WithTimeoutFn(func(tb testing.TB) { tb.Log("the program did not end after Ctrl-C") }))
		if err := m.cleanup(io.Discard); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return f
}

// finish waits for the program to end.
func (f *flow) finish() {
	f.tm.WaitFinished(f.t, teatest.WithFinalTimeout(60*time.Second))
	f.finished = true
	f.log("finished")
}

// waitFor waits up to d for cond to hold on what was drawn since the
// transcript's offset since.
func (f *flow) waitFor(what string, since int, d time.Duration, cond func(string) bool) {
	f.t.Helper()
	f.log("waiting for " + what)
	teatest.WaitFor(f.t, f.out, func([]byte) bool { return cond(f.transcript.String()[since:]) },
		teatest.WithDuration(d), teatest.WithCheckInterval(20*time.Millisecond))
}

// press sends keys and returns the transcript's offset before them.
func (f *flow) press(keys ...string) int {
	mark := f.transcript.Len()
	for _, k := range keys {
		f.tm.Send(uitest.Key(k))
	}
	return mark
}

func (f *flow) log(what string) {
	f.t.Logf("%5.1fs %s", time.Since(f.start).Seconds(), what)
}

// allOf holds when every one of subs was drawn.
func allOf(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}
