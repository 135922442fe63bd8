package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/dns"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Ports of the cluster DNS on a master: CoreDNS's.
const (
	dnsPort        = dns.DefaultPort
	dnsMetricsPort = dns.DefaultMetricsPort
)

// dnsServiceAccount and dnsClusterRole are the names kubeadm's CoreDNS
// add-on gives its identity and its permissions.
const (
	dnsServiceAccount = "coredns"
	dnsClusterRole    = "system:coredns"
)

// noDNSPorts reports a cluster whose masters were made before klab had a
// cluster DNS: a stopped Docker cluster's nodes keep the ports they were
// made with, none for the DNS, and it runs without one. (A kept local
// cluster's nodes get the ports they lack when they are made again.)
func noDNSPorts(b *bringUp) bool {
	return b.existing && len(b.masters) > 0 && b.masters[0].Ports["dns"] == 0
}

func (b *bringUp) dnsTitle() i18n.Message {
	ip, _ := dns.ClusterIP(apiserver.DefaultServiceCIDR)
	return i18n.M("up.step.dns", len(b.masters), ip)
}

// dnsSpec describes master n's cluster DNS server, on CoreDNS's ports of
// the master's address.
func (b *bringUp) dnsSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	client, err := b.clientSpec(b.server(), n, runtime.ComponentDNS, auth.CoreDNS)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	return runtime.ComponentSpec{DNS: &runtime.DNSSpec{
		ClientSpec: client, Listen: hostPort(n, "dns"), MetricsListen: hostPort(n, "dns-metrics"),
	}}, nil
}

// dnsStaticPod is the mirror pod that shows master n's DNS server in
// kube-system, as kubeadm's coredns pods show: labelled k8s-app=kube-dns,
// with the container ports the kube-dns Service's named target ports pick.
func dnsStaticPod(n runtime.Node) runtime.StaticPodSpec {
	return runtime.StaticPodSpec{
		Name: runtime.ComponentDNS, Image: nodeImage, HealthURL: "http://" + hostPort(n, "dns-metrics") + "/ready",
		Labels: map[string]string{dns.AppLabel: dns.AppLabelValue},
		Ports: []runtime.ContainerPort{
			{Name: dns.PortNameDNS, Port: int32(n.Ports["dns"]), Protocol: string(corev1.ProtocolUDP)},
			{Name: dns.PortNameDNSTCP, Port: int32(n.Ports["dns"]), Protocol: string(corev1.ProtocolTCP)},
			{Name: dns.PortNameMetrics, Port: int32(n.Ports["dns-metrics"]), Protocol: string(corev1.ProtocolTCP)},
		},
	}
}

// ensureDNSAddon makes what kubeadm's CoreDNS add-on phase makes, unless
// it exists: the coredns ServiceAccount, its ClusterRole and binding, and
// the kube-dns Service at the tenth service IP, which every pod's
// resolv.conf names.
//
// The Service's target ports are the names of the DNS pods' container
// ports (kubeadm writes the numbers 53 and 9153): the local runtime may
// give a master other ports when 53 is not free to it, and a named target
// port follows the pod wherever it listens.
func (b *bringUp) ensureDNSAddon(ctx context.Context) error {
	cfg, err := b.certs.RESTConfig(b.c.spec.Name, b.hostServer(), auth.AdminUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ip, err := dns.ClusterIP(apiserver.DefaultServiceCIDR)
	if err != nil {
		return err
	}
	return whileTransient(ctx, func(ctx context.Context) error { return ensureDNSObjects(ctx, client, ip) })
}

func ensureDNSObjects(ctx context.Context, client kubernetes.Interface, clusterIP string) error {
	ns := metav1.NamespaceSystem
	labels := map[string]string{dns.AppLabel: dns.AppLabelValue}
	created := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: dnsServiceAccount, Namespace: ns}}
	_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if err := created("ServiceAccount "+ns+"/"+dnsServiceAccount, err); err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: dnsClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	_, err = client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if err := created("ClusterRole "+dnsClusterRole, err); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: dnsClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: dnsServiceAccount, Namespace: ns}},
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if err := created("ClusterRoleBinding "+dnsClusterRole, err); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: dns.ServiceName, Namespace: ns,
			Labels:      map[string]string{dns.AppLabel: dns.AppLabelValue, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
			Annotations: map[string]string{"prometheus.io/port": fmt.Sprint(dnsMetricsPort), "prometheus.io/scrape": "true"},
		},
		Spec: corev1.ServiceSpec{
			Selector: labels, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP},
			Ports: []corev1.ServicePort{
				{Name: dns.PortNameDNS, Port: dnsPort, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString(dns.PortNameDNS)},
				{Name: dns.PortNameDNSTCP, Port: dnsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(dns.PortNameDNSTCP)},
				{Name: dns.PortNameMetrics, Port: dnsMetricsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(dns.PortNameMetrics)},
			},
		},
	}
	// Look first: the API server allocates the ClusterIP before it finds
	// the name taken, so creating a Service kept from an earlier run fails
	// as an address already allocated, not as already existing.
	if _, err := client.CoreV1().Services(ns).Get(ctx, dns.ServiceName, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get Service %s/%s: %w", ns, dns.ServiceName, err)
	}
	_, err = client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	return created("Service "+ns+"/"+dns.ServiceName, err)
}
