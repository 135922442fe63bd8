package lab

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

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

// apiServerPort is kube-apiserver's secure port.
const apiServerPort = 6443

// ensurePKI creates (or loads) the cluster's CA, serving certificate and
// tokens. The certificate names every address a client may use: each
// master and the load balancer.
func (c *Cluster) ensurePKI(nodes []runtime.Node, lbNode *runtime.Node) (*pki.PKI, error) {
	var hosts, names []string
	for _, n := range nodes {
		hosts = append(hosts, n.Host)
		names = append(names, n.Name)
	}
	if lbNode != nil {
		hosts = append(hosts, lbNode.Host)
	}
	return pki.Ensure(filepath.Join(c.dir, pkiDirName), dedupe(hosts), names)
}

// startAPIServers runs one API server per master, all active, each talking
// to every etcd member.
func (c *Cluster) startAPIServers(ctx context.Context, nodes []runtime.Node) error {
	var endpoints []string
	for _, n := range nodes {
		endpoints = append(endpoints, n.URL("etcd-client"))
	}
	refs := make([]runtime.Ref, len(nodes))
	for i, n := range nodes {
		refs[i] = runtime.Ref{Node: n.Name, Component: runtime.ComponentAPIServer}
		listen := net.JoinHostPort(n.Host, strconv.Itoa(n.Ports["apiserver"]))
		spec := runtime.ComponentSpec{Ref: refs[i], APIServer: &runtime.APIServerSpec{
			EtcdEndpoints: endpoints, Listen: listen, PKIDir: filepath.Join(c.dir, pkiDirName), AdvertiseAddress: listen,
		}}
		if err := c.rt.CreateComponent(ctx, spec); err != nil {
			return err
		}
	}
	return c.startAll(ctx, refs)
}

// startLB runs the load balancer in front of the API servers.
func (c *Cluster) startLB(ctx context.Context, lbNode runtime.Node, nodes []runtime.Node) error {
	var backends []string
	for _, n := range nodes {
		backends = append(backends, net.JoinHostPort(n.Host, strconv.Itoa(n.Ports["apiserver"])))
	}
	ref := runtime.Ref{Node: lbNode.Name, Component: runtime.ComponentLB}
	spec := runtime.ComponentSpec{Ref: ref, LB: &runtime.LBSpec{
		Listen: net.JoinHostPort(lbNode.Host, strconv.Itoa(lbNode.Ports["apiserver"])), Backends: backends, PKIDir: filepath.Join(c.dir, pkiDirName),
	}}
	if err := c.rt.CreateComponent(ctx, spec); err != nil {
		return err
	}
	return c.rt.Start(ctx, ref)
}

// writeKubeconfigs writes the admin's and the viewer's kubeconfigs,
// pointing at server.
func (c *Cluster) writeKubeconfigs(p *pki.PKI, server string) error {
	if err := p.WriteKubeconfig(filepath.Join(c.dir, KubeconfigFile), c.spec.Name, server, auth.AdminUser); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := p.WriteKubeconfig(filepath.Join(c.dir, ViewerKubeconfigFile), c.spec.Name, server, auth.ViewerUser); err != nil {
		return fmt.Errorf("write viewer kubeconfig: %w", err)
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
