package kubestate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// The feed against a real cluster: nodes Ready, leases held by the master,
// each kube-proxy's mode, a mode switch arriving from the kube-proxies'
// event streams, and the API server going away and coming back.
func TestFeedOnCluster(t *testing.T) {
	testenv.EndToEnd(t)
	// A short path: the cluster's control socket lives in the state dir.
	home, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := "ks-" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background(), nil) })

	feedCtx, stop := context.WithCancel(ctx)
	defer stop()
	var s State
	var cmd tea.Cmd = Start(feedCtx, c.Info())
	// follow applies the feed's messages until cond holds.
	follow := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if cmd == nil {
				t.Fatalf("the feed ended before %s", what)
			}
			msg := next(t, func() any { return cmd() })
			s.Apply(msg)
			cmd = msg.Next()
		}
	}
	proxyMode := func(node string) string {
		p, _ := s.Proxy(node)
		if !p.Reachable {
			return ""
		}
		return p.Mode
	}
	follow("both nodes Ready, the leases held, both kube-proxies answering, the control plane's pods", func() bool {
		m, _ := s.Node("master-1")
		w, _ := s.Node("worker-1")
		return m.IsReady() && w.IsReady() && m.Role == runtime.RoleMaster && w.Role == runtime.RoleWorker &&
			s.LeaseHolder(LeaseScheduler) == "master-1" && s.LeaseHolder(LeaseControllerManager) == "master-1" &&
			proxyMode("master-1") == lab.DefaultProxyMode && proxyMode("worker-1") == lab.DefaultProxyMode &&
			s.Conn.Connected && s.Conn.Synced && s.ProxyConfig.Mode == lab.DefaultProxyMode &&
			s.Counts("master-1")[PodRunning] >= 4
	})

	if _, err := lab.SetProxyMode(ctx, name, "ipvs", ""); err != nil {
		t.Fatal(err)
	}
	follow("the switch to ipvs", func() bool {
		return s.ProxyConfig.Mode == "ipvs" && proxyMode("master-1") == "ipvs" && proxyMode("worker-1") == "ipvs"
	})

	// The API server goes away and comes back.
	api := runtime.Ref{Node: "master-1", Component: runtime.ComponentAPIServer}
	if _, err := c.Chaos(ctx, lab.ChaosRequest{Op: lab.OpKill, Targets: []string{api.String()}}); err != nil {
		t.Fatal(err)
	}
	follow("the API server reported down", func() bool { return !s.Conn.Connected && s.Conn.Err != "" })
	if _, err := c.Chaos(ctx, lab.ChaosRequest{Op: lab.OpRestart, Targets: []string{api.String()}}); err != nil {
		t.Fatal(err)
	}
	follow("the API server back", func() bool { return s.Conn.Connected })

	// The informers follow objects again once their reflectors relist.
	cfg, err := restConfig(c.Info())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-the-outage", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	follow("the pod created after the outage", func() bool { _, ok := s.Pod("default/after-the-outage"); return ok })

	stop()
	follow("the end of the feed", func() bool { return s.Conn.Stopped })
}
