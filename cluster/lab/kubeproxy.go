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
	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/runtime"
)

// DefaultProxyMode is the mode a new cluster's kube-proxies start in:
// kubeadm leaves the mode empty, which is iptables, upstream's default on
// Linux.
const DefaultProxyMode = proxier.ModeIPTables

// ensureProxyConfig creates the kube-proxy ConfigMap in kube-system, as
// kubeadm does, before the kube-proxies start, which read their mode from
// it; unless it exists (a restarted cluster keeps the mode it was switched
// to).
func (b *bringUp) ensureProxyConfig(ctx context.Context) error {
	cfg, err := b.certs.RESTConfig(b.c.spec.Name, b.hostServer(), auth.AdminUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cm, err := proxy.NewConfigMap(proxy.DefaultConfiguration())
	if err != nil {
		return err
	}
	err = whileTransient(ctx, func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(proxy.ConfigMapNamespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s/%s: %w", proxy.ConfigMapNamespace, proxy.ConfigMapName, err)
	}
	return nil
}

// kubeProxySpec describes node n's kube-proxy: one on every node, masters
// included, as kubeadm's DaemonSet runs it. Its HTTP endpoint is
// upstream's healthz port, on which klab also serves its status, its rules
// and the lab's way into the node's data path.
func (b *bringUp) kubeProxySpec(n runtime.Node) (runtime.ComponentSpec, error) {
	cidr, err := b.podCIDR(n)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	client, err := b.clientSpec(b.server(), n, runtime.ComponentKubeProxy, auth.KubeProxy)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	return runtime.ComponentSpec{KubeProxy: &runtime.KubeProxySpec{
		ClientSpec: client, Listen: hostPort(n, "proxy"), NodeIP: n.Host, PodCIDR: cidr,
	}}, nil
}

// ParseProxyMode checks a mode name given on the command line.
func ParseProxyMode(s string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(proxier.ModeNames, m) {
		return "", i18n.NewError("proxy.err.unknown-mode", s, strings.Join(proxier.ModeNames, ", "))
	}
	return m, nil
}
