package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults for the Options left at zero.
const (
	DefaultCount       = 300
	DefaultConcurrency = 8
	DefaultTimeout     = 5 * time.Second
	DefaultPath        = "/"
)

// Options says where to send requests and how many.
type Options struct {
	// Proxy is the host:port of a kube-proxy's HTTP entrance.
	Proxy string
	// Target is the ip:port to CONNECT to: a Service's ClusterIP and port,
	// or a node's IP and a NodePort.
	Target string
	// Count is the number of requests; 0 means DefaultCount.
	Count int
	// Concurrency is the number of requests in flight at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Timeout bounds one request's whole exchange, from dial to the last
	// byte of the answer; 0 means DefaultTimeout.
	Timeout time.Duration
	// Path is the path asked of the app, "" meaning "/"; ?format=json is
	// added to its query.
	Path string
	// ClientIP, when set, is sent as Klab-Client-IP so that the proxy treats
	// the connection as coming from that IPv4 address (for session
	// affinity and source-based rules).
	ClientIP string
	// Dial opens the connection to Proxy; nil means a net.Dialer. The local
	// runtime passes its fault-aware dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnResult, when set, is called for each finished request, one call at
	// a time, in the order the requests finish. It runs on Run's goroutine:
	// a slow OnResult slows the run down.
	OnResult func(Result)
}

// ErrInvalidOptions is wrapped by every error Run returns for bad Options.
var ErrInvalidOptions = errors.New("invalid traffic options")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
}

// withDefaults checks the options and fills in the defaults. It returns the
// request URI to ask the app for.
func (o Options) withDefaults() (Options, string, error) {
	if o.Proxy == "" {
		return o, "", invalid("no kube-proxy address: give the host:port of a kube-proxy's HTTP entrance")
	}
	if err := checkHostPort(o.Proxy); err != nil {
		return o, "", invalid("kube-proxy address %q: %v", o.Proxy, err)
	}
	if o.Target == "" {
		return o, "", invalid("no target: give a Service's ClusterIP:port or a node's IP:NodePort")
	}
	if err := checkHostPort(o.Target); err != nil {
		return o, "", invalid("target %q: %v", o.Target, err)
	}
	switch {
	case o.Count < 0:
		return o, "", invalid("count %d is negative", o.Count)
	case o.Count == 0:
		o.Count = DefaultCount
	}
	switch {
	case o.Concurrency < 0:
		return o, "", invalid("concurrency %d is negative", o.Concurrency)
	case o.Concurrency == 0:
		o.Concurrency = DefaultConcurrency
	}
	o.Concurrency = min(o.Concurrency, o.Count)
	switch {
	case o.Timeout < 0:
		return o, "", invalid("timeout %s is negative", o.Timeout)
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	}
	if o.ClientIP != "" {
		if ip := net.ParseIP(o.ClientIP); ip == nil || ip.To4() == nil {
			return o, "", invalid("client IP %q is not an IPv4 address", o.ClientIP)
		}
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	u, err := url.ParseRequestURI(o.Path)
	if err != nil || !strings.HasPrefix(o.Path, "/") || u.Host != "" {
		return o, "", invalid("path %q: want an absolute path such as /", o.Path)
	}
	q := u.Query()
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	return o, u.RequestURI(), nil
}

// checkHostPort accepts host:port with a non-empty host and a port from 1
// to 65535.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want ip:port: %w", err)
	}
	if host == "" {
		return errors.New("want ip:port: the ip is missing")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	return nil
}
