package kubestate

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/runtime"
)

func TestNodeOf(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since.Add(time.Hour))}
	tests := []struct {
		name string
		node corev1.Node
		want Node
	}{
		{"worker", corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "worker-1"},
			Spec:       corev1.NodeSpec{PodCIDR: "10.244.2.0/24"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "worker-1"}, {Type: corev1.NodeInternalIP, Address: "127.0.0.21"}}},
		}, Node{Name: "worker-1", Role: runtime.RoleWorker, Ready: corev1.ConditionFalse, ReadyReason: "KubeletNotReady",
			ReadySince: since, PodCIDR: "10.244.2.0/24", InternalIP: "127.0.0.21"}},
		{"master by label", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-1",
			Labels: map[string]string{labelControlPlane: ""}}},
			Node{Name: "master-1", Role: runtime.RoleMaster}},
		{"master by taint only", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-2"},
			Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: labelControlPlane, Effect: corev1.TaintEffectNoSchedule}}}},
			Node{Name: "master-2", Role: runtime.RoleMaster, Unschedulable: true}},
		{"old master label", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{labelMaster: ""},
			DeletionTimestamp: ptr.To(metav1.NewTime(since))}},
			Node{Name: "m", Role: runtime.RoleMaster, Deleting: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeOf(&tt.node); got != tt.want {
				t.Errorf("nodeOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPodOfAndStatus(t *testing.T) {
	readyCond := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	}
	tests := []struct {
		name       string
		pod        corev1.Pod
		wantStatus PodStatus
		wantReason string
		restarts   int32
	}{
		{"running and ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyCond(corev1.ConditionTrue),
			ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 2}, {RestartCount: 1}}}}, PodRunning, "", 3},
		{"running, not ready, crash looping", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyCond(corev1.ConditionFalse),
			ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 5, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}, PodNotReady, "CrashLoopBackOff", 5},
		{"pending, creating", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}, PodPending, "ContainerCreating", 0},
		{"not yet scheduled", corev1.Pod{}, PodPending, "", 0},
		{"evicted", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, PodFailed, "Evicted", 0},
		{"failed container", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled"}}}}}}, PodFailed, "OOMKilled", 0},
		{"completed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}}}, PodSucceeded, "", 0},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyCond(corev1.ConditionTrue)}}, PodTerminating, "", 0},
		{"unknown", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodUnknown}}, PodUnknown, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pod.Namespace, tt.pod.Name, tt.pod.Spec.NodeName = "default", "web", "worker-1"
			p := podOf(&tt.pod)
			if p.Status() != tt.wantStatus || p.Reason != tt.wantReason || p.Restarts != tt.restarts {
				t.Errorf("podOf = %+v (status %d), want status %d, reason %q, restarts %d", p, p.Status(), tt.wantStatus, tt.wantReason, tt.restarts)
			}
			if p.Key() != "default/web" || p.Node != "worker-1" {
				t.Errorf("podOf lost the pod's identity: %+v", p)
			}
		})
	}
}

func TestLeaseOf(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseScheduler}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("master-2_0f8fad5b-d9cb-469f-a165-70867728950e"), LeaseTransitions: ptr.To[int32](3),
		AcquireTime: ptr.To(metav1.NewMicroTime(at)), RenewTime: ptr.To(metav1.NewMicroTime(at.Add(time.Minute)))}}
	want := Lease{Name: LeaseScheduler, Holder: "master-2_0f8fad5b-d9cb-469f-a165-70867728950e", Node: "master-2", Transitions: 3, AcquiredAt: at}
	if got := leaseOf(&l); got != want {
		t.Errorf("leaseOf = %+v, want %+v", got, want)
	}
	// A renewal is no change.
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(at.Add(2 * time.Minute)))
	if got := leaseOf(&l); got != want {
		t.Errorf("leaseOf after a renewal = %+v, want %+v", got, want)
	}
	if got := leaseOf(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); got.Node != "" {
		t.Errorf("a lease nobody holds has holder %q", got.Node)
	}
}

func TestProxyConfigOf(t *testing.T) {
	cfg := proxy.DefaultConfiguration()
	cfg.Mode, cfg.IPVS.Scheduler = "ipvs", "lc"
	cm, err := proxy.NewConfigMap(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := proxyConfigOf(cm); got != (ProxyConfig{Exists: true, Mode: "ipvs", IPVSScheduler: "lc"}) {
		t.Errorf("proxyConfigOf = %+v", got)
	}
	cfg.Mode = ""
	if cm, err = proxy.NewConfigMap(cfg); err != nil {
		t.Fatal(err)
	}
	if got := proxyConfigOf(cm); got.Mode != "iptables" {
		t.Errorf("a ConfigMap without a mode runs %q, want iptables", got.Mode)
	}
	cm.Data[proxy.ConfigMapKey] = "kind: Nonsense"
	if got := proxyConfigOf(cm); got.Err == "" || !got.Exists {
		t.Errorf("a bad ConfigMap reads as %+v, want an error", got)
	}
}

func TestStateOrderAndCounts(t *testing.T) {
	var s State
	for _, n := range []Node{{Name: "worker-10", Role: runtime.RoleWorker}, {Name: "master-2", Role: runtime.RoleMaster},
		{Name: "worker-2", Role: runtime.RoleWorker}, {Name: "master-1", Role: runtime.RoleMaster}} {
		s.SetNode(n)
	}
	var names []string
	for _, n := range s.Nodes() {
		names = append(names, n.Name)
	}
	if want := []string{"master-1", "master-2", "worker-2", "worker-10"}; !slices.Equal(names, want) {
		t.Errorf("Nodes() order = %v, want %v", names, want)
	}

	s.SetPod(Pod{Namespace: "default", Name: "a", Node: "worker-2", Phase: corev1.PodRunning, Ready: true})
	s.SetPod(Pod{Namespace: "default", Name: "b", Node: "worker-2", Phase: corev1.PodPending})
	s.SetPod(Pod{Namespace: "default", Name: "c", Phase: corev1.PodPending})
	v := s.Version()
	c := s.Counts("worker-2")
	if c[PodRunning] != 1 || c[PodPending] != 1 || c.Total() != 2 {
		t.Errorf("Counts(worker-2) = %v", c)
	}
	if u := s.Counts(""); u[PodPending] != 1 {
		t.Errorf("unscheduled pods = %v, want 1 pending", u)
	}
	// A pod moving on is counted where it is now.
	s.SetPod(Pod{Namespace: "default", Name: "b", Node: "worker-2", Phase: corev1.PodFailed})
	if s.Version() == v {
		t.Error("a change left the version as it was")
	}
	if c := s.Counts("worker-2"); c[PodFailed] != 1 || c[PodPending] != 0 {
		t.Errorf("after b failed: Counts(worker-2) = %v", c)
	}
	s.DeletePod("default/a")
	if all := s.AllCounts(); all.Total() != 2 || s.PodCount() != 2 {
		t.Errorf("after deleting a: %v, %d pods", all, s.PodCount())
	}
	s.DeleteNode("worker-10")
	if len(s.Nodes()) != 3 {
		t.Errorf("after deleting worker-10: %d nodes", len(s.Nodes()))
	}
}

func TestNaturalCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"worker-2", "worker-10", -1},
		{"worker-10", "worker-2", 1},
		{"worker-02", "worker-2", 0},
		{"a", "b", -1},
		{"worker", "worker-1", -1},
		{"worker-1", "worker-1", 0},
	}
	for _, tt := range tests {
		if got := NaturalCompare(tt.a, tt.b); got != tt.want {
			t.Errorf("NaturalCompare(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestApply(t *testing.T) {
	var s State
	s.Apply(UpdateMsg{changes: []change{
		{key: "node/worker-1", value: Node{Name: "worker-1", Ready: corev1.ConditionTrue}},
		{key: "pod/default/web", value: Pod{Namespace: "default", Name: "web", Node: "worker-1"}},
		{key: "lease/" + LeaseScheduler, value: Lease{Name: LeaseScheduler, Node: "master-1"}},
		{key: "proxy/worker-1", value: Proxy{Node: "worker-1", Mode: "ipvs", Reachable: true}},
		{key: keyConfig, value: ProxyConfig{Exists: true, Mode: "ipvs"}},
		{key: keyConn, value: Connection{Connected: true, Synced: true}},
	}})
	if n, ok := s.Node("worker-1"); !ok || !n.IsReady() {
		t.Errorf("node worker-1 = %+v, %v", n, ok)
	}
	if _, ok := s.Pod("default/web"); !ok {
		t.Error("pod default/web missing")
	}
	if s.LeaseHolder(LeaseScheduler) != "master-1" {
		t.Errorf("scheduler lease held by %q", s.LeaseHolder(LeaseScheduler))
	}
	if p, _ := s.Proxy("worker-1"); p.Mode != "ipvs" {
		t.Errorf("proxy = %+v", p)
	}
	if s.ProxyConfig.Mode != "ipvs" || !s.Conn.Synced {
		t.Errorf("config %+v, conn %+v", s.ProxyConfig, s.Conn)
	}
	s.Apply(UpdateMsg{changes: []change{
		{key: "pod/default/web", value: Pod{Namespace: "default", Name: "web"}, deleted: true},
		{key: "node/worker-1", value: Node{Name: "worker-1"}, deleted: true},
		{key: "lease/" + LeaseScheduler, value: Lease{Name: LeaseScheduler}, deleted: true},
	}})
	if s.PodCount() != 0 || len(s.Nodes()) != 0 || s.LeaseHolder(LeaseScheduler) != "" {
		t.Errorf("deletions not applied: %d pods, %d nodes, holder %q", s.PodCount(), len(s.Nodes()), s.LeaseHolder(LeaseScheduler))
	}
}
