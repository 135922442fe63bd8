package apiserver

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// CertificateSigningRequests follow upstream's strategies: the server
// records who asked, the main resource changes only metadata, /approval
// only the Approved and Denied conditions, /status the signer's result;
// and the CertificateApproval and CertificateSigning admission plugins
// require the approve or sign verb on the request's signer.

// setRequester records the requesting user in a new CSR's spec, as
// upstream's PrepareForCreate does; what the client wrote there is not
// believed.
func setRequester(csr *certificatesv1.CertificateSigningRequest, user auth.User) {
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = user.Name, user.UID, append([]string(nil), user.Groups...)
	csr.Spec.Extra = nil
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// prepareCSRUpdate keeps what the write's endpoint may not change and
// stamps new conditions.
func prepareCSRUpdate(sub string, csr, current *certificatesv1.CertificateSigningRequest) {
	csr.Spec = current.Spec
	switch sub {
	case "":
		csr.Status = current.Status
	case registry.SubApproval:
		conditions := csr.Status.Conditions
		csr.Status = *current.Status.DeepCopy()
		csr.Status.Conditions = conditions
	case registry.SubStatus:
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
	}
}

// authorizeSigner is the CertificateApproval (verb approve, on /approval)
// and CertificateSigning (verb sign, on a /status write that sets the
// certificate) admission: the user needs the verb on the signers resource
// named for the request's signer, or for its whole domain ("example.com/*").
func (s *Server) authorizeSigner(req *request, verb string, csr *certificatesv1.CertificateSigningRequest) error {
	names := []string{csr.Spec.SignerName}
	if domain, _, ok := strings.Cut(csr.Spec.SignerName, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, name := range names {
		attrs := auth.Attributes{
			User: req.user, Verb: verb, APIGroup: certificatesv1.GroupName, APIVersion: "*", Resource: "signers",
			Name: name, ResourceRequest: true,
		}
		if decision, _ := s.authz.Authorize(attrs); decision == auth.DecisionAllow {
			return nil
		}
	}
	return apierrors.NewForbidden(req.res.GroupResource(), csr.Name,
		fmt.Errorf("user not permitted to %s requests with signerName %q", verb, csr.Spec.SignerName))
}

// admitCSRWrite runs the signer checks of a write to /approval or /status
// against the stored request.
func (s *Server) admitCSRWrite(req *request, obj, current runtime.Object) error {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	cur := current.(*certificatesv1.CertificateSigningRequest)
	switch req.info.subresource {
	case registry.SubApproval:
		return s.authorizeSigner(req, "approve", cur)
	case registry.SubStatus:
		if !bytes.Equal(csr.Status.Certificate, cur.Status.Certificate) {
			return s.authorizeSigner(req, "sign", cur)
		}
	}
	return nil
}
