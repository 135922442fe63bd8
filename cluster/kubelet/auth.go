package kubelet

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// How long token reviews and access reviews are remembered (upstream's
// webhook caches keep answers for minutes; klab keeps them briefly so a
// revoked token or a removed binding takes effect soon).
const (
	authCacheTTL     = 10 * time.Second
	authFailCacheTTL = 2 * time.Second
)

// errUnauthenticated is a token the API server does not know.
var errUnauthenticated = errors.New("unauthenticated")

// tokenAuthenticator finds out who a bearer token belongs to by posting a
// SelfSubjectReview with that token to the API server: klab's stand-in
// for upstream's TokenReview webhook.
type tokenAuthenticator struct {
	base  *rest.Config
	clock clock.Clock
	// review is swapped out by tests.
	review func(ctx context.Context, token string) (authenticationv1.UserInfo, error)

	mu    sync.Mutex
	cache map[[32]byte]authEntry
}

type authEntry struct {
	user    authenticationv1.UserInfo
	err     error
	expires time.Time
}

func newTokenAuthenticator(cfg *rest.Config, clk clock.Clock) *tokenAuthenticator {
	a := &tokenAuthenticator{base: rest.AnonymousClientConfig(cfg), clock: clk, cache: map[[32]byte]authEntry{}}
	a.review = a.selfSubjectReview
	return a
}

func (a *tokenAuthenticator) selfSubjectReview(ctx context.Context, token string) (authenticationv1.UserInfo, error) {
	cfg := rest.CopyConfig(a.base)
	cfg.BearerToken = token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("token review client: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if apierrors.IsUnauthorized(err) {
		return authenticationv1.UserInfo{}, errUnauthenticated
	}
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("token review: %w", err)
	}
	return review.Status.UserInfo, nil
}

// authenticate returns the token's user. Answers are cached; a failure
// to reach the API server is not.
func (a *tokenAuthenticator) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := a.clock.Now()
	a.mu.Lock()
	e, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.user, e.err
	}
	user, err := a.review(ctx, token)
	if err != nil && !errors.Is(err, errUnauthenticated) {
		return user, err
	}
	ttl := authCacheTTL
	if err != nil {
		ttl = authFailCacheTTL
	}
	a.mu.Lock()
	for k, old := range a.cache { // keep the cache small: drop what expired
		if now.After(old.expires) {
			delete(a.cache, k)
		}
	}
	a.cache[key] = authEntry{user: user, err: err, expires: now.Add(ttl)}
	a.mu.Unlock()
	return user, err
}

// servingTLS is the HTTPS configuration: the configured certificate, and
// client certificates verified against the cluster CA when a client
// offers one, as the kubelet's --client-ca-file does. The API server
// authenticates itself that way (its kubelet client certificate), since
// the SPDY and WebSocket upgrades it proxies carry no header of its own.
func (k *Kubelet) servingTLS() *tls.Config {
	cfg := k.cfg.TLS.Clone()
	if k.cfg.CAPool != nil {
		cfg.ClientCAs = k.cfg.CAPool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

// certificateUser is the user of a verified client certificate, as
// upstream's x509 authenticator reads it: the common name is the user,
// the organizations are the groups. ok is false without a certificate.
func certificateUser(r *http.Request) (user authenticationv1.UserInfo, ok bool, err error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return user, false, nil
	}
	cert := r.TLS.VerifiedChains[0][0]
	if cert.Subject.CommonName == "" {
		return user, true, errUnauthenticated
	}
	return authenticationv1.UserInfo{Username: cert.Subject.CommonName, Groups: slices.Clone(cert.Subject.Organization)}, true, nil
}

// bearerToken extracts the token of an "Authorization: Bearer" header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// accessAuthorizer decides kubelet API requests as upstream's kubelet
// does with --authorization-mode=Webhook: it asks the API server, with a
// SubjectAccessReview sent as the node (whose system:node role may create
// them), whether the user may <verb> the nodes/<subresource> of this node.
type accessAuthorizer struct {
	node  string
	clock clock.Clock
	// review is swapped out by tests.
	review func(ctx context.Context, attrs accessAttributes) (allowed bool, reason string, err error)

	mu    sync.Mutex
	cache map[string]accessEntry
}

// accessAttributes are what a kubelet API request is authorized as.
type accessAttributes struct {
	user        authenticationv1.UserInfo
	verb        string
	subresource string
}

type accessEntry struct {
	allowed bool
	reason  string
	expires time.Time
}

func newAccessAuthorizer(cfg *rest.Config, node string, clk clock.Clock) *accessAuthorizer {
	a := &accessAuthorizer{node: node, clock: clk, cache: map[string]accessEntry{}}
	a.review = func(ctx context.Context, attrs accessAttributes) (bool, string, error) {
		return a.subjectAccessReview(ctx, cfg, attrs)
	}
	return a
}

func (a *accessAuthorizer) subjectAccessReview(ctx context.Context, cfg *rest.Config, attrs accessAttributes) (bool, string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, "", fmt.Errorf("access review client: %w", err)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range attrs.user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: attrs.user.Username, UID: attrs.user.UID, Groups: attrs.user.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: attrs.verb, Resource: "nodes", Subresource: attrs.subresource, Name: a.node,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	return review.Status.Allowed, review.Status.Reason, nil
}

// authorize reports whether attrs are allowed. Answers are cached; a
// failure to reach the API server is not, and denies.
func (a *accessAuthorizer) authorize(ctx context.Context, attrs accessAttributes) (bool, string, error) {
	key := strings.Join([]string{attrs.user.Username, attrs.user.UID, strings.Join(attrs.user.Groups, ","), attrs.verb, attrs.subresource}, "\x00")
	now := a.clock.Now()
	a.mu.Lock()
	e, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.allowed, e.reason, nil
	}
	allowed, reason, err := a.review(ctx, attrs)
	if err != nil {
		return false, "", err
	}
	ttl := authCacheTTL
	if !allowed {
		ttl = authFailCacheTTL
	}
	a.mu.Lock()
	for k, old := range a.cache {
		if now.After(old.expires) {
			delete(a.cache, k)
		}
	}
	a.cache[key] = accessEntry{allowed: allowed, reason: reason, expires: now.Add(ttl)}
	a.mu.Unlock()
	return allowed, reason, nil
}

// requestVerb is the verb upstream's kubelet authorizes an HTTP method as.
func requestVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}
