package lessons

import (
	"fmt"
	"strconv"
	"strings"
)

// Lesson is one lesson: a cluster shape and the steps that teach on it.
type Lesson struct {
	// ID names the lesson (klab --lesson <id>, progress); unique among the
	// lessons loaded together.
	ID string
	// Order places the lesson in the list; lessons with the same order are
	// listed by ID.
	Order   int
	Title   Bilingual
	Summary Bilingual
	// Frame says what the lesson teaches, what it assumes and what to
	// read after it; it is shown at the lesson's start and end.
	Frame Frame
	// Cluster is the shape the lesson starts on.
	Cluster Shape
	Steps   []*Step
	// File is where the lesson was loaded from, as errors name it.
	File string
}

// Step returns the step with the given id and its index, or nil and -1.
func (l *Lesson) Step(id string) (*Step, int) {
	for i, s := range l.Steps {
		if s.ID == id {
			return s, i
		}
	}
	return nil, -1
}

// FindStep returns the step a user names, by its id or by its number as
// the workspace shows it ("Step 2/6" is 2), and its index; nil and -1
// when there is none. A step id starts with a letter, so the two never
// clash.
func (l *Lesson) FindStep(ref string) (*Step, int) {
	if n, err := strconv.Atoi(ref); err == nil && ref != "" && ref[0] != '+' && ref[0] != '-' {
		if n < 1 || n > len(l.Steps) {
			return nil, -1
		}
		return l.Steps[n-1], n - 1
	}
	return l.Step(ref)
}

// StepList lists the steps by number and id, as errors offer them:
// "1 roles, 2 slow-motion".
func (l *Lesson) StepList() string {
	var b strings.Builder
	for i, s := range l.Steps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", i+1, s.ID)
	}
	return b.String()
}

// ShapeAt returns the shape of the cluster step i runs on: the shape it
// asks for, or else the last one an earlier step asked for, or else the
// lesson's. Going back to a step means going back to its shape.
func (l *Lesson) ShapeAt(i int) Shape {
	for j := min(i, len(l.Steps)-1); j >= 0; j-- {
		if c := l.Steps[j].Cluster; c != nil {
			return *c
		}
	}
	return l.Cluster
}

// SegmentNeeds returns what the checks read of the steps that share step
// i's cluster: from the step that last asked for a cluster (or the first)
// up to the next one that asks for another. A reader follows them for the
// whole life of that cluster, so that a key's value is current whenever a
// step begins and no request or Event is missed while a source connects.
func (l *Lesson) SegmentNeeds(i int) Needs {
	var n Needs
	if len(l.Steps) == 0 {
		return n
	}
	i = max(0, min(i, len(l.Steps)-1))
	start := i
	for start > 0 && l.Steps[start].Cluster == nil {
		start--
	}
	for j := start; j < len(l.Steps); j++ {
		s := l.Steps[j]
		if j > start && s.Cluster != nil {
			break
		}
		if s.Check != nil {
			n = n.Merge(s.Check.Needs())
		}
	}
	return n
}

// Step is one thing to do and see.
type Step struct {
	// ID names the step, unique within its lesson; progress is kept by it,
	// so that steps can be reordered without losing what a student did.
	ID    string
	Title Bilingual
	// Body is Markdown.
	Body Bilingual
	// View is the live view shown beside the step.
	View View
	// Try lists commands for the student to run.
	Try   []Command
	Hints []Bilingual
	// Check is the condition that completes the step.
	Check Check
	// Solution lists commands that, run in order by the engine, make the
	// check pass. It may be empty when the check holds on its own. A
	// command may fail on purpose (a write refused without quorum): the
	// engine runs the next one regardless, feeds each result to the
	// Evaluator, and judges the step by its check alone.
	Solution []Command
	// Cluster, when set, is the shape the step needs; the engine brings the
	// cluster to it before the step begins. Nil keeps the cluster as the
	// previous step left it.
	Cluster *Shape
	// Notes are for whoever presents the lesson to a class: what to
	// point at, what students get wrong. Empty when the step has none.
	Notes Bilingual
	// Observe marks a step where watching is the act: its check may hold
	// without the student doing anything, and klab lessons check does not
	// require it to fail before the solution runs.
	Observe bool
	// Predict, when set, is a question the student answers before the
	// act; once the check passes the pane shows the guess beside what the
	// cluster did.
	Predict *Prediction
	// Line is the step's line in its lesson file.
	Line int
}

// Frame is what a lesson says about itself: what the student will be
// able to do, what it assumes, how long it takes, and, at the end, a
// recap and what to read next.
type Frame struct {
	Objectives []Bilingual
	// Prerequisites are the ids of lessons to take first, and
	// PrerequisiteTitles their titles, in the same order (filled in by the
	// loader, which alone sees the other lessons).
	Prerequisites      []string
	PrerequisiteTitles []Bilingual
	// Minutes is the estimated time, 0 when not given.
	Minutes int
	Level   Level
	Recap   Bilingual
	// ReadNext are pages to read after the lesson: the Kubernetes docs,
	// the Raft paper.
	ReadNext []Link
	// prereqAt are the lines and columns of Prerequisites, for the error naming a
	// lesson that does not exist (known only once every file is read).
	prereqAt [][2]int
}

// Empty reports whether the lesson says nothing about itself.
func (f Frame) Empty() bool {
	return len(f.Objectives) == 0 && len(f.Prerequisites) == 0 && f.Minutes == 0 && f.Level == "" &&
		f.Recap == (Bilingual{}) && len(f.ReadNext) == 0
}

// Level is how much a lesson assumes.
type Level string

// The levels.
const (
	LevelBeginner     Level = "beginner"
	LevelIntermediate Level = "intermediate"
	LevelAdvanced     Level = "advanced"
)

// Levels lists the levels, easiest first.
var Levels = []Level{LevelBeginner, LevelIntermediate, LevelAdvanced}

// Link is a page to read.
type Link struct {
	Title Bilingual
	URL   string
}

// Prediction is a question asked before a step's act: what will the
// cluster do? One or more choices are right; each says why it is right or
// wrong, shown once the check passes. Nothing is graded: the point is to
// commit to a guess and then see.
type Prediction struct {
	Question Bilingual
	Choices  []Choice
}

// Choice is one answer to a Prediction.
type Choice struct {
	Text  Bilingual
	Right bool
	// Why explains the choice, shown after the act.
	Why Bilingual
}

// Shape is the shape of the cluster a lesson or step runs on, as klab up's
// flags give it.
type Shape struct {
	Masters int
	Workers int
	// Speed divides Kubernetes' timings (1 is real time).
	Speed float64
}

// Bounds of a shape. They mirror cluster/lab's limits (MaxMasters,
// MaxWorkers, MaxSpeed), which klab up enforces; lessons does not import
// cluster/lab so that lesson files can be checked without the cluster.
const (
	maxMasters = 7
	maxWorkers = 50
	maxSpeed   = 100
)

// View is one of the TUI's live views.
type View string

// The views a step can show.
const (
	ViewOverview  View = "overview"
	ViewRaft      View = "raft"
	ViewScheduler View = "scheduler"
	ViewProxy     View = "proxy"
	ViewEvents    View = "events"
)

// Views lists every view, in the order of their keys (1–5).
var Views = []View{ViewOverview, ViewRaft, ViewScheduler, ViewProxy, ViewEvents}
