package kubelet

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// The manager asks the API server once, bound to the pod, and again only
// when 80% of the token's lifetime has passed.
func TestTokenManagerRefreshesAt80Percent(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	var asked []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		asked = append(asked, tr)
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               "token-" + string(rune('0'+len(asked))),
			ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, tr, nil
	})
	m := newTokenManager(client, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	req := func() *authenticationv1.TokenRequest {
		return podTokenRequest(pod, &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)})
	}
	get := func() string {
		t.Helper()
		tr, err := m.token(context.Background(), "ns", "default", req())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	if got := get(); got != "token-1" {
		t.Fatalf("first token %q", got)
	}
	ref := asked[0].Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "uid-1" || len(asked[0].Spec.Audiences) != 0 {
		t.Errorf("request %+v: want bound to the pod, with the API server's audiences", asked[0].Spec)
	}
	wantRefresh := clk.Now().Add(3607 * time.Second * 8 / 10)
	if next := m.nextRefresh("uid-1"); !next.Equal(wantRefresh) {
		t.Errorf("next refresh %v, want %v (80%% of 3607 s)", next, wantRefresh)
	}

	// Before 80% (less the jitter) the cached token is kept.
	clk.SetTime(wantRefresh.Add(-time.Minute))
	if got := get(); got != "token-1" || len(asked) != 1 {
		t.Errorf("before 80%%: token %q after %d requests, want the cached one", got, len(asked))
	}
	clk.SetTime(wantRefresh)
	if got := get(); got != "token-2" || len(asked) != 2 {
		t.Errorf("at 80%%: token %q after %d requests, want a new one", got, len(asked))
	}

	m.forgetPod("uid-1")
	if next := m.nextRefresh("uid-1"); !next.IsZero() {
		t.Errorf("forgotten pod still has a refresh at %v", next)
	}
}
