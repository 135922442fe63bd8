package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// kubeProxyPort is the port of kube-proxy's HTTP endpoint: upstream's
// healthz port, which klab also serves its status, its rules and the lab's
// way into the node's data path on.
const kubeProxyPort = 10256

// DefaultProxyMode is the mode a new cluster's kube-proxies start in:
// kubeadm leaves the mode empty, which is iptables, upstream's default on
// Linux.
const DefaultProxyMode = proxier.ModeIPTables

// ensureProxyConfig creates the kube-proxy ConfigMap in kube-system, as
// kubeadm does, unless it exists (a restarted cluster keeps the mode it
// was switched to).
func ensureProxyConfig(ctx context.Context, client kubernetes.Interface) error {
	cm, err := proxy.NewConfigMap(proxy.DefaultConfiguration())
	if err != nil {
		return err
	}
	_, err = client.CoreV1().ConfigMaps(proxy.ConfigMapNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s/%s: %w", proxy.ConfigMapNamespace, proxy.ConfigMapName, err)
	}
	return nil
}

// startKubeProxies writes the kube-proxy ConfigMap and runs a kube-proxy on
// every node, masters included, as kubeadm's DaemonSet does.
func (c *Cluster) startKubeProxies(ctx context.Context, certs *pki.PKI, hostServer, server string, nodes []runtime.Node) error {
	cfg, err := certs.RESTConfig(c.spec.Name, hostServer, auth.AdminUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureProxyConfig(ctx, client); err != nil {
		return err
	}
	var refs []runtime.Ref
	for _, n := range nodes {
		cidr := n.PodCIDR
		if cidr == "" {
			if cidr, err = local.PodCIDR(c.spec.Name, n.Name); err != nil {
				return i18n.Wrap(err, "lab.err.pod-addresses", n.Name)
			}
		}
		ref := runtime.Ref{Node: n.Name, Component: runtime.ComponentKubeProxy}
		if err := c.rt.CreateComponent(ctx, runtime.ComponentSpec{Ref: ref, KubeProxy: &runtime.KubeProxySpec{
			ClientSpec: c.clientSpec(server), Listen: hostPort(n, "proxy"), NodeIP: n.Host, PodCIDR: cidr,
		}}); err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	return c.startAll(ctx, refs)
}

// ParseProxyMode checks a mode name given on the command line.
func ParseProxyMode(s string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(proxier.ModeNames, m) {
		return "", i18n.NewError("proxy.err.unknown-mode", s, strings.Join(proxier.ModeNames, ", "))
	}
	return m, nil
}
