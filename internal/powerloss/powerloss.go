// Package powerloss mounts a directory through FUSE so that a test can cut
// the power: every write a program made to a file since that file's last
// fsync (or fdatasync) is undone, as if the page cache that held it had
// gone with the power, while everything synced stays. A process killed
// with SIGKILL loses nothing its kernel already took; only this loses what
// the disk never got, which is what fsync is for.
//
// The mount passes every operation through to the directory underneath
// and, for each file written since its last sync, remembers the bytes each
// write replaced and the size the file had at its last sync. CutPower
// unmounts, then writes those bytes back, newest first, and truncates each
// file to its synced size. Directory operations (create, rename, unlink)
// are taken as durable at once, a simplification: the programs under test
// here write in place and fsync the file itself.
package powerloss

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Disk is a directory mounted so that its unsynced writes can be lost.
type Disk struct {
	under, at string
	server    *fuse.Server

	mu      sync.Mutex
	pending map[string]*unsynced // by path underneath
	cuts    int
}

// unsynced is what undoes one file's writes since its last sync.
type unsynced struct {
	size int64 // at the last sync
	old  []extent
}

type extent struct {
	off  int64
	data []byte
}

// Mount mounts under at the directory at, which must exist and be empty.
// It needs /dev/fuse and the right to mount (root, or fusermount).
func Mount(under, at string) (*Disk, error) {
	d := &Disk{under: under, at: at, pending: map[string]*unsynced{}}
	return d, d.mount()
}

func (d *Disk) mount() error {
	rootData := &fs.LoopbackRoot{Path: d.under}
	var st syscall.Stat_t
	if err := syscall.Stat(d.under, &st); err != nil {
		return err
	}
	rootData.Dev = uint64(st.Dev)
	rootData.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, disk: d}
	}
	root := &node{LoopbackNode: fs.LoopbackNode{RootData: rootData}, disk: d}
	rootData.RootNode = root
	server, err := fs.Mount(d.at, root, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMount: true, FsName: "klab-powerloss", Name: "powerloss",
	}})
	if err != nil {
		return fmt.Errorf("mount %s over %s with FUSE: %w", d.under, d.at, err)
	}
	d.server = server
	return nil
}

// Dir is where programs read and write.
func (d *Disk) Dir() string { return d.at }

// Unsynced returns how many files hold writes that a power cut would lose.
func (d *Disk) Unsynced() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// CutPower loses every unsynced write and mounts the directory again. The
// programs using it must have stopped (killed) first: the mount cannot go
// while they hold files open. It returns how many bytes of how many files
// were lost.
func (d *Disk) CutPower() (files int, bytes int64, err error) {
	if err := d.server.Unmount(); err != nil {
		return 0, 0, fmt.Errorf("unmount %s: %w", d.at, err)
	}
	d.mu.Lock()
	for path, u := range d.pending {
		n, err := u.undo(path)
		if err != nil {
			d.mu.Unlock()
			return files, bytes, err
		}
		files++
		bytes += n
	}
	d.pending = map[string]*unsynced{}
	d.cuts++
	d.mu.Unlock()
	return files, bytes, d.mount()
}

// Unmount unmounts, keeping every write (a clean shutdown).
func (d *Disk) Unmount() error { return d.server.Unmount() }

// undo writes back the replaced bytes, newest first, then truncates the
// file to its synced size; it returns how many bytes it restored.
func (u *unsynced) undo(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if os.IsNotExist(err) {
		return 0, nil // removed since: directory operations are durable
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for i := len(u.old) - 1; i >= 0; i-- {
		e := u.old[i]
		if _, err := f.WriteAt(e.data, e.off); err != nil {
			return n, err
		}
		n += int64(len(e.data))
	}
	if err := f.Truncate(u.size); err != nil {
		return n, err
	}
	return n, f.Sync()
}

// before records what a write of n bytes at off (or a truncation to off,
// n = 0) is about to replace in the file at path.
func (d *Disk) before(path string, off int64, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.pending[path]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if u == nil {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		u = &unsynced{size: fi.Size()}
		d.pending[path] = u
	}
	if n == 0 {
		return nil
	}
	old := make([]byte, n)
	got, err := f.ReadAt(old, off)
	if got > 0 {
		u.old = append(u.old, extent{off: off, data: old[:got]})
	}
	if err != nil && err != io.EOF {
		return err
	}
	return nil
}

// synced forgets what the file at path would lose: it is on disk.
func (d *Disk) synced(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, path)
}

// node is a loopback node whose files record their unsynced writes.
type node struct {
	fs.LoopbackNode
	disk *Disk
}

func (n *node) underPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	path := n.underPath()
	if flags&syscall.O_TRUNC != 0 {
		// Opened truncated: the old contents are gone, but not yet on disk.
		// The truncation already happened underneath; nothing to undo can
		// be read back now, so a truncating open counts as synced. The
		// programs here do not truncate on open.
		n.disk.synced(path)
	}
	return &file{inner: fh, path: path, disk: n.disk}, fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	path := filepath.Join(n.underPath(), name)
	// A new file synced at size 0: its writes are lost with the power
	// until it is synced.
	n.disk.mu.Lock()
	n.disk.pending[path] = &unsynced{}
	n.disk.mu.Unlock()
	return inode, &file{inner: fh, path: path, disk: n.disk}, fuseFlags, 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if err := n.disk.before(n.underPath(), int64(size), 0); err != nil {
			return fs.ToErrno(err)
		}
	}
	if ff, ok := f.(*file); ok {
		f = ff.inner
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// file wraps a loopback file, recording writes and forgetting them on sync.
type file struct {
	inner fs.FileHandle
	path  string
	disk  *Disk
}

var (
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileGetlker   = (*file)(nil)
	_ fs.FileSetlker   = (*file)(nil)
	_ fs.FileSetlkwer  = (*file)(nil)
)

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if err := f.disk.before(f.path, off, len(data)); err != nil {
		return 0, fs.ToErrno(err)
	}
	return f.inner.(fs.FileWriter).Write(ctx, data, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	errno := f.inner.(fs.FileFsyncer).Fsync(ctx, flags)
	if errno == 0 {
		f.disk.synced(f.path)
	}
	return errno
}

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.inner.(fs.FileReader).Read(ctx, dest, off)
}

func (f *file) Flush(ctx context.Context) syscall.Errno {
	return f.inner.(fs.FileFlusher).Flush(ctx)
}

func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.inner.(fs.FileReleaser).Release(ctx)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.inner.(fs.FileGetattrer).Getattr(ctx, out)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if err := f.disk.before(f.path, int64(size), 0); err != nil {
			return fs.ToErrno(err)
		}
	}
	return f.inner.(fs.FileSetattrer).Setattr(ctx, in, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.inner.(fs.FileLseeker).Lseek(ctx, off, whence)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if err := f.disk.before(f.path, int64(off), 0); err != nil {
		return fs.ToErrno(err)
	}
	return f.inner.(fs.FileAllocater).Allocate(ctx, off, size, mode)
}

func (f *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return f.inner.(fs.FileGetlker).Getlk(ctx, owner, lk, flags, out)
}

func (f *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.inner.(fs.FileSetlker).Setlk(ctx, owner, lk, flags)
}

func (f *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.inner.(fs.FileSetlkwer).Setlkw(ctx, owner, lk, flags)
}
