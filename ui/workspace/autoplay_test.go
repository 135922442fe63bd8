package workspace

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/keys"
)

// autoLesson has a question, a step of two commands and a last step.
const autoLesson = `id: auto
order: 1
title: {ko: 자동, en: Auto}
summary: {ko: 자동 진행, en: Autoplay}
cluster: {masters: 3, workers: 1}
steps:
  - id: ask
    title: {ko: 질문, en: A question}
    body: {ko: 본문, en: Body}
    predict:
      question: {ko: "몇 줄?", en: "How many lines?"}
      choices:
        - {text: {ko: 하나, en: One}, why: {ko: 아님, en: No}}
        - {text: {ko: 셋, en: Three}, right: true, why: {ko: 멤버마다, en: One per member}}
    check:
      command-succeeded: {command: klab etcdctl member list}
    solution: [klab etcdctl member list]
  - id: two
    title: {ko: 둘, en: Two commands}
    body: {ko: 본문, en: Body}
    check:
      all:
        - command-succeeded: {command: klab status}
        - command-succeeded: {command: klab etcdctl endpoint status}
    solution: [klab status, klab etcdctl endpoint status]
  - id: last
    title: {ko: 끝, en: The last}
    body: {ko: 본문, en: Body}
    check:
      command-succeeded: {command: klab etcdctl member list}
    solution: [klab etcdctl member list]
`

// TestAutoplay plays a lesson untouched but for the question, which waits
// for the presenter: every solution command is typed and run in order,
// each step passes and the next follows, and autoplay ends on the last.
// Typing : pauses it; A hands back.
func TestAutoplay(t *testing.T) {
	autoPace = 0.001
	t.Cleanup(func() { autoPace = 1 })
	all, err := lessons.Load(fstest.MapFS{"a.yaml": {Data: []byte(autoLesson)}})
	if err != nil {
		t.Fatal(err)
	}
	l := all[0]
	for _, lang := range uitest.Langs {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			*c.Keys = *keys.Default()
			info, st := uitest.Raft(3)
			info.Spec.Masters, info.Spec.Workers = l.Cluster.Masters, l.Cluster.Workers
			var ran []string
			run := func(_ context.Context, args []string, stdout, _ io.Writer) error {
				ran = append(ran, strings.Join(args, " "))
				_, err := io.WriteString(stdout, "ok\n")
				return err
			}
			m := New(c, uitest.NewLab(info, true), st, Options{Lesson: l, Run: run})
			m.SetSize(120, 40)
			m.beginStep(0)
			if m.dialog == nil {
				t.Fatal("the question was not asked without autoplay")
			}
			press(m, "esc")

			press(m, "A")
			if !m.Autoplaying() || m.auto.phase != autoAsk || len(ran) != 0 {
				t.Fatalf("A on a question: playing %v, phase %v, ran %q", m.Autoplaying(), m.auto.phase, ran)
			}
			if !strings.Contains(m.View(), i18n.T("ui.auto.ask")) {
				t.Errorf("the status does not say autoplay waits for the room:\n%s", m.View())
			}
			// The presenter types: autoplay pauses, and A hands back.
			press(m, ":")
			if m.Autoplaying() || !m.cmdline.Active() {
				t.Fatalf(": did not pause autoplay for typing (playing %v)", m.Autoplaying())
			}
			press(m, "esc")
			if len(ran) != 0 {
				t.Fatalf("ran %q while paused", ran)
			}
			// A hands back, still at the question; A again: the room has
			// answered.
			press(m, "A")
			if !m.Autoplaying() || m.auto.phase != autoAsk || len(ran) != 0 {
				t.Fatalf("A after typing: playing %v, phase %v, ran %q", m.Autoplaying(), m.auto.phase, ran)
			}
			press(m, "A")
			want := []string{
				"klab etcdctl --name=demo member list",
				"klab status --name=demo",
				"klab etcdctl --name=demo endpoint status",
				"klab etcdctl --name=demo member list",
			}
			if !slices.Equal(ran, want) {
				t.Fatalf("autoplay ran\n%q\nwant\n%q", ran, want)
			}
			if m.pane.Index() != 2 || !m.pane.Verdict().Passed || m.auto.on {
				t.Errorf("at the end: step %d, passed %v, autoplay on %v", m.pane.Index(), m.pane.Verdict().Passed, m.auto.on)
			}
			if !strings.Contains(m.View(), i18n.T("ui.auto.done", l.Title)) {
				t.Errorf("the status does not say autoplay finished:\n%s", m.View())
			}
			if h := m.cmdline.History(); len(h) != len(want) {
				t.Errorf("the command line's history holds %q; the commands were not typed there", h)
			}
		})
	}
}
