package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// TestLessonsCheckEveryLesson runs klab lessons check on every built-in
// lesson, each on a fresh cluster of the local runtime: a lesson whose
// solution no longer makes its checks pass fails here.
func TestLessonsCheckEveryLesson(t *testing.T) {
	testenv.EndToEnd(t)
	// A fresh KLAB_HOME (testHome: short enough for the control socket).
	home := testHome(t)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	// etcdctl runs as a child process of this binary, which TestMain
	// turns into klab.
	t.Setenv("KLAB_TEST_MAIN", "1")
	i18n.SetLang(i18n.English)
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, l := range all {
		steps += len(l.Steps)
	}

	code, stdout, stderr := klab(t, "lessons", "check", "--runtime", "local")
	t.Logf("klab lessons check:\n%s", stdout)
	if code != 0 {
		t.Fatalf("klab lessons check exited %d: %s", code, stderr)
	}
	if passed := strings.Count(stdout, "\n ✓ "); passed != steps+len(all) {
		t.Errorf("%d lines with ✓; want one per step (%d) and per lesson (%d)", passed, steps, len(all))
	}
	for _, l := range all {
		if !strings.Contains(stdout, "("+l.ID+")\n") {
			t.Errorf("lesson %s is not in the report", l.ID)
		}
	}
	if want := fmt.Sprintf("All passed: %d lessons and %d steps in", len(all), steps); !strings.Contains(stdout, want) {
		t.Errorf("no %q at the end", want)
	}
	// Every cluster, and the folder solutions write in, is gone.
	if left, _ := os.ReadDir(home); len(left) != 0 {
		t.Errorf("KLAB_HOME still holds %v", left)
	}
}

func TestLessonsListAndShow(t *testing.T) {
	home := testHome(t)
	i18n.SetLang(i18n.English)
	p, err := lessons.OpenProgress(filepath.Join(home, lessons.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Complete("quorum", "one-down"); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := klab(t, "lessons", "list")
	if code != 0 {
		t.Fatalf("lessons list exited %d: %s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ID +TITLE +STEPS +DONE$`),
		regexp.MustCompile(`(?m)^cluster-tour +Cluster tour: master and worker nodes +4 +0/4$`),
		regexp.MustCompile(`(?m)^quorum +Quorum: why odd numbers +9 +1/9$`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("lessons list does not match %s:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = klab(t, "lessons", "show", "quorum")
	if code != 0 {
		t.Fatalf("lessons show exited %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Quorum: why odd numbers (quorum)\n",
		"Cluster: masters 3, workers 1, speed 1\n",
		"\n1. One of three goes down\n",
		// A code block, fences gone, indented.
		"\n       klab chaos kill etcd-3\n",
		"   Try:\n     klab chaos kill etcd-3\n     klab status\n",
		"   Hints:\n     - `klab status` should show master-3",
		"   Done when:\n     - master-3 is down",
		"\n7. What about two members?\n   (this step starts a new cluster: masters 2, workers 1, speed 1)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lessons show lacks %q", want)
		}
	}
	for _, unwanted := range []string{"```", "**"} {
		if strings.Contains(stdout, unwanted) {
			t.Errorf("lessons show still has Markdown's %q", unwanted)
		}
	}

	defer i18n.SetLang(i18n.English)
	i18n.SetLang(i18n.Korean)
	code, stdout, _ = klab(t, "lessons", "list")
	if code != 0 || !strings.Contains(stdout, "제목") || !strings.Contains(stdout, "쿼럼 — 왜 홀수일까") {
		t.Errorf("Korean lessons list (exit %d):\n%s", code, stdout)
	}
}

func TestLessonsErrors(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	// No engine answers here, whatever this machine runs.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	bad := t.TempDir()
	lesson := "id: broken\norder: 1\ntitle: {en: Broken}\nsummary: {ko: 요약, en: Summary}\ncluster: {masters: 1, workers: 0, speed: 1}\nsteps: []\n"
	if err := os.WriteFile(filepath.Join(bad, "broken.yaml"), []byte(lesson), 0o600); err != nil {
		t.Fatal(err)
	}
	// The ids in the order klab lists them.
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range all {
		ids = append(ids, l.ID)
	}
	known := strings.Join(ids, ", ")
	tests := []struct {
		name string
		args []string
		want []string // fragments of stderr
	}{
		{"show of nothing", []string{"lessons", "show", "nope"}, []string{`there is no lesson "nope"; the lessons are: ` + known}},
		{"check of nothing", []string{"lessons", "check", "quorum", "nope"}, []string{`there is no lesson "nope"`}},
		{"show without an id", []string{"lessons", "show"}, []string{"klab lessons show takes exactly 1 argument (<id>)"}},
		{"unknown subcommand", []string{"lessons", "take"}, []string{`unknown command "take" for klab lessons`}},
		{"bad runtime", []string{"lessons", "check", "--runtime", "podman"}, []string{`--runtime must be auto, local or docker, not "podman"`}},
		{"docker without an engine", []string{"lessons", "check", "--runtime", "docker"}, []string{"the Docker engine does not answer"}},
		{"no time", []string{"lessons", "check", "--timeout", "0s"}, []string{"--timeout must be more than 0, not 0s"}},
		{"broken lessons", []string{"lessons", "check", "--dir", bad}, []string{
			filepath.Join(bad, "broken.yaml") + ":3:8: title: missing Korean (ko) translation",
			filepath.Join(bad, "broken.yaml") + ":6:8: steps:",
			"error: 2 problems in the lessons in " + bad,
		}},
		{"no lessons at all", []string{"lessons", "list", "--dir", t.TempDir()}, []string{"no lesson files (*.yaml) here", "error: a problem in the lessons in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := klab(t, tt.args...)
			if code != 1 {
				t.Fatalf("klab %v exited %d, want 1; stderr %q", tt.args, code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
	if left, _ := os.ReadDir(os.Getenv("KLAB_HOME")); len(left) != 0 {
		t.Errorf("a failed check left %v in KLAB_HOME", left)
	}
}

func TestPlainText(t *testing.T) {
	md := "Some **bold** text:\n\n```\nklab status\n```\n\n- a `code` item\n"
	want := "Some bold text:\n\n    klab status\n\n- a `code` item"
	if got := plainText(md); got != want {
		t.Errorf("plainText =\n%q\nwant\n%q", got, want)
	}
}

// TestOwnProcess: the commands that would end the process they run in
// are the ones the runner starts in a process of their own.
func TestOwnProcess(t *testing.T) {
	for _, tc := range []struct {
		args []string
		own  bool
	}{
		{[]string{"etcdctl", "get", "/a"}, true},
		{[]string{"kubectl", "auth", "can-i", "create", "pods"}, true},
		{[]string{"kubectl", "-n", "shop", "auth", "can-i", "list", "pods"}, true},
		{[]string{"kubectl", "auth", "whoami"}, false},
		{[]string{"kubectl", "get", "pods", "can-i"}, false},
		{[]string{"kubectl", "auth"}, false},
		{[]string{"status"}, false},
	} {
		if got := ownProcess(tc.args); got != tc.own {
			t.Errorf("ownProcess(%q) = %v, want %v", tc.args, got, tc.own)
		}
	}
}

// TestRunnerKubectlFatal runs kubectl in this process on an error that
// kubectl's own main would exit on: the runner reports it as the CLI does
// (same message, same exit code) and the process goes on, as it was.
func TestRunnerKubectlFatal(t *testing.T) {
	testHome(t)
	t.Setenv("KUBECONFIG", "")
	i18n.SetLang(i18n.English)
	args := []string{"kubectl", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "get", "pods"}
	wantCode, _, wantStderr := klabProcess(t, args...)
	if wantCode == 0 || !strings.Contains(wantStderr, "missing") {
		t.Fatalf("klab %v in its own process: exit %d, %q", args, wantCode, wantStderr)
	}
	osArgs := strings.Join(os.Args, " ")
	run := newRunner("")
	for i := 0; i < 2; i++ {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"klab"}, args...), &stdout, &stderr)
		var exit exitError
		if !asExit(err, &exit) || exit.code != wantCode {
			t.Fatalf("run %d: err %v, want exit %d", i, err, wantCode)
		}
		if stderr.String() != wantStderr {
			t.Errorf("run %d: stderr %q, want kubectl's own %q", i, stderr.String(), wantStderr)
		}
	}
	if got := strings.Join(os.Args, " "); got != osArgs {
		t.Errorf("os.Args = %q after kubectl, was %q", got, osArgs)
	}
	// A command line that is not klab's is refused.
	if err := run(context.Background(), []string{"kubectl", "get", "pods"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("the runner ran a command line that does not start with klab")
	}
}

func asExit(err error, exit *exitError) bool {
	e, ok := err.(exitError)
	if ok {
		*exit = e
	}
	return ok
}

// TestLessonsJSON reads the frame, steps and progress of a lesson folder
// through list -o json and show -o json, and the frame and instructor notes
// through show's text.
func TestLessonsJSON(t *testing.T) {
	home := testHome(t)
	i18n.SetLang(i18n.English)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "id: first\norder: 1\ntitle: {ko: 처음, en: First}\nsummary: {ko: 요약, en: Summary}\n"+
		"cluster: {masters: 1, workers: 0}\nsteps:\n  - {id: only, title: {ko: 단계, en: Step}, body: {ko: 본문, en: Body}, check: leader-changed, solution: []}\n")
	write("b.yaml", `id: framed
order: 2
title: {ko: 틀, en: Framed}
summary: {ko: 요약, en: Summary}
objectives: [{ko: 리더를 찾는다, en: Find the leader}]
prerequisites: [first]
minutes: 15
level: intermediate
recap: {ko: 정리, en: The recap}
readNext: [{title: {ko: 논문, en: The paper}, url: "https://raft.github.io/raft.pdf"}]
cluster: {masters: 3, workers: 1}
steps:
  - id: guess
    title: {ko: 추측, en: Guess}
    body: {ko: 본문, en: Body}
    notes: {ko: 강사 메모, en: Point at the term}
    predict:
      question: {ko: 질문, en: "Who leads?"}
      choices:
        - {text: {ko: 아무나, en: Anyone}, right: true, why: {ko: 이유, en: Whoever times out first}}
        - {text: {ko: 첫째, en: master-1}, why: {ko: 이유, en: No order}}
    check: leader-changed
    solution: [klab chaos kill leader]
`)
	p, err := lessons.OpenProgress(filepath.Join(home, lessons.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Complete("framed", "guess"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetAnswer("framed", "guess", 1); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := klab(t, "lessons", "list", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(list) != 2 || list[1]["id"] != "framed" || list[1]["minutes"] != 15.0 || list[1]["level"] != "intermediate" ||
		list[1]["steps"] != 1.0 || fmt.Sprint(list[1]["prerequisites"]) != "[first]" ||
		fmt.Sprint(list[1]["progress"]) != "map[answers:map[guess:1] done:1 steps:[guess] total:1]" {
		t.Errorf("list -o json:\n%s", stdout)
	}

	code, stdout, stderr = klab(t, "lessons", "show", "framed", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var show struct {
		ID         string
		Objectives []struct{ Ko, En string }
		Recap      struct{ Ko, En string }
		ReadNext   []struct{ URL string }
		Steps      []struct {
			ID      string
			Done    bool
			Notes   struct{ Ko, En string }
			Predict struct {
				Choices []struct {
					Right bool
					Why   struct{ En string }
				}
			}
			Check struct {
				Kind     string
				Describe []struct{ Ko, En string }
			}
			Solution []string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &show); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if show.ID != "framed" || len(show.Objectives) != 1 || show.Objectives[0].Ko != "리더를 찾는다" || show.Recap.En != "The recap" ||
		len(show.ReadNext) != 1 || len(show.Steps) != 1 {
		t.Fatalf("show -o json:\n%s", stdout)
	}
	st := show.Steps[0]
	if !st.Done || st.Notes.En != "Point at the term" || len(st.Predict.Choices) != 2 || !st.Predict.Choices[0].Right ||
		st.Predict.Choices[1].Why.En != "No order" || st.Check.Kind != "leader-changed" || len(st.Check.Describe) == 0 ||
		st.Check.Describe[0].Ko == st.Check.Describe[0].En || fmt.Sprint(st.Solution) != "[klab chaos kill leader]" {
		t.Errorf("step in show -o json: %+v", st)
	}

	code, stdout, _ = klab(t, "lessons", "show", "framed", "--dir", dir, "--notes")
	for _, want := range []string{"about 15 minutes · intermediate\n", "Take first: first\n", "You will be able to:\n  - Find the leader\n",
		"   Instructor notes:\n     Point at the term\n", "   Predict: Who leads?\n     a) Anyone ✓ Whoever times out first\n     b) master-1 ✗ No order\n", "Recap:\n   The recap\n", "Read next:\n   - The paper: https://raft.github.io/raft.pdf\n"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("show --notes lacks %q:\n%s", want, stdout)
		}
	}
	if _, stdout, _ = klab(t, "lessons", "show", "framed", "--dir", dir); strings.Contains(stdout, "Point at the term") {
		t.Error("show prints instructor notes without --notes")
	}
	if code, _, stderr = klab(t, "lessons", "show", "framed", "--dir", dir, "-o", "yaml"); code != 1 || !strings.Contains(stderr, `--output must be text or json, not "yaml"`) {
		t.Errorf("show -o yaml: exit %d, %s", code, stderr)
	}
}
