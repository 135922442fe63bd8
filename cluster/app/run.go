package app

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// exitRequest asks Run to end the app with a code, saying why on stderr.
type exitRequest struct {
	code int
	why  string
}

// Run runs the app until it exits and returns its exit code (see the
// package documentation for the codes). Cancelling ctx is SIGTERM: the app
// stops accepting work and shuts down gracefully; closing opts.Kill is
// SIGKILL. When Run returns, its listener is closed and it no longer
// allocates or writes to the accounter.
func Run(ctx context.Context, opts Options) int {
	stdout := &lineWriter{w: orDiscard(opts.Stdout)}
	stderr := &lineWriter{w: orDiscard(opts.Stderr)}
	env := envMap(opts.Env)
	cfg, err := parseConfig(opts.Args, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return ExitUsage
	}

	addr := net.JoinHostPort(opts.ListenHost, strconv.Itoa(cfg.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		stderr.printf("listen on %s: %v", addr, err)
		return 1
	}
	defer ln.Close()

	id := identityFrom(env, opts.ListenHost)
	s := newServer(cfg, id, env, stdout, time.Now)
	s.mem.accounter = opts.Memory
	s.cpu = opts.CPU
	defer s.mem.release()
	exits := make(chan exitRequest, 1)
	s.exit = func(code int, why string) {
		select {
		case exits <- exitRequest{code: code, why: why}:
		default: // an exit is already under way
		}
	}

	stdout.printf("klab app %s listening on %s as pod %s/%s on node %s",
		orUnknown(id.Image), ln.Addr(), orUnknown(id.Namespace), orUnknown(id.Pod), orUnknown(id.Node))
	if len(cfg.switches) > 0 {
		stdout.printf("switches: %s", strings.Join(cfg.switches, " "))
	}
	if cfg.memory > 0 {
		stdout.printf("allocating %s of memory (memory=%s)", formatBytes(cfg.memory), formatBytes(cfg.memory))
		if err := s.mem.grow(cfg.memory, opts.Kill); err != nil {
			return ExitKilled
		}
	}

	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(stderr, "", 0),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	// closeServer drops every connection and waits for Serve to return, so
	// the port is free when Run returns: a restarted container binds it at
	// once.
	closeServer := func() {
		srv.Close()
		ln.Close()
		<-serveErr
	}

	done := make(chan struct{})
	var background sync.WaitGroup
	defer background.Wait()
	defer close(done)
	if d := cfg.crashAfter; d > 0 {
		t := time.AfterFunc(d, func() {
			s.exit(cfg.crashExitCode, "crashing with exit code "+strconv.Itoa(cfg.crashExitCode)+" (crash-after="+d.String()+")")
		})
		defer t.Stop()
	}
	if d := cfg.exitAfter; d > 0 {
		t := time.AfterFunc(d, func() {
			s.exit(cfg.exitCode, "exiting with code "+strconv.Itoa(cfg.exitCode)+" (exit-after="+d.String()+")")
		})
		defer t.Stop()
	}
	if cfg.memoryGrow > 0 {
		background.Add(1)
		go func() {
			defer background.Done()
			s.growMemory(done)
		}()
	}

	select {
	case <-ctx.Done():
		return s.shutdown(srv, opts.Kill, closeServer)
	case <-opts.Kill:
		closeServer()
		return ExitKilled
	case req := <-exits:
		if req.why != "" {
			stderr.printf("%s", req.why)
		}
		closeServer()
		return req.code
	case err := <-serveErr:
		stderr.printf("serve on %s: %v", ln.Addr(), err)
		return 1
	}
}

// growMemory allocates --memory-grow every interval until done, and ends the
// app as OOM-killed when the accounter refuses.
func (s *server) growMemory(done <-chan struct{}) {
	t := time.NewTicker(s.cfg.memoryGrowInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if err := s.mem.grow(s.cfg.memoryGrow, done); err != nil {
			// A process the OOM killer picks says nothing on its way out.
			s.exit(ExitKilled, "")
			return
		}
		s.log.printf("memory: %s allocated (memory-grow=%s every %s)",
			formatBytes(s.mem.allocated()), formatBytes(s.cfg.memoryGrow), s.cfg.memoryGrowInterval)
	}
}

// shutdown is the app's answer to SIGTERM: fail readiness, keep serving for
// --shutdown-delay, then finish the requests in flight and exit 0. A kill
// cuts it short.
func (s *server) shutdown(srv *http.Server, kill <-chan struct{}, closeServer func()) int {
	s.setTerminating()
	s.log.printf("received SIGTERM, shutting down")
	if d := s.cfg.shutdownDelay; d > 0 {
		s.log.printf("failing readiness and serving for %s before shutting down (shutdown-delay=%s)", d, d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-kill:
			t.Stop()
			closeServer()
			return ExitKilled
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	go func() {
		srv.Shutdown(ctx)
		close(finished)
	}()
	select {
	case <-finished:
		closeServer()
		s.log.printf("shut down")
		return 0
	case <-kill:
		cancel()
		closeServer()
		<-finished
		return ExitKilled
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
