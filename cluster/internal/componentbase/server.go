package componentbase

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// IdleTimeout is how long every component's HTTP server keeps a
// kept-alive connection that sends no request.
const IdleTimeout = 90 * time.Second

// ServerConfig configures a component's HTTP server.
type ServerConfig struct {
	// Addr is the address to listen on; "127.0.0.1:0" picks a port.
	Addr    string
	Handler http.Handler
	// TLS, if set, serves HTTPS.
	TLS *tls.Config
	// BaseContext, if set, is every request's context: a component's own,
	// so that its long requests (event streams) end when it stops.
	BaseContext context.Context
	// Logger takes net/http's own complaints (TLS handshakes of probes
	// that hang up, and the like), at debug level.
	Logger *slog.Logger
}

// Server is a component's HTTP server: its debug endpoints, or a kubelet's
// or an API server's API.
type Server struct {
	ln   net.Listener
	http *http.Server
}

// Listen binds cfg.Addr; ctx bounds the bind only. Serve then serves.
func Listen(ctx context.Context, cfg ServerConfig) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	srv := &http.Server{
		Handler:           Recover(cfg.Logger, cfg.Handler),
		ReadHeaderTimeout: 10 * time.Second,
		// A kept-alive connection that sends nothing more is closed: ten
		// thousand idle clients must not hold ten thousand goroutines
		// and sockets for ever.
		IdleTimeout: IdleTimeout,
		ErrorLog:    slog.NewLogLogger(Logger(cfg.Logger).Handler(), slog.LevelDebug),
	}
	if base := cfg.BaseContext; base != nil {
		srv.BaseContext = func(net.Listener) context.Context { return base }
	}
	return &Server{ln: ln, http: srv}, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Shutdown. If serving fails otherwise, it hands the
// error to fail (a component's Lifecycle.Fail, say). Run it on a
// goroutine of the component's (Lifecycle.Go).
func (s *Server) Serve(fail func(error)) {
	if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fail(err)
	}
}

// Shutdown stops serving, and makes Serve return. A graceful shutdown
// lets the requests in flight finish for up to grace and then cuts what
// is left; otherwise every connection is cut at once.
func (s *Server) Shutdown(graceful bool, grace time.Duration) {
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	_ = s.http.Close()
	s.ln.Close()
}
