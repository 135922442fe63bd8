package etcd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/pki"
)

// TestTLSMembers runs three members behind TLS, as kubeadm runs etcd: raft
// between them over TLS sockets, clients with a certificate from the etcd
// CA served, every client without one refused on the client port, the
// peer port and the debug endpoints, and a certificate from another CA
// refused too.
func TestTLSMembers(t *testing.T) {
	c := etcdtest.NewTLS(t, 3, nil)
	for _, p := range c.Peers {
		if !strings.HasPrefix(p.ClientURL, "https://") || !strings.HasPrefix(p.PeerURL, "https://") {
			t.Fatalf("member %s: URLs %s, %s are not https", p.Name, p.ClientURL, p.PeerURL)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A write through one member is replicated over the TLS peer
	// streams and read back through each of the others.
	cli := c.Client(c.Peers[0].ClientURL)
	if _, err := cli.Put(ctx, "/tls/key", "value"); err != nil {
		t.Fatalf("put with the healthcheck client certificate: %v", err)
	}
	for _, p := range c.Peers[1:] {
		resp, err := c.Client(p.ClientURL).Get(ctx, "/tls/key")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "value" {
			t.Fatalf("get from %s: %v %v", p.Name, resp, err)
		}
	}

	caPEM, err := os.ReadFile(c.PKI.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	noCert := &tls.Config{RootCAs: roots}
	// A certificate from another CA (the cluster CA, say) opens nothing.
	other, err := pki.EnsureEtcd(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.LoadX509KeyPair(other.HealthcheckCertFile(), other.HealthcheckKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	foreignCert := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{foreign}}

	for name, tc := range map[string]*tls.Config{"no certificate": noCert, "another CA's certificate": foreignCert} {
		t.Run("client port/"+name, func(t *testing.T) {
			bad, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Peers[0].ClientURL}, TLS: tc, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return // refused at dial: what we want
			}
			defer bad.Close()
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
			defer rcancel()
			if _, err := bad.Get(rctx, "/tls/key"); err == nil {
				t.Fatal("a client without a certificate from the etcd CA read a key")
			}
		})
		t.Run("peer port/"+name, func(t *testing.T) {
			hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
			for _, path := range []string{"/debug/klab/status", "/debug/klab/clock", "/klab/cluster", "/raft/stream"} {
				resp, err := hc.Get(c.Peers[1].PeerURL + path)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s without an etcd client certificate: %s", path, resp.Status)
				}
			}
		})
	}
	t.Run("plain http", func(t *testing.T) {
		for _, u := range []string{c.Peers[2].PeerURL, c.Peers[2].ClientURL} {
			resp, err := http.Get(strings.Replace(u, "https://", "http://", 1) + "/debug/klab/status")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Fatalf("plain HTTP to %s answered %s", u, resp.Status)
				}
			}
		}
	})
	t.Run("debug with klab's certificate", func(t *testing.T) {
		tc, err := pki.EtcdClientTLS(c.PKI.CAFile(), c.PKI.HealthcheckCertFile(), c.PKI.HealthcheckKeyFile())
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		for _, path := range []string{"/debug/klab/status", "/debug/klab/clock"} {
			resp, err := hc.Get(c.Peers[1].PeerURL + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", path, resp.Status)
			}
		}
	})
}
