package lab

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/internal/testenv"
)

// TestClusterCredentials checks, on a running cluster, what the
// controller manager does with the cluster CA and the API server with the
// service-account key: kube-root-ca.crt published in every namespace, an
// approved CSR signed by the CA, and a TokenRequest's token accepted.
func TestClusterCredentials(t *testing.T) {
	testenv.EndToEnd(t)
	checkCredentials(t, startLoopCluster(t, 1, 0, 1))
}

// TestDockerClusterCredentials checks the same on Docker, where each
// component's container holds its own copy of the PKI.
func TestDockerClusterCredentials(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "kt")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	checkCredentials(t, f)
	if _, err := Down(ctx, name, false, nil); err != nil {
		t.Errorf("Down: %v", err)
	}
}

func checkCredentials(t *testing.T, f *loopFixture) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", f.c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ca := cfg.TLSClientConfig.CAData

	f.eventually(30*time.Second, "kube-root-ca.crt in default", func() (bool, error) {
		cm, err := f.client.CoreV1().ConfigMaps("default").Get(f.ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return bytes.Equal([]byte(cm.Data["ca.crt"]), ca), nil
	})

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := f.client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(f.ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApprove",
	})
	if _, err := csrs.UpdateApproval(f.ctx, "jane", csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var certPEM []byte
	f.eventually(30*time.Second, "jane's certificate", func() (bool, error) {
		got, err := csrs.Get(f.ctx, "jane", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		certPEM = got.Status.Certificate
		return len(certPEM) > 0, nil
	})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	whoami := func(cfg *rest.Config) string {
		t.Helper()
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(f.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("whoami: %v", err)
		}
		return review.Status.UserInfo.Username
	}
	if got := whoami(&rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: ca, CertData: certPEM, KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}}); got != "jane" {
		t.Errorf("with the signed certificate whoami says %q, want jane", got)
	}

	token, err := f.client.CoreV1().ServiceAccounts("default").CreateToken(f.ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := whoami(&rest.Config{Host: cfg.Host, BearerToken: token.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); got != "system:serviceaccount:default:default" {
		t.Errorf("with the token whoami says %q, want system:serviceaccount:default:default", got)
	}
}
