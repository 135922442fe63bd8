package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objects is an in-memory BoundObjectGetter: kind/namespace/name -> object.
type objects map[string]metav1.Object

func (o objects) GetBoundObject(_ context.Context, kind, namespace, name string) (metav1.Object, error) {
	obj, ok := o[kind+"/"+namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, name)
	}
	return obj, nil
}

func (o objects) add(kind, namespace, name, uid string) *metav1.ObjectMeta {
	m := &metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)}
	o[kind+"/"+namespace+"/"+name] = m
	return m
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestServiceAccountToken(t *testing.T) {
	key, otherKey := newKey(t), newKey(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const aud = DefaultServiceAccountIssuer
	base := ServiceAccountClaims{
		Namespace: "dev", ServiceAccount: ObjectRef{Name: "builder", UID: "sa-uid"},
		Audiences: []string{aud}, IssuedAt: now, Expiry: now.Add(time.Hour), ID: "jti-1",
	}
	bound := base
	bound.Pod = &ObjectRef{Name: "web", UID: "pod-uid"}
	bound.Node = &ObjectRef{Name: "worker-1", UID: "node-uid"}
	onSecret := base
	onSecret.Secret = &ObjectRef{Name: "s", UID: "secret-uid"}
	onNode := base
	onNode.Node = &ObjectRef{Name: "worker-1", UID: "node-uid"}

	with := func(c ServiceAccountClaims, change func(*ServiceAccountClaims)) ServiceAccountClaims {
		change(&c)
		return c
	}
	world := func() objects {
		o := objects{}
		o.add(KindServiceAccount, "dev", "builder", "sa-uid")
		o.add(KindPod, "dev", "web", "pod-uid")
		o.add(KindSecret, "dev", "s", "secret-uid")
		o.add(KindNode, "", "worker-1", "node-uid")
		return o
	}

	tests := []struct {
		name   string
		claims ServiceAccountClaims
		key    crypto.Signer
		issuer string
		change func(objects)
		at     time.Time
		// wantErr is a substring of the error; empty means the token is
		// accepted.
		wantErr string
		// notOurs means the authenticator leaves the token to others.
		notOurs bool
	}{
		{name: "valid", claims: base},
		{name: "bound to a pod", claims: bound},
		{name: "bound to a secret", claims: onSecret},
		{name: "bound to a node", claims: onNode},
		{name: "within the leeway after expiry", claims: base, at: now.Add(time.Hour + 30*time.Second)},
		{name: "expired", claims: base, at: now.Add(time.Hour + 2*time.Minute), wantErr: "service account token has expired"},
		{name: "not valid yet", claims: base, at: now.Add(-5 * time.Minute), wantErr: "service account token is not valid yet"},
		{name: "wrong audience", claims: with(base, func(c *ServiceAccountClaims) { c.Audiences = []string{"vault"} }),
			wantErr: `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`},
		{name: "one of several audiences", claims: with(base, func(c *ServiceAccountClaims) { c.Audiences = []string{"vault", aud} })},
		{name: "signed by another key", claims: base, key: otherKey, wantErr: "invalid signature"},
		{name: "another issuer", claims: base, issuer: "https://issuer.example", notOurs: true},
		{name: "service account deleted", claims: base,
			change:  func(o objects) { delete(o, KindServiceAccount+"/dev/builder") },
			wantErr: "service account dev/builder has been deleted"},
		{name: "service account recreated", claims: base,
			change:  func(o objects) { o.add(KindServiceAccount, "dev", "builder", "new-uid") },
			wantErr: "service account UID (new-uid) does not match claim (sa-uid)"},
		{name: "bound pod deleted", claims: bound,
			change:  func(o objects) { delete(o, KindPod+"/dev/web") },
			wantErr: "service account token has been invalidated"},
		{name: "bound pod being deleted", claims: bound,
			change: func(o objects) {
				ts := metav1.NewTime(now.Add(-10 * time.Minute))
				o.add(KindPod, "dev", "web", "pod-uid").DeletionTimestamp = &ts
			},
			wantErr: "service account token has been invalidated"},
		{name: "bound pod just marked for deletion", claims: bound,
			change: func(o objects) {
				ts := metav1.NewTime(now)
				o.add(KindPod, "dev", "web", "pod-uid").DeletionTimestamp = &ts
			}},
		{name: "bound pod recreated", claims: bound,
			change:  func(o objects) { o.add(KindPod, "dev", "web", "other") },
			wantErr: "pod UID (other) does not match service account pod ref claim (pod-uid)"},
		{name: "node of a bound pod gone", claims: bound,
			change: func(o objects) { delete(o, KindNode+"//worker-1") }},
		{name: "bound secret deleted", claims: onSecret,
			change:  func(o objects) { delete(o, KindSecret+"/dev/s") },
			wantErr: "service account token has been invalidated"},
		{name: "bound node deleted", claims: onNode,
			change:  func(o objects) { delete(o, KindNode+"//worker-1") },
			wantErr: "service account token has been invalidated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signKey, issuer := crypto.Signer(key), DefaultServiceAccountIssuer
			if tt.key != nil {
				signKey = tt.key
			}
			if tt.issuer != "" {
				issuer = tt.issuer
			}
			iss, err := NewTokenIssuer(issuer, signKey)
			if err != nil {
				t.Fatal(err)
			}
			token, err := iss.Issue(tt.claims)
			if err != nil {
				t.Fatal(err)
			}
			o := world()
			if tt.change != nil {
				tt.change(o)
			}
			a := NewServiceAccountAuthenticator(DefaultServiceAccountIssuer, []string{aud}, []crypto.PublicKey{key.Public()}, o)
			a.now = func() time.Time { return now.Add(time.Second) }
			if !tt.at.IsZero() {
				a.now = func() time.Time { return tt.at }
			}
			u, claims, err := a.AuthenticateToken(context.Background(), token)
			switch {
			case tt.notOurs:
				if !errors.Is(err, ErrNotServiceAccountToken) {
					t.Fatalf("err = %v, want ErrNotServiceAccountToken", err)
				}
				return
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("token refused: %v", err)
			}
			want := User{Name: "system:serviceaccount:dev:builder", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:dev", "system:authenticated"}}
			if diff := cmp.Diff(want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.claims, *claims); diff != "" {
				t.Errorf("claims read back (-issued +read):\n%s", diff)
			}
		})
	}
}

// TestServiceAccountTokenClaims checks the token's payload against
// upstream's claim names, which other software (Vault, cloud identity
// federation) reads.
func TestServiceAccountTokenClaims(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	iss, err := NewTokenIssuer(DefaultServiceAccountIssuer, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	token, err := iss.Issue(ServiceAccountClaims{
		Namespace: "dev", ServiceAccount: ObjectRef{Name: "builder", UID: "sa-uid"},
		Pod: &ObjectRef{Name: "web", UID: "pod-uid"}, Node: &ObjectRef{Name: "worker-1", UID: "node-uid"},
		Audiences: []string{"https://kubernetes.default.svc.cluster.local"},
		IssuedAt:  now, Expiry: now.Add(3607 * time.Second), WarnAfter: now.Add(time.Hour), ID: "jti-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts, want 3", len(parts))
	}
	var header map[string]any
	decodePart(t, parts[0], &header)
	if header["alg"] != "ES256" || header["kid"] == "" || header["kid"] == nil {
		t.Errorf("header = %v, want alg ES256 and a kid", header)
	}
	var payload map[string]any
	decodePart(t, parts[1], &payload)
	want := map[string]any{
		"iss": "https://kubernetes.default.svc.cluster.local",
		"sub": "system:serviceaccount:dev:builder",
		"aud": []any{"https://kubernetes.default.svc.cluster.local"},
		"iat": 1.8e9, "nbf": 1.8e9, "exp": 1.8e9 + 3607,
		"jti": "jti-1",
		"kubernetes.io": map[string]any{
			"namespace":      "dev",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web", "uid": "pod-uid"},
			"node":           map[string]any{"name": "worker-1", "uid": "node-uid"},
			"warnafter":      1.8e9 + 3600,
		},
	}
	if diff := cmp.Diff(want, payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}

func decodePart(t *testing.T, part string, into any) {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

func TestServiceAccountTokenNotAJWT(t *testing.T) {
	a := NewServiceAccountAuthenticator(DefaultServiceAccountIssuer, []string{DefaultServiceAccountIssuer}, []crypto.PublicKey{newKey(t).Public()}, objects{})
	for _, token := range []string{"31ada4fd5e", "a.b.c", "..", ""} {
		if _, _, err := a.AuthenticateToken(context.Background(), token); !errors.Is(err, ErrNotServiceAccountToken) {
			t.Errorf("%q: err = %v, want ErrNotServiceAccountToken", token, err)
		}
	}
}
