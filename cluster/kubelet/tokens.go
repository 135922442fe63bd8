package kubelet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

const (
	// tokenMaxTTL: a token older than this is refreshed whatever its
	// expiry (upstream's token manager, maxTTL).
	tokenMaxTTL = 24 * time.Hour
	// tokenMaxJitter spreads the refreshes of many pods.
	tokenMaxJitter = 10 * time.Second
)

// tokenManager requests service-account tokens through the TokenRequest
// API and keeps them until they need a refresh: after 80% of their
// lifetime, or 24 hours (upstream's kubelet token manager).
type tokenManager struct {
	client kubernetes.Interface
	clock  clock.Clock

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

func newTokenManager(client kubernetes.Interface, clk clock.Clock) *tokenManager {
	return &tokenManager{client: client, clock: clk, cache: map[string]*authenticationv1.TokenRequest{}}
}

// tokenKey identifies a request: the account, the audiences, the lifetime
// and the object the token is bound to.
func tokenKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	exp := int64(0)
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	ref := ""
	if b := tr.Spec.BoundObjectRef; b != nil {
		ref = b.Kind + "/" + b.Name + "/" + string(b.UID)
	}
	return fmt.Sprintf("%q/%q/%q/%d/%q", namespace, name, strings.Join(tr.Spec.Audiences, ","), exp, ref)
}

// token returns a valid token for the request, asking the API server for
// a new one when the cached one is due for a refresh. When a refresh
// fails and the cached token has not expired, the cached one is used.
func (m *tokenManager) token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, name, tr)
	m.mu.Lock()
	cached := m.cache[key]
	m.mu.Unlock()
	if cached != nil && !m.requiresRefresh(cached) {
		return cached, nil
	}
	got, err := m.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	if err != nil {
		if cached != nil && m.clock.Now().Before(cached.Status.ExpirationTimestamp.Time) {
			return cached, nil
		}
		return nil, err
	}
	// The request's spec is kept, so that refreshes are judged by the
	// lifetime asked for.
	got.Spec = *tr.Spec.DeepCopy()
	m.mu.Lock()
	m.cache[key] = got
	m.mu.Unlock()
	return got, nil
}

// refreshAt is when tr is due for a refresh: 80% into its lifetime, or
// 24 hours after it was issued, whichever is first (without jitter).
func refreshAt(tr *authenticationv1.TokenRequest) time.Time {
	exp := tr.Status.ExpirationTimestamp.Time
	if tr.Spec.ExpirationSeconds == nil {
		return exp
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	iat := exp.Add(-ttl)
	return minTime(iat.Add(tokenMaxTTL), exp.Add(-ttl/5))
}

func (m *tokenManager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	jitter := time.Duration(rand.Float64() * float64(tokenMaxJitter))
	return !m.clock.Now().Before(refreshAt(tr).Add(-jitter))
}

// nextRefresh is the earliest refresh due among a pod's tokens (zero if
// it has none).
func (m *tokenManager) nextRefresh(uid types.UID) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, tr := range m.cache {
		if b := tr.Spec.BoundObjectRef; b != nil && b.UID == uid {
			if at := refreshAt(tr); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// forgetPod drops the tokens bound to a pod (upstream's
// DeleteServiceAccountToken).
func (m *tokenManager) forgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, tr := range m.cache {
		if b := tr.Spec.BoundObjectRef; b != nil && b.UID == uid {
			delete(m.cache, key)
		}
	}
}

// podTokenRequest is what a projected serviceAccountToken source asks
// for: the API server's audiences unless the source names one, bound to
// the pod.
func podTokenRequest(pod *v1.Pod, src *v1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	var auds []string
	if src.Audience != "" {
		auds = []string{src.Audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         auds,
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		},
	}}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
