package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// fakeRun stands in for klab's CLI: it records the words and answers by
// the command, so that the line's own behaviour can be tested alone.
type fakeRun struct{ ran [][]string }

func (f *fakeRun) run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	f.ran = append(f.ran, args)
	switch args[1] {
	case "kubectl":
		fmt.Fprintln(stdout, "NAME       STATUS   ROLES\nmaster-1   Ready    control-plane")
		return nil
	case "etcdctl":
		fmt.Fprintln(stderr, "Error: context deadline exceeded")
		return errors.New("exit status 1")
	case "status":
		panic("boom")
	}
	return nil
}

func typeLine(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func runLine(t *testing.T, m *Model, s string) []tea.Msg {
	t.Helper()
	typeLine(m, s)
	return uitest.Run(m.Update(uitest.Key("enter")), m.Update)
}

func TestRunHistoryAndErrors(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		f := &fakeRun{}
		m := New(c, f.run, &Completer{})
		m.SetSize(60, 8)
		m.Open("")

		msgs := runLine(t, m, "kubectl get nodes")
		if len(msgs) != 1 {
			t.Fatalf("got %d messages, want one DoneMsg", len(msgs))
		}
		done := msgs[0].(DoneMsg)
		if !slices.Equal(done.Args, []string{"klab", "kubectl", "get", "nodes"}) || done.Err != nil {
			t.Errorf("ran %q (err %v), want klab kubectl get nodes", done.Args, done.Err)
		}
		msgs = runLine(t, m, "etcdctl put /k 'a b'")
		done = msgs[0].(DoneMsg)
		if !slices.Equal(done.Args, []string{"klab", "etcdctl", "put", "/k", "a b"}) || done.Err == nil {
			t.Errorf("ran %q (err %v), want the quoted value as one word and an error", done.Args, done.Err)
		}
		if !strings.Contains(done.Output, "deadline exceeded") {
			t.Errorf("stderr not kept: %q", done.Output)
		}
		msgs = runLine(t, m, "klab status")
		done = msgs[0].(DoneMsg)
		if done.Err == nil || !strings.Contains(done.Err.Error(), "boom") {
			t.Errorf("a panicking command gave %v, want its panic as an error", done.Err)
		}
		// Not a command: refused before running anything.
		if msgs := runLine(t, m, "rm -rf /"); len(msgs) != 0 || len(f.ran) != 3 {
			t.Errorf("rm ran (%d messages, %d runs)", len(msgs), len(f.ran))
		}

		frame := m.Render()
		uitest.CheckFrame(t, frame, 60, 8)
		// The refusal is wider than the pane: it wraps, nothing is cut.
		if strings.Contains(frame, "…") || !strings.Contains(strings.Join(strings.Fields(frame), " "), strings.Join(strings.Fields(lang.T("ui.cmd.unknown", "rm")), " ")) {
			t.Errorf("a line wider than the pane was cut:\n%s", frame)
		}
		uitest.Golden(t, "output-"+string(lang), frame)

		// History: up goes back, down returns to the line being typed.
		typeLine(m, "kub")
		m.Update(uitest.Key("up"))
		if got := m.input.Value(); got != "rm -rf /" {
			t.Errorf("up shows %q, want the last command", got)
		}
		m.Update(uitest.Key("up"))
		m.Update(uitest.Key("up"))
		if got := m.input.Value(); got != "etcdctl put /k 'a b'" {
			t.Errorf("up×3 shows %q", got)
		}
		for range 5 {
			m.Update(uitest.Key("down"))
		}
		if got := m.input.Value(); got != "kub" {
			t.Errorf("back down shows %q, want the draft kub", got)
		}
		m.Update(uitest.Key("esc"))
		if m.Active() {
			t.Error("esc left the line open")
		}
	}
}

func TestComplete(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	comp := &Completer{Names: func() []string { return []string{"master-1", "master-2", "worker-1"} }}
	m := New(c, nil, comp)
	m.SetSize(60, 6)
	m.Open("kubectl ge")
	m.Update(uitest.Key("tab"))
	if got := m.input.Value(); got != "kubectl get " {
		t.Errorf("tab gave %q, want kubectl get ", got)
	}
	typeLine(m, "no")
	m.Update(uitest.Key("tab"))
	if got := m.input.Value(); got != "kubectl get nodes " {
		t.Errorf("tab gave %q, want the kind completed", got)
	}
	typeLine(m, "mas")
	m.Update(uitest.Key("tab"))
	if got := m.input.Value(); got != "kubectl get nodes master-" {
		t.Errorf("tab gave %q, want the common prefix of the names", got)
	}
	if !slices.Equal(m.choices, []string{"master-1", "master-2"}) {
		t.Errorf("choices %q", m.choices)
	}
	if !strings.Contains(m.Render(), "master-2") {
		t.Error("the choices are not shown")
	}
	if got := comp.Complete([]string{"klab", "chaos"}, "k"); !slices.Equal(got, []string{"kill"}) {
		t.Errorf("klab chaos k → %q", got)
	}
	if got := comp.Complete(nil, "e"); !slices.Equal(got, []string{"etcdctl"}) {
		t.Errorf("e → %q", got)
	}
	// No runner: the line says so rather than failing silently.
	m.input.SetValue("klab status")
	m.Update(uitest.Key("enter"))
	if !strings.Contains(m.Render(), "no command runner") {
		t.Errorf("no runner not reported:\n%s", m.Render())
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"klab status", []string{"klab", "status"}, false},
		{"kubectl get pods -o wide", []string{"klab", "kubectl", "get", "pods", "-o", "wide"}, false},
		{`etcdctl put k "v w"`, []string{"klab", "etcdctl", "put", "k", "v w"}, false},
		{"klab", nil, true},
		{"ls", nil, true},
		{"kubectl get pods | grep x", nil, true},
		{"", nil, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// Words that arrive in one read, as a fast typist, a paste or tmux sends
// them, are text: "delete", "end", "up" and "tab" are also the names of
// keys, and were once taken as the Delete, End, Up and Tab keys, so that
// "klab kubectl delete pod web" ran as "klab kubectl  pod web".
func TestWordsThatNameKeysAreTyped(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	m := New(c, (&fakeRun{}).run, &Completer{})
	m.SetSize(80, 8)
	m.Open("")
	for _, word := range []string{"klab kubectl ", "delete", " pod ", "end", " ", "up", " ", "tab", " ", "home", " x"} {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(word)})
	}
	if got, want := m.input.Value(), "klab kubectl delete pod end up tab home x"; got != want {
		t.Errorf("typed %q, want %q", got, want)
	}
}
