package apiserverbench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
)

// BenchmarkCreateRBAC: one ConfigMap create at a time by a user who is
// not in system:masters: an x509 user allowed by a RoleBinding to the
// ClusterRole edit in a namespace that holds n RoleBindings in all (the
// others each binding a user of their own), so that RBAC looks through a
// namespace of bindings before it allows. Against BenchmarkCreate's
// kubernetes-admin (allowed by the cluster-admin binding of its group),
// the difference is what RBAC costs a write.
func BenchmarkCreateRBAC(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run("rolebindings="+strconv.Itoa(n), func(b *testing.B) {
			c := apiservertest.New(b, apiservertest.Options{})
			admin := c.Client()
			ctx := b.Context()
			if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}
			if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				user := fmt.Sprintf("other-%d", i)
				if i == n-1 {
					user = "bench-user"
				}
				rb := &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "edit-" + user, Namespace: namespace},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
					Subjects:   []rbacv1.Subject{auth.UserSubject(user)},
				}
				if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			cs := userClient(b, c, "bench-user")
			// The authorizer follows the policy through a watch: wait
			// until the last binding is in force.
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, configMap("warm-up"), metav1.CreateOptions{})
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("bench-user still refused: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			var lat latencies
			i := 0
			for b.Loop() {
				start := time.Now()
				_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, configMap("cm-"+strconv.Itoa(i)), metav1.CreateOptions{})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			lat.report(b)
		})
	}
}

// userClient is a client of user with a client certificate the cluster CA
// signed, as a CSR approved for a new user gives one.
func userClient(b *testing.B, c *apiservertest.Cluster, user string) kubernetes.Interface {
	b.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := c.PKI.IssueClientCert(user, nil, key.Public(), 0)
	if err != nil {
		b.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		b.Fatal(err)
	}
	cfg := &rest.Config{Host: c.URL(0), QPS: 1000, Burst: 1000, TLSClientConfig: rest.TLSClientConfig{
		CAData: c.PKI.CAPEM, CertData: pki.EncodeCert(cert), KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
	}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}
