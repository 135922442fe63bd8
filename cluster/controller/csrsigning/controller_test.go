package csrsigning

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

func testCA(t *testing.T, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func request(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"dev-team"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func condition(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: v1.ConditionTrue}
}

func ptr[T any](v T) *T { return &v }

// TestSync runs one sync per case and checks what the signer wrote.
func TestSync(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ca, caKey := testCA(t, now)
	approved := []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved)}
	cases := []struct {
		name       string
		signer     string
		usages     []certificatesv1.KeyUsage
		conditions []certificatesv1.CertificateSigningRequestCondition
		expiration *int32
		request    []byte
		// wantLife is the certificate's lifetime from now; 0 means no
		// certificate.
		wantLife time.Duration
		// wantFailed is the message of the Failed condition written.
		wantFailed string
		// wantNoWrite: the request is left alone.
		wantNoWrite bool
	}{
		{name: "approved is signed for a year", conditions: approved, wantLife: DefaultDuration},
		{name: "expirationSeconds honoured", conditions: approved, expiration: ptr[int32](3600), wantLife: time.Hour},
		{name: "less than ten minutes is ten", conditions: approved, expiration: ptr[int32](60), wantLife: 10 * time.Minute},
		{name: "more than the signer's duration is cut", conditions: approved, expiration: ptr[int32](1 << 30), wantLife: DefaultDuration},
		{name: "optional usages", conditions: approved, usages: []certificatesv1.KeyUsage{"digital signature", "key encipherment", "client auth"}, wantLife: DefaultDuration},
		{name: "pending is left", wantNoWrite: true},
		{name: "denied is left", conditions: []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateDenied)}, wantNoWrite: true},
		{name: "another signer's is left", conditions: approved, signer: "example.com/other", wantNoWrite: true},
		{name: "server auth refused", conditions: approved, usages: []certificatesv1.KeyUsage{"server auth"},
			wantFailed: "invalid usage for client certificate: server auth"},
		{name: "client auth required", conditions: approved, usages: []certificatesv1.KeyUsage{"digital signature"},
			wantFailed: "missing required usage for client certificate: client auth"},
		{name: "unparsable request refused", conditions: approved, request: []byte("junk"),
			wantFailed: "unable to parse csr: PEM block type must be CERTIFICATE REQUEST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "jane"},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request: tc.request, SignerName: SignerName, Usages: tc.usages, ExpirationSeconds: tc.expiration,
				},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: tc.conditions},
			}
			if csr.Spec.Request == nil {
				csr.Spec.Request = request(t, "jane")
			}
			if tc.signer != "" {
				csr.Spec.SignerName = tc.signer
			}
			if csr.Spec.Usages == nil {
				csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
			}
			client := fake.NewClientset(csr)
			factory := informers.NewSharedInformerFactory(client, 0)
			csrs := factory.Certificates().V1().CertificateSigningRequests()
			c, err := New(client, csrs, ca, caKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.now = func() time.Time { return now }
			if err := csrs.Informer().GetIndexer().Add(csr); err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			if err := c.sync(context.Background(), "jane"); err != nil {
				t.Fatal(err)
			}
			var written *certificatesv1.CertificateSigningRequest
			for _, a := range client.Actions() {
				if u, ok := a.(core.UpdateAction); ok && a.GetSubresource() == "status" {
					written = u.GetObject().(*certificatesv1.CertificateSigningRequest)
				}
			}
			if tc.wantNoWrite {
				if len(client.Actions()) != 0 {
					t.Fatalf("actions %v; want none", client.Actions())
				}
				return
			}
			if written == nil {
				t.Fatalf("no status update among %v", client.Actions())
			}
			if tc.wantFailed != "" {
				last := written.Status.Conditions[len(written.Status.Conditions)-1]
				if last.Type != certificatesv1.CertificateFailed || last.Reason != "SignerValidationFailure" || last.Message != tc.wantFailed {
					t.Errorf("condition %+v; want Failed SignerValidationFailure %q", last, tc.wantFailed)
				}
				if len(written.Status.Certificate) != 0 {
					t.Error("a refused request got a certificate")
				}
				return
			}
			block, _ := pem.Decode(written.Status.Certificate)
			if block == nil {
				t.Fatalf("status.certificate %q is not PEM", written.Status.Certificate)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := cert.CheckSignatureFrom(ca); err != nil {
				t.Errorf("not signed by the CA: %v", err)
			}
			if got := cert.NotAfter.Sub(now); got != tc.wantLife {
				t.Errorf("certificate ends %v from now; want %v", got, tc.wantLife)
			}
			if !cert.NotBefore.Equal(now.Add(-backdate)) {
				t.Errorf("NotBefore %v; want %v", cert.NotBefore, now.Add(-backdate))
			}
			if cert.Subject.CommonName != "jane" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "dev-team" {
				t.Errorf("subject %v", cert.Subject)
			}
			if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || cert.IsCA {
				t.Errorf("ext key usage %v, CA %v; want client auth only", cert.ExtKeyUsage, cert.IsCA)
			}
		})
	}
}
