// Package atomicwriter writes the files of a kubelet volume (projected,
// configMap, secret, downwardAPI) so that a container reading them never
// sees a half-written set, with upstream's layout (pkg/volume/util's
// AtomicWriter):
//
//	<dir>/..2026_11_29_04_30_00.123456789/  the files of one version
//	<dir>/..data -> ..2026_11_29_04_30_00.123456789
//	<dir>/token  -> ..data/token            one link per top-level name
//
// A new version is written into a new timestamped directory, then ..data is
// switched to it with a rename, which is atomic; the old directory is
// removed afterwards. A reader that opens <dir>/token gets the old file or
// the new one, never a mix. This is why upstream (and klab) mount the
// directory into containers rather than single files.
package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// DataDirName is the link to the current version.
	DataDirName = "..data"
	// dataDirTmpName is the link made before it is renamed to ..data.
	dataDirTmpName = "..data_tmp"
	// DefaultMode is a file's mode when the volume gives none (upstream's
	// defaultMode for configMap, secret, downwardAPI and projected volumes).
	DefaultMode = 0o644
)

// File is one file of a volume's payload.
type File struct {
	Data []byte
	// Mode is the file's permission bits; 0 means DefaultMode.
	Mode fs.FileMode
}

// Writer writes payloads into one target directory.
type Writer struct {
	dir string
	now func() time.Time
}

// New returns a writer for dir, which it creates when needed.
func New(dir string) *Writer { return &Writer{dir: dir, now: time.Now} }

// Dir is the target directory.
func (w *Writer) Dir() string { return w.dir }

// Validate checks a payload path as upstream does: relative, not
// empty, no ".." element, not starting with "..", at most 4096 bytes,
// no element longer than 255 bytes.
func Validate(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case len(p) > 4096:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", 4096)
	case path.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(el) > 255 {
			return fmt.Errorf("invalid path: must not contain path elements longer than %d characters", 255)
		}
	}
	return nil
}

// Write makes payload the content of the target directory. It returns
// whether anything changed: a payload equal to the current version
// (content and modes) is not written again, so that containers see no
// needless change.
func (w *Writer) Write(payload map[string]File) (changed bool, err error) {
	clean := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := Validate(p); err != nil {
			return false, err
		}
		if f.Mode == 0 {
			f.Mode = DefaultMode
		}
		clean[path.Clean(p)] = f
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return false, fmt.Errorf("atomic write: %w", err)
	}
	dataLink := filepath.Join(w.dir, DataDirName)
	old, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("atomic write: read %s: %w", dataLink, err)
	}
	var oldPaths []string
	if old != "" {
		oldPaths, err = listFiles(filepath.Join(w.dir, old))
		if err != nil {
			return false, fmt.Errorf("atomic write: %w", err)
		}
		same, err := sameContent(filepath.Join(w.dir, old), oldPaths, clean)
		if err != nil {
			return false, fmt.Errorf("atomic write: %w", err)
		}
		if same {
			return false, nil
		}
	}

	// The new version, in a directory of its own.
	tsDir, err := os.MkdirTemp(w.dir, w.now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("atomic write: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, fmt.Errorf("atomic write: %w", err)
	}
	tsName := filepath.Base(tsDir)
	if err := writeFiles(tsDir, clean); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic write: %w", err)
	}

	// Links for the top-level names the payload has and had not before;
	// they point through ..data, so they follow it when it moves.
	for _, top := range topLevel(keys(clean)) {
		link := filepath.Join(w.dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(DataDirName, top), link); err != nil {
			_ = os.RemoveAll(tsDir)
			return false, fmt.Errorf("atomic write: %w", err)
		}
	}

	// The switch: a new link renamed over ..data.
	tmpLink := filepath.Join(w.dir, dataDirTmpName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(tsName, tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic write: %w", err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("atomic write: %w", err)
	}

	// Links to names the new version no longer has, then the old version.
	keep := map[string]bool{}
	for _, top := range topLevel(keys(clean)) {
		keep[top] = true
	}
	for _, top := range topLevel(oldPaths) {
		if !keep[top] {
			if err := os.Remove(filepath.Join(w.dir, top)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return true, fmt.Errorf("atomic write: %w", err)
			}
		}
	}
	if old != "" && old != tsName {
		if err := os.RemoveAll(filepath.Join(w.dir, old)); err != nil {
			return true, fmt.Errorf("atomic write: remove the old version: %w", err)
		}
	}
	return true, nil
}

func keys(m map[string]File) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// topLevel is the first element of each path, once each, sorted.
func topLevel(paths []string) []string {
	var out []string
	for _, p := range paths {
		top, _, _ := strings.Cut(p, "/")
		out = append(out, top)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listFiles lists the regular files under dir, as slash paths relative to
// it.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func sameContent(dir string, paths []string, payload map[string]File) (bool, error) {
	if !slices.Equal(paths, keys(payload)) {
		return false, nil
	}
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		info, err := os.Stat(full)
		if err != nil {
			return false, err
		}
		if info.Mode().Perm() != payload[p].Mode.Perm() {
			return false, nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, payload[p].Data) {
			return false, nil
		}
	}
	return true, nil
}

func writeFiles(dir string, payload map[string]File) error {
	for _, p := range keys(payload) {
		f := payload[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return err
		}
		// WriteFile's mode passes through the umask; set it as asked.
		if err := os.Chmod(full, f.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}
