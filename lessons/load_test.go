package lessons

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klab-dev/klab/assets/i18n"
)

// sample is a valid lesson. The cases below break one of its lines each,
// so the line numbers in their expectations are this text's.
const sample = `id: sample
order: 1
title: {ko: 견본, en: Sample}
summary: {ko: 견본 레슨, en: A sample lesson}
cluster: {masters: 3, workers: 1}
steps:
  - id: first
    title: {ko: 첫 단계, en: First step}
    body:
      ko: 본문
      en: Body
    view: raft
    try: [klab status]
    hints:
      - {ko: 힌트, en: A hint}
    check:
      leader-elected: {members: 2}
    solution: []
  - id: second
    title: {ko: 둘째 단계, en: Second step}
    body: {ko: 본문, en: Body}
    check: leader-changed
    solution: [klab chaos kill leader]
`

// withLine returns sample with its line n (from 1) replaced.
func withLine(t *testing.T, n int, text string) string {
	t.Helper()
	lines := strings.Split(sample, "\n")
	if n < 1 || n > len(lines) {
		t.Fatalf("sample has no line %d", n)
	}
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

func loadOne(t *testing.T, name, text string) ([]*Lesson, error) {
	t.Helper()
	return Load(fstest.MapFS{name: {Data: []byte(text)}})
}

func TestLoadSample(t *testing.T) {
	lessons, err := loadOne(t, "sample.yaml", sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(lessons) != 1 {
		t.Fatalf("got %d lessons", len(lessons))
	}
	l := lessons[0]
	if l.ID != "sample" || l.Order != 1 || l.File != "sample.yaml" || l.Cluster != (Shape{Masters: 3, Workers: 1, Speed: 1}) {
		t.Errorf("lesson %+v", l)
	}
	if l.Title.Text(i18n.Korean) != "견본" || l.Title.Text(i18n.English) != "Sample" {
		t.Errorf("title %+v", l.Title)
	}
	if len(l.Steps) != 2 {
		t.Fatalf("got %d steps", len(l.Steps))
	}
	first, second := l.Steps[0], l.Steps[1]
	if first.View != ViewRaft || second.View != ViewOverview {
		t.Errorf("views %q, %q; want raft, overview (the default)", first.View, second.View)
	}
	if first.Line != 7 || second.Line != 19 {
		t.Errorf("step lines %d, %d; want 7, 19", first.Line, second.Line)
	}
	if len(first.Try) != 1 || first.Try[0] != "klab status" || len(first.Solution) != 0 {
		t.Errorf("first step try %q, solution %q", first.Try, first.Solution)
	}
	if len(first.Hints) != 1 || first.Hints[0].English != "A hint" || first.Hints[0].Korean != "힌트" {
		t.Errorf("hints %+v", first.Hints)
	}
	if c, ok := first.Check.(LeaderElectedCheck); !ok || c.Members != 2 {
		t.Errorf("first check %#v", first.Check)
	}
	if _, ok := second.Check.(LeaderChangedCheck); !ok {
		t.Errorf("second check %#v", second.Check)
	}
	if s, i := l.Step("second"); s != second || i != 1 {
		t.Errorf("Step(second) = %v, %d", s, i)
	}
	if s, i := l.Step("third"); s != nil || i != -1 {
		t.Errorf("Step(third) = %v, %d", s, i)
	}
	// A user may name a step by the number the workspace shows.
	for _, tt := range []struct {
		ref  string
		want int
	}{{"1", 0}, {"2", 1}, {"second", 1}, {"0", -1}, {"3", -1}, {"+1", -1}, {"-1", -1}, {"", -1}} {
		if s, i := l.FindStep(tt.ref); i != tt.want || (i >= 0) != (s != nil) || (s != nil && s != l.Steps[i]) {
			t.Errorf("FindStep(%q) = %v, %d; want index %d", tt.ref, s, i, tt.want)
		}
	}
	if got := l.StepList(); got != "1 first, 2 second" {
		t.Errorf("StepList() = %q", got)
	}
}

// TestLoadRejects breaks the sample one way at a time and requires the
// exact position, field and message.
func TestLoadRejects(t *testing.T) {
	cases := []struct {
		name       string
		line       int    // line of sample to replace
		text       string // its replacement
		want       string // the whole error, in English
		wantKey    string
		wantErrors int // 0 means 1
	}{
		{
			name: "unknown key at the top", line: 2, text: "ordre: 1",
			want:       `x.yaml:2:1: unknown key "ordre"; expected one of: id, order, title, summary, cluster, steps, objectives, prerequisites, minutes, level, recap, readNext`,
			wantKey:    "lessons.err.unknown-key",
			wantErrors: 2, // and order is missing
		},
		{
			name: "unknown key in a step", line: 12, text: "    veiw: raft",
			want:    `x.yaml:12:5: steps[0]: unknown key "veiw"; expected one of: id, title, body, view, try, hints, check, solution, cluster, notes, predict, observe`,
			wantKey: "lessons.err.unknown-key",
		},
		{
			name: "unknown key in check parameters", line: 17, text: "      leader-elected: {member: 2}",
			want:    `x.yaml:17:24: steps[0].check.leader-elected: unknown key "member"; expected one of: members`,
			wantKey: "lessons.err.unknown-key",
		},
		{
			name: "unknown language", line: 15, text: "      - {ko: 힌트, en: A hint, ja: ヒント}",
			want:    `x.yaml:15:30: steps[0].hints[0]: unknown key "ja"; expected one of: ko, en`,
			wantKey: "lessons.err.unknown-key",
		},
		{
			name: "missing Korean hint", line: 15, text: "      - {en: A hint}",
			want:    `x.yaml:15:9: steps[0].hints[0]: missing Korean (ko) translation`,
			wantKey: "lessons.err.missing-ko",
		},
		{
			name: "missing Korean body", line: 10, text: "      kr: 본문",
			want:       `x.yaml:10:7: steps[0].body: unknown key "kr"; expected one of: ko, en`,
			wantKey:    "lessons.err.unknown-key",
			wantErrors: 2, // and ko is missing
		},
		{
			name: "empty English title", line: 8, text: `    title: {ko: 첫 단계, en: "  "}`,
			want:    `x.yaml:8:27: steps[0].title: missing English (en) translation`,
			wantKey: "lessons.err.missing-en",
		},
		{
			name: "English title with no value", line: 8, text: `    title: {ko: 첫 단계, en: }`,
			want:    `x.yaml:8:27: steps[0].title: missing English (en) translation`,
			wantKey: "lessons.err.missing-en",
		},
		{
			name: "title not bilingual", line: 3, text: "title: Sample",
			want:    `x.yaml:3:8: title: must be a mapping (key: value)`,
			wantKey: "lessons.err.want-mapping",
		},
		{
			name: "unknown view", line: 12, text: "    view: etcd",
			want:    `x.yaml:12:11: steps[0].view: unknown view "etcd"; it is one of: overview, raft, scheduler, proxy, events`,
			wantKey: "lessons.err.unknown-view",
		},
		{
			name: "unknown check", line: 17, text: "      leader-elekted: {members: 2}",
			want:    `x.yaml:17:7: steps[0].check: unknown check "leader-elekted"; it is one of: ` + strings.Join(kindNames(), ", "),
			wantKey: "lessons.err.unknown-check",
		},
		{
			name: "check of two kinds", line: 17, text: "      leader-elected: {}\n      no-leader: {}",
			want:    `x.yaml:17:7: steps[0].check: a check is its type followed by its parameters, such as leader-elected: {members: 3}, or the type alone`,
			wantKey: "lessons.err.check-shape",
		},
		{
			name: "parameter of the wrong type", line: 17, text: "      leader-elected: {members: three}",
			want:    `x.yaml:17:33: steps[0].check.leader-elected.members: must be a whole number, not "three"`,
			wantKey: "lessons.err.want-int",
		},
		{
			name: "parameter out of range", line: 17, text: "      leader-elected: {members: 9}",
			want:    `x.yaml:17:33: steps[0].check.leader-elected.members: must be between 1 and 7, not 9`,
			wantKey: "lessons.err.range",
		},
		{
			name: "missing parameter", line: 17, text: "      member-state: {state: down}",
			want:    `x.yaml:17:21: steps[0].check.member-state: missing "member"`,
			wantKey: "lessons.err.missing-key",
		},
		{
			name: "missing parameter of a bare check", line: 22, text: "    check: nodes-ready",
			want:    `x.yaml:22:12: steps[1].check.nodes-ready: missing "count"`,
			wantKey: "lessons.err.missing-key",
		},
		{
			name: "member named like a chaos target", line: 17, text: "      member-state: {member: etcd-1, state: down}",
			want:    `x.yaml:17:30: steps[0].check.member-state.member: "etcd-1" is not a member name: a member is named after its node, such as master-1`,
			wantKey: "lessons.err.bad-member",
		},
		{
			name: "unknown member state", line: 17, text: "      member-state: {member: master-1, state: dead}",
			want:    `x.yaml:17:47: steps[0].check.member-state.state: unknown member state "dead"; it is one of: leader, follower, candidate, pre-candidate, paused, down, running`,
			wantKey: "lessons.err.bad-state",
		},
		{
			name: "raft message that never leaves a member", line: 17, text: "      raft-message: {type: MsgHup}",
			want:    `x.yaml:17:28: steps[0].check.raft-message.type: "MsgHup" is not a raft message members send each other; use its raftpb name, such as MsgVote, MsgPreVote, MsgApp or MsgHeartbeat`,
			wantKey: "lessons.err.bad-message",
		},
		{
			name: "bad selector", line: 17, text: "      pods-running: {selector: 'app in (web', count: 3}",
			want:    `x.yaml:17:32: steps[0].check.pods-running.selector: bad label selector "app in (web": `,
			wantKey: "lessons.err.bad-selector",
		},
		{
			name: "more nodes than pods", line: 17, text: "      pods-running: {selector: app=web, count: 2, minNodes: 3}",
			want:    `x.yaml:17:61: steps[0].check.pods-running.minNodes: minNodes must not be greater than count`,
			wantKey: "lessons.err.min-max",
		},
		{
			name: "raft-clock without a condition", line: 17, text: "      raft-clock: {}",
			want:    `x.yaml:17:19: steps[0].check.raft-clock: give at least one of: paused, minSlowdown, maxSlowdown`,
			wantKey: "lessons.err.need-one-of",
		},
		{
			name: "all with one check", line: 17, text: "      all: [no-leader]",
			want:    `x.yaml:17:12: steps[0].check.all: all takes a list of at least two checks`,
			wantKey: "lessons.err.all-empty",
		},
		{
			name: "bad check inside all", line: 17, text: "      all: [no-leader, {nodes-ready: {count: 0}}]",
			want:    `x.yaml:17:46: steps[0].check.all[1].nodes-ready.count: must be between 1 and 57, not 0`,
			wantKey: "lessons.err.range",
		},
		{
			name: "speed out of range", line: 5, text: "cluster: {masters: 3, workers: 1, speed: 0}",
			want:    `x.yaml:5:42: cluster.speed: must be greater than 0 and at most 100, not 0`,
			wantKey: "lessons.err.range-positive",
		},
		{
			name: "too many masters", line: 5, text: "cluster: {masters: 8, workers: 1}",
			want:    `x.yaml:5:20: cluster.masters: must be between 1 and 7, not 8`,
			wantKey: "lessons.err.range",
		},
		{
			name: "duplicate step id", line: 19, text: "  - id: first",
			want:    `x.yaml:19:5: steps[1].id: step id "first" is already used by steps[0]`,
			wantKey: "lessons.err.duplicate-step",
		},
		{
			name: "bad step id", line: 19, text: "  - id: Second_Step",
			want:    `x.yaml:19:9: steps[1].id: "Second_Step" is not a valid id: use lowercase letters, digits and '-', start with a letter, and do not end with '-'`,
			wantKey: "lessons.err.bad-id",
		},
		{
			name: "repeated key", line: 22, text: "    title: {ko: 또, en: Again}",
			want:       `x.yaml:22:5: steps[1].title: key "title" appears twice (first on line 20)`,
			wantKey:    "lessons.err.duplicate-key",
			wantErrors: 2, // and check is missing
		},
		{
			name: "missing check", line: 22, text: "",
			want:    `x.yaml:19:5: steps[1]: missing "check"`,
			wantKey: "lessons.err.missing-key",
		},
		{
			name: "command without klab", line: 23, text: "    solution: [kubectl get nodes]",
			want:    `x.yaml:23:16: steps[1].solution[0]: "kubectl get nodes" is not a klab command: lesson commands start with klab and one of: chaos, clock, down, etcdctl, kubectl, lessons, proxy, status, traffic, up`,
			wantKey: "lessons.err.cmd-klab",
		},
		{
			name: "pipe in a command", line: 13, text: "    try: ['klab kubectl get pods | grep web']",
			want:    `x.yaml:13:11: steps[0].try[0]: "|" outside quotes: one command per entry; pipes, redirections, ; and & are not run`,
			wantKey: "lessons.err.cmd-operator",
		},
		{
			name: "unclosed quote", line: 13, text: `    try: ["klab etcdctl put k 'v"]`,
			want:    `x.yaml:13:11: steps[0].try[0]: a quote is not closed, or a backslash ends the command`,
			wantKey: "lessons.err.cmd-quote",
		},
		{
			name: "klab up in a solution", line: 23, text: "    solution: [klab up --masters 5]",
			want:    `x.yaml:23:16: steps[1].solution[0]: klab up does not belong in a solution: give the step a cluster: shape, and klab brings the cluster to it`,
			wantKey: "lessons.err.cmd-shape",
		},
		{
			name: "YAML syntax error", line: 20, text: "    title: \"둘째 단계",
			want:    `x.yaml:20: YAML syntax error: `,
			wantKey: "lessons.err.syntax",
		},
		{
			name: "unquoted comma in a flow mapping", line: 20, text: "    title: {ko: 둘째 단계, en: Second, then? step}",
			want:    `x.yaml:20: YAML syntax error: did not find expected ',' or '}'. Inside {…} or […], a text that holds a comma, a colon or a question mark followed by a space must be quoted, as in en: "Which member, then?"`,
			wantKey: "lessons.err.syntax-flow",
		},
		{
			name: "unquoted colon on its own line", line: 20, text: "    title: Second step: the vote",
			want:    `x.yaml:20: YAML syntax error: mapping values are not allowed in this context. A text that holds a colon followed by a space must be quoted, in {…} and on a line of its own alike, as in en: "Why: the leader is gone"`,
			wantKey: "lessons.err.syntax-colon",
		},
		{
			name: "anchor", line: 20, text: "    title: &t {ko: 둘째 단계, en: Second step}",
			want:    `x.yaml:20:12: anchors and aliases (& and *) are not allowed in lesson files`,
			wantKey: "lessons.err.alias",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lessons, err := loadOne(t, "x.yaml", withLine(t, tc.line, tc.text))
			if err == nil {
				t.Fatal("loaded")
			}
			if len(lessons) != 0 {
				t.Errorf("a broken lesson was returned")
			}
			errs := LoadErrors(err)
			if want := max(tc.wantErrors, 1); len(errs) != want {
				for _, e := range errs {
					t.Log(renderError(t, i18n.English, e))
				}
				t.Fatalf("got %d errors, want %d", len(errs), want)
			}
			got := renderError(t, i18n.English, errs[0])
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(tc.want, ": ") && got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if errs[0].Msg.Key != tc.wantKey {
				t.Errorf("key %s, want %s", errs[0].Msg.Key, tc.wantKey)
			}
			// The Korean rendering keeps the position and the field.
			ko := renderError(t, i18n.Korean, errs[0])
			if !strings.HasPrefix(ko, errs[0].Position()+": ") || ko == got {
				t.Errorf("Korean rendering %q", ko)
			}
		})
	}
}

func kindNames() []string {
	var out []string
	for _, k := range CheckKinds {
		out = append(out, string(k))
	}
	return out
}

// TestLoadReportsEveryProblem requires all problems of all files, not just
// the first, and keeps the good lessons.
func TestLoadReportsEveryProblem(t *testing.T) {
	broken := strings.NewReplacer(
		"id: sample", "id: broken",
		"{ko: 힌트, en: A hint}", "{en: A hint}",
		"view: raft", "view: etcd",
		"leader-changed", "leader-swapped",
	).Replace(sample)
	good := strings.Replace(sample, "order: 1", "order: 0", 1)
	lessons, err := Load(fstest.MapFS{
		"a/broken.yaml": {Data: []byte(broken)},
		"good.yml":      {Data: []byte(good)},
		"notes.txt":     {Data: []byte("not a lesson")},
	})
	errs := LoadErrors(err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Position()+" "+e.Msg.Key)
	}
	want := []string{
		"a/broken.yaml:12:11: steps[0].view lessons.err.unknown-view",
		"a/broken.yaml:15:9: steps[0].hints[0] lessons.err.missing-ko",
		"a/broken.yaml:22:12: steps[1].check lessons.err.unknown-check",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(lessons) != 1 || lessons[0].ID != "sample" || lessons[0].File != "good.yml" {
		t.Errorf("lessons %v, want the good one only", lessons)
	}
}

func TestLoadDuplicateLessonIDs(t *testing.T) {
	second := strings.Replace(sample, "order: 1", "order: 2", 1)
	lessons, err := Load(fstest.MapFS{
		"one.yaml": {Data: []byte(sample)},
		"two.yaml": {Data: []byte(second)},
	})
	errs := LoadErrors(err)
	if len(errs) != 1 {
		t.Fatalf("errors %v", err)
	}
	if got, want := renderError(t, i18n.English, errs[0]), `two.yaml:1:5: id: lesson id "sample" is already used by one.yaml:1`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(lessons) != 1 || lessons[0].File != "one.yaml" {
		t.Errorf("lessons %v", lessons)
	}
}

func TestLoadFileProblems(t *testing.T) {
	cases := []struct {
		name, text string
		want       string
	}{
		{"empty", "", "x.yaml: the file is empty; a lesson needs id, order, title, summary, cluster and steps"},
		{"only a comment", "# nothing\n", "x.yaml: the file is empty; a lesson needs id, order, title, summary, cluster and steps"},
		{"two documents", sample + "---\nid: other\n", "x.yaml:24:1: a lesson file holds one YAML document, and this one has more"},
		{"a list", "- id: sample\n", "x.yaml:1:1: must be a mapping (key: value)"},
		{"no steps", strings.SplitAfter(sample, "steps:")[0] + " []\n", "x.yaml:6:8: steps: a lesson needs at least one step"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "x.yaml", tc.text)
			errs := LoadErrors(err)
			if len(errs) != 1 {
				t.Fatalf("errors: %v", err)
			}
			if got := renderError(t, i18n.English, errs[0]); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	_, err := Load(fstest.MapFS{"README.md": {Data: []byte("hi")}})
	if errs := LoadErrors(err); len(errs) != 1 || errs[0].Msg.Key != "lessons.err.no-lessons" {
		t.Errorf("a folder without lessons: %v", err)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	if err := writeFile(dir+"/x.yaml", withLine(t, 12, "    view: etcd")); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir)
	errs := LoadErrors(err)
	if len(errs) != 1 || errs[0].File != dir+"/x.yaml" || errs[0].Line != 12 {
		t.Fatalf("errors %v", err)
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Errorf("errors.As finds no *LoadError in %v", err)
	}
}

func TestLoadRejectsAliases(t *testing.T) {
	text := strings.Replace(withLine(t, 20, "    title: &t {ko: 둘째 단계, en: Second step}"), "    body: {ko: 본문, en: Body}", "    body: *t", 1)
	_, err := loadOne(t, "x.yaml", text)
	var got []string
	for _, e := range LoadErrors(err) {
		got = append(got, e.Position()+" "+e.Msg.Key)
	}
	want := "x.yaml:20:12 lessons.err.alias\nx.yaml:21:11 lessons.err.alias"
	if strings.Join(got, "\n") != want {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
