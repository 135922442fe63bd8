package auth

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeUser(name string) User {
	return User{Name: NodeUser(name), Groups: []string{NodesGroup, AllAuthenticated}}
}

func testPod(name, node string, rv string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: "web",
			Containers: []corev1.Container{{
				Name:    "c",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-" + name}}}},
			}},
			Volumes: []corev1.Volume{{
				Name:         "s",
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-" + name}},
			}},
		},
	}
}

func TestNodeAuthorizerDecisions(t *testing.T) {
	graph := NewNodeGraph()
	graph.SetPod(testPod("p1", "a", "10"))
	graph.SetPod(testPod("pending", "", "11"))
	// The chain as the API server builds it, with the default policy.
	authz := NewAuthorizerFor(DefaultPolicy()...)
	authz.UseNodeAuthorizer(NewNodeAuthorizer(graph))

	res := func(u User, verb, resource, sub, ns, name string) Attributes {
		return Attributes{User: u, Verb: verb, Resource: resource, Subresource: sub, Namespace: ns, Name: name, APIVersion: "v1", ResourceRequest: true}
	}
	a, b := nodeUser("a"), nodeUser("b")
	const noRelB = "no relationship found between node 'b' and this object"
	tests := []struct {
		name       string
		attrs      Attributes
		want       Decision
		wantReason string
	}{
		{"own pod's secret", res(a, "get", "secrets", "", "default", "secret-p1"), DecisionAllow, `Node: allowed by pod "default/p1" bound to node "a"`},
		{"own pod's secret, watched by name", res(a, "watch", "secrets", "", "default", "secret-p1"), DecisionAllow, `Node: allowed by pod "default/p1" bound to node "a"`},
		{"own pod's configmap", res(a, "get", "configmaps", "", "default", "env-p1"), DecisionAllow, `Node: allowed by pod "default/p1" bound to node "a"`},
		{"other node's secret", res(b, "get", "secrets", "", "default", "secret-p1"), DecisionDeny, noRelB},
		{"unbound pod's secret", res(a, "get", "secrets", "", "default", "secret-pending"), DecisionDeny, "no relationship found between node 'a' and this object"},
		{"list every secret", res(a, "list", "secrets", "", "default", ""), DecisionDeny, "No Object name found"},
		{"write a secret", res(a, "update", "secrets", "", "default", "secret-p1"), DecisionDeny, "can only read resources of this type"},
		{"own pod's token", res(a, "create", "serviceaccounts", "token", "default", "web"), DecisionAllow, `Node: allowed by pod "default/p1" bound to node "a"`},
		{"other node's token", res(b, "create", "serviceaccounts", "token", "default", "web"), DecisionDeny, noRelB},
		{"get a service account", res(a, "get", "serviceaccounts", "", "default", "web"), DecisionDeny, "can only create tokens for individual service accounts"},
		{"own lease", Attributes{User: a, Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: NodeLeaseNamespace, Name: "a", ResourceRequest: true}, DecisionAllow, `Node: allowed: the lease of node "a"`},
		{"other lease", Attributes{User: b, Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: NodeLeaseNamespace, Name: "a", ResourceRequest: true}, DecisionDeny, "can only access node lease with the same name as the requesting node"},
		{"pods cluster-wide", res(b, "list", "pods", "", "", ""), DecisionAllow, `Node: allowed by the system:node rules for node "b"`},
		{"nodes cluster-wide", res(b, "get", "nodes", "", "", "a"), DecisionAllow, `Node: allowed by the system:node rules for node "b"`},
		{"node may not delete a namespace", res(a, "delete", "namespaces", "", "", "default"), DecisionDeny, ""},
		{"not in system:nodes: RBAC alone", res(User{Name: "system:node:a", Groups: []string{AllAuthenticated}}, "get", "secrets", "", "default", "secret-p1"), DecisionDeny, ""},
		{"unknown node", res(User{Name: "kubelet", Groups: []string{NodesGroup}}, "get", "secrets", "", "default", "secret-p1"), DecisionDeny, ""},
		{"admin passes to RBAC", res(User{Name: AdminUser, Groups: []string{SystemPrivilegedGroup}}, "get", "secrets", "", "default", "x"), DecisionAllow, `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := authz.Authorize(tt.attrs)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("Authorize = %v, %q; want %v, %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}

	// The pod goes: so does every edge it made.
	graph.DeletePod(testPod("p1", "a", "12"))
	if d, reason := authz.Authorize(res(a, "get", "secrets", "", "default", "secret-p1")); d != DecisionDeny || reason != "no relationship found between node 'a' and this object" {
		t.Errorf("after delete: %v %q", d, reason)
	}
	// A watch event older than the deletion does not bring it back.
	graph.SetPod(testPod("p1", "a", "11"))
	if d, _ := authz.Authorize(res(a, "get", "secrets", "", "default", "secret-p1")); d != DecisionDeny {
		t.Errorf("a stale event brought the pod back")
	}
	// The pending pod is bound: its secret becomes readable by its node.
	graph.SetPod(testPod("pending", "b", "13"))
	if d, _ := authz.Authorize(res(b, "get", "secrets", "", "default", "secret-pending")); d != DecisionAllow {
		t.Errorf("bound pod's secret not allowed")
	}
}

func TestNodeGraphSharedObjects(t *testing.T) {
	graph := NewNodeGraph()
	graph.SetPod(testPod("p1", "a", "1"))
	p2 := testPod("p2", "a", "2")
	p2.Spec.Volumes[0].Secret.SecretName = "secret-p1"
	graph.SetPod(p2)
	graph.DeletePod(testPod("p1", "a", "3"))
	if pod, ok := graph.PathFrom("a", SecretVertex, "default", "secret-p1"); !ok || pod != "default/p2" {
		t.Errorf("secret shared by p2 lost with p1: %q %v", pod, ok)
	}
	graph.ReplacePods(nil)
	if _, ok := graph.PathFrom("a", SecretVertex, "default", "secret-p1"); ok {
		t.Error("relist without pods kept an edge")
	}
}

func TestPodReferences(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			InitContainers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}},
			}}}}},
			Volumes: []corev1.Volume{
				{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
		},
	}
	got := PodReferences(pod)
	want := []PodReference{
		{SecretVertex, "ns", "pull"}, {SecretVertex, "ns", "init-env"}, {ConfigMapVertex, "ns", "kube-root-ca.crt"},
		{PVCVertex, "ns", "claim"}, {PVCVertex, "ns", "p-scratch"},
	}
	if len(got) != len(want) {
		t.Fatalf("PodReferences = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("PodReferences[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestNodeIdentity(t *testing.T) {
	for _, tt := range []struct {
		u      User
		node   string
		isNode bool
	}{
		{nodeUser("a"), "a", true},
		{User{Name: "system:node:a"}, "", false},
		{User{Name: "jane", Groups: []string{NodesGroup}}, "", false},
		{User{Name: "system:node:", Groups: []string{NodesGroup}}, "", true},
	} {
		if node, isNode := NodeIdentity(tt.u); node != tt.node || isNode != tt.isNode {
			t.Errorf("NodeIdentity(%v) = %q, %v", tt.u, node, isNode)
		}
	}
}
