package shell

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// ls lists directories and files: -a (dot files), -A, -l (long), -1, -d,
// -h (human sizes with -l).
func ls(t *tool, args []string) int {
	opts, ops, err := flags(args, "")
	if err != nil {
		return t.errorf("%v", err)
	}
	if len(ops) == 0 {
		ops = []string{"."}
	}
	code := 0
	var files []string
	var dirs []string
	for _, op := range ops {
		info, err := os.Stat(t.host(op))
		if err != nil {
			code = t.errorf("%s: %s", op, errText(err))
			continue
		}
		if info.IsDir() && opts['d'] == "" {
			dirs = append(dirs, op)
		} else {
			files = append(files, op)
		}
	}
	sort.Strings(files)
	sort.Strings(dirs)
	var entries []lsEntry
	for _, f := range files {
		info, _ := os.Lstat(t.host(f))
		entries = append(entries, lsEntry{name: f, info: info})
	}
	t.lsPrint(entries, opts)
	for i, d := range dirs {
		if len(ops) > 1 {
			if i > 0 || len(files) > 0 {
				fmt.Fprintln(t.stdout)
			}
			fmt.Fprintf(t.stdout, "%s:\n", d)
		}
		list, err := os.ReadDir(t.host(d))
		if err != nil {
			code = t.errorf("can't open '%s': %s", d, errText(err))
			continue
		}
		entries = entries[:0]
		if opts['a'] != "" {
			for _, dot := range []string{".", ".."} {
				if info, err := os.Stat(t.host(path.Join(abs(t.dir, d), dot))); err == nil {
					entries = append(entries, lsEntry{name: dot, info: info})
				}
			}
		}
		for _, e := range list {
			if strings.HasPrefix(e.Name(), ".") && opts['a'] == "" && opts['A'] == "" {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			entries = append(entries, lsEntry{name: e.Name(), info: info})
		}
		if opts['l'] != "" {
			var blocks int64
			for _, e := range entries {
				blocks += (e.info.Size() + 1023) / 1024
			}
			fmt.Fprintf(t.stdout, "total %d\n", blocks)
		}
		t.lsPrint(entries, opts)
	}
	return code
}

type lsEntry struct {
	name string
	info fs.FileInfo
}

func (t *tool) lsPrint(entries []lsEntry, opts map[byte]string) {
	if len(entries) == 0 {
		return
	}
	if opts['l'] == "" {
		if opts['1'] != "" || !t.s.cfg.TTY {
			for _, e := range entries {
				fmt.Fprintln(t.stdout, e.name)
			}
			return
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.name
		}
		fmt.Fprintln(t.stdout, strings.Join(names, "  "))
		return
	}
	for _, e := range entries {
		size := fmt.Sprintf("%8d", e.info.Size())
		if opts['h'] != "" {
			size = fmt.Sprintf("%8s", humanSize(e.info.Size()))
		}
		mod := e.info.ModTime()
		stamp := mod.Format("Jan _2 15:04")
		if time.Since(mod) > 180*24*time.Hour {
			stamp = mod.Format("Jan _2  2006")
		}
		links := 1
		if e.info.IsDir() {
			links = 2
		}
		fmt.Fprintf(t.stdout, "%s %4d root     root     %s %s %s\n", e.info.Mode().String(), links, size, stamp, e.name)
	}
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d", n)
	}
	f := float64(n)
	for _, suffix := range []string{"K", "M", "G", "T"} {
		f /= unit
		if f < unit {
			return fmt.Sprintf("%.1f%s", f, suffix)
		}
	}
	return fmt.Sprintf("%.1fP", f/unit)
}
