package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	kubeproxyconfig "k8s.io/kube-proxy/config/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/timing"
)

// waitTimeout bounds every wait for something the proxy or the API server
// is expected to do.
const waitTimeout = 15 * time.Second

// testSpeed makes minSyncPeriod 50 ms and syncPeriod 1.5 s.
const testSpeed = timing.Speed(20)

// lab is an API server with a client, and the node a test's proxy runs on.
type lab struct {
	t       *testing.T
	cluster *apiservertest.Cluster
	cs      kubernetes.Interface
	ns      string
	// nodeIP is the proxy's node address; backends live in
	// 127.0.subnet.0/24 (.10 and up), so tests never share addresses.
	nodeIP netip.Addr
	subnet int
}

// newLab starts an API server and a namespace for the test. The node's
// address is one of this host's non-loopback IPv4 addresses when there is
// one (see hostIP), else 127.0.subnet.1.
func newLab(t *testing.T, subnet int) *lab {
	t.Helper()
	return newLabWith(t, subnet, apiservertest.Options{})
}

// newLabWith is newLab with the API server started with opts.
func newLabWith(t *testing.T, subnet int, opts apiservertest.Options) *lab {
	t.Helper()
	c := apiservertest.New(t, opts)
	l := &lab{t: t, cluster: c, cs: c.Client(), ns: "lab", subnet: subnet, nodeIP: netip.AddrFrom4([4]byte{127, 0, byte(subnet), 1})}
	// KLAB_TEST_LOOPBACK_NODE=1 keeps the node on loopback, as on a host
	// without another address.
	if ip, ok := hostIP(); ok && os.Getenv("KLAB_TEST_LOOPBACK_NODE") == "" {
		l.nodeIP = ip
	}
	if _, err := l.cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return l
}

// backendIP returns the address of backend i.
func (l *lab) backendIP(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 0, byte(l.subnet), byte(10 + i)})
}

// hostIP returns a non-loopback IPv4 address of this host. proxier's
// iptables and nftables modes never send NodePort traffic addressed to
// 127.0.0.0/8 into their NodePort chains (nftables as upstream; iptables
// writes "! -d 127.0.0.0/8" always, where upstream does only with
// localhostNodePorts: false), so their NodePorts need a node address
// outside it.
func hostIP() (netip.Addr, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if ip = ip.Unmap(); ok && ip.Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// nodePortUsable reports whether NodePort traffic can be checked in mode
// on this host (see hostIP), logging why not.
func (l *lab) nodePortUsable(t *testing.T, mode string) bool {
	t.Helper()
	if l.nodeIP.IsLoopback() && (mode == proxier.ModeIPTables || mode == proxier.ModeNFTables) {
		t.Logf("NodePort checks skipped: this host has no non-loopback IPv4 address, and %s mode never proxies NodePort traffic to 127.0.0.0/8", mode)
		return false
	}
	return true
}

// startProxy starts a kube-proxy for node on the lab's node IP.
func (l *lab) startProxy(node string) *Proxy {
	l.t.Helper()
	return l.startProxyWith(node, nil)
}

// startProxyWith is startProxy with tune applied to the configuration
// first.
func (l *lab) startProxyWith(node string, tune func(*Config)) *Proxy {
	l.t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("KLAB_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := newTuned(Config{
		REST:     l.cluster.Config(0, auth.KubeProxy),
		NodeName: node,
		NodeIP:   l.nodeIP,
		PodCIDR:  netip.MustParsePrefix("10.244.1.0/24"),
		Listen:   "127.0.0.1:0",
		Speed:    testSpeed,
		Logger:   logger,
	}, tune)
	if err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// Start's context bounds the proxy's life; the test's Cleanup stops it.
	if err := p.Start(context.WithoutCancel(ctx)); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			l.t.Error(err)
		}
	})
	return p
}

// newTuned is New with tune, when not nil, applied to cfg first.
func newTuned(cfg Config, tune func(*Config)) (*Proxy, error) {
	if tune != nil {
		tune(&cfg)
	}
	return New(cfg)
}

// backends are tiny HTTP servers on their own loopback IPs, sharing one
// port as a Deployment's pods do; each answers with its name.
type backends struct {
	port  int
	names []string
	addrs []netip.AddrPort
	srvs  []*http.Server
}

// startBackends starts n backends on the lab's backend IPs.
func (l *lab) startBackends(n int) *backends {
	l.t.Helper()
	for range 20 {
		first, err := net.Listen("tcp4", netip.AddrPortFrom(l.backendIP(0), 0).String())
		if err != nil {
			l.t.Fatal(err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{first}
		for i := 1; i < n; i++ {
			ln, err := net.Listen("tcp4", netip.AddrPortFrom(l.backendIP(i), uint16(port)).String())
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) < n {
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		b := &backends{port: port}
		for i, ln := range lns {
			name := fmt.Sprintf("backend-%d", i)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, name)
			}), ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			b.names = append(b.names, name)
			b.addrs = append(b.addrs, netip.AddrPortFrom(l.backendIP(i), uint16(port)))
			b.srvs = append(b.srvs, srv)
		}
		l.t.Cleanup(func() {
			for _, s := range b.srvs {
				s.Close()
			}
		})
		return b
	}
	l.t.Fatal("no port free on every backend IP")
	return nil
}

// kill closes backend i's listener: its address refuses connections while
// its endpoint stays in the slice, as a crashed pod's does until its
// readiness probe fails.
func (b *backends) kill(i int) { b.srvs[i].Close() }

// serviceOptions shape a test Service.
type serviceOptions struct {
	nodePort      bool
	internalLocal bool
	externalLocal bool
}

// createService creates a Service with one unnamed TCP port 80 and returns
// it as the API server allocated it.
func (l *lab) createService(name string, b *backends, opts serviceOptions) *corev1.Service {
	l.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(int32(b.port)), Protocol: corev1.ProtocolTCP}},
		},
	}
	if opts.nodePort {
		svc.Spec.Type = corev1.ServiceTypeNodePort
	}
	if opts.internalLocal {
		svc.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
	if opts.externalLocal {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	out, err := l.cs.CoreV1().Services(l.ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// endpoint describes one endpoint of a hand-made EndpointSlice.
type endpoint struct {
	addr     netip.AddrPort
	node     string
	notReady bool
}

// slice builds the EndpointSlice the controller manager would write for
// svc.
func (l *lab) slice(svc *corev1.Service, eps []endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-abcde", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if len(eps) > 0 {
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(eps[0].addr.Port())), Protocol: ptr.To(corev1.ProtocolTCP)}}
	}
	for i, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.addr.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(!e.notReady), Serving: ptr.To(!e.notReady), Terminating: ptr.To(false)},
			NodeName:   ptr.To(e.node),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%d", svc.Name, i)},
		})
	}
	return s
}

func (l *lab) createSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	l.t.Helper()
	out, err := l.cs.DiscoveryV1().EndpointSlices(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

func (l *lab) updateSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	l.t.Helper()
	out, err := l.cs.DiscoveryV1().EndpointSlices(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// onNode puts every backend of b on node.
func onNode(b *backends, node string) []endpoint {
	var eps []endpoint
	for _, a := range b.addrs {
		eps = append(eps, endpoint{addr: a, node: node})
	}
	return eps
}

// writeConfig stores data as the kube-proxy ConfigMap's config.conf.
func (l *lab) writeConfig(data string) {
	l.t.Helper()
	ctx := context.Background()
	cms := l.cs.CoreV1().ConfigMaps(ConfigMapNamespace)
	cm, err := cms.Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		cm, err = NewConfigMap(DefaultConfiguration())
		if err != nil {
			l.t.Fatal(err)
		}
		cm.Data[ConfigMapKey] = data
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			l.t.Fatal(err)
		}
		return
	}
	cm.Data[ConfigMapKey] = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

// setMode writes a configuration with mode (and, for ipvs, scheduler) the
// way kubeadm encodes it.
func (l *lab) setMode(mode, scheduler string) {
	l.t.Helper()
	c := DefaultConfiguration()
	c.Mode = kubeproxyconfig.ProxyMode(mode)
	c.IPVS.Scheduler = scheduler
	data, err := EncodeConfiguration(c)
	if err != nil {
		l.t.Fatal(err)
	}
	l.writeConfig(data)
}

// nodePortAddr is where svc's NodePort listens on the proxy's node.
func (l *lab) nodePortAddr(svc *corev1.Service) string {
	return netip.AddrPortFrom(l.nodeIP, uint16(svc.Spec.Ports[0].NodePort)).String()
}

// clusterIPAddr is svc's ClusterIP:port.
func clusterIPAddr(svc *corev1.Service) string {
	return net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
}

func ptrTo[T any](v T) *T { return &v }
