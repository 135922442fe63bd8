package shell

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// A client's terminal in raw mode sends keys as they are typed and shows
// exactly what it is sent: in a real container the kernel's line
// discipline (a pty) echoes, edits the line, turns Ctrl-C into SIGINT and
// Ctrl-D into the end of input, and turns "\n" into "\r\n" on output. The
// in-process shell has no pty, so these are done here.

// keyEvent is what the line discipline delivers: a line, the end of
// input, or an interrupt.
type keyEvent struct {
	line      string
	eof       bool
	interrupt bool
}

// lineDiscipline reads raw keys from in, echoes to out, and sends each
// finished line (with its "\n"), Ctrl-D on an empty line and Ctrl-C.
func lineDiscipline(in io.Reader, out io.Writer, events chan<- keyEvent) {
	defer close(events)
	var line []byte
	buf := make([]byte, 1024)
	escape := 0 // bytes of an escape sequence still to skip
	for {
		n, err := in.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case escape > 0:
				escape--
				if escape == 1 && b != '[' && b != 'O' {
					escape = 0
				}
			case b == 0x1b: // arrows and other keys: not edited here
				escape = 2
			case b == '\r' || b == '\n':
				out.Write([]byte("\r\n"))
				events <- keyEvent{line: string(line) + "\n"}
				line = line[:0]
			case b == 0x7f || b == 0x08:
				if len(line) > 0 {
					_, size := utf8.DecodeLastRune(line)
					line = line[:len(line)-size]
					out.Write([]byte("\b \b"))
				}
			case b == 0x15: // Ctrl-U
				out.Write(bytes.Repeat([]byte("\b \b"), utf8.RuneCount(line)))
				line = line[:0]
			case b == 0x03: // Ctrl-C
				out.Write([]byte("^C\r\n"))
				line = line[:0]
				events <- keyEvent{interrupt: true}
			case b == 0x04: // Ctrl-D
				if len(line) == 0 {
					events <- keyEvent{eof: true}
				}
			case b < 0x20 && b != '\t':
			default:
				line = append(line, b)
				out.Write([]byte{b})
			}
		}
		if err != nil {
			events <- keyEvent{eof: true}
			return
		}
	}
}

// cookedLines reads lines from a real terminal, which has done the
// editing, and passes on its interrupts.
func cookedLines(in io.Reader, interrupts <-chan os.Signal, events chan<- keyEvent) {
	lines := make(chan keyEvent)
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				lines <- keyEvent{line: line}
			}
			if err != nil {
				lines <- keyEvent{eof: true}
				close(lines)
				return
			}
		}
	}()
	defer close(events)
	for {
		select {
		case ev, ok := <-lines:
			if !ok {
				return
			}
			events <- ev
		case <-interrupts:
			events <- keyEvent{interrupt: true}
		}
	}
}

// crlfWriter turns "\n" into "\r\n", as a terminal's output processing
// (onlcr) does.
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') < 0 {
		return c.w.Write(p)
	}
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// interactive is the shell on a terminal: prompt, read a command (more
// lines while it is incomplete), run it with the terminal as its stdin,
// until exit or Ctrl-D.
func (s *session) interactive(ctx context.Context) (int, error) {
	if s.cfg.Stdin == nil {
		return 0, nil
	}
	var out io.Writer = crlfWriter{s.cfg.Stdout}
	events := make(chan keyEvent, 16)
	if s.cfg.Terminal {
		out = s.cfg.Stdout
		go cookedLines(s.cfg.Stdin, s.cfg.interrupts, events)
	} else {
		go lineDiscipline(s.cfg.Stdin, s.cfg.Stdout, events)
	}
	r, err := s.runner(nil, out, out, nil)
	if err != nil {
		return 1, err
	}
	code := 0
	var src strings.Builder
	// typedAhead holds lines typed while a command ran that it did not
	// read: they are the shell's next commands, as with a real terminal.
	var typedAhead []string
	for {
		if src.Len() == 0 {
			fmt.Fprintf(out, "%s # ", r.Dir)
		} else {
			io.WriteString(out, "> ")
		}
		var ev keyEvent
		if len(typedAhead) > 0 {
			ev, typedAhead = keyEvent{line: typedAhead[0]}, typedAhead[1:]
		} else {
			select {
			case ev = <-events:
			case <-ctx.Done():
				return code, nil
			}
		}
		switch {
		case ev.eof:
			io.WriteString(out, "\n")
			return code, nil
		case ev.interrupt:
			src.Reset()
			code = 130
			continue
		}
		src.WriteString(ev.line)
		f, err := syntax.NewParser().Parse(strings.NewReader(src.String()), "")
		if syntax.IsIncomplete(err) {
			continue
		}
		src.Reset()
		if err != nil {
			fmt.Fprintf(out, "sh: syntax error: %v\n", err)
			code = ExitUsage
			continue
		}
		var unread string
		code, unread = s.runWithTerminal(ctx, r, f, events, out)
		typedAhead = append(typedAhead, strings.SplitAfter(unread, "\n")...)
		if typedAhead[len(typedAhead)-1] == "" {
			typedAhead = typedAhead[:len(typedAhead)-1]
		}
		if r.Exited() {
			return code, nil
		}
		if ctx.Err() != nil {
			return code, nil
		}
	}
}

// runWithTerminal runs one command line: the lines typed meanwhile are
// its stdin, Ctrl-D ends that input and Ctrl-C interrupts it. It returns
// the exit code and what was typed but not read.
func (s *session) runWithTerminal(ctx context.Context, r *runner, f *syntax.File, events <-chan keyEvent, out io.Writer) (int, string) {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(out, "sh: %v\n", err)
		return 1, ""
	}
	defer pr.Close()
	if err := interp.StdIO(pr, out, out)(r.Runner); err != nil {
		pw.Close()
		fmt.Fprintf(out, "sh: %v\n", err)
		return 1, ""
	}
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	done := make(chan int, 1)
	go func() { done <- exitCode(r.Run(runCtx, f)) }()
	for {
		select {
		case code := <-done:
			pw.Close()
			unread, _ := io.ReadAll(pr)
			return code, string(unread)
		case ev, ok := <-events:
			switch {
			case !ok:
				events = nil
			case ev.interrupt:
				interrupt()
			case ev.eof:
				pw.Close()
			default:
				pw.Write([]byte(ev.line))
			}
		}
	}
}
