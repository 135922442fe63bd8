package docker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// TestComponentContainers checks what CreateComponent gives a container
// without starting it: its node's namespace, the PKI copied in, and for
// the kubelet alone the engine's socket and the pod environment.
func TestComponentContainers(t *testing.T) {
	info := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, cluster := newTestRuntime(t, ctx, info.Node)
	node, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "worker-2", Role: runtime.RoleWorker, Index: 2, Ports: []runtime.Port{{Name: "kubelet", Default: 10250}}})
	if err != nil {
		t.Fatal(err)
	}
	pki := t.TempDir()
	for _, name := range []string{"ca.crt", "ca.key", "tokens.csv"} {
		if err := os.WriteFile(filepath.Join(pki, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	client := runtime.ClientSpec{Cluster: cluster, APIServer: "https://10.1.0.2:6443", PKIDir: pki, Speed: 1}
	kubelet := runtime.Ref{Node: "worker-2", Component: runtime.ComponentKubelet}
	scheduler := runtime.Ref{Node: "worker-2", Component: runtime.ComponentScheduler}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: kubelet, Kubelet: &runtime.KubeletSpec{
		ClientSpec: client, Listen: node.Host + ":10250", NodeIP: node.Host,
	}}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: scheduler, Scheduler: &runtime.SchedulerSpec{ClientSpec: client}}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: runtime.Ref{Node: "worker-9", Component: "kubelet"}, Kubelet: &runtime.KubeletSpec{ClientSpec: client}}); !isNotFound(err) {
		t.Errorf("a component on a node never created: %v, want ErrNotFound", err)
	}

	pause, err := r.nodeContainer(ctx, "worker-2")
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.network(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref        runtime.Ref
		wantSocket bool
		wantEnv    []string
	}{
		{kubelet, true, []string{
			EnvCluster + "=" + cluster, EnvNode + "=worker-2", EnvNetwork + "=" + n.name,
			EnvPodCIDR + "=" + node.PodCIDR, EnvPauseImage + "=" + info.Node,
		}},
		{scheduler, false, nil},
	} {
		t.Run(tt.ref.Component, func(t *testing.T) {
			c, err := r.componentContainer(ctx, tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			inspect, err := r.cli.ContainerInspect(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(inspect.HostConfig.NetworkMode); got != "container:"+pause.ID {
				t.Errorf("network mode %s, want the node's namespace", got)
			}
			if inspect.Name != "/"+labels.ComponentContainer(cluster, "worker-2", tt.ref.Component) {
				t.Errorf("name %s", inspect.Name)
			}
			hasSocket := slices.ContainsFunc(inspect.HostConfig.Mounts, func(m mount.Mount) bool {
				return m.Type == mount.TypeBind && m.Target == socketInContainer
			})
			if hasSocket != tt.wantSocket {
				t.Errorf("engine socket mounted: %v, want %v", hasSocket, tt.wantSocket)
			}
			for _, env := range tt.wantEnv {
				if !slices.Contains(inspect.Config.Env, env) {
					t.Errorf("env lacks %s: %q", env, inspect.Config.Env)
				}
			}
			if _, err := r.cli.ContainerStatPath(ctx, c.ID, pkiInContainer+"/tokens.csv"); err != nil {
				t.Errorf("PKI not copied in: %v", err)
			}
			if _, err := r.cli.ContainerStatPath(ctx, c.ID, pkiInContainer+"/ca.key"); !notFound(err) {
				t.Errorf("the CA key is in the container (stat: %v)", err)
			}
		})
	}

	// Creating a component again replaces its container.
	before, _ := r.componentContainer(ctx, scheduler)
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: scheduler, Scheduler: &runtime.SchedulerSpec{ClientSpec: client}}); err != nil {
		t.Fatal(err)
	}
	after, err := r.componentContainer(ctx, scheduler)
	if err != nil || after.ID == before.ID {
		t.Errorf("second CreateComponent: container %s, then %s (%v)", before.ID, after.ID, err)
	}
	infos, err := r.List(ctx)
	if err != nil || len(infos) != 2 || infos[0].Ref != kubelet || infos[1].Ref != scheduler || infos[0].State != runtime.StateCreated {
		t.Errorf("List = %+v, %v; want the kubelet then the new scheduler, created", infos, err)
	}
}
