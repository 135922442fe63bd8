package kubelet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/timing"
)

func TestInitialNode(t *testing.T) {
	tests := []struct {
		name         string
		controlPlane bool
		wantTaints   []v1.Taint
		wantRole     bool
	}{
		{"worker", false, nil, false},
		// The label is kubeadm's to add: NodeRestriction forbids it
		// to the kubelet.
		{"master", true, []v1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, critest.Options{Images: []string{"small:v1", appImage}})
			fx.k.cfg.ControlPlane = tt.controlPlane
			fx.k.cfg.Labels = map[string]string{"zone": "a"}
			fx.k.cfg.PodCIDR = "10.244.3.0/24"
			fx.k.cfg.Reserved = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("5Gi")}
			node := fx.k.initialNode(context.Background())
			if diff := cmp.Diff(tt.wantTaints, node.Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if _, ok := node.Labels["node-role.kubernetes.io/control-plane"]; ok != tt.wantRole {
				t.Errorf("control-plane label = %v", ok)
			}
			for k, v := range map[string]string{"kubernetes.io/hostname": testNode, "kubernetes.io/os": "linux", "zone": "a", "beta.kubernetes.io/os": "linux"} {
				if node.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
				}
			}
			s := node.Status
			cpu, mem, pods := s.Allocatable[v1.ResourceCPU], s.Allocatable[v1.ResourceMemory], s.Allocatable[v1.ResourcePods]
			if cpu.String() != "1900m" || !mem.IsZero() || pods.Value() != 110 {
				t.Errorf("allocatable = %v", s.Allocatable)
			}
			if c := s.Capacity[v1.ResourceCPU]; c.String() != "2" {
				t.Errorf("capacity = %v", s.Capacity)
			}
			wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: testNode}}
			if diff := cmp.Diff(wantAddrs, s.Addresses); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			if node.Spec.PodCIDR != "10.244.3.0/24" || len(node.Spec.PodCIDRs) != 1 {
				t.Errorf("pod CIDR = %q %v", node.Spec.PodCIDR, node.Spec.PodCIDRs)
			}
			if len(s.Images) != 2 || s.Images[0].Names[0] != appImage {
				t.Errorf("images (largest first) = %v", s.Images)
			}
			want := map[v1.NodeConditionType][2]string{
				v1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory"},
				v1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure"},
				v1.NodePIDPressure:    {"False", "KubeletHasSufficientPID"},
				v1.NodeReady:          {"True", "KubeletReady"},
			}
			for _, c := range s.Conditions {
				if w := want[c.Type]; string(c.Status) != w[0] || c.Reason != w[1] {
					t.Errorf("condition %s = %s %s, want %v", c.Type, c.Status, c.Reason, w)
				}
				delete(want, c.Type)
			}
			if len(want) > 0 {
				t.Errorf("missing conditions %v", want)
			}
		})
	}
}

func TestNodeReadyFollowsRuntime(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	node := fx.k.initialNode(context.Background())
	first := node.Status.Conditions[3]
	fx.clock.Step(time.Minute)
	fx.k.setNodeStatus(context.Background(), node)
	again := node.Status.Conditions[3]
	if !again.LastTransitionTime.Equal(&first.LastTransitionTime) || again.LastHeartbeatTime.Equal(&first.LastHeartbeatTime) {
		t.Errorf("unchanged Ready: transition %v→%v heartbeat %v→%v", first.LastTransitionTime, again.LastTransitionTime, first.LastHeartbeatTime, again.LastHeartbeatTime)
	}
	fx.rt.Fail(critest.OpListImages, errors.New("runtime is gone"))
	fx.clock.Step(time.Minute)
	fx.k.setNodeStatus(context.Background(), node)
	down := node.Status.Conditions[3]
	if down.Status != v1.ConditionFalse || down.Reason != "KubeletNotReady" || down.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("Ready with the runtime down = %+v", down)
	}
	if events := fx.drain(); !hasEvent(events, "Normal NodeNotReady Node node-1 status is now: NodeNotReady") {
		t.Errorf("events = %v", events)
	}
}

// TestNodeStatusReportFrequency: the status is written when it changed or
// when the last write is older than the frequency, not on every look.
func TestNodeStatusReportFrequency(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	ctx := context.Background()
	if err := fx.k.registerWithAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	freq := timing.NodeStatusUpdateFrequency
	patches := func() int {
		n := 0
		for _, a := range fx.client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	fx.clock.Step(time.Second)
	fx.k.updateNodeStatus(ctx, freq)
	if got := patches(); got != 0 {
		t.Errorf("%d writes of an unchanged, fresh status", got)
	}
	fx.rt.AddImage("new:v1")
	fx.k.updateNodeStatus(ctx, freq)
	if got := patches(); got != 1 {
		t.Errorf("%d writes after a change, want 1", got)
	}
	fx.clock.Step(freq)
	fx.k.updateNodeStatus(ctx, freq)
	if got := patches(); got != 2 {
		t.Errorf("%d writes after the frequency, want 2", got)
	}
	node, _ := fx.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	for _, c := range node.Status.Conditions {
		if !c.LastHeartbeatTime.Time.Equal(fx.clock.Now().Truncate(time.Second)) {
			t.Errorf("%s heartbeat = %v, want %v", c.Type, c.LastHeartbeatTime, fx.clock.Now())
		}
	}
}

func TestRegisterUpdatesExistingNode(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	ctx := context.Background()
	fx.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: testNode, UID: "old-uid", Labels: map[string]string{"kubernetes.io/hostname": "stale", "custom": "kept"},
	}}, metav1.CreateOptions{})
	if err := fx.k.registerWithAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	node, _ := fx.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if node.UID != "old-uid" || node.Labels["kubernetes.io/hostname"] != testNode || node.Labels["custom"] != "kept" {
		t.Errorf("node = %+v", node.ObjectMeta)
	}
	if fx.k.nodeUID() != "old-uid" {
		t.Errorf("node UID = %q", fx.k.nodeUID())
	}
}

func TestLease(t *testing.T) {
	tests := []struct {
		speed    timing.Speed
		duration int32
	}{{1, 40}, {4, 10}, {100, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("speed %v", tt.speed), func(t *testing.T) {
			fx := newFixture(t, critest.Options{})
			fx.k.cfg.Speed = tt.speed
			ctx := context.Background()
			lease, err := fx.k.renewLease(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *lease.Spec.HolderIdentity != testNode || *lease.Spec.LeaseDurationSeconds != tt.duration || lease.Namespace != "kube-node-lease" {
				t.Errorf("lease = %+v", lease)
			}
			if len(lease.OwnerReferences) != 0 {
				t.Errorf("owner before registration: %v", lease.OwnerReferences)
			}
			fx.k.node = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: types.UID("node-uid")}}
			fx.clock.Step(time.Second)
			renewed, err := fx.k.renewLease(ctx, lease)
			if err != nil {
				t.Fatal(err)
			}
			if !renewed.Spec.RenewTime.Time.Equal(fx.clock.Now()) {
				t.Errorf("renew time = %v", renewed.Spec.RenewTime)
			}
			want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: testNode, UID: "node-uid"}}
			if diff := cmp.Diff(want, renewed.OwnerReferences); diff != "" {
				t.Errorf("owner (-want +got):\n%s", diff)
			}
		})
	}
}
