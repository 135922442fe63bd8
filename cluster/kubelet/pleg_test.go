package kubelet

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// runInformer starts the fixture kubelet's pod informer on the fake API.
func (fx *fixture) runInformer() {
	fx.t.Helper()
	fx.k.podInformer = newPodInformer(fx.client, testNode)
	stop := make(chan struct{})
	fx.t.Cleanup(func() { close(stop) })
	go fx.k.podInformer.Run(stop)
	if !cache.WaitForCacheSync(stop, fx.k.podInformer.HasSynced) {
		fx.t.Fatal("informer did not sync")
	}
}

func TestHousekeepingRemovesOrphans(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	ctx := context.Background()
	kept := fx.create(testPod("kept", appImage, nil))
	fx.sync(&podWorker{}, kept)
	fx.runInformer()

	// A pod the API no longer has, as a kubelet finds after being down
	// while the pod was force-deleted.
	ghostLabels := map[string]string{labels.PodUID: "ghost-uid", labels.PodName: "ghost", labels.PodNamespace: "default"}
	sb, _ := fx.rt.RunPodSandbox(ctx, cri.SandboxConfig{PodUID: "ghost-uid", Name: "ghost", Namespace: "default", Labels: ghostLabels})
	id, _ := fx.rt.CreateContainer(ctx, sb.ID, cri.ContainerConfig{Name: "app", Image: appImage, Labels: ghostLabels})
	fx.rt.StartContainer(ctx, id)
	// Containers that are not the kubelet's are left alone.
	foreign, _ := fx.rt.RunPodSandbox(ctx, cri.SandboxConfig{Name: "not-mine"})

	if err := fx.k.housekeeping(ctx, map[types.UID]string{}); err != nil {
		t.Fatal(err)
	}
	pods, _ := listRuntimePods(ctx, fx.rt)
	if pods["ghost-uid"] != nil {
		t.Error("orphaned pod was not removed")
	}
	if pods[kept.UID] == nil || pods[kept.UID].readySandbox() == nil {
		t.Error("a pod the API has was removed")
	}
	all, _ := fx.rt.ListPodSandboxes(ctx)
	found := false
	for _, s := range all {
		found = found || s.ID == foreign.ID
	}
	if !found {
		t.Error("a sandbox without the kubelet's labels was removed")
	}
}

func TestPodGoneFromAPI(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("forced", appImage, nil))
	fx.sync(&podWorker{}, pod)
	last := fx.get(pod)
	fx.client.ClearActions()
	if err := fx.k.terminatePod(context.Background(), last, true); err != nil {
		t.Fatal(err)
	}
	if pods, _ := listRuntimePods(context.Background(), fx.rt); pods[pod.UID] != nil {
		t.Error("runtime still holds the pod")
	}
	for _, a := range fx.client.Actions() {
		t.Errorf("a pod gone from the API got an API call: %v", a)
	}
}

func TestEventHandlerRouting(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	h := fx.k.podEventHandler()
	mine := testPod("mine", appImage, nil)
	other := testPod("other", appImage, func(p *v1.Pod) { p.Spec.NodeName = "node-2" })
	mirror := testPod("etcd-node-1", appImage, func(p *v1.Pod) {
		p.Annotations = map[string]string{annotationConfigMirror: "hash"}
	})
	for _, p := range []*v1.Pod{mine, other, mirror} {
		h.OnAdd(p, false)
	}
	tests := []struct {
		pod    *v1.Pod
		worker bool
	}{{mine, true}, {other, false}, {mirror, false}}
	for _, tt := range tests {
		t.Run(tt.pod.Name, func(t *testing.T) {
			if got := fx.k.workers.known(tt.pod.UID); got != tt.worker {
				t.Errorf("worker for %s = %v, want %v", tt.pod.Name, got, tt.worker)
			}
		})
	}
	fx.k.cancel()
	fx.k.workers.wait()
}
