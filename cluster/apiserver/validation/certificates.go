package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The three subresources of a CertificateSigningRequest each change
// something different, and upstream validates each write with its own
// allowance.
type csrWrite int

const (
	csrWriteMain     csrWrite = iota // metadata only
	csrWriteStatus                   // the signer: status.certificate and its own conditions
	csrWriteApproval                 // the approver: Approved and Denied
)

// allKeyUsages are the usages a CSR may ask for (upstream's KeyUsage
// constants).
var allKeyUsages = []string{
	"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
	"ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
	"server auth", "signing", "timestamping",
}

// csrNameAnything accepts every name: upstream does not care what a CSR
// is called.
func csrNameAnything(string, bool) []string { return nil }

// ParseCSR returns the PKCS #10 request in PEM data, as the API server and
// the signer read spec.request.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := validateObjectMeta(&csr.ObjectMeta, false, csrNameAnything)
	spec := field.NewPath("spec")
	if req, err := ParseCSR(csr.Spec.Request); err != nil {
		allErrs = append(allErrs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	} else if err := req.CheckSignature(); err != nil {
		allErrs = append(allErrs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		allErrs = append(allErrs, field.Required(spec.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !slices.Contains(allKeyUsages, string(u)) {
			allErrs = append(allErrs, field.NotSupported(spec.Child("usages").Index(i), u, allKeyUsages))
		}
		if seen[u] {
			allErrs = append(allErrs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == "kubernetes.io/legacy-unknown" {
		allErrs = append(allErrs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		allErrs = append(allErrs, validateSignerName(csr.Spec.SignerName, spec.Child("signerName"))...)
	}
	if exp := csr.Spec.ExpirationSeconds; exp != nil && *exp < 600 {
		allErrs = append(allErrs, field.Invalid(spec.Child("expirationSeconds"), *exp, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	allErrs = append(allErrs, validateCSRConditions(csr.Status.Conditions, field.NewPath("status", "conditions"))...)
	if err := validateCertificateChain(csr.Status.Certificate); err != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
	}
	return allErrs
}

// validateSignerName checks the <domain>/<path> form of a signer's name.
func validateSignerName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || domain == "" || path == "" || strings.HasSuffix(path, "/") {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	return validateDNS1123Subdomain(domain, fldPath)
}

// trueOnlyConditions may only be True: their absence says the opposite.
var trueOnlyConditions = []certificatesv1.RequestConditionType{
	certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed,
}

func validateCSRConditions(conditions []certificatesv1.CertificateSigningRequestCondition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range conditions {
		p := fldPath.Index(i)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(p.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		if slices.Contains(trueOnlyConditions, c.Type) {
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			allErrs = append(allErrs, field.Required(p.Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			allErrs = append(allErrs, field.NotSupported(p.Child("status"), c.Status, allowed))
		}
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			if denied {
				allErrs = append(allErrs, field.Invalid(p.Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
			}
		case certificatesv1.CertificateDenied:
			denied = true
			if approved {
				allErrs = append(allErrs, field.Invalid(p.Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
			}
		}
		if seen[c.Type] {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return allErrs
}

// validateCertificateChain checks status.certificate: empty, or only
// CERTIFICATE blocks without headers, each holding a certificate.
func validateCertificateChain(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRWrite(csr, old, csrWriteMain)
}

func validateCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRWrite(csr, old, csrWriteStatus)
}

// ValidateCSRApprovalUpdate returns upstream's field errors for a write to
// a CertificateSigningRequest's approval subresource.
func ValidateCSRApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRWrite(csr, old, csrWriteApproval)
}

func validateCSRWrite(csr, old *certificatesv1.CertificateSigningRequest, write csrWrite) field.ErrorList {
	allErrs := validateCSR(csr)
	conditions := field.NewPath("status", "conditions")
	for _, t := range trueOnlyConditions {
		if len(conditionsOf(csr, t)) < len(conditionsOf(old, t)) {
			allErrs = append(allErrs, field.Forbidden(conditions, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if write != csrWriteApproval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			now, before := conditionsOf(csr, t), conditionsOf(old, t)
			switch {
			case len(now) < len(before):
				// reported above
			case len(now) > len(before):
				allErrs = append(allErrs, field.Forbidden(conditions, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !equality.Semantic.DeepEqual(now, before):
				allErrs = append(allErrs, field.Forbidden(conditions, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		switch {
		case write != csrWriteStatus:
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return append(allErrs, validateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta)...)
}

func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}
