package lb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// checkLoop checks one backend now and then every Interval until the
// balancer stops.
func (b *Balancer) checkLoop(be *BackendStatus) {
	defer b.wg.Done()
	ticker := time.NewTicker(b.cfg.Interval)
	defer ticker.Stop()
	for {
		b.check(be)
		select {
		case <-b.ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// check runs one health check and records its result.
func (b *Balancer) check(be *BackendStatus) {
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.Timeout)
	err := b.cfg.Health(ctx, be.Backend)
	cancel()
	if b.ctx.Err() != nil {
		return // stopping: the failure is ours, not the backend's
	}
	b.mu.Lock()
	changed := be.Healthy != (err == nil)
	be.Healthy = err == nil
	be.LastCheck = time.Now()
	if err != nil {
		be.LastError = err.Error()
	}
	status := *be
	b.mu.Unlock()
	if changed && b.cfg.OnHealthChange != nil {
		b.cfg.OnHealthChange(status)
	}
}

// tcpHealth returns a check that only connects, as haproxy's plain
// "check" does.
func tcpHealth(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(context.Context, string) error {
	return func(ctx context.Context, backend string) error {
		conn, err := dial(ctx, "tcp", backend)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// HTTPSHealth returns a check that GETs https://<backend>/readyz, trusting
// only the CA in caPEM, and wants 200 OK. /readyz says whether the API
// server is ready to serve (its storage answers, its informers synced),
// and needs no token: it is public info. Each check opens a new connection, so a dead backend cannot hide
// behind a kept-alive one; the balancer's Timeout bounds it, and so does
// the client's own DefaultTimeout.
func HTTPSHealth(caPEM []byte) func(ctx context.Context, backend string) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return func(context.Context, string) error {
			return errors.New("health check: no CA certificate in the PEM data given")
		}
	}
	client := &http.Client{
		Timeout: DefaultTimeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
			Proxy:             nil, // never through HTTPS_PROXY: the backends are local
		},
	}
	return func(ctx context.Context, backend string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+backend+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("health check %s: %w", backend, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("health check %s: %w", backend, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health check %s: /readyz answered %s: %s", backend, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
