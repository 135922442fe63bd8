package shell

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// tarTool creates (c), extracts (x) and lists (t) tar archives, the
// subset kubectl cp relies on: `tar cf - PATH` and `tar -xmf - -C DIR`,
// with z for gzip, v for names, f for the archive ("-": the streams).
func tarTool(t *tool, args []string) int {
	// The first word may be bundled options without a dash (tar cf -).
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append([]string{"-" + args[0]}, args[1:]...)
	}
	var keep []string
	for _, a := range args {
		switch a {
		case "--no-same-permissions", "--no-same-owner", "--preserve-permissions":
			continue
		}
		keep = append(keep, a)
	}
	opts, ops, err := flags(keep, "fC")
	if err != nil {
		return t.errorf("%v", err)
	}
	archive := opts['f']
	if archive == "" {
		archive = "-"
	}
	dir := t.dir
	if c, ok := opts['C']; ok {
		dir = abs(t.dir, c)
	}
	gz := opts['z'] != ""
	switch {
	case opts['c'] != "":
		if len(ops) == 0 {
			return t.errorf("empty archive")
		}
		out := t.stdout
		if archive != "-" {
			f, err := os.Create(t.host(archive))
			if err != nil {
				return t.errorf("can't open '%s': %s", archive, errText(err))
			}
			defer f.Close()
			out = f
		}
		return t.tarCreate(out, dir, ops, gz, opts['v'] != "")
	case opts['x'] != "", opts['t'] != "":
		in := t.stdin
		if archive != "-" {
			f, err := os.Open(t.host(archive))
			if err != nil {
				return t.errorf("can't open '%s': %s", archive, errText(err))
			}
			defer f.Close()
			in = f
		}
		if gz {
			zr, err := gzip.NewReader(in)
			if err != nil {
				return t.errorf("invalid gzip magic")
			}
			in = zr
		}
		return t.tarExtract(in, dir, opts['t'] != "", opts['v'] != "")
	}
	return t.errorf("need at least one of -c, -x or -t")
}

func (t *tool) tarCreate(out io.Writer, dir string, ops []string, gz, verbose bool) int {
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(out)
		out = zw
	}
	tw := tar.NewWriter(out)
	code := 0
	for _, op := range ops {
		full := abs(dir, op)
		// Names are stored as given, without a leading slash, as GNU tar
		// stores them ("Removing leading '/' from member names").
		name := strings.TrimPrefix(path.Clean(op), "/")
		root := t.s.view.host(full)
		info, err := os.Lstat(root)
		if err != nil {
			code = t.errorf("%s: Cannot stat: %s", op, errText(err))
			continue
		}
		if !info.IsDir() {
			if err := addTarEntry(tw, root, name, info); err != nil {
				code = t.errorf("%s: %v", op, err)
			} else if verbose {
				fmt.Fprintln(t.stderr, name)
			}
			continue
		}
		err = walkDir(root, func(rel string, d fs.DirEntry) error {
			info, err := d.Info()
			if err != nil {
				return err
			}
			entry := path.Join(name, filepath.ToSlash(rel))
			if verbose {
				fmt.Fprintln(t.stderr, entry)
			}
			return addTarEntry(tw, filepath.Join(root, rel), entry, info)
		})
		if err != nil {
			code = t.errorf("%s: %v", op, err)
		}
	}
	if err := tw.Close(); err != nil {
		code = t.errorf("%v", err)
	}
	if zw != nil {
		zw.Close()
	}
	return code
}

func addTarEntry(tw *tar.Writer, host, name string, info fs.FileInfo) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		link, _ = os.Readlink(host)
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if info.IsDir() && !strings.HasSuffix(hdr.Name, "/") {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "root", "root", 0, 0
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(host)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

// tarExtract unpacks (or lists) an archive under dir. Links are refused:
// in the local runtime a link could point out of the pod's root.
func (t *tool) tarExtract(in io.Reader, dir string, list, verbose bool) int {
	tr := tar.NewReader(in)
	code := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return code
		}
		if err != nil {
			return t.errorf("%v", err)
		}
		if list || verbose {
			fmt.Fprintln(t.stdout, hdr.Name)
		}
		if list {
			continue
		}
		target := t.s.view.host(path.Join(dir, path.Clean("/"+hdr.Name)))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = writeFile(target, tr, fs.FileMode(hdr.Mode).Perm())
			}
		default:
			err = fmt.Errorf("unsupported entry type %q", hdr.Typeflag)
		}
		if err != nil {
			code = t.errorf("%s: %s", hdr.Name, errText(err))
		}
	}
}

func writeFile(target string, r io.Reader, perm fs.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
