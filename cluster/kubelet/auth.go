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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// systemMasters is the group the kubelet lets in. Upstream asks the API
// server (SubjectAccessReview) whether the user may use nodes/proxy; klab
// allows the group that upstream's API server uses for its own client
// certificate to kubelets.
const systemMasters = "system:masters"

// How long token reviews are remembered (upstream's webhook token cache
// keeps answers for minutes; klab keeps them briefly so a revoked token
// stops working soon).
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

// allowed is klab's authorization of kubelet API requests.
func allowed(u authenticationv1.UserInfo) bool { return slices.Contains(u.Groups, systemMasters) }
