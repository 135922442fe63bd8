package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestKubectlCreateToken follows the CKA's ServiceAccount path with the
// real kubectl: a service account bound to view lists pods with a token
// from kubectl create token, and the token stops working once its service
// account, or the pod or secret it is bound to, is deleted.
func TestKubectlCreateToken(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 3*testTimeout)
	k := newKubectl(t, c, auth.AdminUser)
	admin := adminClient(t, c)

	createNamespace(ctx, t, admin, "dev")
	wantLines(t, "create serviceaccount", k.ok(ctx, t, "create", "serviceaccount", "builder", "-n", "dev"),
		"serviceaccount/builder created")
	k.ok(ctx, t, "create", "rolebinding", "builder-view", "--clusterrole=view", "--serviceaccount=dev:builder", "-n", "dev")

	token := strings.TrimSpace(k.ok(ctx, t, "create", "token", "builder", "-n", "dev"))
	claims := tokenPayload(t, token)
	if claims["iss"] != auth.DefaultServiceAccountIssuer || claims["sub"] != "system:serviceaccount:dev:builder" {
		t.Errorf("token iss %v sub %v", claims["iss"], claims["sub"])
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 3600 {
		t.Errorf("token lives %v s; want the default 3600", exp-iat)
	}

	t.Run("the token is the service account", func(t *testing.T) {
		sa := tokenClient(t, c, token)
		review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info := review.Status.UserInfo
		wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:dev", "system:authenticated"}
		if info.Username != "system:serviceaccount:dev:builder" || !slices.Equal(info.Groups, wantGroups) {
			t.Errorf("whoami: %+v; want system:serviceaccount:dev:builder in %v", info, wantGroups)
		}
		if _, err := sa.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list pods in dev as the service account bound to view: %v", err)
		}
		_, err = sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantStatus(t, err, 403, metav1.StatusReasonForbidden,
			`pods is forbidden: User "system:serviceaccount:dev:builder" cannot list resource "pods" in API group "" in the namespace "default"`)
		// kubectl with the token instead of the kubeconfig's credentials.
		out := k.ok(ctx, t, "--token="+token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if out != "system:serviceaccount:dev:builder" {
			t.Errorf("kubectl --token auth whoami: %q", out)
		}
		res := k.run(ctx, t, nil, "--token="+token, "create", "configmap", "x", "-n", "dev")
		want := `configmaps is forbidden: User "system:serviceaccount:dev:builder" cannot create resource "configmaps" in API group "" in the namespace "dev"`
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Errorf("kubectl --token create configmap: exit %d stderr %q; want 1 and %q", res.code, res.stderr, want)
		}
	})

	t.Run("duration and audience", func(t *testing.T) {
		tok := strings.TrimSpace(k.ok(ctx, t, "create", "token", "builder", "-n", "dev", "--duration=15m", "--audience=vault"))
		claims := tokenPayload(t, tok)
		if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 900 {
			t.Errorf("token lives %v s; want 900", exp-iat)
		}
		if aud, _ := claims["aud"].([]any); len(aud) != 1 || aud[0] != "vault" {
			t.Errorf("aud = %v; want [vault]", claims["aud"])
		}
		// A token for another audience is not for this API server.
		wantUnauthorized(ctx, t, tokenClient(t, c, tok), "a token for audience vault")

		res := k.run(ctx, t, nil, "create", "token", "builder", "-n", "dev", "--duration=5m")
		if res.code != 1 || !strings.Contains(res.stderr, "may not specify a duration less than 10 minutes") {
			t.Errorf("create token --duration=5m: exit %d stderr %q", res.code, res.stderr)
		}
		res = k.run(ctx, t, nil, "create", "token", "nobody", "-n", "dev")
		if res.code != 1 || !strings.Contains(res.stderr, `serviceaccounts "nobody" not found`) {
			t.Errorf("create token nobody: exit %d stderr %q", res.code, res.stderr)
		}
	})

	t.Run("bound to a pod", func(t *testing.T) {
		p := pod("dev", "web", "")
		p.Spec.ServiceAccountName = "builder"
		if _, err := admin.CoreV1().Pods("dev").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok := strings.TrimSpace(k.ok(ctx, t, "create", "token", "builder", "-n", "dev", "--bound-object-kind=Pod", "--bound-object-name=web"))
		created, err := admin.CoreV1().Pods("dev").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The ServiceAccount admission plugin gave the pod its token
		// volume, mounted where client libraries look.
		if vols := created.Spec.Volumes; len(vols) != 1 || !strings.HasPrefix(vols[0].Name, "kube-api-access-") || len(vols[0].Name) != len("kube-api-access-")+5 ||
			vols[0].Projected == nil {
			t.Errorf("pod volumes %+v; want one projected kube-api-access-xxxxx", vols)
		} else if m := created.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != vols[0].Name ||
			m[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m[0].ReadOnly {
			t.Errorf("container mounts %+v; want %s read-only at /var/run/secrets/kubernetes.io/serviceaccount", m, vols[0].Name)
		}
		k8s, _ := tokenPayload(t, tok)["kubernetes.io"].(map[string]any)
		if podRef, _ := k8s["pod"].(map[string]any); podRef["name"] != "web" || podRef["uid"] != string(created.UID) {
			t.Errorf("kubernetes.io claim %v; want pod web %s", k8s, created.UID)
		}
		sa := tokenClient(t, c, tok)
		if _, err := sa.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("the pod-bound token: %v", err)
		}
		k.ok(ctx, t, "delete", "pod", "web", "-n", "dev", "--grace-period=0", "--force")
		wantUnauthorized(ctx, t, sa, "a token bound to a deleted pod")

		// An account that opts out of automounting gives its pods no
		// token volume.
		k.ok(ctx, t, "create", "serviceaccount", "quiet", "-n", "dev")
		k.ok(ctx, t, "patch", "serviceaccount", "quiet", "-n", "dev", "-p", `{"automountServiceAccountToken":false}`)
		quiet := pod("dev", "quiet", "")
		quiet.Spec.ServiceAccountName = "quiet"
		if got, err := admin.CoreV1().Pods("dev").Create(ctx, quiet, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		} else if len(got.Spec.Volumes) != 0 || len(got.Spec.Containers[0].VolumeMounts) != 0 {
			t.Errorf("pod of an account without automount got volumes %+v", got.Spec.Volumes)
		}

		// Only a pod running as the service account can be bound.
		other := pod("dev", "other", "")
		if _, err := admin.CoreV1().Pods("dev").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		res := k.run(ctx, t, nil, "create", "token", "builder", "-n", "dev", "--bound-object-kind=Pod", "--bound-object-name=other")
		if res.code != 1 || !strings.Contains(res.stderr, `cannot bind token for serviceaccount "builder" to pod running with serviceaccount "default"`) {
			t.Errorf("bind to another account's pod: exit %d stderr %q", res.code, res.stderr)
		}
	})

	t.Run("bound to a secret", func(t *testing.T) {
		k.ok(ctx, t, "create", "secret", "generic", "builder-key", "-n", "dev", "--from-literal=k=v")
		tok := strings.TrimSpace(k.ok(ctx, t, "create", "token", "builder", "-n", "dev", "--bound-object-kind=Secret", "--bound-object-name=builder-key"))
		sa := tokenClient(t, c, tok)
		if _, err := sa.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("the secret-bound token: %v", err)
		}
		k.ok(ctx, t, "delete", "secret", "builder-key", "-n", "dev")
		wantUnauthorized(ctx, t, sa, "a token bound to a deleted secret")
	})

	t.Run("service account deleted", func(t *testing.T) {
		sa := tokenClient(t, c, token)
		k.ok(ctx, t, "delete", "serviceaccount", "builder", "-n", "dev")
		wantUnauthorized(ctx, t, sa, "a token of a deleted service account")
		// A new account of the same name is another account.
		k.ok(ctx, t, "create", "serviceaccount", "builder", "-n", "dev")
		wantUnauthorized(ctx, t, sa, "a token of a service account deleted and created again")
	})
}

// tokenClient returns a clientset that authenticates with token alone.
func tokenClient(t *testing.T, c *apiservertest.Cluster, token string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: c.URL(0), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.PKI.CAPEM}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func wantUnauthorized(ctx context.Context, t *testing.T, cs kubernetes.Interface, what string) {
	t.Helper()
	_, err := cs.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{})
	if err == nil {
		t.Errorf("%s was accepted", what)
		return
	}
	wantStatus(t, err, 401, metav1.StatusReasonUnauthorized, "Unauthorized")
}

// tokenPayload returns a JWT's claims, unverified.
func tokenPayload(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(data, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}
