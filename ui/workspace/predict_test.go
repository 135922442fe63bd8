package workspace

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/keys"
)

// predictLesson is a lesson whose one step asks a question and passes
// when its solution's command ran, so that the test can answer, show the
// solution, run it from the pane and see the guess revealed.
const predictLesson = `id: predict
order: 1
title: {ko: 예측, en: Predict}
summary: {ko: 예측해 보는 레슨, en: A lesson that asks}
objectives: [{ko: 멤버 목록을 읽는다, en: Read the member list}]
minutes: 5
level: beginner
recap: {ko: 멤버 목록에는 멤버마다 한 줄이 있습니다., en: The member list has a line per member.}
readNext: [{title: {ko: etcdctl 문서, en: The etcdctl docs}, url: "https://etcd.io/docs/v3.6/dev-guide/interacting_v3/"}]
cluster: {masters: 3, workers: 1}
steps:
  - id: list
    title: {ko: 멤버 목록, en: The member list}
    body: {ko: 멤버 목록을 출력합니다., en: Print the member list.}
    predict:
      question: {ko: "몇 줄이 나올까요?", en: "How many lines will it print?"}
      choices:
        - {text: {ko: 한 줄, en: One}, why: {ko: 리더만 나오지 않습니다., en: Not only the leader is listed.}}
        - {text: {ko: 세 줄, en: Three}, right: true, why: {ko: 멤버마다 한 줄입니다., en: One line per member.}}
    check:
      command-succeeded: {command: klab etcdctl member list}
    solution: [klab etcdctl member list]
`

// TestPredictAndSolution asks the step's question as it begins, keeps the
// answer in progress, shows the solution and runs it from the pane in the
// command line, and then shows the guess beside what happened.
func TestPredictAndSolution(t *testing.T) {
	all, err := lessons.Load(fstest.MapFS{"p.yaml": {Data: []byte(predictLesson)}})
	if err != nil {
		t.Fatal(err)
	}
	l := all[0]
	for _, lang := range uitest.Langs {
		for _, size := range uitest.Sizes[:2] {
			t.Run(fmt.Sprintf("%s-%dx%d", lang, size.W, size.H), func(t *testing.T) {
				c := uitest.Setup(t, lang)
				*c.Keys = *keys.Default()
				info, st := uitest.Raft(3)
				info.Spec.Masters, info.Spec.Workers = l.Cluster.Masters, l.Cluster.Workers
				var ran []string
				run := func(_ context.Context, args []string, stdout, _ io.Writer) error {
					ran = append(ran, strings.Join(args, " "))
					_, err := io.WriteString(stdout, memberList(info))
					return err
				}
				p, err := lessons.OpenProgress(filepath.Join(t.TempDir(), lessons.ProgressFile))
				if err != nil {
					t.Fatal(err)
				}
				m := New(c, uitest.NewLab(info, true), st, Options{Lesson: l, Run: run, Progress: p})
				m.SetSize(size.W, size.H)
				m.beginStep(0)
				golden := func(state string) string {
					frame := m.View()
					uitest.CheckFrame(t, frame, size.W, size.H)
					uitest.Golden(t, fmt.Sprintf("predict-%s-%s-%dx%d", state, lang, size.W, size.H), frame)
					return frame
				}

				// The question is asked before anything else.
				if m.dialog == nil || m.dialog.action != "predict" {
					t.Fatalf("the step's question was not asked: dialog %+v", m.dialog)
				}
				wantIn(t, golden("ask"), i18n.T("ui.dlg.predict"), "a) "+l.Steps[0].Predict.Choices[0].Text.String())
				press(m, "down", "enter")
				if m.dialog != nil {
					t.Fatal("the dialog stayed open after the answer")
				}
				if c, ok := p.Answer("predict", "list"); !ok || c != 1 {
					t.Errorf("answer in progress: %d, %v; want 1", c, ok)
				}

				// s shows the solution, s again runs it in the command line.
				press(m, "s")
				if !m.pane.SolutionShown() || len(ran) != 0 {
					t.Fatalf("s: shown %v, ran %v", m.pane.SolutionShown(), ran)
				}
				wantIn(t, golden("solution"), i18n.T("ui.lesson.solution"), "▸ klab etcdctl member list")
				press(m, "s")
				if len(ran) != 1 || ran[0] != "klab etcdctl --name=demo member list" {
					t.Fatalf("s ran %q", ran)
				}
				if !m.cmdline.Shown() || !strings.Contains(m.View(), "$ klab etcdctl member list") {
					t.Error("the solution's command did not run visibly in the command line")
				}
				// The keys stay with the lesson: s once more says the
				// solution is done instead of typing an s.
				if m.cmdline.Active() {
					t.Error("the command line took the keys after running the solution")
				}
				press(m, "s")
				if len(ran) != 1 || !strings.Contains(m.View(), i18n.T("ui.lesson.solution-done")) {
					t.Errorf("s after the last command: ran %q; the status does not say the solution is done", ran)
				}
				if !m.pane.Verdict().Passed {
					t.Fatalf("the step did not pass on its solution: %+v", m.pane.Verdict())
				}
				press(m, "esc")
				// Once passed: the guess beside what happened, and why.
				frame := golden("revealed")
				wantIn(t, frame, "✓ "+i18n.T("ui.lesson.passed"))
				if !strings.Contains(strings.Join(strings.Fields(frame), " "), strings.Fields(i18n.T("ui.lesson.guess-right", "b)"))[0]) {
					t.Errorf("the guess is not shown beside the verdict:\n%s", frame)
				}
				press(m, "s")
				if len(ran) != 1 {
					t.Errorf("s ran a command after the solution had run out: %q", ran)
				}
			})
		}
	}
}
