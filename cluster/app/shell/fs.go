package shell

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// view maps the shell's paths to the machine's: inside root when it is
// set, as they are otherwise.
type view struct {
	root string
}

// host returns where the shell's absolute path p is on the machine.
// Cleaning it first keeps ".." from leaving the root.
func (v view) host(p string) string {
	clean := path.Clean("/" + filepath.ToSlash(p))
	if v.root == "" {
		return filepath.FromSlash(clean)
	}
	return filepath.Join(v.root, filepath.FromSlash(clean))
}

// abs returns the shell path of p relative to the working directory dir.
func abs(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// devNull is /dev/null, which a container always has.
type devNull struct{}

func (devNull) Read([]byte) (int, error)      { return 0, io.EOF }
func (devNull) Write(p []byte) (int, error)   { return len(p), nil }
func (devNull) Close() error                  { return nil }
func (v view) isDevNull(p string) bool        { return path.Clean(p) == "/dev/null" }
func (v view) opener() interp.OpenHandlerFunc { return v.open }

func (v view) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if v.isDevNull(p) {
		return devNull{}, nil
	}
	f, err := os.OpenFile(v.host(abs(interp.HandlerCtx(ctx).Dir, p)), flag, perm)
	return f, v.pathError(err, p)
}

func (v view) stat(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	if v.isDevNull(p) {
		return os.Stat(os.DevNull)
	}
	host := v.host(abs(interp.HandlerCtx(ctx).Dir, p))
	var info fs.FileInfo
	var err error
	if follow {
		info, err = os.Stat(host)
	} else {
		info, err = os.Lstat(host)
	}
	return info, v.pathError(err, p)
}

func (v view) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(v.host(abs(interp.HandlerCtx(ctx).Dir, p)))
	return entries, v.pathError(err, p)
}

// access answers as for root, who may do anything to a file that exists:
// processes in klab's containers run as root.
func (v view) access(ctx context.Context, p string, mode interp.AccessMode) error {
	_, err := v.stat(ctx, p, true)
	return err
}

// pathError names the shell's path, not the machine's, in an error.
func (v view) pathError(err error, p string) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	if le, ok := err.(*os.LinkError); ok {
		return &fs.PathError{Op: le.Op, Path: p, Err: le.Err}
	}
	return err
}

// errText is an error as the tools print it: "no such file or directory"
// rather than Go's "open x: no such file or directory".
func errText(err error) string {
	if pe, ok := err.(*fs.PathError); ok {
		err = pe.Err
	}
	switch {
	case os.IsNotExist(err):
		return "No such file or directory"
	case os.IsExist(err):
		return "File exists"
	case os.IsPermission(err):
		return "Permission denied"
	}
	return err.Error()
}
