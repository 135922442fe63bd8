package lab

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/runtime"
)

// TestDockerEtcdRefusesPods checks, from a pod on the cluster network, that
// etcd's client and peer ports refuse a client without a certificate from
// the etcd CA (the pod's curl offers none), while the same pod reaches the
// member's plain /health on the metrics port: the network is open, TLS is
// what shuts the door.
func TestDockerEtcdRefusesPods(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "h29-etcdtls")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.AppsV1().Deployments("default").Create(ctx, deployment("probe", 1, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := f.waitRunning("app=probe", 1, 3*time.Minute)[0].Name
	var master runtime.Node
	for _, n := range c.Info().Nodes {
		if n.Role == runtime.RoleMaster {
			master = n
		}
	}
	addr := func(port string) string { return net.JoinHostPort(master.Host, strconv.Itoa(master.Ports[port])) }

	if out, err := execIn(ctx, f, pod, "curl", "-s", "http://"+addr(etcdMetricsPortName)+"/health"); err != nil || !strings.Contains(out, `"health":"true"`) {
		t.Fatalf("the pod does not reach the member's /health: %v %q", err, out)
	}
	for _, u := range []string{
		"https://" + addr("etcd-peer") + "/debug/klab/status",
		"https://" + addr("etcd-peer") + "/debug/klab/clock",
		"https://" + addr("etcd-client") + "/",
		"http://" + addr("etcd-peer") + "/debug/klab/status",
	} {
		// -f: plain HTTP to a TLS port gets Go's 400 "Client sent an
		// HTTP request to an HTTPS server", a refusal too.
		out, err := execIn(ctx, f, pod, "curl", "-sf", u)
		if err == nil || strings.Contains(out, `"leader"`) || strings.Contains(out, `"tickIntervalMs"`) {
			t.Errorf("curl %s from a pod without an etcd certificate: err %v, output %q", u, err, out)
		}
	}
}
