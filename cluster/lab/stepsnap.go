package lab

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
)

// Step snapshots: a lesson's workspace takes an etcd snapshot as each step
// starts, so that klab reset --step (or the workspace's reset key) can bring
// the cluster back to that moment. They are kept under the state dir's
// snapshots folder as steps/<lesson>/<step>.db, apart from the ones a user
// saves, and bounded: the lessons used last keep theirs, and all of them
// together stay under a size.
const stepsDirName = "steps"

// Bounds of the step snapshots kept for one lab.
const (
	// MaxStepLessons is how many lessons keep their step snapshots; the
	// one used longest ago loses them first.
	MaxStepLessons = 3
	// MaxStepBytes bounds the step snapshots' total size; the oldest go
	// first.
	MaxStepBytes = 256 << 20
)

// resetFile is where the state dir records the last reset to a lesson step,
// so that a workspace following the lab (in another terminal than klab
// reset) reopens on that step.
const resetFile = "lesson-reset.json"

// StepSnapshotPath is where the snapshot taken as the step of the lesson
// started is kept.
func StepSnapshotPath(name, lesson, step string) (string, error) {
	dir, err := SnapshotsDir(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, stepsDirName, lesson, step+snapshotExt), nil
}

// SaveStepSnapshot takes the snapshot of the lesson's step (SaveSnapshot: the
// Maintenance Snapshot RPC, written to a partial file renamed into place when
// whole), then drops the step snapshots beyond the bounds.
func SaveStepSnapshot(ctx context.Context, name, lesson, step string) (string, error) {
	path, err := StepSnapshotPath(name, lesson, step)
	if err != nil {
		return "", err
	}
	if path, err = SaveSnapshot(ctx, name, path); err != nil {
		return "", err
	}
	// The lesson's folder is the newest: it is the one in use.
	now := time.Now()
	os.Chtimes(filepath.Dir(path), now, now)
	pruneStepSnapshots(filepath.Dir(filepath.Dir(path)), MaxStepLessons, MaxStepBytes)
	return path, nil
}

// StepSnapshot returns the snapshot kept for the lesson's step; ok is false
// when there is none.
func StepSnapshot(name, lesson, step string) (SnapshotFile, bool) {
	path, err := StepSnapshotPath(name, lesson, step)
	if err != nil {
		return SnapshotFile{}, false
	}
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return SnapshotFile{}, false
	}
	return SnapshotFile{Name: lesson + "/" + step, Path: path, Size: fi.Size(), ModTime: fi.ModTime()}, true
}

// DropStepSnapshots removes the snapshots of the lesson's steps named: after
// a reset to a step, the later steps' snapshots belong to a history that no
// longer happened.
func DropStepSnapshots(name, lesson string, steps []string) {
	for _, s := range steps {
		if path, err := StepSnapshotPath(name, lesson, s); err == nil {
			os.Remove(path)
		}
	}
}

// pruneStepSnapshots keeps the step snapshots under dir within the bounds:
// the maxLessons lesson folders changed last, and at most maxBytes in all,
// removing the oldest files first.
func pruneStepSnapshots(dir string, maxLessons int, maxBytes int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type lessonDir struct {
		path string
		mod  time.Time
	}
	var lessons []lessonDir
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && e.IsDir() {
			lessons = append(lessons, lessonDir{filepath.Join(dir, e.Name()), fi.ModTime()})
		}
	}
	sort.Slice(lessons, func(i, j int) bool { return lessons[i].mod.After(lessons[j].mod) })
	for i := maxLessons; i < len(lessons); i++ {
		os.RemoveAll(lessons[i].path)
	}
	lessons = lessons[:min(len(lessons), maxLessons)]
	var files []SnapshotFile
	var total int64
	for _, l := range lessons {
		ents, err := os.ReadDir(l.path)
		if err != nil {
			continue
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || e.IsDir() || filepath.Ext(e.Name()) != snapshotExt {
				continue
			}
			files = append(files, SnapshotFile{Path: filepath.Join(l.path, e.Name()), Size: fi.Size(), ModTime: fi.ModTime()})
			total += fi.Size()
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].ModTime.Before(files[j].ModTime) })
	// The newest one stays whatever its size: it is the step just begun.
	for i := 0; total > maxBytes && i < len(files)-1; i++ {
		if os.Remove(files[i].Path) == nil {
			total -= files[i].Size
		}
	}
}

// LessonReset records a reset of the lab to a lesson's step.
type LessonReset struct {
	Lesson string `json:"lesson"`
	Step   string `json:"step"`
	// At is when the reset finished; a workspace reopens on the step for a
	// reset newer than the last it saw.
	At     time.Time      `json:"at"`
	Result *RestoreResult `json:"result,omitempty"`
}

// WriteLessonReset records r in the named lab's state dir.
func WriteLessonReset(name string, r LessonReset) error {
	dir, err := StateDir(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, resetFile), data)
}

// ReadLessonReset reads the last reset to a lesson step; nil, without an
// error, when there was none.
func ReadLessonReset(name string) (*LessonReset, error) {
	dir, err := StateDir(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, resetFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r LessonReset
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ResetToStep brings the named lab back to the moment the lesson's step
// started: the etcd snapshot taken then is restored the way an operator
// restores etcd (Restore), the snapshots of the steps after it (later) are
// dropped, and the reset is recorded so that a workspace showing the lesson
// reopens on the step.
func ResetToStep(ctx context.Context, name, lesson, step string, later []string) (*RestoreResult, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	snap, ok := StepSnapshot(name, lesson, step)
	if !ok {
		return nil, i18n.NewError("reset.err.no-snapshot", lesson, step, name)
	}
	if info.Runtime != RuntimeDocker {
		// A local lab runs inside a klab process; nothing answers on its
		// socket when it is stopped.
		if _, err := Connect(ctx, name); err != nil {
			return nil, err
		}
	}
	res, err := Restore(ctx, name, snap.Path)
	if err != nil {
		return nil, err
	}
	DropStepSnapshots(name, lesson, later)
	WriteLessonReset(name, LessonReset{Lesson: lesson, Step: step, At: time.Now(), Result: res})
	return res, nil
}
