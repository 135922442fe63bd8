package shell

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	clusterdns "github.com/klab-dev/klab/cluster/dns"
)

// dnsRoot is a pod's filesystem whose resolv.conf names the cluster DNS,
// as the kubelet writes it for a pod in default, and a Dial that takes
// port 53 of any address to a cluster DNS server fed by a fake clientset.
// stream makes every connection TCP, as the local runtime's way through
// kube-proxy is.
func dnsRoot(t *testing.T, stream bool) Config {
	t.Helper()
	client := fake.NewClientset(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.50", ClusterIPs: []string{"10.96.0.50"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	})
	s, err := clusterdns.New(clusterdns.Config{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	root := newRoot(t)
	resolv := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
	if err := os.WriteFile(filepath.Join(root, "etc", "resolv.conf"), []byte(resolv), 0o644); err != nil {
		t.Fatal(err)
	}
	return Config{Root: root, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !strings.HasSuffix(addr, ":53") {
			t.Errorf("dial %s %s: not the nameserver", network, addr)
		}
		if stream {
			network = "tcp"
		}
		var d net.Dialer
		return d.DialContext(ctx, network, s.Addr())
	}}
}

func TestNslookup(t *testing.T) {
	for _, stream := range []bool{false, true} {
		cfg := dnsRoot(t, stream)
		tests := []struct {
			args     []string
			wantCode int
			want     []string
			wantNot  []string
		}{
			{[]string{"nslookup", "web"}, 0, []string{"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n", "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.50\n"}, nil},
			// The search list's misses are not printed: only the name that answered.
			{[]string{"nslookup", "web.default"}, 0, []string{"Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.50\n"}, []string{"can't find"}},
			{[]string{"nslookup", "-type=srv", "_http._tcp.web"}, 0, []string{"_http._tcp.web.default.svc.cluster.local\tservice = 0 100 80 web.default.svc.cluster.local\n"}, nil},
			{[]string{"nslookup", "10.96.0.50"}, 0, []string{"50.0.96.10.in-addr.arpa\tname = web.default.svc.cluster.local\n"}, nil},
			// Outside the cluster domain there is no upstream: the last
			// name tried, the bare one, fails so, and is reported once.
			{[]string{"nslookup", "nope"}, 1, []string{"** server can't find nope: SERVFAIL\n"}, []string{"nope.default.svc.cluster.local", "NXDOMAIN"}},
			{[]string{"dig", "+short", "web.default.svc.cluster.local"}, 0, []string{"10.96.0.50\n"}, nil},
			{[]string{"dig", "web", "+search"}, 0, []string{"status: NOERROR", "web.default.svc.cluster.local.\t30\tIN\tA\t10.96.0.50", ";; SERVER: 10.96.0.10#53(10.96.0.10)"}, nil},
			{[]string{"dig", "web"}, 0, []string{"status: SERVFAIL"}, nil},
			{[]string{"dig", "nope.default.svc.cluster.local", "A"}, 0, []string{"status: NXDOMAIN", "cluster.local.\t30\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local."}, nil},
			{[]string{"dig", "-x", "10.96.0.50", "+short"}, 0, []string{"web.default.svc.cluster.local.\n"}, nil},
		}
		for _, tt := range tests {
			out, errOut, code, err := run(t, cfg, "", tt.args...)
			if err != nil || code != tt.wantCode {
				t.Errorf("stream=%v %q: exit %d, err %v; want %d\n%s%s", stream, tt.args, code, err, tt.wantCode, out, errOut)
				continue
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stream=%v %q printed\n%s\nwithout %q", stream, tt.args, out, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("stream=%v %q printed\n%s\nwith %q", stream, tt.args, out, w)
				}
			}
		}
	}
}
