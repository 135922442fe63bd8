package dns

import (
	"fmt"
	"log/slog"
	"net/netip"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ComponentName names the server as a user agent and in logs.
const ComponentName = "coredns"

// Names kubeadm gives the cluster DNS add-on, which klab keeps.
const (
	// ServiceName is the Service in kube-system that pods' resolv.conf
	// points at.
	ServiceName = "kube-dns"
	// AppLabel and AppLabelValue select the DNS pods: k8s-app=kube-dns.
	AppLabel      = "k8s-app"
	AppLabelValue = "kube-dns"
	// Port names of the Service and of the pods' container ports.
	PortNameDNS     = "dns"
	PortNameDNSTCP  = "dns-tcp"
	PortNameMetrics = "metrics"
	// DefaultPort and DefaultMetricsPort are CoreDNS's ports.
	DefaultPort        = 53
	DefaultMetricsPort = 9153
)

// Defaults of the zone, as kubeadm configures CoreDNS.
const (
	// DefaultDomain is the cluster domain (the kubelet's clusterDomain).
	DefaultDomain = "cluster.local"
	// DefaultTTL is the TTL of every record, kubeadm's "ttl 30".
	DefaultTTL = 30
	// SchemaVersion is the version of the DNS specification answered at
	// dns-version.<zone>: 1.1.0 is the one with AAAA records for IPv6.
	SchemaVersion = "1.1.0"
)

// Config configures the DNS server.
type Config struct {
	// REST reaches the API server; Client, when set, is used instead
	// (tests hand in a fake clientset).
	REST   *rest.Config
	Client kubernetes.Interface
	// Identity names this server (its node) in the status.
	Identity string
	// Listen is host:port of the DNS server, UDP and TCP alike
	// ("127.0.0.1:0" picks a port free for both).
	Listen string
	// HTTPListen is host:port of the metrics, health and status endpoint;
	// empty means none.
	HTTPListen string
	// Domain is the cluster domain; DefaultDomain when empty.
	Domain string
	// TTL of the records; DefaultTTL when zero.
	TTL uint32
	// Logger receives the server's logs (default: discarded).
	Logger *slog.Logger
}

// ClusterIP returns the address kubeadm gives the kube-dns Service: the
// tenth of the service range (10.96.0.10 for 10.96.0.0/12).
func ClusterIP(serviceCIDR string) (string, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("service CIDR %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", fmt.Errorf("service CIDR %q has no tenth address", serviceCIDR)
	}
	return a.String(), nil
}
