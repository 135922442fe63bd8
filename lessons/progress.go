package lessons

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/internal/atomicfile"
)

// ProgressFile is the progress file's name in klab's state dir ($KLAB_HOME,
// as lab.Home returns it): progress belongs to the user, not to a cluster,
// and klab writes nothing outside its state dir.
const ProgressFile = "progress.json"

// progressVersion is the version of the file's layout.
const progressVersion = 1

// ErrProgressCorrupt is returned (wrapped, with the file's path) when the
// progress file cannot be read as progress. The file is left as it is:
// nothing the student did is overwritten until they choose to start over
// (ResetAll).
var ErrProgressCorrupt = &i18n.Error{Key: "lessons.err.progress-corrupt"}

// Progress is a student's progress through the lessons: for each lesson,
// the steps completed and the step they were on. Every change is written
// at once, atomically. Two klab processes (the TUI and klab lessons in
// another terminal) may share the file: each change is applied to the file
// as it is on disk, not to this process's copy, so neither loses the
// other's steps. A Progress is safe for concurrent use.
type Progress struct {
	path string
	mu   sync.Mutex
	data progressData
}

type progressData struct {
	Version int                        `json:"version"`
	Lessons map[string]*lessonProgress `json:"lessons,omitempty"`
}

type lessonProgress struct {
	// Done maps a completed step's id to when it was completed.
	Done map[string]time.Time `json:"done,omitempty"`
	// Current is the step the student was on.
	Current string `json:"current,omitempty"`
	// Answers maps a step's id to the choice (from 0) the student
	// predicted, for the steps that ask.
	Answers map[string]int `json:"answers,omitempty"`
}

// OpenProgress reads the progress file at path; a missing file is no
// progress yet. The file and its folder are created on the first change.
func OpenProgress(path string) (*Progress, error) {
	data, err := readProgress(path)
	if err != nil {
		return nil, err
	}
	return &Progress{path: path, data: data}, nil
}

// readProgress reads the file; a missing one reads as empty.
func readProgress(path string) (progressData, error) {
	empty := progressData{Version: progressVersion, Lessons: map[string]*lessonProgress{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, i18n.Wrap(err, "lessons.err.progress-read", path)
	}
	var d progressData
	if err := json.Unmarshal(raw, &d); err != nil {
		return empty, &i18n.Error{Key: ErrProgressCorrupt.Key, Args: []any{path}, Err: err}
	}
	if d.Version > progressVersion {
		return empty, i18n.NewError("lessons.err.progress-version", path, d.Version)
	}
	d.Version = progressVersion
	if d.Lessons == nil {
		d.Lessons = map[string]*lessonProgress{}
	}
	return d, nil
}

// Path returns the file's path.
func (p *Progress) Path() string { return p.path }

// Done reports whether the step of the lesson was completed.
func (p *Progress) Done(lesson, step string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	lp := p.data.Lessons[lesson]
	if lp == nil {
		return false
	}
	_, ok := lp.Done[step]
	return ok
}

// Completed returns how many of the lesson's steps were completed. Steps
// completed once but since removed from the lesson do not count.
func (p *Progress) Completed(l *Lesson) (done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lp := p.data.Lessons[l.ID]
	for _, s := range l.Steps {
		if lp != nil {
			if _, ok := lp.Done[s.ID]; ok {
				done++
			}
		}
	}
	return done, len(l.Steps)
}

// Current returns the step the student was on in the lesson, or "".
func (p *Progress) Current(lesson string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lp := p.data.Lessons[lesson]; lp != nil {
		return lp.Current
	}
	return ""
}

// ResumeAt returns the index of the step a lesson opens at: where the
// student left it, or the first step when they have not begun it, or when
// they finished it (every step done and the last one theirs): a finished
// lesson opened again is read from the start, not from its last page.
func (p *Progress) ResumeAt(l *Lesson) int {
	if p == nil {
		return 0
	}
	_, i := l.Step(p.Current(l.ID))
	if i < 0 {
		return 0
	}
	if done, total := p.Completed(l); done == total && i == total-1 {
		return 0
	}
	return i
}

// Answer returns the choice the student predicted at the step, if any.
func (p *Progress) Answer(lesson, step string) (choice int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lp := p.data.Lessons[lesson]; lp != nil {
		choice, ok = lp.Answers[step]
	}
	return choice, ok
}

// SetAnswer records the choice the student predicted at the step; a
// later answer replaces it.
func (p *Progress) SetAnswer(lesson, step string, choice int) error {
	return p.update(func(d *progressData) {
		lp := d.lesson(lesson)
		if lp.Answers == nil {
			lp.Answers = map[string]int{}
		}
		lp.Answers[step] = choice
	})
}

// Complete records that the step was completed, now.
func (p *Progress) Complete(lesson, step string) error {
	now := time.Now().UTC()
	return p.update(func(d *progressData) {
		lp := d.lesson(lesson)
		if _, ok := lp.Done[step]; !ok {
			lp.Done[step] = now
		}
	})
}

// SetCurrent records the step the student is on.
func (p *Progress) SetCurrent(lesson, step string) error {
	return p.update(func(d *progressData) { d.lesson(lesson).Current = step })
}

// Reset forgets the lesson's progress.
func (p *Progress) Reset(lesson string) error {
	return p.update(func(d *progressData) { delete(d.Lessons, lesson) })
}

// ResetAll forgets every lesson's progress, and replaces a file that could
// not be read.
func ResetAll(path string) error {
	p := &Progress{path: path}
	return p.write(progressData{Version: progressVersion, Lessons: map[string]*lessonProgress{}})
}

func (d *progressData) lesson(id string) *lessonProgress {
	lp := d.Lessons[id]
	if lp == nil {
		lp = &lessonProgress{}
		d.Lessons[id] = lp
	}
	if lp.Done == nil {
		lp.Done = map[string]time.Time{}
	}
	return lp
}

// update applies change to the file as it is now on disk and writes it
// back; the result becomes this Progress's view.
func (p *Progress) update(change func(*progressData)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := readProgress(p.path)
	if err != nil {
		return err
	}
	change(&d)
	if err := p.write(d); err != nil {
		return err
	}
	p.data = d
	return nil
}

func (p *Progress) write(d progressData) error {
	raw, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return i18n.Wrap(err, "lessons.err.progress-write", p.path)
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return i18n.Wrap(err, "lessons.err.progress-write", p.path)
	}
	if err := atomicfile.Write(p.path, append(raw, '\n'), 0o600); err != nil {
		return i18n.Wrap(err, "lessons.err.progress-write", p.path)
	}
	return nil
}
