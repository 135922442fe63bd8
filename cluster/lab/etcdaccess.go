package lab

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/pki"
)

// EtcdCredentials are the files a client of the etcd members presents, as
// etcdctl's --cacert, --cert and --key take them: the etcd CA and klab's
// own client certificate (kubeadm's healthcheck-client). klab's tooling
// (status, the observer, the clock, snapshots, klab etcdctl) uses them, and
// a student can pass the same paths to a real etcdctl. All empty means the
// members serve plain HTTP, as clusters made before etcd had TLS do.
type EtcdCredentials struct {
	CACert     string `json:"etcdCACert,omitempty"`
	ClientCert string `json:"etcdClientCert,omitempty"`
	ClientKey  string `json:"etcdClientKey,omitempty"`
}

// etcdCredentialsIn returns the credentials of the PKI directory pkiDir.
func etcdCredentialsIn(pkiDir string) EtcdCredentials {
	dir := pki.EtcdDir(pkiDir)
	return EtcdCredentials{
		CACert:     filepath.Join(dir, pki.CACertFile),
		ClientCert: filepath.Join(dir, pki.EtcdHealthcheckCertFile),
		ClientKey:  filepath.Join(dir, pki.EtcdHealthcheckKeyFile),
	}
}

// TLS returns the client TLS configuration, or nil for plain HTTP.
func (c EtcdCredentials) TLS() (*tls.Config, error) {
	if c == (EtcdCredentials{}) {
		return nil, nil
	}
	return pki.EtcdClientTLS(c.CACert, c.ClientCert, c.ClientKey)
}

// scheme is the members' URL scheme with these credentials.
func (c EtcdCredentials) scheme() string {
	if c == (EtcdCredentials{}) {
		return "http://"
	}
	return "https://"
}

// withScheme returns url (as runtime.Node.URL makes it, http://) with the
// members' scheme.
func (c EtcdCredentials) withScheme(url string) string {
	if url == "" {
		return ""
	}
	return c.scheme() + strings.TrimPrefix(url, "http://")
}

// ClientConfig returns a clientv3 configuration for endpoints with these
// credentials.
func (c EtcdCredentials) ClientConfig(endpoints []string) (clientv3.Config, error) {
	tc, err := c.TLS()
	if err != nil {
		return clientv3.Config{}, err
	}
	return clientv3.Config{Endpoints: endpoints, TLS: tc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}, nil
}

// etcdTransports holds one HTTP transport per set of credentials, so that
// every status poll, event stream and clock call of a process reuses its
// TLS connections instead of paying a handshake per request. A cluster
// made again under the same name has new certificates at the same paths,
// so each transport remembers the files' stamps and is replaced when they
// change.
var etcdTransports sync.Map // EtcdCredentials → *etcdTransport

type etcdTransport struct {
	stamp string
	rt    http.RoundTripper
}

// stamp identifies the contents of the credentials' files: their sizes
// and modification times.
func (c EtcdCredentials) stamp() string {
	var b strings.Builder
	for _, f := range []string{c.CACert, c.ClientCert, c.ClientKey} {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d/%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// Transport returns the shared HTTP transport for the members' debug
// endpoints with these credentials. Credentials that cannot be loaded
// give a transport that fails every request with the reason (not kept:
// the files may be written a moment later).
func (c EtcdCredentials) Transport() http.RoundTripper {
	stamp := c.stamp()
	if t, ok := etcdTransports.Load(c); ok && t.(*etcdTransport).stamp == stamp {
		return t.(*etcdTransport).rt
	}
	tc, err := c.TLS()
	if err != nil {
		return failingTransport{err}
	}
	rt := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: time.Second}).DialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   2 * time.Second,
		ResponseHeaderTimeout: 2 * time.Second,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       time.Minute,
	}
	if old, loaded := etcdTransports.Swap(c, &etcdTransport{stamp: stamp, rt: rt}); loaded {
		if t, ok := old.(*etcdTransport).rt.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
	}
	return rt
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

// HTTPClient returns a client of a member's debug endpoints, over the
// shared transport of its credentials; timeout 0 means none (event
// streams).
func (m MemberInfo) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: m.etcd.Transport(), Timeout: timeout}
}

// EtcdClient returns a client of the cluster's etcd members with klab's
// own credentials, as klab's commands reach them.
func (i *Info) EtcdClient() (*clientv3.Client, error) {
	cfg, err := i.EtcdCredentials.ClientConfig(i.EtcdEndpoints)
	if err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// CloseIdleEtcdConnections closes the idle connections the shared etcd
// transports keep for reuse (each holds two goroutines), for a program or
// test that is done with every cluster.
func CloseIdleEtcdConnections() {
	etcdTransports.Range(func(_, v any) bool {
		if t, ok := v.(*etcdTransport).rt.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
		return true
	})
}
