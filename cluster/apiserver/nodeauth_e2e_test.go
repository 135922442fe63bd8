package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/internal/testenv"
)

// nodeClient is a kubelet's client: a certificate for system:node:<node>
// in system:nodes, signed by the cluster CA.
func nodeClient(t *testing.T, c *apiservertest.Cluster, node string) kubernetes.Interface {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := c.PKI.IssueClientCert(auth.NodeUser(node), []string{auth.NodesGroup}, key.Public(), 0)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: c.URL(0), TLSClientConfig: rest.TLSClientConfig{
		CAData: c.PKI.CAPEM, CertData: pki.EncodeCert(cert), KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestNodeAuthorizerAndRestriction runs two kubelets' clients, a and b,
// against a real API server: each reads only the secrets of its own pods
// (the Node authorizer), writes only its own Node (NodeRestriction), and
// kubectl auth can-i says the same.
func TestNodeAuthorizerAndRestriction(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	admin := adminClient(t, c)
	a, b := nodeClient(t, c, "a"), nodeClient(t, c, "b")

	// Each kubelet registers its own Node.
	for name, cs := range map[string]kubernetes.Interface{"a": a, "b": b} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node %s registers itself: %v", name, err)
		}
	}

	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "x"}, StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pod("default", "p", "a")
	p.Spec.Volumes = []corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := a.CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Errorf("node a reads the secret of its pod: %v", err)
	}
	_, err := b.CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`secrets "x" is forbidden: User "system:node:b" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'b' and this object`)
	_, err = a.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`secrets is forbidden: User "system:node:a" cannot list resource "secrets" in API group "" in the namespace "default": No Object name found`)
	// Both see every pod and node, through system:node's rules.
	if _, err := b.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("node b lists pods: %v", err)
	}

	// NodeRestriction: b may not touch a's Node, nor create a pod that is
	// not a mirror pod.
	_, err = b.CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `nodes "a" is forbidden: node "b" is not allowed to modify node "a"`)
	if _, err := a.CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("node a patches its own status: %v", err)
	}
	_, err = a.CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), metav1.PatchOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `nodes "a" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane`)
	_, err = b.CoreV1().Pods("default").Create(ctx, pod("default", "m", "b"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "m" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "b" can only create mirror pods`)
	_, err = b.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "p" is forbidden: node "b" can only update pod status for pods with spec.nodeName set to itself`)

	// kubectl auth can-i, impersonating each kubelet, tells the truth,
	// and a "no" carries the authorizer's reason as kubectl prints it.
	k := newKubectl(t, c, auth.AdminUser)
	for node, want := range map[string]string{"a": "yes", "b": "no - no relationship found between node 'b' and this object"} {
		res := k.run(ctx, t, nil, "auth", "can-i", "get", "secret/x", "--as="+auth.NodeUser(node), "--as-group="+auth.NodesGroup)
		if strings.TrimSpace(res.stdout) != want {
			t.Errorf("kubectl auth can-i get secret/x as node %s: %q (exit %d, %s); want %s", node, res.stdout, res.code, res.stderr, want)
		}
	}

	// The pod goes, and with it node a's access to the secret.
	if err := admin.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	_, err = a.CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`secrets "x" is forbidden: User "system:node:a" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'a' and this object`)
}
