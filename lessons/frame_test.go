package lessons

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klab-dev/klab/assets/i18n"
)

// framed is sample with a frame, instructor notes and a prediction. The
// cases below break one of its lines each.
const framed = `id: framed
order: 2
title: {ko: 틀, en: Framed}
summary: {ko: 틀이 있는 레슨, en: A lesson with a frame}
objectives:
  - {ko: 리더를 찾는다, en: Find the leader}
prerequisites: [sample]
minutes: 15
level: beginner
recap: {ko: 정리, en: Recap}
readNext:
  - {title: {ko: Raft 논문, en: The Raft paper}, url: "https://raft.github.io/raft.pdf"}
cluster: {masters: 3, workers: 1}
steps:
  - id: first
    title: {ko: 첫 단계, en: First step}
    body: {ko: 본문, en: Body}
    notes: {ko: 강사 메모, en: Instructor note}
    predict:
      question: {ko: "누가 리더가 될까요?", en: "Who becomes leader?"}
      choices:
        - {text: {ko: 아무나, en: Any member}, right: true, why: {ko: 먼저 타임아웃된 멤버, en: Whoever times out first}}
        - {text: {ko: master-1, en: master-1}, why: {ko: 순서와 무관, en: Order plays no part}}
    check: leader-changed
    solution: [klab chaos kill leader]
`

func withFramedLine(t *testing.T, n int, text string) string {
	t.Helper()
	lines := strings.Split(framed, "\n")
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

func loadFramed(text string) ([]*Lesson, error) {
	return Load(fstest.MapFS{"a.yaml": {Data: []byte(sample)}, "x.yaml": {Data: []byte(text)}})
}

func TestLoadFrame(t *testing.T) {
	all, err := loadFramed(framed)
	if err != nil {
		t.Fatal(err)
	}
	l := all[1]
	if l.ID != "framed" {
		t.Fatalf("order: %s", l.ID)
	}
	f := l.Frame
	if len(f.Objectives) != 1 || f.Objectives[0].English != "Find the leader" || f.Minutes != 15 ||
		f.Level != LevelBeginner || f.Recap.Korean != "정리" || len(f.Prerequisites) != 1 || f.Prerequisites[0] != "sample" {
		t.Errorf("frame %+v", f)
	}
	if len(f.ReadNext) != 1 || f.ReadNext[0].URL != "https://raft.github.io/raft.pdf" || f.ReadNext[0].Title.Korean != "Raft 논문" {
		t.Errorf("read next %+v", f.ReadNext)
	}
	s := l.Steps[0]
	if s.Notes.English != "Instructor note" || s.Predict == nil || len(s.Predict.Choices) != 2 {
		t.Fatalf("step %+v", s)
	}
	if !s.Predict.Right(0) || s.Predict.Right(1) || s.Predict.Right(2) || s.Predict.Choices[1].Why.English != "Order plays no part" {
		t.Errorf("prediction %+v", s.Predict)
	}
	if !all[0].Frame.Empty() || f.Empty() {
		t.Error("Frame.Empty is wrong")
	}
}

// TestLoadRejectsBadFrame breaks the frame, notes and prediction one line
// at a time and requires the position, field and message.
func TestLoadRejectsBadFrame(t *testing.T) {
	cases := []struct {
		line int
		text string
		want string
		key  string
	}{
		{6, "  - {en: Find the leader}", "x.yaml:6:5: objectives[0]: missing Korean (ko) translation", "lessons.err.missing-ko"},
		{7, "prerequisites: [nosuch]", `x.yaml:7:17: prerequisites[0]: there is no lesson "nosuch" to take first (a lesson cannot require itself); the lessons are: framed, sample`, "lessons.err.unknown-prerequisite"},
		{7, "prerequisites: [framed]", `x.yaml:7:17: prerequisites[0]: there is no lesson "framed"`, "lessons.err.unknown-prerequisite"},
		{7, "prerequisites: [Sample]", `x.yaml:7:17: prerequisites[0]: "Sample" is not a valid id`, "lessons.err.bad-id"},
		{8, "minutes: 0", "x.yaml:8:10: minutes: must be between 1 and 240, not 0", "lessons.err.range"},
		{9, "level: expert", `x.yaml:9:8: level: unknown level "expert"; it is one of: beginner, intermediate, advanced`, "lessons.err.unknown-level"},
		{10, "recap: {ko: 정리}", "x.yaml:10:8: recap: missing English (en) translation", "lessons.err.missing-en"},
		{12, `  - {title: {ko: Raft 논문, en: The Raft paper}, url: "raft.pdf"}`, `x.yaml:12:53: readNext[0].url: "raft.pdf" is not a web address`, "lessons.err.bad-url"},
		{18, "    notes: {en: Instructor note}", "x.yaml:18:12: steps[0].notes: missing Korean (ko) translation", "lessons.err.missing-ko"},
		{20, `      question: {ko: "누가 리더가 될까요?"}`, "x.yaml:20:17: steps[0].predict.question: missing English (en) translation", "lessons.err.missing-en"},
		{22, "        - {text: {ko: 아무나, en: Any member}, right: yes, why: {ko: 먼저, en: First}}", `x.yaml:22:52: steps[0].predict.choices[0].right: must be true or false`, "lessons.err.want-bool"},
		{22, "        - {text: {ko: 아무나, en: Any member}, right: true}", `x.yaml:22:11: steps[0].predict.choices[0]: missing "why"`, "lessons.err.missing-key"},
		{22, "        - {text: {ko: 아무나, en: Any member}, why: {ko: 먼저, en: First}}", "x.yaml:22:9: steps[0].predict.choices: no choice is marked right: true", "lessons.err.no-right-choice"},
		{23, "", "x.yaml:22:9: steps[0].predict.choices: a question needs between 2 and 6 choices, not 1", "lessons.err.choices-count"},
		{20, `      quiz: {ko: "누가", en: "Who"}`, `x.yaml:20:7: steps[0].predict: unknown key "quiz"; expected one of: question, choices`, "lessons.err.unknown-key"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			all, err := loadFramed(withFramedLine(t, tc.line, tc.text))
			errs := LoadErrors(err)
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			if len(all) != 1 {
				t.Errorf("%d lessons returned; want only the sample", len(all))
			}
			got := errs[0].In(i18n.English)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if errs[0].Msg.Key != tc.key {
				t.Errorf("key %s, want %s", errs[0].Msg.Key, tc.key)
			}
		})
	}
}
