package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/csrsigning"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestKubectlCertificateSigningRequest walks the CKA's path for a new
// user with the real kubectl: a key and CSR for jane, the request
// submitted, approved with kubectl certificate approve and signed by the
// controller manager's signer, the certificate put in a kubeconfig, and
// jane getting upstream's 403 until a Role is bound to her.
func TestKubectlCertificateSigningRequest(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 3*testTimeout)
	k := newKubectl(t, c, auth.AdminUser)
	startSigner(ctx, t, c)
	dir := t.TempDir()

	janeKey := writeCSR(t, dir, "jane", []string{"dev-team"}, "client auth", 24*3600)
	wantLines(t, "create csr", k.ok(ctx, t, "create", "-f", filepath.Join(dir, "jane-csr.yaml")),
		"certificatesigningrequest.certificates.k8s.io/jane created")
	tables := parseTables(k.ok(ctx, t, "get", "csr"))
	if len(tables) != 1 {
		t.Fatalf("kubectl get csr printed %+v", tables)
	}
	tb := tables[0]
	if got := strings.Join(tb.header, "|"); got != "NAME|AGE|SIGNERNAME|REQUESTOR|REQUESTEDDURATION|CONDITION" {
		t.Errorf("csr columns %s", got)
	}
	if r := tb.row("jane"); tb.column(r, "REQUESTOR") != auth.AdminUser || tb.column(r, "CONDITION") != "Pending" ||
		tb.column(r, "SIGNERNAME") != "kubernetes.io/kube-apiserver-client" || tb.column(r, "REQUESTEDDURATION") != "24h" {
		t.Errorf("csr row %v; want kubernetes-admin, Pending, the client signer and 24h", r)
	}

	// Only an approver of the signer may approve.
	res := newKubectl(t, c, auth.ViewerUser).run(ctx, t, nil, "certificate", "approve", "jane")
	if res.code != 1 || !strings.Contains(res.stderr, "Forbidden") && !strings.Contains(res.stderr, "forbidden") {
		t.Errorf("certificate approve as the viewer: exit %d stderr %q; want a 403", res.code, res.stderr)
	}
	wantLines(t, "approve", k.ok(ctx, t, "certificate", "approve", "jane"),
		"certificatesigningrequest.certificates.k8s.io/jane approved")
	certPEM := waitCertificate(ctx, t, k, "jane")
	if r := parseTables(k.ok(ctx, t, "get", "csr", "jane"))[0]; r.column(r.row("jane"), "CONDITION") != "Approved,Issued" {
		t.Errorf("after signing: %v; want Approved,Issued", r.rows)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("status.certificate %q is not PEM", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "jane" || strings.Join(cert.Subject.Organization, ",") != "dev-team" {
		t.Errorf("certificate subject %v; want CN=jane O=dev-team", cert.Subject)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 24*time.Hour || life > 24*time.Hour+10*time.Minute {
		t.Errorf("certificate lives %v; want the 24h asked for (plus the backdating)", life)
	}
	if err := cert.CheckSignatureFrom(c.PKI.CACert); err != nil {
		t.Errorf("certificate not signed by the cluster CA: %v", err)
	}

	// A kubeconfig for jane, made with kubectl config as a student does.
	if err := os.WriteFile(filepath.Join(dir, "jane.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	jane := &kubectlUser{kubeconfig: c.WriteKubeconfig(0, auth.AdminUser), home: t.TempDir()}
	jane.ok(ctx, t, "config", "set-credentials", "jane", "--client-certificate="+filepath.Join(dir, "jane.crt"),
		"--client-key="+janeKey, "--embed-certs=true")
	jane.ok(ctx, t, "config", "set-context", "--current", "--user=jane")

	out := jane.ok(ctx, t, "auth", "whoami")
	wantMatch(t, "whoami as jane", out, `(?m)^Username\s+jane$`, `(?m)^Groups\s+\[dev-team system:authenticated\]$`)
	res = jane.run(ctx, t, nil, "get", "pods", "-n", "dev")
	if want := `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "dev"`; res.code != 1 || !strings.Contains(res.stderr, want) {
		t.Errorf("get pods as jane before the binding: exit %d stderr %q; want %q", res.code, res.stderr, want)
	}
	k.ok(ctx, t, "create", "namespace", "dev")
	k.ok(ctx, t, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", "dev")
	k.ok(ctx, t, "create", "rolebinding", "jane-reads-pods", "--role=pod-reader", "--user=jane", "-n", "dev")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "-n", "dev"}, "yes"},
		{[]string{"list", "pods", "-n", "dev"}, "yes"},
		{[]string{"delete", "pods", "-n", "dev"}, "no"},
		{[]string{"get", "pods", "-n", "default"}, "no"},
	} {
		res := jane.run(ctx, t, nil, append([]string{"auth", "can-i"}, tc.args...)...)
		if strings.TrimSpace(res.stdout) != tc.want {
			t.Errorf("auth can-i %s as jane: %q (exit %d, %q); want %s", strings.Join(tc.args, " "), res.stdout, res.code, res.stderr, tc.want)
		}
	}
	if res := jane.run(ctx, t, nil, "get", "pods", "-n", "dev"); res.code != 0 {
		t.Errorf("get pods as jane after the binding: exit %d stderr %q", res.code, res.stderr)
	}
	res = jane.run(ctx, t, nil, "delete", "pod", "x", "-n", "dev")
	if want := `pods "x" is forbidden: User "jane" cannot delete resource "pods" in API group "" in the namespace "dev"`; res.code != 1 || !strings.Contains(res.stderr, want) {
		t.Errorf("delete pod as jane: exit %d stderr %q; want %q", res.code, res.stderr, want)
	}

	t.Run("deny", func(t *testing.T) {
		writeCSR(t, dir, "bob", nil, "client auth", 0)
		k.ok(ctx, t, "create", "-f", filepath.Join(dir, "bob-csr.yaml"))
		wantLines(t, "deny", k.ok(ctx, t, "certificate", "deny", "bob"), "certificatesigningrequest.certificates.k8s.io/bob denied")
		tb := parseTables(k.ok(ctx, t, "get", "csr", "bob"))[0]
		if got := tb.column(tb.row("bob"), "CONDITION"); got != "Denied" {
			t.Errorf("bob's condition %q; want Denied", got)
		}
		// kubectl refuses to approve a denied request, and the server
		// does too when kubectl is forced.
		res := k.run(ctx, t, nil, "certificate", "approve", "bob")
		if res.code != 1 || !strings.Contains(res.stderr, `certificate signing request "bob" is already Denied`) {
			t.Errorf("approve after deny: exit %d stderr %q", res.code, res.stderr)
		}
		admin := adminClient(t, c)
		bob, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "bob", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bob.Status.Conditions = append(bob.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		})
		_, err = admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "bob", bob, metav1.UpdateOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CertificateSigningRequest.certificates.k8s.io "bob" is invalid: status.conditions[1].type: Invalid value: "Approved": Approved and Denied conditions are mutually exclusive`)
		// Nor can the signer's status write approve it.
		_, err = admin.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, bob, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), `updates may not add a condition of type "Approved"`) {
			t.Errorf("approve through /status: %v", err)
		}
	})

	t.Run("signer refuses a server certificate", func(t *testing.T) {
		writeCSR(t, dir, "web", nil, "server auth", 0)
		k.ok(ctx, t, "create", "-f", filepath.Join(dir, "web-csr.yaml"))
		k.ok(ctx, t, "certificate", "approve", "web")
		deadline := time.Now().Add(testTimeout)
		for {
			out := k.ok(ctx, t, "get", "csr", "web", "-o", `jsonpath={range .status.conditions[?(@.type=="Failed")]}{.reason}: {.message}{end}`)
			if out == "SignerValidationFailure: invalid usage for client certificate: server auth" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("web's Failed condition: %q", out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("validation", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		manifest := csrManifest("bad", []byte("not a request"), "client auth", 300)
		if err := os.WriteFile(bad, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		res := k.run(ctx, t, nil, "create", "-f", bad)
		for _, want := range []string{
			"PEM block type must be CERTIFICATE REQUEST",
			"spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 600 seconds (10 minutes)",
		} {
			if res.code != 1 || !strings.Contains(res.stderr, want) {
				t.Errorf("create a bad csr: exit %d stderr %q; want %q", res.code, res.stderr, want)
			}
		}
	})
}

// startSigner runs the CSR signer as the controller manager does, as
// system:kube-controller-manager under its bootstrap role.
func startSigner(ctx context.Context, t *testing.T, c *apiservertest.Cluster) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(0, auth.KubeControllerManager))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := c.PKI.CAKey()
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	signer, err := csrsigning.New(cs, factory.Certificates().V1().CertificateSigningRequests(), c.PKI.CACert, caKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { signer.Run(ctx, 1); close(done) }()
	t.Cleanup(func() {
		<-done
		factory.Shutdown()
	})
}

// writeCSR makes a key and a CSR for user in groups and writes the key
// and a CertificateSigningRequest manifest (<user>-csr.yaml) into dir; it
// returns the key's path.
func writeCSR(t *testing.T, dir, user string, groups []string, usage string, expirationSeconds int) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: groups}}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, user+".key")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, user+"-csr.yaml"), []byte(csrManifest(user, request, usage, expirationSeconds)), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyPath
}

func csrManifest(name string, request []byte, usage string, expirationSeconds int) string {
	m := fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: %s
spec:
  request: %s
  signerName: kubernetes.io/kube-apiserver-client
  usages:
  - %s
`, name, base64.StdEncoding.EncodeToString(request), usage)
	if expirationSeconds > 0 {
		m += fmt.Sprintf("  expirationSeconds: %d\n", expirationSeconds)
	}
	return m
}

// waitCertificate waits for the signer to fill in the CSR's certificate.
func waitCertificate(ctx context.Context, t *testing.T, k *kubectlUser, name string) []byte {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		out := k.ok(ctx, t, "get", "csr", name, "-o", "jsonpath={.status.certificate}")
		if out != "" {
			data, err := base64.StdEncoding.DecodeString(out)
			if err != nil {
				t.Fatalf("status.certificate %q: %v", out, err)
			}
			return data
		}
		if time.Now().After(deadline) {
			t.Fatalf("csr %s was not signed within %v", name, testTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
