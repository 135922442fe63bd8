package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeResult is one probe's outcome.
type probeResult int

const (
	probeSuccess probeResult = iota
	probeFailure
	// probeUnsupported: klab cannot run this kind of probe (exec, grpc).
	probeUnsupported
)

// probeUserAgent is what upstream's prober sends: kube-probe/<major.minor>.
const probeUserAgent = "kube-probe/1.37"

// maxProbeBody is how much of a response the HTTP prober reads.
const maxProbeBody = 10 * 1024

// runProbe runs a probe's handler once against the pod's IP, giving up
// after timeout. The output explains a failure in upstream's words
// ("HTTP probe failed with statuscode: 500", the dial error, ...).
func runProbe(ctx context.Context, p *v1.Probe, c *v1.Container, podIP string, timeout time.Duration) (probeResult, string) {
	switch {
	case p.HTTPGet != nil:
		return httpProbe(ctx, p.HTTPGet, c, podIP, timeout)
	case p.TCPSocket != nil:
		return tcpProbe(ctx, p.TCPSocket, c, podIP, timeout)
	case p.Exec != nil:
		return probeUnsupported, "exec probes are not supported by klab: its kubelet runs HTTP and TCP probes only"
	case p.GRPC != nil:
		return probeUnsupported, "grpc probes are not supported by klab"
	}
	return probeUnsupported, "missing probe handler"
}

// resolvePort turns a probe's port (a number or a container port's name)
// into a number.
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %v", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", port, c.Name)
}

// httpProbe succeeds on a status code from 200 to 399, as upstream's HTTP
// prober; it does not verify certificates.
func httpProbe(ctx context.Context, g *v1.HTTPGetAction, c *v1.Container, podIP string, timeout time.Duration) (probeResult, string) {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return probeFailure, err.Error()
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if parsed, err := url.Parse(path); err == nil {
		u.Path, u.RawQuery = parsed.Path, parsed.RawQuery
	} else {
		u.Path = path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return probeFailure, err.Error()
	}
	req.Header.Set("User-Agent", probeUserAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Set(h.Name, h.Value)
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream's prober does not verify either
			DisableKeepAlives: true,
			Proxy:             nil,
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return probeFailure, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return probeSuccess, string(body)
	}
	return probeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// tcpProbe succeeds when a connection opens.
func tcpProbe(ctx context.Context, t *v1.TCPSocketAction, c *v1.Container, podIP string, timeout time.Duration) (probeResult, string) {
	port, err := resolvePort(t.Port, c)
	if err != nil {
		return probeFailure, err.Error()
	}
	host := t.Host
	if host == "" {
		host = podIP
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return probeFailure, err.Error()
	}
	conn.Close()
	return probeSuccess, ""
}
