package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// infoOfShape returns the cluster.json of a cluster of that shape, with
// nodes, their default ports and no addresses: all the steps' topology and
// titles need.
func infoOfShape(rt string, masters, workers int) *Info {
	info := &Info{Name: "shape", Runtime: rt, Spec: Spec{Name: "shape", Masters: masters, Workers: workers, Runtime: rt}}
	ports := map[string]int{}
	for _, p := range masterPorts() {
		ports[p.Name] = p.Default
	}
	for i := range masters {
		info.Nodes = append(info.Nodes, runtime.Node{Name: "master-" + strconv.Itoa(i+1), Role: runtime.RoleMaster, Index: i + 1, Ports: ports})
	}
	for i := range workers {
		info.Nodes = append(info.Nodes, runtime.Node{Name: "worker-" + strconv.Itoa(i+1), Role: runtime.RoleWorker, Index: i + 1})
	}
	if masters > 1 {
		info.LB = &runtime.Node{Name: runtime.RoleLB, Role: runtime.RoleLB, Index: 1}
	}
	return info
}

// TestTopology checks what the steps add to the topology, which chaos
// targets and status name: every master runs the control plane and, like
// every node, a kubelet and a kube-proxy; the load balancer's node runs the
// load balancer alone.
func TestTopology(t *testing.T) {
	controlPlane := []string{
		runtime.ComponentEtcd, runtime.ComponentAPIServer, runtime.ComponentScheduler,
		runtime.ComponentControllerManager, runtime.ComponentKubelet, runtime.ComponentKubeProxy, runtime.ComponentDNS,
	}
	node := []string{runtime.ComponentKubelet, runtime.ComponentKubeProxy}
	tests := []struct {
		name             string
		masters, workers int
		want             []nodeComponents
	}{
		{"one master", 1, 0, []nodeComponents{{"master-1", controlPlane}}},
		{"one master, two workers", 1, 2, []nodeComponents{{"master-1", controlPlane}, {"worker-1", node}, {"worker-2", node}}},
		{"three masters behind a load balancer", 3, 1, []nodeComponents{
			{"master-1", controlPlane}, {"master-2", controlPlane}, {"master-3", controlPlane},
			{"lb", []string{runtime.ComponentLB}}, {"worker-1", node},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := infoOfShape(RuntimeDocker, tt.masters, tt.workers)
			c := newCluster(info.Spec, "/state/shape", nil)
			got := attached(c, info).topology(upSteps)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a cluster made before the cluster DNS runs without it", func(t *testing.T) {
		info := infoOfShape(RuntimeDocker, 1, 0)
		info.Nodes[0].Ports = map[string]int{"apiserver": 6443}
		got := attached(newCluster(info.Spec, "/state/shape", nil), info).topology(upSteps)
		want := []nodeComponents{{"master-1", controlPlane[:len(controlPlane)-1]}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("topology (-want +got):\n%s", diff)
		}
	})
}

// TestStepTitles reads the step table as the CLI prints it, for Up in
// each runtime and for Start: the image only in Docker, the load
// balancer only in front of several API servers, and Start's node steps
// worded for containers that exist.
func TestStepTitles(t *testing.T) {
	i18n.SetLang(i18n.English)
	titles := func(b *bringUp) []string {
		var out []string
		for _, s := range upSteps {
			if s.title != nil && (s.skip == nil || !s.skip(b)) {
				out = append(out, s.title(b).String())
			}
		}
		return out
	}
	upOf := func(rt string, masters, workers int) *bringUp {
		info := infoOfShape(rt, masters, workers)
		b := attached(newCluster(info.Spec, "/s", nil), info)
		b.prev, b.existing = nil, false
		return b
	}
	tests := []struct {
		name string
		b    *bringUp
		want []string
	}{
		{"up, local, one master", upOf(RuntimeLocal, 1, 1), []string{
			"Creating the nodes (2, local runtime)",
			"Preparing the etcd CA and the members' certificates in /s/pki/etcd",
			"Starting the etcd members (1)",
			"Waiting for a Raft leader",
			"Preparing certificates and tokens in /s/pki",
			"Starting the API servers (1)",
			"Writing the kubeconfig /s/kubeconfig",
			"Starting the schedulers and controller managers (1 each)",
			"Starting the kubelets (2)",
			"Starting the kube-proxies (2, mode from ConfigMap kube-system/kube-proxy)",
			"Starting the cluster DNS (1, Service kube-system/kube-dns at 10.96.0.10)",
			"Waiting for every node to be Ready (2)",
			"Writing /s/cluster.json",
		}},
		{"up, docker, three masters", upOf(RuntimeDocker, 3, 0), []string{
			"Preparing the node image klab/node (built from this binary, once per build)",
			"Creating the nodes (3, docker runtime)",
			"Creating the load balancer's node",
			"Preparing the etcd CA and the members' certificates in /s/pki/etcd",
			"Starting the etcd members (3)",
			"Waiting for a Raft leader",
			"Preparing certificates and tokens in /s/pki",
			"Starting the API servers (3)",
			"Starting the load balancer in front of the API servers",
			"Writing the kubeconfig /s/kubeconfig",
			"Starting the schedulers and controller managers (3 each)",
			"Starting the kubelets (3)",
			"Starting the kube-proxies (3, mode from ConfigMap kube-system/kube-proxy)",
			"Starting the cluster DNS (3, Service kube-system/kube-dns at 10.96.0.10)",
			"Waiting for every node to be Ready (3)",
			"Writing /s/cluster.json",
		}},
		{"start, docker, three masters", func() *bringUp {
			info := infoOfShape(RuntimeDocker, 3, 0)
			return attached(newCluster(info.Spec, "/s", nil), info)
		}(), []string{
			"Preparing the node image klab/node (built from this binary, once per build)",
			"Starting the nodes' containers (3)",
			"Starting the load balancer's node container",
			"Starting the etcd members (3)",
			"Waiting for a Raft leader",
			"Preparing certificates and tokens in /s/pki",
			"Starting the API servers (3)",
			"Starting the load balancer in front of the API servers",
			"Writing the kubeconfig /s/kubeconfig",
			"Starting the schedulers and controller managers (3 each)",
			"Starting the kubelets (3)",
			"Starting the kube-proxies (3, mode from ConfigMap kube-system/kube-proxy)",
			"Starting the cluster DNS (3, Service kube-system/kube-dns at 10.96.0.10)",
			"Waiting for every node to be Ready (3)",
			"Writing /s/cluster.json",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, titles(tt.b)); diff != "" {
				t.Errorf("step titles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunner checks the runner on steps of its own: titled steps are
// reported with ✓ or ✗, silent ones are not, skipped ones do not run, the
// first failure stops the run, and rollback undoes what the steps made,
// last made first, unless Retain keeps it.
func TestRunner(t *testing.T) {
	i18n.SetLang(i18n.English)
	errBoom := errors.New("boom")
	for _, retain := range []bool{false, true} {
		t.Run("retain="+strconv.FormatBool(retain), func(t *testing.T) {
			var events []string
			var undone, ran []string
			made := func(what string) func(*bringUp, context.Context) error {
				return func(b *bringUp, _ context.Context) error {
					ran = append(ran, what)
					b.onFailure(what, func(context.Context) error { undone = append(undone, what); return nil })
					return nil
				}
			}
			steps := []step{
				{title: fixedTitle("up.step.leader"), run: made("first")},
				{run: made("silent")},
				{title: fixedTitle("up.step.image"), skip: func(*bringUp) bool { return true }, run: made("skipped")},
				{title: fixedTitle("up.step.lb"), run: made("third")},
				{title: fixedTitle("up.step.lb-node"), run: func(*bringUp, context.Context) error { return errBoom }},
				{title: fixedTitle("up.step.leader"), run: made("never")},
			}
			b := &bringUp{c: newCluster(Spec{Name: "runner"}, t.TempDir(), nil), opts: Options{
				Retain: retain,
				Progress: func(ev StepEvent) {
					mark := map[Phase]string{StepStarted: "…", StepDone: "✓", StepFailed: "✗"}[ev.Phase]
					if ev.Phase != StepStarted && ev.Elapsed <= 0 {
						t.Errorf("%s reported without its duration", ev.Title)
					}
					events = append(events, mark+" "+ev.Title.String())
				},
			}}
			if err := b.run(context.Background(), steps); !errors.Is(err, errBoom) {
				t.Fatalf("run = %v, want the failing step's error", err)
			}
			b.rollback()
			wantEvents := []string{
				"… Waiting for a Raft leader", "✓ Waiting for a Raft leader",
				"… Starting the load balancer in front of the API servers", "✓ Starting the load balancer in front of the API servers",
				"… Creating the load balancer's node", "✗ Creating the load balancer's node",
			}
			if diff := cmp.Diff(wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if want := []string{"first", "silent", "third"}; !slices.Equal(ran, want) {
				t.Errorf("ran %v, want %v", ran, want)
			}
			var wantUndone []string
			if !retain {
				wantUndone = []string{"third", "silent", "first"}
			}
			if !slices.Equal(undone, wantUndone) {
				t.Errorf("undone %v, want %v", undone, wantUndone)
			}
		})
	}
}

// TestUpRollsBackEverything fails a new cluster's Up at its last wait,
// after every step has made something (nodes, components, the PKI,
// kubeconfigs): the rollback leaves no state dir behind.
func TestUpRollsBackEverything(t *testing.T) {
	testenv.EndToEnd(t)
	home := testHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var failed []StepEvent
	_, err := Up(ctx, Spec{Name: "undone", Masters: 1, Workers: 1, Speed: 1, Runtime: RuntimeLocal, NoFsync: true}, Options{
		Progress:          func(ev StepEvent) { failed = appendFailed(failed, ev) },
		NodesReadyTimeout: time.Nanosecond,
	})
	if err == nil {
		t.Fatal("Up succeeded with no time for its nodes to be Ready")
	}
	if len(failed) != 1 || failed[0].Title.Key != "up.step.nodes-ready" {
		t.Errorf("failed steps = %+v, want the wait for Ready nodes alone", failed)
	}
	if _, err := os.Stat(filepath.Join(home, "undone")); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(filepath.Join(home, "undone"))
		t.Errorf("state dir left behind (%v): %v", err, entries)
	}
}
