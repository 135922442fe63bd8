package dns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
)

// shutdownGrace bounds how long Stop lets queries and HTTP requests in
// flight finish.
const shutdownGrace = 2 * time.Second

// tcpIdleTimeout closes a TCP connection idle this long, as CoreDNS does
// (RFC 7766 asks servers to time idle connections out); a connection may
// carry any number of queries until then.
const tcpIdleTimeout = 10 * time.Second

var clientDefaults = apiclient.Defaults{UserAgent: ComponentName, QPS: 20, Burst: 30}

// Server is the cluster DNS server: informers on Services and
// EndpointSlices, and a miekg/dns server on UDP and TCP answering from
// their caches.
type Server struct {
	cfg   Config
	log   *slog.Logger
	cache *cache
	zone  *zone
	stats *stats

	ctx    context.Context
	cancel context.CancelFunc
	life   *componentbase.Lifecycle

	mu      sync.Mutex
	udp     *dns.Server
	tcp     *dns.Server
	conns   []io.Closer // the UDP socket and the TCP listener
	http    *componentbase.Server
	addr    string
	started time.Time
	ready   bool
}

// New builds a DNS server. Nothing runs until Start.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	domain := dns.Fqdn(strings.ToLower(cfg.Domain))
	if _, ok := dns.IsDomainName(domain); !ok || domain == "." {
		return nil, fmt.Errorf("new cluster DNS: %q is not a domain name", cfg.Domain)
	}
	client := cfg.Client
	if client == nil {
		if cfg.REST == nil {
			return nil, errors.New("new cluster DNS: no REST config")
		}
		var err error
		if client, err = kubernetes.NewForConfig(apiclient.Config(cfg.REST, clientDefaults)); err != nil {
			return nil, fmt.Errorf("new cluster DNS: %w", err)
		}
	}
	c, err := newCache(client)
	if err != nil {
		return nil, fmt.Errorf("new cluster DNS: %w", err)
	}
	s := &Server{cfg: cfg, log: componentbase.Logger(cfg.Logger), cache: c, stats: newStats()}
	s.zone = &zone{domain: domain, ttl: cfg.TTL, cache: c}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.life = componentbase.NewLifecycle(s.shutdown)
	return s, nil
}

// Start binds the DNS and HTTP listeners, starts the informers and waits
// for their caches, then serves. It returns once queries are answered
// from a synced cache; ctx bounds the start only.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("start cluster DNS: %w", err)
	}
	if err := s.start(ctx); err != nil {
		s.life.Kill()
		return fmt.Errorf("start cluster DNS: %w", err)
	}
	s.log.Info("started", "listen", s.Addr(), "domain", s.zone.domain)
	return nil
}

func (s *Server) start(ctx context.Context) error {
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()

	if s.cfg.HTTPListen != "" {
		hs, err := componentbase.Listen(startCtx, componentbase.ServerConfig{
			Addr: s.cfg.HTTPListen, Handler: s.httpHandler(), BaseContext: s.ctx, Logger: s.log,
		})
		if err != nil {
			return fmt.Errorf("listen %s: %w", s.cfg.HTTPListen, err)
		}
		s.mu.Lock()
		s.http = hs
		s.mu.Unlock()
		if !s.life.Go(func() { hs.Serve(func(err error) { s.life.Fail(fmt.Errorf("cluster DNS: HTTP server: %w", err)) }) }) {
			return errors.New("stopped while starting")
		}
	}

	s.cache.factory.Start(s.ctx.Done())
	if !toolscache.WaitForCacheSync(startCtx.Done(), s.cache.synced()...) {
		return fmt.Errorf("informer caches did not sync: %w", context.Cause(startCtx))
	}

	pc, ln, err := listenBoth(startCtx, s.cfg.Listen)
	if err != nil {
		return err
	}
	handler := dns.HandlerFunc(s.ServeDNS)
	udpUp, tcpUp := make(chan struct{}), make(chan struct{})
	udp := &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(udpUp) }}
	tcp := &dns.Server{Listener: ln, Handler: handler, NotifyStartedFunc: func() { close(tcpUp) },
		IdleTimeout: func() time.Duration { return tcpIdleTimeout }, MaxTCPQueries: -1}
	s.mu.Lock()
	s.udp, s.tcp, s.conns, s.addr = udp, tcp, []io.Closer{pc, ln}, ln.Addr().String()
	s.mu.Unlock()
	for _, srv := range []*dns.Server{udp, tcp} {
		if !s.life.Go(func() {
			if err := srv.ActivateAndServe(); err != nil && s.ctx.Err() == nil {
				s.life.Fail(fmt.Errorf("cluster DNS: serve: %w", err))
			}
		}) {
			return errors.New("stopped while starting")
		}
	}
	for _, up := range []chan struct{}{udpUp, tcpUp} {
		select {
		case <-up:
		case <-startCtx.Done():
			return fmt.Errorf("serve: %w", context.Cause(startCtx))
		}
	}
	s.mu.Lock()
	s.started, s.ready = time.Now(), true
	s.mu.Unlock()
	return nil
}

// listenBoth binds UDP and TCP on the same address. With port 0 it takes
// a TCP port and then UDP on that port, trying again if the UDP port is
// taken.
func listenBoth(ctx context.Context, addr string) (net.PacketConn, net.Listener, error) {
	var lc net.ListenConfig
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	tries := 1
	if port == "0" {
		tries = 10
	}
	var lastErr error
	for range tries {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen tcp %s: %w", addr, err)
		}
		pc, err := lc.ListenPacket(ctx, "udp", ln.Addr().String())
		if err == nil {
			return pc, ln, nil
		}
		ln.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("listen udp %s: %w", addr, lastErr)
}

// Addr returns the host:port the server answers on (UDP and TCP), once
// started.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// HTTPAddr returns the host:port of the HTTP endpoint, or "".
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}

// Stop stops the server gracefully and returns Err.
func (s *Server) Stop() error { return s.life.Stop() }

// Kill stops the server at once.
func (s *Server) Kill() { s.life.Kill() }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.life.Done() }

// Err returns why the server stopped by itself; nil otherwise.
func (s *Server) Err() error { return s.life.Err() }

func (s *Server) shutdown(graceful bool) {
	s.mu.Lock()
	udp, tcp, hs, conns := s.udp, s.tcp, s.http, s.conns
	s.ready = false
	s.mu.Unlock()
	s.cancel()
	grace := shutdownGrace
	if !graceful {
		grace = 0
	}
	for _, srv := range []*dns.Server{udp, tcp} {
		if srv == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		_ = srv.ShutdownContext(ctx)
		cancel()
	}
	// A server still starting is not stopped by ShutdownContext; closing
	// its socket ends it.
	for _, c := range conns {
		c.Close()
	}
	if hs != nil {
		hs.Shutdown(graceful, shutdownGrace)
	}
	s.life.Wait()
	s.cache.factory.Shutdown()
	s.log.Info("stopped", "graceful", graceful)
}
