package printers

import (
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// CSRs print NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION, as
// upstream's certificate printer does.
var csrColumns = []metav1.TableColumnDefinition{
	nameColumn,
	ageColumn,
	column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
	column("Requestor", "string", "Name of the user who created the request"),
	column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
	column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
}

func printCSR(csr *certificatesv1.CertificateSigningRequest, now time.Time) metav1.TableRow {
	requested := "<none>"
	if csr.Spec.ExpirationSeconds != nil {
		requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
	}
	return cells(csr.Name, age(csr.CreationTimestamp, now), csr.Spec.SignerName, csr.Spec.Username, requested, csrCondition(csr))
}

// csrCondition sums up a CSR: Approved, Denied or Failed as its conditions
// say, Pending when none does, and Issued once it holds a certificate.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			parts = append(parts, string(c.Type))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "Pending")
	}
	if len(csr.Status.Certificate) > 0 {
		parts = append(parts, "Issued")
	}
	return strings.Join(parts, ",")
}
