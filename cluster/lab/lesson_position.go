package lab

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// lessonFile is where a cluster's state dir keeps the lesson step its
// workspace shows, so that klab notes in another terminal (the
// presenter's laptop) follows it.
const lessonFile = "lesson-position.json"

// LessonPosition is the lesson step a workspace shows.
type LessonPosition struct {
	Lesson string `json:"lesson"`
	Step   string `json:"step"`
	// Started is when the workspace opened the lesson, StepStarted when
	// it began this step.
	Started     time.Time `json:"started"`
	StepStarted time.Time `json:"stepStarted"`
}

// WriteLessonPosition records p as the step the named cluster's workspace
// shows.
func WriteLessonPosition(name string, p LessonPosition) error {
	dir, err := StateDir(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, lessonFile), data)
}

// ReadLessonPosition reads the step the named cluster's workspace shows;
// nil, without an error, when no workspace has shown a lesson on it.
func ReadLessonPosition(name string) (*LessonPosition, error) {
	dir, err := StateDir(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, lessonFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p LessonPosition
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// writeAtomic writes data to path through a new file renamed over the old
// one, so that a reader never sees half of it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
