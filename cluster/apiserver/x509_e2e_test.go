package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestClientCertificates signs a client certificate for jane in the group
// dev-team with the cluster CA and uses it instead of a token: the API
// server takes the common name as the user and the organizations as the
// groups, and RBAC decides the rest.
func TestClientCertificates(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	admin := adminClient(t, c)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := c.PKI.IssueClientCert("jane", []string{"dev-team"}, key.Public(), 0)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	jane, err := kubernetes.NewForConfig(&rest.Config{Host: c.URL(0), TLSClientConfig: rest.TLSClientConfig{
		CAData: c.PKI.CAPEM, CertData: pki.EncodeCert(cert), KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}})
	if err != nil {
		t.Fatal(err)
	}

	review, err := jane.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info := review.Status.UserInfo; info.Username != "jane" || !slices.Equal(info.Groups, []string{"dev-team", auth.AllAuthenticated}) {
		t.Errorf("whoami with the certificate: %+v; want jane in [dev-team system:authenticated]", info)
	}
	_, err = jane.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"`)

	// A binding to her certificate's group lets her in.
	_, err = admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-team-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: auth.ViewRole},
		Subjects:   []rbacv1.Subject{auth.Group("dev-team")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jane.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pods with the certificate after the group was bound to view: %v", err)
	}

	// A certificate from another CA is refused at the handshake.
	other, err := pki.Ensure(t.TempDir(), []string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := other.IssueClientCert(auth.AdminUser, []string{auth.SystemPrivilegedGroup}, key.Public(), 0)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := kubernetes.NewForConfig(&rest.Config{Host: c.URL(0), TLSClientConfig: rest.TLSClientConfig{
		CAData: c.PKI.CAPEM, CertData: pki.EncodeCert(forged), KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a certificate signed by another CA was accepted")
	}
}
