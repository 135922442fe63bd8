package apiserver

import (
	"context"
	"crypto"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// TokenRequest limits and the kubelet's special case, as upstream's.
const (
	// defaultTokenExpirationSeconds is a TokenRequest's lifetime when it
	// asks for none.
	defaultTokenExpirationSeconds = 3600
	// minTokenExpirationSeconds and maxTokenExpirationSeconds bound
	// spec.expirationSeconds.
	minTokenExpirationSeconds = 10 * 60
	maxTokenExpirationSeconds = 1 << 32
	// kubeletTokenExpirationSeconds is what the kubelet asks for its
	// projected tokens; the server then issues a token valid for
	// extendedTokenExpirationSeconds that carries warnafter at the asked
	// time (--service-account-extend-token-expiration, on by default), so
	// a client that never rereads its token keeps working while the
	// cluster can tell who would have broken.
	kubeletTokenExpirationSeconds  = 60*60 + 7
	extendedTokenExpirationSeconds = 365 * 24 * 60 * 60
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// setUpServiceAccountTokens makes the token issuer and authenticator from
// the service-account key, when there is one.
func (s *Server) setUpServiceAccountTokens() error {
	if s.cfg.ServiceAccountKey == nil {
		return nil
	}
	if s.cfg.ServiceAccountIssuer == "" {
		s.cfg.ServiceAccountIssuer = auth.DefaultServiceAccountIssuer
	}
	if len(s.cfg.APIAudiences) == 0 {
		s.cfg.APIAudiences = []string{s.cfg.ServiceAccountIssuer}
	}
	issuer, err := auth.NewTokenIssuer(s.cfg.ServiceAccountIssuer, s.cfg.ServiceAccountKey)
	if err != nil {
		return fmt.Errorf("api server %s: %w", s.cfg.Name, err)
	}
	s.tokenIssuer = issuer
	s.saAuthn = auth.NewServiceAccountAuthenticator(s.cfg.ServiceAccountIssuer, s.cfg.APIAudiences,
		[]crypto.PublicKey{s.cfg.ServiceAccountKey.Public()}, boundObjects{s})
	return nil
}

// boundObjects reads what a token names from storage, for the
// authenticator's checks that they still exist.
type boundObjects struct{ s *Server }

var boundKinds = map[string]string{
	auth.KindServiceAccount: "serviceaccounts", auth.KindPod: "pods", auth.KindSecret: "secrets", auth.KindNode: "nodes",
}

func (b boundObjects) GetBoundObject(ctx context.Context, kind, namespace, name string) (metav1.Object, error) {
	resource, ok := boundKinds[kind]
	if !ok {
		return nil, fmt.Errorf("tokens are not bound to %s objects", kind)
	}
	res, ok := b.s.reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: resource})
	if !ok {
		return nil, fmt.Errorf("%s are not served", resource)
	}
	obj, err := b.s.getObject(ctx, res, namespace, name)
	if err != nil {
		return nil, err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%s %s/%s has no object metadata", kind, namespace, name)
	}
	return m, nil
}

// createToken serves POST serviceaccounts/<name>/token: it signs a token
// for the service account, bound to a pod, secret or node when the
// request says so, as upstream's TokenREST does.
func (s *Server) createToken(w http.ResponseWriter, req *request) {
	if s.tokenIssuer == nil {
		writeError(w, req.Request, apierrors.NewServiceUnavailable("this API server has no service-account signing key"))
		return
	}
	data, err := readBody(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	tr := &authenticationv1.TokenRequest{}
	if _, err := decodeObject(req.Request, data, tr, tokenRequestGVK); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = ptrInt64(defaultTokenExpirationSeconds)
	}
	if errs := validateTokenRequest(tr); len(errs) > 0 {
		writeError(w, req.Request, apierrors.NewInvalid(tokenRequestGVK.GroupKind(), tr.Name, errs))
		return
	}
	if err := s.admitNodeRestriction(req.Context(), admissionFor(req, opCreate, tr, nil)); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = slices.Clone(s.cfg.APIAudiences)
	}
	claims, err := s.tokenClaims(req.Context(), req.info.namespace, req.info.name, tr)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	token, err := s.tokenIssuer.Issue(claims)
	if err != nil {
		writeError(w, req.Request, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err)))
		return
	}
	tr.ObjectMeta = metav1.ObjectMeta{Name: req.info.name, Namespace: req.info.namespace, CreationTimestamp: metav1.NewTime(claims.IssuedAt)}
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(claims.Expiry)}
	writeObject(w, req.Request, http.StatusCreated, tr)
}

// tokenClaims reads the service account and the object to bind to, and
// returns what the token will say.
func (s *Server) tokenClaims(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (auth.ServiceAccountClaims, error) {
	objects := boundObjects{s}
	saObj, err := objects.GetBoundObject(ctx, auth.KindServiceAccount, namespace, name)
	if err != nil {
		return auth.ServiceAccountClaims{}, err
	}
	now := time.Now()
	expiration := *tr.Spec.ExpirationSeconds
	claims := auth.ServiceAccountClaims{
		Namespace:      namespace,
		ServiceAccount: auth.ObjectRef{Name: name, UID: string(saObj.GetUID())},
		Audiences:      tr.Spec.Audiences,
		IssuedAt:       now,
		ID:             string(uuid.NewUUID()),
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		var kind, objNamespace string
		switch {
		case gvk.Group == "" && gvk.Kind == auth.KindPod:
			kind, objNamespace = auth.KindPod, namespace
		case gvk.Group == "" && gvk.Kind == auth.KindSecret:
			kind, objNamespace = auth.KindSecret, namespace
		case gvk.Group == "" && gvk.Kind == auth.KindNode:
			kind = auth.KindNode
		default:
			return claims, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		obj, err := objects.GetBoundObject(ctx, kind, objNamespace, ref.Name)
		if err != nil {
			return claims, err
		}
		if ref.UID != "" && ref.UID != obj.GetUID() {
			return claims, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", ref.UID, obj.GetUID()))
		}
		bound := &auth.ObjectRef{Name: obj.GetName(), UID: string(obj.GetUID())}
		switch kind {
		case auth.KindPod:
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return claims, apierrors.NewInternalError(fmt.Errorf("pod %s/%s is a %T", namespace, ref.Name, obj))
			}
			if pod.Spec.ServiceAccountName != name {
				return claims, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with serviceaccount %q", name, pod.Spec.ServiceAccountName))
			}
			claims.Pod = bound
			// The token names the pod's node too, so whoever reads it
			// knows where it was used.
			if pod.Spec.NodeName != "" {
				claims.Node = &auth.ObjectRef{Name: pod.Spec.NodeName}
				if node, err := objects.GetBoundObject(ctx, auth.KindNode, "", pod.Spec.NodeName); err == nil {
					claims.Node.UID = string(node.GetUID())
				}
			}
			if expiration == kubeletTokenExpirationSeconds && sameAudiences(tr.Spec.Audiences, s.cfg.APIAudiences) {
				claims.WarnAfter = now.Add(time.Duration(expiration) * time.Second)
				expiration = extendedTokenExpirationSeconds
			}
		case auth.KindSecret:
			claims.Secret = bound
		case auth.KindNode:
			claims.Node = bound
		}
	}
	claims.Expiry = now.Add(time.Duration(expiration) * time.Second)
	return claims, nil
}

// validateTokenRequest checks a TokenRequest's spec as upstream's
// ValidateTokenRequest does.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "expirationSeconds")
	switch exp := *tr.Spec.ExpirationSeconds; {
	case exp < minTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, exp, "may not specify a duration less than 10 minutes"))
	case exp > maxTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "boundObjectRef", "name"), ""))
	}
	return errs
}

func sameAudiences(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func ptrInt64(v int64) *int64 { return &v }
