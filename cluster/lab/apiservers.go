package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Files in the state dir for clients of the API server.
const (
	// KubeconfigFile is the admin's kubeconfig, what `klab kubectl` uses.
	KubeconfigFile = "kubeconfig"
	// ViewerKubeconfigFile is the read-only viewer's kubeconfig, for the
	// lesson that shows authorization.
	ViewerKubeconfigFile = "kubeconfig-viewer"
	pkiDirName           = "pki"
)

// ensurePKI creates (or loads) the cluster's CA, serving certificate and
// tokens. The certificate names every address a client may use: each
// node and the load balancer.
func (b *bringUp) ensurePKI(context.Context) error {
	var hosts, names []string
	for _, n := range nodes(b) {
		hosts = append(hosts, n.Host)
		names = append(names, n.Name)
	}
	if b.lb != nil {
		hosts = append(hosts, b.lb.Host)
	}
	dir := filepath.Join(b.c.dir, pkiDirName)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		b.onFailure("remove the PKI", func(context.Context) error { return os.RemoveAll(dir) })
	}
	var err error
	b.certs, err = pki.Ensure(dir, dedupe(hosts), names)
	return err
}

// server is where components reach the API servers: the load balancer when
// there is one, else the first master's. hostServer is where this machine
// does (kubectl, klab); they differ in Docker, where ports are published on
// 127.0.0.1.
func (b *bringUp) server() string {
	if b.lb != nil {
		return "https://" + hostPort(*b.lb, "apiserver")
	}
	return "https://" + hostPort(b.masters[0], "apiserver")
}

func (b *bringUp) hostServer() string {
	if b.lb != nil {
		return "https://" + b.lb.HostAddr("apiserver")
	}
	return "https://" + b.masters[0].HostAddr("apiserver")
}

// apiServerSpec describes master n's API server: all of them are active,
// each talking to every etcd member.
func (b *bringUp) apiServerSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	creds := b.etcdCredentials()
	var endpoints []string
	for _, m := range b.masters {
		endpoints = append(endpoints, creds.withScheme(m.URL("etcd-client")))
	}
	listen := hostPort(n, "apiserver")
	spec := &runtime.APIServerSpec{
		EtcdEndpoints: endpoints, Listen: listen, PKIDir: filepath.Join(b.c.dir, pkiDirName), AdvertiseAddress: listen,
	}
	if creds != (EtcdCredentials{}) {
		// kubeadm's apiserver-etcd-client, not klab's own certificate.
		dir := pki.EtcdDir(filepath.Join(b.c.dir, pkiDirName))
		spec.EtcdCAFile = creds.CACert
		spec.EtcdCertFile = filepath.Join(dir, pki.APIServerEtcdClientCert)
		spec.EtcdKeyFile = filepath.Join(dir, pki.APIServerEtcdClientKey)
	}
	return runtime.ComponentSpec{APIServer: spec}, nil
}

// lbSpec describes the load balancer in front of the API servers.
func (b *bringUp) lbSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	var backends []string
	for _, m := range b.masters {
		backends = append(backends, hostPort(m, "apiserver"))
	}
	dir, err := b.trustOnlyDir(n, runtime.ComponentLB)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	return runtime.ComponentSpec{LB: &runtime.LBSpec{Listen: hostPort(n, "apiserver"), Backends: backends, PKIDir: dir}}, nil
}

// writeKubeconfigs writes the admin's and the viewer's kubeconfigs,
// pointing at the API servers as this machine reaches them.
func (b *bringUp) writeKubeconfigs(context.Context) error {
	for _, kc := range []struct{ file, user string }{
		{KubeconfigFile, auth.AdminUser},
		{ViewerKubeconfigFile, auth.ViewerUser},
	} {
		path := filepath.Join(b.c.dir, kc.file)
		if b.prev == nil {
			b.onFailure("remove "+kc.file, func(context.Context) error { return removeFile(path) })
		}
		if err := b.certs.WriteKubeconfig(path, b.c.spec.Name, b.hostServer(), kc.user); err != nil {
			return fmt.Errorf("write %s: %w", kc.file, err)
		}
	}
	return nil
}

// removeFile removes a file that may not have been written.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
