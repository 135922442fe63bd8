package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// testMirrorPods runs a control-plane kubelet, master-1, with an etcd
// static pod whose health the test switches.
func testMirrorPods(t *testing.T, tc *testCluster) {
	ctx := context.Background()
	var healthy atomic.Bool
	healthy.Store(true)
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "not ok", http.StatusServiceUnavailable)
		}
	}))
	defer health.Close()
	tlsCfg, _ := tc.pki.ServerTLSConfig()
	k, err := New(Config{
		// master-1's own identity: NodeRestriction lets a kubelet
		// register only its own Node.
		NodeName: "master-1", REST: tc.restConfig(auth.NodeUser("master-1")), Runtime: testRuntime(), Speed: testSpeed, ControlPlane: true,
		NodeIP: "127.0.0.1", Listen: "127.0.0.1:0", TLS: tlsCfg,
		StaticPods: []StaticPod{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.0-0", HealthURL: health.URL + "/health",
			Ports: []v1.ContainerPort{{Name: "client", ContainerPort: 2379}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := k.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	defer k.Kill()

	node, err := tc.admin.CoreV1().Nodes().Get(ctx, "master-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Labels[labelControlPlane]; ok || len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != labelControlPlane {
		t.Errorf("master node labels %v taints %v", node.Labels, node.Spec.Taints)
	}

	mirror := func() *v1.Pod {
		p, err := tc.admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-master-1", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	var pod *v1.Pod
	eventually(t, "mirror pod Ready", func() (bool, string) {
		pod = mirror()
		if pod == nil {
			return false, "no mirror pod"
		}
		return podIsReady(pod) && pod.Status.Phase == v1.PodRunning, fmt.Sprint(pod.Status)
	})
	if pod.Annotations[annotationConfigMirror] == "" || pod.Annotations[annotationConfigMirror] != pod.Annotations[annotationConfigHash] ||
		pod.Annotations[annotationConfigSource] != "file" || pod.Labels["component"] != "etcd" || pod.Labels["tier"] != "control-plane" {
		t.Errorf("mirror pod metadata = %+v", pod.ObjectMeta)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "Node" || pod.OwnerReferences[0].UID != node.UID {
		t.Errorf("owner = %+v", pod.OwnerReferences)
	}
	if pod.Spec.PriorityClassName != systemNodeCritical || pod.Spec.Priority == nil || *pod.Spec.Priority != systemNodeCriticalPriority || !pod.Spec.HostNetwork {
		t.Errorf("spec priority %q %v hostNetwork %v", pod.Spec.PriorityClassName, pod.Spec.Priority, pod.Spec.HostNetwork)
	}

	healthy.Store(false)
	eventually(t, "mirror pod not Ready", func() (bool, string) {
		p := mirror()
		if p == nil {
			return false, "gone"
		}
		cs := p.Status.ContainerStatuses[0]
		return !podIsReady(p) && cs.State.Terminated != nil && cs.State.Terminated.Reason == "Error", fmt.Sprint(cs.State)
	})
	healthy.Store(true)
	eventually(t, "mirror pod back with a restart", func() (bool, string) {
		p := mirror()
		if p == nil {
			return false, "gone"
		}
		cs := p.Status.ContainerStatuses[0]
		return podIsReady(p) && cs.RestartCount == 1 && cs.LastTerminationState.Terminated != nil, fmt.Sprint(cs)
	})

	if err := tc.admin.CoreV1().Pods("kube-system").Delete(ctx, "etcd-master-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "mirror pod recreated", func() (bool, string) {
		p := mirror()
		if p == nil {
			return false, "gone"
		}
		return p.UID != pod.UID && p.DeletionTimestamp == nil, string(p.UID)
	})
}
