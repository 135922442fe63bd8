package apiserver

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// createVirtual serves the resources that are answered, not stored: the
// self reviews kubectl auth uses, and bindings.
func (s *Server) createVirtual(w http.ResponseWriter, req *request, obj runtime.Object) {
	switch o := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		// kubectl auth can-i: authorization asked about a request that is
		// not made.
		o.Status = s.authz.Review(req.user, o.Spec)
		o.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
		writeObject(w, req.Request, http.StatusCreated, o)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = s.authz.Rules(req.user, o.Spec.Namespace)
		o.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
		writeObject(w, req.Request, http.StatusCreated, o)
	case *authorizationv1.SubjectAccessReview:
		// Asked on behalf of someone else (a webhook, an aggregated
		// server): the spec names the user. kubectl auth can-i --as
		// sends a self review through impersonation instead.
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			writeError(w, req.Request, apierrors.NewInvalid(req.res.GVK().GroupKind(), "",
				field.ErrorList{field.Invalid(field.NewPath("spec"), o.Spec, "at least one of user or group must be specified")}))
			return
		}
		subject := auth.User{Name: o.Spec.User, UID: o.Spec.UID, Groups: o.Spec.Groups}
		o.Status = s.authz.Review(subject, authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: o.Spec.ResourceAttributes, NonResourceAttributes: o.Spec.NonResourceAttributes,
		})
		o.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
		writeObject(w, req.Request, http.StatusCreated, o)
	case *authorizationv1.LocalSubjectAccessReview:
		// A SubjectAccessReview confined to one namespace, so that a
		// namespace's admins may ask it (kubectl auth can-i asks it of
		// nobody; webhooks and operators do).
		namespace := req.info.namespace
		if o.Namespace == "" {
			o.Namespace = namespace
		}
		var errs field.ErrorList
		if o.Namespace != namespace {
			writeError(w, req.Request, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace)))
			return
		}
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			errs = append(errs, field.Invalid(field.NewPath("spec"), o.Spec, "at least one of user or group must be specified"))
		}
		if o.Spec.ResourceAttributes == nil && o.Spec.NonResourceAttributes == nil {
			errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
		}
		if ra := o.Spec.ResourceAttributes; ra != nil && ra.Namespace != o.Namespace {
			errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
		}
		if o.Spec.NonResourceAttributes != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), o.Spec.NonResourceAttributes, "disallowed on this kind of request"))
		}
		if len(errs) > 0 {
			writeError(w, req.Request, apierrors.NewInvalid(req.res.GVK().GroupKind(), "", errs))
			return
		}
		subject := auth.User{Name: o.Spec.User, UID: o.Spec.UID, Groups: o.Spec.Groups}
		o.Status = s.authz.Review(subject, authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: o.Spec.ResourceAttributes})
		o.ObjectMeta = metav1.ObjectMeta{Namespace: namespace, CreationTimestamp: metav1.Now()}
		writeObject(w, req.Request, http.StatusCreated, o)
	case *authenticationv1.SelfSubjectReview:
		// kubectl auth whoami: what authentication made of the token.
		o.Status.UserInfo = authenticationv1.UserInfo{Username: req.user.Name, UID: req.user.UID, Groups: req.user.Groups}
		o.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
		writeObject(w, req.Request, http.StatusCreated, o)
	case *corev1.Binding:
		// POST namespaces/{ns}/bindings: the older form of pods/binding,
		// naming the pod in the binding.
		podReq := *req
		podReq.info.name = o.Name
		if err := s.bindPod(req.Context(), &podReq, o); err != nil {
			writeError(w, req.Request, err)
			return
		}
		writeRaw(w, http.StatusCreated, false, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	default:
		writeError(w, req.Request, apierrors.NewMethodNotSupported(req.res.GroupResource(), "create"))
	}
}
