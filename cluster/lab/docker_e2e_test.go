package lab

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker"
	"github.com/klab-dev/klab/internal/testenv"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// requireDocker skips the test when no Docker engine answers, and returns
// the static klab binary the images are built from: $KLAB_BINARY (make test
// builds bin/klab and sets it), else one built now.
func requireDocker(t *testing.T) string {
	t.Helper()
	testenv.EndToEnd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := docker.Ping(ctx); err != nil {
		t.Skipf("no Docker engine answers (%v): the Docker runtime's end-to-end tests need one", err)
	}
	binaryOnce.Do(func() {
		if p := os.Getenv("KLAB_BINARY"); p != "" {
			binaryPath = p
			return
		}
		dir, err := os.MkdirTemp("", "klab-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "klab")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binaryPath, "github.com/klab-dev/klab/cmd/klab")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("build klab: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// dockerClusterName returns a name no developer's lab uses, and removes
// every Docker object labelled with it when the test ends, whatever
// happened.
func dockerClusterName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 3)
	rand.Read(b)
	name := prefix + "-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := docker.RemoveCluster(ctx, name, nil); err != nil {
			t.Errorf("cleanup %s: %v", name, err)
		}
	})
	return name
}

// assertNoObjects fails unless the engine holds nothing labelled with the
// cluster's name.
func assertNoObjects(t *testing.T, name string) {
	t.Helper()
	names, err := docker.ListClusters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, name) {
		t.Errorf("Docker still holds objects labelled io.klab.cluster=%s", name)
	}
}

// TestDockerCluster runs a 3+3 cluster in Docker containers and checks
// what issue 5 promises: containers per component, kubectl and etcdctl
// through published ports, pods as containers answering HTTP, an offline
// image's ImagePullBackOff, a stopped etcd leader replaced, a partitioned
// worker's pods replaced and the worker back after heal, and nothing left
// after klab down.
func TestDockerCluster(t *testing.T) {
	bin := requireDocker(t)
	home := testHome(t)
	name := dockerClusterName(t, "kt")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// Speed 10, not more: above it the schedulers' and controller
	// managers' leases stay at one second with a renew deadline of 666 ms,
	// which 25 containers starting on two cores can miss, and a leader
	// that misses it exits as upstream's does.
	c, err := Up(ctx, Spec{Name: name, Masters: 3, Workers: 3, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if !c.Detached() {
		t.Error("a Docker cluster should not depend on the process that created it")
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}

	// Every component is a container of its own, running.
	infos, err := c.Runtime().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Masters run seven (etcd, API server, scheduler, controller manager,
	// kubelet, kube-proxy, cluster DNS), workers two, and one load balancer.
	if want := 3*7 + 1 + 3*2; len(infos) != want {
		t.Errorf("components = %d, want %d: %v", len(infos), want, infos)
	}
	for _, ci := range infos {
		if ci.State != runtime.StateRunning {
			t.Errorf("%s is %s", ci.Ref, ci.State)
		}
	}
	if _, err := exec.LookPath("docker"); err == nil {
		out, err := exec.Command("docker", "ps", "--filter", "label=io.klab.cluster="+name, "--format", "{{.Names}}").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"klab-" + name + "-master-1-etcd", "klab-" + name + "-master-3-kube-apiserver", "klab-" + name + "-worker-2-kubelet", "klab-" + name + "-worker-2-kube-proxy", "klab-" + name + "-lb-lb", "klab-" + name + "-worker-1"} {
			if !strings.Contains(string(out), want+"\n") {
				t.Errorf("docker ps does not show %s:\n%s", want, out)
			}
		}
	}

	// The real etcdctl and kubectl, through the ports published on
	// 127.0.0.1.
	klab := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("klab %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := klab("etcdctl", "--name", name, "member", "list"); strings.Count(out, "started") != 3 {
		t.Errorf("etcdctl member list shows %d started members:\n%s", strings.Count(out, "started"), out)
	}
	if out := klab("kubectl", "--name", name, "get", "nodes"); strings.Count(out, " Ready ") != 6 {
		t.Errorf("kubectl get nodes shows %d Ready nodes:\n%s", strings.Count(out, " Ready "), out)
	}

	t.Run("pods are containers answering HTTP", func(t *testing.T) {
		f.t = t
		if _, err := f.client.AppsV1().Deployments("default").Create(ctx, deployment("web", 3, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods := f.waitRunning("app=web", 3, 2*time.Minute)
		for _, p := range pods {
			if !strings.HasPrefix(p.Spec.NodeName, "worker-") {
				t.Errorf("pod %s runs on %s, want a worker", p.Name, p.Spec.NodeName)
			}
			body := httpGet(t, "http://"+p.Status.PodIP+":8080/")
			if !strings.Contains(body, p.Name) {
				t.Errorf("pod %s at %s answered %q, not naming itself", p.Name, p.Status.PodIP, body)
			}
		}
	})

	t.Run("a NodePort Service answers through every mode's kube-proxy", func(t *testing.T) {
		f.t = t
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if _, err := f.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		klab := func(args ...string) string {
			t.Helper()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("klab %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		traffic := func(mode string) {
			t.Helper()
			var r struct {
				Failed int `json:"failed"`
				Pods   []struct {
					Pod   string `json:"pod"`
					Count int    `json:"count"`
				} `json:"pods"`
				Modes map[string]int `json:"modes"`
			}
			f.eventually(30*time.Second, mode+" traffic reaching the three pods", func() (bool, error) {
				out := klab("traffic", "svc/web", "--name", name, "--node", "worker-3", "--count", "60", "-o", "json")
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					return false, fmt.Errorf("%v: %s", err, out)
				}
				return r.Failed == 0 && len(r.Pods) == 3 && r.Modes[mode] == 60, fmt.Errorf("%s", out)
			})
		}
		traffic("iptables")
		out := klab("proxy", "mode", "ipvs", "--name", name)
		if !strings.Contains(out, "iptables → ipvs") {
			t.Errorf("klab proxy mode ipvs printed:\n%s", out)
		}
		traffic("ipvs")
		if rules := klab("proxy", "rules", "worker-1", "--name", name); !strings.Contains(rules, "Prot LocalAddress:Port Scheduler Flags") || strings.Count(rules, "  -> ") < 3 {
			t.Errorf("ipvs rules of worker-1:\n%s", rules)
		}
		klab("proxy", "mode", "iptables", "--name", name)
		traffic("iptables")
	})

	t.Run("an image that is not present backs off", func(t *testing.T) {
		f.t = t
		pod := singlePod("offline", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/nope:1.0" })
		if _, err := f.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually(time.Minute, "ImagePullBackOff", func() (bool, error) {
			p, err := f.client.CoreV1().Pods("default").Get(ctx, "offline", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, err
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			if w == nil {
				return false, fmt.Errorf("not waiting")
			}
			return w.Reason == "ImagePullBackOff" && w.Message != "", fmt.Errorf("waiting: %s %s", w.Reason, w.Message)
		})
	})

	t.Run("a stopped etcd leader is replaced", func(t *testing.T) {
		st := waitFor(t, name, "a leader", func(s *ClusterStatus) bool { return s.Leader != "" })
		old, term := st.Leader, leaderTerm(st)
		ref := runtime.Ref{Node: old, Component: runtime.ComponentEtcd}
		if err := c.Runtime().Stop(ctx, ref); err != nil {
			t.Fatal(err)
		}
		st = waitFor(t, name, "a new leader", func(s *ClusterStatus) bool {
			return s.Leader != "" && s.Leader != old && leaderTerm(s) > term
		})
		if m := memberNamed(st, old); m.State != string(runtime.StateStopped) && m.State != string(runtime.StateExited) {
			t.Errorf("stopped member %s shows as %q", old, m.State)
		}
		if err := c.Runtime().Start(ctx, ref); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a partitioned worker's pods move, and it comes back", func(t *testing.T) {
		f.t = t
		if _, err := Chaos(ctx, name, ChaosRequest{Op: OpPartition, Targets: []string{"worker-2"}}); err != nil {
			t.Fatal(err)
		}
		f.eventually(time.Minute, "worker-2 NotReady", func() (bool, error) {
			n, err := f.client.CoreV1().Nodes().Get(ctx, "worker-2", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return nodeCondition(n, corev1.NodeReady) != corev1.ConditionTrue, nil
		})
		f.eventually(2*time.Minute, "web's pods off worker-2", func() (bool, error) {
			running := 0
			for _, p := range f.pods("app=web") {
				if p.Spec.NodeName == "worker-2" && p.DeletionTimestamp == nil {
					return false, fmt.Errorf("%s still on worker-2", p.Name)
				}
				if podRunningReady(&p) {
					running++
				}
			}
			return running == 3, fmt.Errorf("%d running", running)
		})
		if _, err := Chaos(ctx, name, ChaosRequest{Op: OpHeal}); err != nil {
			t.Fatal(err)
		}
		f.eventually(time.Minute, "worker-2 Ready again", func() (bool, error) {
			n, err := f.client.CoreV1().Nodes().Get(ctx, "worker-2", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return nodeCondition(n, corev1.NodeReady) == corev1.ConditionTrue, nil
		})
	})

	res, err := Down(ctx, name, false, nil)
	if err != nil {
		t.Fatalf("Down: %v", err)
	}
	if !res.Removed {
		t.Error("Down did not report the cluster removed")
	}
	assertNoObjects(t, name)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body)
}

// TestDockerDownAfterKill kills `klab up` with SIGKILL while it creates a
// cluster, next to another cluster that is running, and checks that klab
// down removes every object of the killed one and leaves the other alone.
func TestDockerDownAfterKill(t *testing.T) {
	bin := requireDocker(t)
	home := testHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	up := func(name string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, "up", "--runtime", "docker", "--name", name, "--masters", "1", "--workers", "1", "--no-fsync", "--speed", "10")
		cmd.Env = append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en", "KLAB_BINARY="+bin)
		return cmd
	}

	// A cluster that comes up and keeps running after its klab up exits.
	kept := dockerClusterName(t, "kk")
	if out, err := up(kept).CombinedOutput(); err != nil {
		t.Fatalf("klab up %s: %v\n%s", kept, err, out)
	}
	before := waitFor(t, kept, "a leader", func(s *ClusterStatus) bool { return s.Leader != "" })

	// A second one, killed once its etcd member is starting.
	killed := dockerClusterName(t, "kx")
	cmd := up(killed)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Starting the etcd members") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, stdout)
	cmd.Wait()
	names, err := docker.ListClusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, killed) {
		t.Fatalf("the killed klab up left nothing to clean up; the test did not kill it half-way")
	}
	if _, err := Down(ctx, killed, false, nil); err != nil {
		t.Fatalf("Down %s: %v", killed, err)
	}
	assertNoObjects(t, killed)

	// The other cluster did not notice.
	after := waitFor(t, kept, "the same leader", func(s *ClusterStatus) bool { return s.Leader != "" })
	if after.Leader != before.Leader || leaderTerm(after) != leaderTerm(before) {
		t.Errorf("cluster %s changed leader (%s term %d → %s term %d) while %s was removed", kept, before.Leader, leaderTerm(before), after.Leader, leaderTerm(after), killed)
	}

	// klab stop, then klab start: the same cluster comes back on its data.
	if err := Stop(ctx, kept, nil); err != nil {
		t.Fatalf("Stop %s: %v", kept, err)
	}
	if st, err := Status(ctx, kept); err != nil || st.Running {
		t.Fatalf("after Stop: running %v, err %v", st != nil && st.Running, err)
	}
	started, err := Start(ctx, kept, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Start %s: %v", kept, err)
	}
	if got := waitFor(t, kept, "a leader after start", func(s *ClusterStatus) bool { return s.Leader != "" }); leaderTerm(got) <= leaderTerm(after) {
		t.Errorf("after start the leader's term is %d, want above %d (the members restarted)", leaderTerm(got), leaderTerm(after))
	}
	if started.Info().APIServer == "" || len(started.Info().Nodes) != 2 {
		t.Errorf("cluster.json after start: %+v", started.Info())
	}
	if _, err := Down(ctx, kept, false, nil); err != nil {
		t.Fatalf("Down %s: %v", kept, err)
	}
	assertNoObjects(t, kept)
}
