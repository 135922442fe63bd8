// Package apiservertest runs klab's API server in a test: real etcd
// members (package etcdtest) over real sockets, a per-test PKI, HTTPS and
// bearer tokens, so tests talk to it with the real client-go exactly as
// the cluster's components and kubectl do.
package apiservertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/pki"
)

// Cluster is an etcd cluster with API servers in front of it.
type Cluster struct {
	t       testing.TB
	Etcd    *etcdtest.Cluster
	PKI     *pki.PKI
	Servers []*apiserver.Server
	configs []apiserver.Config
	// Name is the cluster name used in kubeconfigs.
	Name string
}

// Options shape a test cluster.
type Options struct {
	// EtcdMembers (default 1) and APIServers (default 1).
	EtcdMembers, APIServers int
	// Tune changes each server's configuration before it starts.
	Tune func(*apiserver.Config)
	// TuneEtcd changes each etcd member's configuration (a small space
	// quota, say).
	TuneEtcd func(*etcd.Config)
}

// New starts the cluster; everything stops when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.EtcdMembers == 0 {
		opts.EtcdMembers = 1
	}
	if opts.APIServers == 0 {
		opts.APIServers = 1
	}
	c := &Cluster{t: t, Etcd: etcdtest.New(t, opts.EtcdMembers, opts.TuneEtcd), Name: "test"}
	p, err := pki.Ensure(filepath.Join(t.TempDir(), "pki"), []string{"127.0.0.1"}, []string{"node-1"})
	if err != nil {
		t.Fatal(err)
	}
	c.PKI = p
	tlsCfg, err := p.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.LoadTokenFile(filepath.Join(p.Dir, pki.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	kubeletCert, err := p.KubeletClientCertificate()
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := p.ServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < opts.APIServers; i++ {
		listen, err := etcdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg := apiserver.Config{
			Name:          "apiserver-" + string(rune('1'+i)),
			Etcd:          c.Etcd.Client(),
			Listen:        listen,
			TLS:           tlsCfg,
			Authenticator: authn,
			ClientCA:      p.CertPool(),
			// Every server signs and verifies ServiceAccount tokens with
			// the cluster's key, as kubeadm's do.
			ServiceAccountKey: saKey,
		}
		// The API server reaches kubelets (pods/log, exec, ...) as the
		// cluster's runtime configures it: trusting the CA, with its
		// kubelet client certificate.
		cfg.KubeletCA = p.CertPool()
		cfg.KubeletClientCert = &kubeletCert
		if opts.Tune != nil {
			opts.Tune(&cfg)
		}
		c.configs = append(c.configs, cfg)
		c.Servers = append(c.Servers, nil)
		c.Start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.Servers {
			if s != nil {
				s.Stop()
			}
		}
	})
	return c
}

// Start (re)starts server i on its address.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	s, err := apiserver.New(c.configs[i])
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		c.t.Fatal(err)
	}
	c.Servers[i] = s
}

// Stop stops server i.
func (c *Cluster) Stop(i int) {
	c.Servers[i].Stop()
	c.Servers[i] = nil
}

// URL returns server i's address.
func (c *Cluster) URL(i int) string { return "https://" + c.configs[i].Listen }

// Config returns a client configuration for server i as user: a bearer
// token for a user of the token file (auth.AdminUser, auth.ViewerUser), a
// client certificate for a component's user (auth.KubeScheduler,
// auth.NodeUser("node-1"), ...), as a klab cluster's components hold.
func (c *Cluster) Config(i int, user string) *rest.Config {
	c.t.Helper()
	var cfg *rest.Config
	var err error
	if _, ok := c.PKI.Token(user); ok {
		cfg, err = c.PKI.RESTConfig(c.Name, c.URL(i), user)
	} else {
		cfg, err = c.componentConfig(c.URL(i), user)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

// Client returns an admin clientset for server 0.
func (c *Cluster) Client() kubernetes.Interface {
	c.t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(0, auth.AdminUser))
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// WriteKubeconfig writes a kubeconfig for user against server i and
// returns its path.
func (c *Cluster) WriteKubeconfig(i int, user string) string {
	c.t.Helper()
	path := filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := c.PKI.WriteKubeconfig(path, c.Name, c.URL(i), user); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// componentConfig is the client configuration of a component's user, from
// credentials issued as a klab cluster issues them.
func (c *Cluster) componentConfig(server, user string) (*rest.Config, error) {
	id, ok := pki.ClientIdentity(user)
	if !ok {
		return nil, fmt.Errorf("apiservertest: %q is neither a user of the token file nor a component", user)
	}
	dir := filepath.Join(c.PKI.Dir, "..", "components", strings.ReplaceAll(user, ":", "_"))
	if err := c.PKI.EnsureComponentCredentials(dir, id); err != nil {
		return nil, err
	}
	creds, err := pki.LoadComponentCredentials(dir)
	if err != nil {
		return nil, err
	}
	return creds.RESTConfig(server)
}
