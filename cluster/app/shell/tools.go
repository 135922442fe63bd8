package shell

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

// tool is one run of a built-in tool: its world and its streams.
type tool struct {
	ctx    context.Context
	s      *session
	name   string
	dir    string
	env    expand.Environ
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// toolFunc runs a tool with its arguments and returns its exit code.
type toolFunc func(t *tool, args []string) int

// tools are the programs the shell has; see the package comment.
var tools map[string]toolFunc

func init() {
	tools = map[string]toolFunc{
		"ls": ls, "cat": cat, "env": env, "printenv": env, "hostname": hostname, "sleep": sleep,
		"ps": ps, "kill": kill, "mkdir": mkdir, "rm": rm, "rmdir": rmdir, "touch": touch, "cp": cp, "mv": mv,
		"head": head, "tail": tail, "grep": grep, "wc": wc, "date": date, "tar": tarTool,
		"wget": wget, "curl": curl, "nslookup": nslookup, "dig": dig, "uname": uname, "id": id, "whoami": whoami,
		"seq": seq, "which": which, "basename": basename, "dirname": dirname, "clear": clear,
		"sh": subShell, "ash": subShell, "bash": subShell,
	}
}

// execMiddleware runs the tools and refuses anything else: the default
// handler would run the machine's programs.
func (s *session) execMiddleware(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		hc := interp.HandlerCtx(ctx)
		name := path.Base(args[0])
		fn, ok := tools[name]
		if !ok {
			fmt.Fprintf(hc.Stderr, "sh: %s: not found\n", args[0])
			return interp.NewExitStatus(ExitNotFound)
		}
		t := &tool{ctx: ctx, s: s, name: name, dir: hc.Dir, env: hc.Env, stdin: hc.Stdin, stdout: hc.Stdout, stderr: hc.Stderr}
		if t.stdin == nil {
			t.stdin = strings.NewReader("")
		}
		if code := fn(t, args[1:]); code != 0 {
			return interp.NewExitStatus(uint8(code))
		}
		return nil
	}
}

// errorf prints "tool: message" to stderr and returns 1.
func (t *tool) errorf(format string, a ...any) int {
	fmt.Fprintf(t.stderr, t.name+": "+format+"\n", a...)
	return 1
}

// host is where the tool's argument p is on the machine.
func (t *tool) host(p string) string { return t.s.view.host(abs(t.dir, p)) }

// flags splits leading single-letter options ("-la", "-n", "5") from the
// operands; valued lists the letters that take a value.
func flags(args []string, valued string) (map[byte]string, []string, error) {
	opts := map[byte]string{}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return opts, args[1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		for i := 1; i < len(a); i++ {
			c := a[i]
			if strings.IndexByte(valued, c) >= 0 {
				v := a[i+1:]
				if v == "" {
					if len(args) == 0 {
						return nil, nil, fmt.Errorf("option requires an argument -- '%c'", c)
					}
					v, args = args[0], args[1:]
				}
				opts[c] = v
				break
			}
			opts[c] = "1"
		}
	}
	return opts, args, nil
}

// open opens an input operand: "-" is stdin.
func (t *tool) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(t.stdin), nil
	}
	if t.s.view.isDevNull(abs(t.dir, name)) {
		return io.NopCloser(strings.NewReader("")), nil
	}
	f, err := os.Open(t.host(name))
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err == nil && info.IsDir() {
		f.Close()
		return nil, fmt.Errorf("read error: Is a directory")
	}
	return f, nil
}

// inputs runs fn over each operand, or stdin without any; a file that
// cannot be opened is reported and makes the exit code 1.
func (t *tool) inputs(names []string, fn func(name string, r io.Reader) error) int {
	if len(names) == 0 {
		names = []string{"-"}
	}
	code := 0
	for _, n := range names {
		r, err := t.open(n)
		if err != nil {
			code = t.errorf("%s: %s", n, errText(err))
			continue
		}
		err = fn(n, r)
		r.Close()
		if err != nil {
			code = t.errorf("%s: %v", n, err)
		}
	}
	return code
}

func cat(t *tool, args []string) int {
	_, files, err := flags(args, "")
	if err != nil {
		return t.errorf("%v", err)
	}
	return t.inputs(files, func(_ string, r io.Reader) error {
		_, err := io.Copy(t.stdout, r)
		return err
	})
}

func env(t *tool, args []string) int {
	var lines []string
	t.env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			lines = append(lines, name+"="+vr.String())
		}
		return true
	})
	if t.name == "printenv" && len(args) > 0 {
		code := 0
		for _, name := range args {
			vr := t.env.Get(name)
			if !vr.IsSet() {
				code = 1
				continue
			}
			fmt.Fprintln(t.stdout, vr.String())
		}
		return code
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(t.stdout, l)
	}
	return 0
}

func hostname(t *tool, args []string) int {
	name := t.s.cfg.Hostname
	if name == "" {
		name, _ = os.Hostname()
	}
	fmt.Fprintln(t.stdout, name)
	return 0
}

// sleep takes seconds (fractions allowed) with an optional s, m, h or d
// suffix, or "infinity", as coreutils' does.
func sleep(t *tool, args []string) int {
	if len(args) == 0 {
		return t.errorf("missing operand")
	}
	var total time.Duration
	for _, a := range args {
		if a == "infinity" || a == "inf" {
			<-t.ctx.Done()
			return 130
		}
		unit := time.Second
		num := a
		switch {
		case strings.HasSuffix(a, "s"):
			num = a[:len(a)-1]
		case strings.HasSuffix(a, "m"):
			num, unit = a[:len(a)-1], time.Minute
		case strings.HasSuffix(a, "h"):
			num, unit = a[:len(a)-1], time.Hour
		case strings.HasSuffix(a, "d"):
			num, unit = a[:len(a)-1], 24*time.Hour
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 {
			return t.errorf("invalid number '%s'", a)
		}
		total += time.Duration(f * float64(unit))
	}
	timer := time.NewTimer(total)
	defer timer.Stop()
	select {
	case <-timer.C:
		return 0
	case <-t.ctx.Done():
		return 130
	}
}

// ps lists the container's processes as busybox's ps does.
func ps(t *tool, args []string) int {
	var procs []Process
	if t.s.cfg.Processes != nil {
		procs = t.s.cfg.Processes()
	}
	fmt.Fprintln(t.stdout, "PID   USER     TIME  COMMAND")
	now := time.Now()
	for _, p := range procs {
		d := now.Sub(p.Started)
		fmt.Fprintf(t.stdout, "%5d root     %2d:%02d %s\n", p.PID, int(d.Minutes()), int(d.Seconds())%60, p.Command)
	}
	return 0
}

// kill sends a signal (TERM unless -s SIG or -SIG says otherwise).
func kill(t *tool, args []string) int {
	signal := "TERM"
	switch {
	case len(args) > 0 && args[0] == "-l":
		fmt.Fprintln(t.stdout, "HUP INT QUIT KILL TERM")
		return 0
	case len(args) > 1 && args[0] == "-s":
		signal, args = args[1], args[2:]
	case len(args) > 0 && strings.HasPrefix(args[0], "-"):
		signal, args = args[0][1:], args[1:]
	}
	signal = strings.TrimPrefix(strings.ToUpper(signal), "SIG")
	switch signal {
	case "9":
		signal = "KILL"
	case "15":
		signal = "TERM"
	case "2":
		signal = "INT"
	case "1":
		signal = "HUP"
	}
	if len(args) == 0 {
		return t.errorf("usage: kill [-s SIG | -SIG] PID...")
	}
	code := 0
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil {
			code = t.errorf("invalid number '%s'", a)
			continue
		}
		if t.s.cfg.Kill == nil {
			code = t.errorf("can't kill pid %d: No such process", pid)
			continue
		}
		if err := t.s.cfg.Kill(pid, signal); err != nil {
			code = t.errorf("can't kill pid %d: %v", pid, err)
		}
	}
	return code
}

func mkdir(t *tool, args []string) int {
	opts, dirs, err := flags(args, "m")
	if err != nil || len(dirs) == 0 {
		return t.errorf("missing operand")
	}
	code := 0
	for _, d := range dirs {
		if opts['p'] != "" {
			err = os.MkdirAll(t.host(d), 0o755)
		} else {
			err = os.Mkdir(t.host(d), 0o755)
		}
		if err != nil {
			code = t.errorf("can't create directory '%s': %s", d, errText(err))
		}
	}
	return code
}

func rm(t *tool, args []string) int {
	opts, files, err := flags(args, "")
	if err != nil {
		return t.errorf("%v", err)
	}
	force, recursive := opts['f'] != "", opts['r'] != "" || opts['R'] != ""
	if len(files) == 0 && !force {
		return t.errorf("missing operand")
	}
	code := 0
	for _, f := range files {
		if abs(t.dir, f) == "/" {
			code = t.errorf("can't remove '/'")
			continue
		}
		host := t.host(f)
		info, err := os.Lstat(host)
		switch {
		case err != nil:
			if !force {
				code = t.errorf("can't remove '%s': %s", f, errText(err))
			}
			continue
		case info.IsDir() && !recursive:
			code = t.errorf("'%s' is a directory", f)
			continue
		}
		if recursive {
			err = os.RemoveAll(host)
		} else {
			err = os.Remove(host)
		}
		if err != nil {
			code = t.errorf("can't remove '%s': %s", f, errText(err))
		}
	}
	return code
}

func rmdir(t *tool, args []string) int {
	code := 0
	for _, d := range args {
		if err := os.Remove(t.host(d)); err != nil {
			code = t.errorf("'%s': %s", d, errText(err))
		}
	}
	return code
}

func touch(t *tool, args []string) int {
	_, files, err := flags(args, "dr")
	if err != nil || len(files) == 0 {
		return t.errorf("missing operand")
	}
	code := 0
	now := time.Now()
	for _, f := range files {
		host := t.host(f)
		if err := os.Chtimes(host, now, now); err == nil {
			continue
		}
		fh, err := os.OpenFile(host, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			code = t.errorf("%s: %s", f, errText(err))
			continue
		}
		fh.Close()
	}
	return code
}

// cp copies files, and directories with -r.
func cp(t *tool, args []string) int {
	opts, ops, err := flags(args, "")
	if err != nil || len(ops) < 2 {
		return t.errorf("missing file operand")
	}
	recursive := opts['r'] != "" || opts['R'] != "" || opts['a'] != ""
	return t.copyOrMove(ops, func(src, dst string) error {
		info, err := os.Stat(src)
		if err != nil {
			return err
		}
		if info.IsDir() {
			if !recursive {
				return fmt.Errorf("omitting directory")
			}
			return copyTree(src, dst)
		}
		return copyFile(src, dst, info.Mode().Perm())
	})
}

func mv(t *tool, args []string) int {
	_, ops, err := flags(args, "")
	if err != nil || len(ops) < 2 {
		return t.errorf("missing file operand")
	}
	return t.copyOrMove(ops, os.Rename)
}

// copyOrMove applies op to each source and its destination: into the last
// operand when it is a directory, onto it otherwise.
func (t *tool) copyOrMove(ops []string, op func(src, dst string) error) int {
	dst := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	info, err := os.Stat(t.host(dst))
	intoDir := err == nil && info.IsDir()
	if len(srcs) > 1 && !intoDir {
		return t.errorf("target '%s' is not a directory", dst)
	}
	code := 0
	for _, src := range srcs {
		target := t.host(dst)
		if intoDir {
			target = t.host(path.Join(abs(t.dir, dst), path.Base(src)))
		}
		if err := op(t.host(src), target); err != nil {
			code = t.errorf("'%s': %s", src, errText(err))
		}
	}
	return code
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyTree(src, dst string) error {
	return walkDir(src, func(rel string, d fs.DirEntry) error {
		target := dst + string(os.PathSeparator) + rel
		if rel == "." {
			target = dst
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(src+string(os.PathSeparator)+rel, target, info.Mode().Perm())
	})
}

// walkDir walks root, giving each entry's path relative to it.
func walkDir(root string, fn func(rel string, d fs.DirEntry) error) error {
	return fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return fn(p, d)
	})
}

// count parses a line or byte count for head and tail; a leading + (from
// the start) is reported separately.
func count(s string) (n int, fromStart bool, err error) {
	if strings.HasPrefix(s, "+") {
		fromStart, s = true, s[1:]
	}
	n, err = strconv.Atoi(strings.TrimPrefix(s, "-"))
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("invalid number '%s'", s)
	}
	return n, fromStart, nil
}

// numericShorthand turns head -5 into head -n 5.
func numericShorthand(args []string) []string {
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		if _, err := strconv.Atoi(args[0][1:]); err == nil {
			return append([]string{"-n", args[0][1:]}, args[1:]...)
		}
	}
	return args
}

func head(t *tool, args []string) int {
	opts, files, err := flags(numericShorthand(args), "nc")
	if err != nil {
		return t.errorf("%v", err)
	}
	if c, ok := opts['c']; ok {
		n, _, err := count(c)
		if err != nil {
			return t.errorf("%v", err)
		}
		return t.inputs(files, func(_ string, r io.Reader) error {
			_, err := io.CopyN(t.stdout, r, int64(n))
			if err == io.EOF {
				return nil
			}
			return err
		})
	}
	n := 10
	if v, ok := opts['n']; ok {
		if n, _, err = count(v); err != nil {
			return t.errorf("%v", err)
		}
	}
	return t.inputs(files, func(_ string, r io.Reader) error {
		br := bufio.NewReader(r)
		for i := 0; i < n; i++ {
			line, err := br.ReadString('\n')
			io.WriteString(t.stdout, line)
			if err != nil {
				return nil
			}
		}
		return nil
	})
}

// tail prints the last lines or bytes, or from a position with +N (kubectl
// cp runs `tail -c+N`).
func tail(t *tool, args []string) int {
	args = numericShorthand(args)
	// -c+N is one word.
	for i, a := range args {
		if strings.HasPrefix(a, "-c+") || strings.HasPrefix(a, "-n+") {
			args = append(append(append([]string{}, args[:i]...), a[:2], a[2:]), args[i+1:]...)
			break
		}
	}
	opts, files, err := flags(args, "nc")
	if err != nil {
		return t.errorf("%v", err)
	}
	bytes := false
	spec := "10"
	if v, ok := opts['c']; ok {
		bytes, spec = true, v
	} else if v, ok := opts['n']; ok {
		spec = v
	}
	n, fromStart, err := count(spec)
	if err != nil {
		return t.errorf("%v", err)
	}
	return t.inputs(files, func(_ string, r io.Reader) error {
		if bytes && fromStart {
			if n > 1 {
				if _, err := io.CopyN(io.Discard, r, int64(n-1)); err != nil {
					return nil
				}
			}
			_, err := io.Copy(t.stdout, r)
			return err
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytes {
			if n < len(data) {
				data = data[len(data)-n:]
			}
			_, err = t.stdout.Write(data)
			return err
		}
		lines := strings.SplitAfter(string(data), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		switch {
		case fromStart && n > 1:
			lines = lines[min(n-1, len(lines)):]
		case !fromStart && n < len(lines):
			lines = lines[len(lines)-n:]
		}
		_, err = io.WriteString(t.stdout, strings.Join(lines, ""))
		return err
	})
}

// grep matches extended regular expressions (Go's RE2, which -E and plain
// patterns share here) or fixed strings with -F.
func grep(t *tool, args []string) int {
	opts, ops, err := flags(args, "e")
	if err != nil {
		return t.errorf("%v", err)
	}
	pattern, ok := opts['e']
	if !ok {
		if len(ops) == 0 {
			fmt.Fprintln(t.stderr, "usage: grep [-icvnqlEFw] PATTERN [FILE]...")
			return ExitUsage
		}
		pattern, ops = ops[0], ops[1:]
	}
	if opts['F'] != "" {
		pattern = regexp.QuoteMeta(pattern)
	}
	if opts['w'] != "" {
		pattern = `\b(?:` + pattern + `)\b`
	}
	if opts['i'] != "" {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		fmt.Fprintf(t.stderr, "grep: bad regex '%s': %v\n", pattern, err)
		return ExitUsage
	}
	invert, quiet := opts['v'] != "", opts['q'] != ""
	matched := false
	code := t.inputs(ops, func(name string, r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		n, lineNo := 0, 0
		for sc.Scan() {
			lineNo++
			if re.MatchString(sc.Text()) == invert {
				continue
			}
			matched, n = true, n+1
			if quiet || opts['c'] != "" || opts['l'] != "" {
				continue
			}
			prefix := ""
			if len(ops) > 1 {
				prefix = name + ":"
			}
			if opts['n'] != "" {
				prefix += strconv.Itoa(lineNo) + ":"
			}
			fmt.Fprintln(t.stdout, prefix+sc.Text())
		}
		switch {
		case quiet:
		case opts['l'] != "" && n > 0:
			fmt.Fprintln(t.stdout, name)
		case opts['c'] != "":
			if len(ops) > 1 {
				fmt.Fprintf(t.stdout, "%s:%d\n", name, n)
			} else {
				fmt.Fprintln(t.stdout, n)
			}
		}
		return sc.Err()
	})
	switch {
	case code != 0:
		return ExitUsage
	case !matched:
		return 1
	}
	return 0
}

func wc(t *tool, args []string) int {
	opts, files, err := flags(args, "")
	if err != nil {
		return t.errorf("%v", err)
	}
	all := opts['l'] == "" && opts['w'] == "" && opts['c'] == ""
	return t.inputs(files, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		var cols []string
		if all || opts['l'] != "" {
			cols = append(cols, fmt.Sprintf("%7d", strings.Count(string(data), "\n")))
		}
		if all || opts['w'] != "" {
			cols = append(cols, fmt.Sprintf("%7d", len(strings.Fields(string(data)))))
		}
		if all || opts['c'] != "" {
			cols = append(cols, fmt.Sprintf("%7d", len(data)))
		}
		line := strings.Join(cols, " ")
		if name != "-" {
			line += " " + name
		}
		fmt.Fprintln(t.stdout, strings.TrimLeft(line, " "))
		return nil
	})
}

// date prints the time as date(1) does, or as +FORMAT says (the common
// strftime directives).
func date(t *tool, args []string) int {
	now := time.Now()
	opts, ops, err := flags(args, "d")
	if err != nil {
		return t.errorf("%v", err)
	}
	if opts['u'] != "" {
		now = now.UTC()
	}
	format := "%a %b %e %H:%M:%S %Z %Y"
	if len(ops) > 0 && strings.HasPrefix(ops[0], "+") {
		format = ops[0][1:]
	}
	fmt.Fprintln(t.stdout, strftime(now, format))
	return 0
}

func strftime(tm time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(tm.Format("2006"))
		case 'm':
			b.WriteString(tm.Format("01"))
		case 'd':
			b.WriteString(tm.Format("02"))
		case 'e':
			b.WriteString(fmt.Sprintf("%2d", tm.Day()))
		case 'H':
			b.WriteString(tm.Format("15"))
		case 'M':
			b.WriteString(tm.Format("04"))
		case 'S':
			b.WriteString(tm.Format("05"))
		case 's':
			b.WriteString(strconv.FormatInt(tm.Unix(), 10))
		case 'N':
			b.WriteString(fmt.Sprintf("%09d", tm.Nanosecond()))
		case 'Z':
			b.WriteString(tm.Format("MST"))
		case 'z':
			b.WriteString(tm.Format("-0700"))
		case 'a':
			b.WriteString(tm.Format("Mon"))
		case 'A':
			b.WriteString(tm.Format("Monday"))
		case 'b', 'h':
			b.WriteString(tm.Format("Jan"))
		case 'B':
			b.WriteString(tm.Format("January"))
		case 'T':
			b.WriteString(tm.Format("15:04:05"))
		case 'F':
			b.WriteString(tm.Format("2006-01-02"))
		case 'D':
			b.WriteString(tm.Format("01/02/06"))
		case 'n':
			b.WriteByte('\n')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func uname(t *tool, args []string) int {
	opts, _, _ := flags(args, "")
	fields := map[byte]string{'s': "Linux", 'n': t.s.cfg.Hostname, 'r': "6.1.0-klab", 'm': "x86_64", 'o': "GNU/Linux"}
	if opts['a'] != "" {
		fmt.Fprintln(t.stdout, strings.Join([]string{fields['s'], fields['n'], fields['r'], fields['m'], fields['o']}, " "))
		return 0
	}
	var out []string
	for _, c := range []byte("snrmo") {
		if opts[c] != "" {
			out = append(out, fields[c])
		}
	}
	if len(out) == 0 {
		out = []string{fields['s']}
	}
	fmt.Fprintln(t.stdout, strings.Join(out, " "))
	return 0
}

func id(t *tool, args []string) int {
	fmt.Fprintln(t.stdout, "uid=0(root) gid=0(root) groups=0(root)")
	return 0
}

func whoami(t *tool, args []string) int {
	fmt.Fprintln(t.stdout, "root")
	return 0
}

func seq(t *tool, args []string) int {
	nums := make([]int, 0, 3)
	for _, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			return t.errorf("invalid number '%s'", a)
		}
		nums = append(nums, n)
	}
	first, step, last := 1, 1, 0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		return t.errorf("usage: seq [FIRST [INC]] LAST")
	}
	if step == 0 {
		return t.errorf("invalid increment 0")
	}
	for i := first; (step > 0 && i <= last) || (step < 0 && i >= last); i += step {
		fmt.Fprintln(t.stdout, i)
	}
	return 0
}

func which(t *tool, args []string) int {
	code := 0
	for _, a := range args {
		if _, ok := tools[a]; ok {
			fmt.Fprintln(t.stdout, "/bin/"+a)
		} else {
			code = 1
		}
	}
	return code
}

func basename(t *tool, args []string) int {
	if len(args) == 0 {
		return t.errorf("missing operand")
	}
	b := path.Base(args[0])
	if len(args) > 1 {
		b = strings.TrimSuffix(b, args[1])
	}
	fmt.Fprintln(t.stdout, b)
	return 0
}

func dirname(t *tool, args []string) int {
	if len(args) == 0 {
		return t.errorf("missing operand")
	}
	fmt.Fprintln(t.stdout, path.Dir(args[0]))
	return 0
}

func clear(t *tool, args []string) int {
	io.WriteString(t.stdout, "\x1b[H\x1b[2J")
	return 0
}

// subShell runs `sh -c ...` (or a script) from inside the shell.
func subShell(t *tool, args []string) int {
	cfg := t.s.cfg
	cfg.Dir, cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.TTY = t.dir, t.stdin, t.stdout, t.stderr, false
	cfg.Env = nil
	t.env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			cfg.Env = append(cfg.Env, name+"="+vr.String())
		}
		return true
	})
	code, err := Run(t.ctx, cfg, append([]string{t.name}, args...))
	if err != nil {
		return t.errorf("%v", err)
	}
	return code
}
