package components

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

var discard = slog.New(slog.DiscardHandler)

func TestNodeCapacity(t *testing.T) {
	tests := []struct {
		name    string
		spec    runtime.KubeletSpec
		want    corev1.ResourceList
		wantErr string
	}{
		{name: "nothing set", want: corev1.ResourceList{}},
		{
			name: "every quantity",
			spec: runtime.KubeletSpec{CPU: "2", Memory: "4Gi", Pods: 17},
			want: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods:   resource.MustParse("17"),
			},
		},
		{name: "bad cpu", spec: runtime.KubeletSpec{CPU: "two", Memory: "4Gi"}, wantErr: `node cpu "two"`},
		{name: "bad memory", spec: runtime.KubeletSpec{Memory: "4 GiB"}, wantErr: `node memory "4 GiB"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeCapacity(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("capacity = %v, want %v", got, tt.want)
			}
			for name, q := range tt.want {
				if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
					t.Errorf("capacity[%s] = %v, want %v", name, got[name], q.String())
				}
			}
		})
	}
}

// testPKI writes a cluster's PKI with a kubelet identity for worker-1.
func testPKI(t *testing.T) *pki.PKI {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), []string{"127.0.0.1"}, []string{"worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// componentDir writes user's component credentials from p.
func componentDir(t *testing.T, p *pki.PKI, user string) string {
	t.Helper()
	id, ok := pki.ClientIdentity(user)
	if !ok {
		t.Fatalf("%q is no component", user)
	}
	id.ServingHosts = []string{"127.0.0.1"}
	dir := t.TempDir()
	if err := p.EnsureComponentCredentials(dir, id); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRESTConfig(t *testing.T) {
	p := testPKI(t)
	spec := runtime.ClientSpec{Cluster: "c", APIServer: "https://127.0.0.1:6443", PKIDir: componentDir(t, p, auth.KubeScheduler)}

	cfg, _, err := restConfig(spec, auth.KubeScheduler, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dial != nil {
		t.Error("no dialer given, but the config has one; want client-go's default")
	}
	if cfg.BearerToken != "" || cfg.Host != spec.APIServer || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		t.Errorf("config with token %q, %d bytes of certificate, at %s; want the scheduler's client certificate, no token, at %s",
			cfg.BearerToken, len(cfg.CertData), cfg.Host, spec.APIServer)
	}
	block, _ := pem.Decode(cfg.CertData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != auth.KubeScheduler {
		t.Errorf("client certificate of %q, want %q", cert.Subject.CommonName, auth.KubeScheduler)
	}

	// Another component's credentials are refused by name.
	if _, _, err := restConfig(spec, auth.KubeProxy, nil); err == nil || !strings.Contains(err.Error(), auth.KubeScheduler) {
		t.Errorf("kube-proxy started with the scheduler's credentials: err = %v", err)
	}

	errGate := errors.New("through the gate")
	var dialled string
	gate := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = addr
		return nil, errGate
	}
	spec.PKIDir = componentDir(t, p, auth.NodeUser("worker-1"))
	cfg, _, err = restConfig(spec, auth.NodeUser("worker-1"), gate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Dial(context.Background(), "tcp", "127.0.0.1:6443"); !errors.Is(err, errGate) || dialled != "127.0.0.1:6443" {
		t.Errorf("Dial = %v, dialled %q; want the given dialer used", err, dialled)
	}
}

// TestStartWithoutPKI checks that every component says which file it
// lacks when its PKI dir is empty, and starts nothing.
func TestStartWithoutPKI(t *testing.T) {
	empty := t.TempDir()
	client := runtime.ClientSpec{APIServer: "https://127.0.0.1:1", PKIDir: empty}
	ctx := context.Background()
	starts := map[string]func() (Process, error){
		"kube-apiserver": func() (Process, error) {
			return APIServer(ctx, runtime.Ref{Node: "master-1"}, runtime.APIServerSpec{
				EtcdEndpoints: []string{"http://127.0.0.1:1"}, Listen: "127.0.0.1:0", PKIDir: empty,
			}, discard)
		},
		"lb": func() (Process, error) {
			return LB(ctx, runtime.LBSpec{Listen: "127.0.0.1:0", Backends: []string{"127.0.0.1:1"}, PKIDir: empty}, discard)
		},
		"kube-scheduler": func() (Process, error) {
			return Scheduler(ctx, "master-1", runtime.SchedulerSpec{ClientSpec: client}, nil, discard)
		},
		"kube-controller-manager": func() (Process, error) {
			return ControllerManager(ctx, "master-1", runtime.ControllerManagerSpec{ClientSpec: client}, nil, discard)
		},
		"kubelet": func() (Process, error) {
			return Kubelet(ctx, "worker-1", runtime.KubeletSpec{ClientSpec: client, Listen: "127.0.0.1:0"}, critest.New(critest.Options{}), nil, discard)
		},
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			p, err := start()
			if err == nil {
				p.Kill()
				t.Fatal("started without a PKI")
			}
			if !strings.Contains(err.Error(), pki.CACertFile) {
				t.Errorf("err = %v, want it to name %s", err, pki.CACertFile)
			}
		})
	}
}

func TestKubeletBadCapacity(t *testing.T) {
	p := testPKI(t)
	spec := runtime.KubeletSpec{
		ClientSpec: runtime.ClientSpec{APIServer: "https://127.0.0.1:1", PKIDir: componentDir(t, p, auth.NodeUser("worker-1"))},
		Listen:     "127.0.0.1:0", CPU: "lots",
	}
	k, err := Kubelet(context.Background(), "worker-1", spec, critest.New(critest.Options{}), nil, discard)
	if err == nil {
		k.Kill()
		t.Fatal("kubelet started with cpu \"lots\"")
	}
	if !strings.Contains(err.Error(), `cpu "lots"`) {
		t.Errorf("err = %v, want it to name the bad quantity", err)
	}
}

// TestLBStop checks the Process contract on the load balancer: it serves
// until stopped, and Done closes on Stop with no error.
func TestLBStop(t *testing.T) {
	p := testPKI(t)
	// The backend never answers; the balancer still listens.
	lb, err := LB(context.Background(), runtime.LBSpec{Listen: "127.0.0.1:0", Backends: []string{"127.0.0.1:1"}, PKIDir: p.Dir}, discard)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-lb.Done():
		t.Fatal("Done closed before Stop")
	default:
	}
	if err := lb.Stop(); err != nil {
		t.Fatal(err)
	}
	<-lb.Done()
	if err := lb.Err(); err != nil {
		t.Errorf("Err after Stop = %v, want nil", err)
	}
	lb.Kill() // after Stop: nothing left to do, and no panic
}
