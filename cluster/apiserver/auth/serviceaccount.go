package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of service-account groups and the issuer, as upstream's
// k8s.io/apiserver/pkg/authentication/serviceaccount and kubeadm's.
const (
	// ServiceAccountGroupPrefix starts the group of a namespace's service
	// accounts: system:serviceaccounts:<namespace>.
	ServiceAccountGroupPrefix = ServiceAccountsGroup + ":"
	// DefaultServiceAccountIssuer is the iss claim of the tokens a kubeadm
	// cluster's API server signs (--service-account-issuer), and by
	// default the only audience it accepts (--api-audiences).
	DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// Kinds a token can be bound to, and ServiceAccount, which every token
// names.
const (
	KindServiceAccount = "ServiceAccount"
	KindPod            = "Pod"
	KindSecret         = "Secret"
	KindNode           = "Node"
)

// tokenLeeway is the clock skew tolerated on exp, nbf and deletion times,
// upstream's jwt.DefaultLeeway.
const tokenLeeway = jwt.DefaultLeeway

// ServiceAccountUser returns the user a service account authenticates as:
// its name, its UID, and the groups of all service accounts, of its
// namespace's and of every authenticated user.
func ServiceAccountUser(namespace, name, uid string) User {
	return User{
		Name:   ServiceAccountUsername(namespace, name),
		UID:    uid,
		Groups: []string{ServiceAccountsGroup, ServiceAccountGroupPrefix + namespace, AllAuthenticated},
	}
}

// ObjectRef names an object a token is bound to, by name and UID, as the
// kubernetes.io claim records it.
type ObjectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// ServiceAccountClaims is what a service-account token says.
type ServiceAccountClaims struct {
	// Namespace and ServiceAccount name the account (sub is derived from
	// them).
	Namespace      string
	ServiceAccount ObjectRef
	// Pod, Secret and Node are what the token is bound to, if anything: a
	// token bound to a pod also names the pod's node, and a bound token
	// stops working once its object is gone.
	Pod, Secret, Node *ObjectRef
	// Audiences are who the token is for (aud).
	Audiences []string
	// IssuedAt is iat and nbf; Expiry is exp.
	IssuedAt, Expiry time.Time
	// WarnAfter, when set, is when the kubelet should have replaced a
	// token whose lifetime the server extended (upstream's warnafter).
	WarnAfter time.Time
	// ID is the token's jti, upstream's credential id.
	ID string
}

// privateClaims is the kubernetes.io claim, shaped as upstream's.
type privateClaims struct {
	Kubernetes kubernetesClaim `json:"kubernetes.io,omitempty"`
}

type kubernetesClaim struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount ObjectRef        `json:"serviceaccount,omitempty"`
	Pod            *ObjectRef       `json:"pod,omitempty"`
	Secret         *ObjectRef       `json:"secret,omitempty"`
	Node           *ObjectRef       `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// TokenIssuer signs service-account tokens (kube-apiserver's
// --service-account-signing-key-file and --service-account-issuer).
type TokenIssuer struct {
	issuer string
	signer jose.Signer
}

// NewTokenIssuer returns an issuer that signs with key (ECDSA P-256 as
// ES256, or RSA as RS256) and writes issuer into iss. The JWS header's kid
// identifies the key as upstream's does, by the hash of its public half.
func NewTokenIssuer(issuer string, key crypto.Signer) (*TokenIssuer, error) {
	alg, err := signatureAlgorithm(key.Public())
	if err != nil {
		return nil, fmt.Errorf("service-account token issuer: %w", err)
	}
	kid, err := keyID(key.Public())
	if err != nil {
		return nil, fmt.Errorf("service-account token issuer: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("service-account token issuer: %w", err)
	}
	return &TokenIssuer{issuer: issuer, signer: signer}, nil
}

// Issuer returns the iss claim the issuer writes.
func (i *TokenIssuer) Issuer() string { return i.issuer }

// Issue signs a token saying c.
func (i *TokenIssuer) Issue(c ServiceAccountClaims) (string, error) {
	public := jwt.Claims{
		Issuer:    i.issuer,
		Subject:   ServiceAccountUsername(c.Namespace, c.ServiceAccount.Name),
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		NotBefore: jwt.NewNumericDate(c.IssuedAt),
		Expiry:    jwt.NewNumericDate(c.Expiry),
		ID:        c.ID,
	}
	private := privateClaims{Kubernetes: kubernetesClaim{
		Namespace: c.Namespace, ServiceAccount: c.ServiceAccount, Pod: c.Pod, Secret: c.Secret, Node: c.Node,
	}}
	if !c.WarnAfter.IsZero() {
		private.Kubernetes.WarnAfter = jwt.NewNumericDate(c.WarnAfter)
	}
	// aud is always a list, as in upstream's tokens (go-jose writes a
	// single audience as a bare string).
	audiences := struct {
		Audience []string `json:"aud"`
	}{c.Audiences}
	token, err := jwt.Signed(i.signer).Claims(public).Claims(audiences).Claims(private).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign service-account token for %s/%s: %w", c.Namespace, c.ServiceAccount.Name, err)
	}
	return token, nil
}

// BoundObjectGetter reads the objects a token names, so the authenticator
// can tell whether they still exist.
type BoundObjectGetter interface {
	// GetBoundObject returns the object of kind (KindServiceAccount,
	// KindPod, KindSecret or KindNode) named name in namespace (empty for
	// a node), or an error, NotFound when there is none.
	GetBoundObject(ctx context.Context, kind, namespace, name string) (metav1.Object, error)
}

// ServiceAccountAuthenticator verifies service-account tokens as
// kube-apiserver's service-account authenticator does: the signature
// against the service-account keys, iss, aud against the API audiences,
// exp and nbf, and that the service account and any bound object still
// exist with the UIDs the token recorded.
type ServiceAccountAuthenticator struct {
	issuer    string
	audiences []string
	keys      []crypto.PublicKey
	getter    BoundObjectGetter
	// now is the clock; tests set it.
	now func() time.Time
}

// NewServiceAccountAuthenticator returns an authenticator for the tokens
// of issuer signed by one of keys and meant for one of audiences.
func NewServiceAccountAuthenticator(issuer string, audiences []string, keys []crypto.PublicKey, getter BoundObjectGetter) *ServiceAccountAuthenticator {
	return &ServiceAccountAuthenticator{issuer: issuer, audiences: slices.Clone(audiences), keys: slices.Clone(keys), getter: getter, now: time.Now}
}

// Audiences returns the audiences the authenticator accepts, the default
// audiences of a TokenRequest.
func (a *ServiceAccountAuthenticator) Audiences() []string { return slices.Clone(a.audiences) }

// ErrNotServiceAccountToken is returned for a token that is not a JWT of
// this issuer, so that another authenticator may try it.
var ErrNotServiceAccountToken = errors.New("not a service-account token of this issuer")

// allowedAlgorithms are the signatures a token may carry.
var allowedAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256}

// AuthenticateToken returns the user token stands for and what it says.
// It returns ErrNotServiceAccountToken for a token that is not a JWT or
// names another issuer, and a descriptive error for one of ours that
// does not hold.
func (a *ServiceAccountAuthenticator) AuthenticateToken(ctx context.Context, token string) (User, *ServiceAccountClaims, error) {
	if strings.Count(token, ".") != 2 {
		return User{}, nil, ErrNotServiceAccountToken
	}
	parsed, err := jwt.ParseSigned(token, allowedAlgorithms)
	if err != nil {
		return User{}, nil, ErrNotServiceAccountToken
	}
	// The issuer decides whether the token is ours before its signature
	// is checked, as upstream's authenticator does.
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != a.issuer {
		return User{}, nil, ErrNotServiceAccountToken
	}
	var (
		public  jwt.Claims
		private privateClaims
		valid   bool
	)
	for _, key := range a.keys {
		if err := parsed.Claims(key, &public, &private); err == nil {
			valid = true
			break
		}
	}
	if !valid {
		return User{}, nil, errors.New("service account token could not be verified: invalid signature")
	}
	claims, err := a.validate(ctx, public, private)
	if err != nil {
		return User{}, nil, err
	}
	return ServiceAccountUser(claims.Namespace, claims.ServiceAccount.Name, claims.ServiceAccount.UID), claims, nil
}

func (a *ServiceAccountAuthenticator) validate(ctx context.Context, public jwt.Claims, private privateClaims) (*ServiceAccountClaims, error) {
	now := a.now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, Time: now}, tokenLeeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("service account token is not valid yet")
	default:
		return nil, fmt.Errorf("service account token claims could not be validated: %w", err)
	}
	if public.Expiry == nil {
		return nil, errors.New("service account token has no expiry (exp)")
	}
	if !slices.ContainsFunc(public.Audience, func(aud string) bool { return slices.Contains(a.audiences, aud) }) {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(public.Audience), a.audiences)
	}
	k := private.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" {
		return nil, errors.New("service account token names no namespace or service account")
	}
	if public.Subject != ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, fmt.Errorf("service account token subject %q does not match its kubernetes.io claim", public.Subject)
	}

	// Anything deleted before now, less the leeway, is gone.
	deletedBefore := now.Add(-tokenLeeway)
	sa, err := a.getter.GetBoundObject(ctx, KindServiceAccount, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
		}
		return nil, fmt.Errorf("look up service account %s/%s: %w", k.Namespace, k.ServiceAccount.Name, err)
	}
	if deletedSince(sa, deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
	}
	if string(sa.GetUID()) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.GetUID(), k.ServiceAccount.UID)
	}
	if k.Secret != nil {
		if err := a.checkBound(ctx, KindSecret, k.Namespace, *k.Secret, deletedBefore); err != nil {
			return nil, err
		}
	}
	if k.Pod != nil {
		if err := a.checkBound(ctx, KindPod, k.Namespace, *k.Pod, deletedBefore); err != nil {
			return nil, err
		}
	}
	// A node named beside a pod only says where the pod ran; a token
	// bound to the node itself lives only as long as the node.
	if k.Node != nil && k.Pod == nil {
		if err := a.checkBound(ctx, KindNode, "", *k.Node, deletedBefore); err != nil {
			return nil, err
		}
	}
	claims := &ServiceAccountClaims{
		Namespace: k.Namespace, ServiceAccount: k.ServiceAccount, Pod: k.Pod, Secret: k.Secret, Node: k.Node,
		Audiences: public.Audience, Expiry: public.Expiry.Time(), ID: public.ID,
	}
	if public.IssuedAt != nil {
		claims.IssuedAt = public.IssuedAt.Time()
	}
	if k.WarnAfter != nil {
		claims.WarnAfter = k.WarnAfter.Time()
	}
	return claims, nil
}

// checkBound checks that the object a token is bound to still exists and
// is the one it was bound to, with upstream's messages.
func (a *ServiceAccountAuthenticator) checkBound(ctx context.Context, kind, namespace string, ref ObjectRef, deletedBefore time.Time) error {
	obj, err := a.getter.GetBoundObject(ctx, kind, namespace, ref.Name)
	if err != nil || deletedSince(obj, deletedBefore) {
		return errors.New("service account token has been invalidated")
	}
	if string(obj.GetUID()) != ref.UID {
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)",
			strings.ToLower(kind), obj.GetUID(), strings.ToLower(kind), ref.UID)
	}
	return nil
}

func deletedSince(obj metav1.Object, before time.Time) bool {
	ts := obj.GetDeletionTimestamp()
	return ts != nil && ts.Time.Before(before)
}

func signatureAlgorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
	case *rsa.PublicKey:
		return jose.RS256, nil
	}
	return "", fmt.Errorf("unsupported key type %T", pub)
}

// keyID identifies a public key as upstream's kid does: the unpadded
// base64url SHA-256 of its DER (PKIX) encoding.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
