package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// testPodsEnv, set to "critest" in a child process, gives `klab component
// kubelet` in-memory pods in place of Docker's, so that the kubelet's
// entrypoint runs without a Docker engine.
const testPodsEnv = "KLAB_TEST_PODS"

func init() {
	if os.Getenv(testPodsEnv) == "critest" {
		newPodRuntime = func(ctx context.Context, node string, spec runtime.KubeletSpec, logger *slog.Logger) (cri.Runtime, func(), error) {
			pods := critest.New(critest.Options{})
			return pods, func() { pods.Close() }, nil
		}
	}
}

// TestComponentEntrypoints runs a control plane as the Docker runtime
// will: each component its own `klab component <name> --node <node> --spec
// <json>` process (here a child of the test binary), talking to the others
// over the network with the cluster's PKI. Each must serve, then exit 0 on
// SIGTERM.
func TestComponentEntrypoints(t *testing.T) {
	testenv.EndToEnd(t)
	dir := t.TempDir()
	p, err := pki.Ensure(filepath.Join(dir, "pki"), []string{"127.0.0.1"}, []string{"master-1", "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	etcdClient, etcdPeer := freeAddr(t), freeAddr(t)
	member := startSpecComponent(t, nil, runtime.ComponentEtcd, "master-1", runtime.EtcdSpec{
		Name: "master-1", DataDir: filepath.Join(dir, "etcd"), InitialClusterToken: "e2e",
		InitialCluster: []etcd.Peer{{Name: "master-1", PeerURL: "http://" + etcdPeer}},
		ListenClient:   etcdClient, ListenPeer: etcdPeer, UnsafeNoFsync: true,
	})
	member.waitLine(t, "master-1/etcd running")

	apiAddr := freeAddr(t)
	api := startSpecComponent(t, nil, runtime.ComponentAPIServer, "master-1", runtime.APIServerSpec{
		EtcdEndpoints: []string{"http://" + etcdClient}, Listen: apiAddr, PKIDir: p.Dir, AdvertiseAddress: apiAddr,
	})
	api.waitLine(t, "master-1/kube-apiserver running")
	https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.CertPool()}}}
	checkReadyz(t, https, apiAddr)

	// The load balancer forwards to the API server; its node is none of
	// the cluster's but it takes --node all the same.
	lbAddr := freeAddr(t)
	lbDir := filepath.Join(dir, "credentials", "lb")
	if err := p.EnsureTrustOnly(lbDir); err != nil {
		t.Fatal(err)
	}
	lb := startSpecComponent(t, nil, runtime.ComponentLB, "lb", runtime.LBSpec{Listen: lbAddr, Backends: []string{apiAddr}, PKIDir: lbDir})
	lb.waitLine(t, "lb/lb running")
	checkReadyz(t, https, lbAddr)

	server := "https://" + apiAddr
	// Each component its own credentials, as a cluster's runtime gives them.
	client := func(user string) runtime.ClientSpec {
		id, _ := pki.ClientIdentity(user)
		id.ServingHosts = []string{"127.0.0.1"}
		creds := filepath.Join(dir, "credentials", strings.ReplaceAll(user, ":", "_"))
		if err := p.EnsureComponentCredentials(creds, id); err != nil {
			t.Fatal(err)
		}
		return runtime.ClientSpec{Cluster: "e2e", APIServer: server, PKIDir: creds, Speed: 1}
	}
	sched := startSpecComponent(t, nil, runtime.ComponentScheduler, "master-1", runtime.SchedulerSpec{ClientSpec: client(auth.KubeScheduler), DebugListen: freeAddr(t)})
	cm := startSpecComponent(t, nil, runtime.ComponentControllerManager, "master-1", runtime.ControllerManagerSpec{ClientSpec: client(auth.KubeControllerManager), DebugListen: freeAddr(t)})
	kubelet := startSpecComponent(t, []string{testPodsEnv + "=critest"}, runtime.ComponentKubelet, "worker-1", runtime.KubeletSpec{
		ClientSpec: client(auth.NodeUser("worker-1")), Listen: freeAddr(t), NodeIP: "127.0.0.1", CPU: "2", Memory: "1Gi", Pods: 17,
	})
	sched.waitLine(t, "master-1/kube-scheduler running")
	cm.waitLine(t, "master-1/kube-controller-manager running")
	kubelet.waitLine(t, "worker-1/kubelet running")

	cfg, err := p.RESTConfig("e2e", server, auth.AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The kubelet's start returns once its node is registered, with the
	// capacity of its spec.
	node, err := cs.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubelet's node: %v", err)
	}
	if cpu, pods := node.Status.Capacity.Cpu().String(), node.Status.Capacity.Pods().String(); cpu != "2" || pods != "17" {
		t.Errorf("node capacity cpu=%s pods=%s, want 2 and 17 from the spec", cpu, pods)
	}
	// --node is the scheduler's and the controller manager's identity:
	// each takes its Lease as master-1_<uuid>. Polled, because the
	// election's progress reaches this process only through the Lease.
	for _, lease := range []string{"kube-scheduler", "kube-controller-manager"} {
		waitLeaseHolder(ctx, t, cs, lease, "master-1_")
	}

	for _, c := range []*componentProcess{kubelet, cm, sched, lb, api, member} {
		if code := c.signal(t, syscall.SIGTERM); code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0\n%s", c.name, code, c.log())
		}
	}
}

// TestComponentPause runs the pause container's process: it waits for a
// signal and exits 0 on either.
func TestComponentPause(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startComponent(t, nil, "pause")
			c.waitLine(t, "pause running")
			if code := c.signal(t, sig); code != 0 {
				t.Errorf("pause exited %d after %v, want 0\n%s", code, sig, c.log())
			}
		})
	}
}

func checkReadyz(t *testing.T, client *http.Client, addr string) {
	t.Helper()
	resp, err := client.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz on %s: %v", addr, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("GET /readyz on %s: %d %q, want 200 ok", addr, resp.StatusCode, body)
	}
}

func waitLeaseHolder(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, prefix string) {
	t.Helper()
	var holder string
	for {
		lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
			if strings.HasPrefix(holder, prefix) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lease kube-system/%s held by %q, want %s<uuid> (last error: %v)", name, holder, prefix, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// componentProcess is `klab component ...` running in a child process.
type componentProcess struct {
	name string
	cmd  *exec.Cmd
	// exited is closed once the process has exited and all its stderr has
	// been read; waitErr is then what Wait returned.
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex
	stderr strings.Builder
	// grew is closed, and replaced, whenever stderr grows.
	grew chan struct{}
}

// startSpecComponent starts `klab component <name> --node <node> --spec
// <json of spec>`, the shape the Docker runtime uses.
func startSpecComponent(t *testing.T, env []string, name, node string, spec any) *componentProcess {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return startComponent(t, env, name, "--node", node, "--spec", string(data))
}

// startComponent starts `klab component <args>` as a child of the test
// binary, in English, and kills it when the test ends if it still runs.
func startComponent(t *testing.T, env []string, args ...string) *componentProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"component"}, args...)...)
	cmd.Env = append(append(os.Environ(), "KLAB_TEST_MAIN=1", "KLAB_LANG=en"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &componentProcess{name: args[0], cmd: cmd, exited: make(chan struct{}), grew: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			close(c.grew)
			c.grew = make(chan struct{})
			c.mu.Unlock()
		}
		// Whatever stopped the scan, the process is waited for.
		io.Copy(io.Discard, stderr)
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// log returns everything the process wrote to stderr so far.
func (c *componentProcess) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// waitLine waits until the process has written s to stderr.
func (c *componentProcess) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		written, grew := strings.Contains(c.stderr.String(), s), c.grew
		c.mu.Unlock()
		if written {
			return
		}
		select {
		case <-grew:
		case <-c.exited:
			if !strings.Contains(c.log(), s) {
				t.Fatalf("%s exited (%v) before writing %q:\n%s", c.name, c.waitErr, s, c.log())
			}
			return
		case <-timeout:
			t.Fatalf("%s wrote no %q in 30 s:\n%s", c.name, s, c.log())
		}
	}
}

// signal sends sig and returns the exit code once the process has exited.
func (c *componentProcess) signal(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", c.name, err)
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still runs 30 s after %v:\n%s", c.name, sig, c.log())
	}
	var exit *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &exit) {
		t.Fatalf("wait for %s: %v", c.name, c.waitErr)
	}
	// -1 when a signal ended it: the signal was not handled.
	return c.cmd.ProcessState.ExitCode()
}
