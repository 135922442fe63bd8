package apiserver_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// warnings collects the Warning headers a client receives (kubectl prints
// them as "Warning: ...").
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// deploymentJSON is a valid Deployment manifest with one extra field
// inside spec, which no Deployment has.
const deploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q},
 "spec":{"foo":1,"replicas":1,"selector":{"matchLabels":{"app":"x"}},
  "template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`

// TestRequestErrors: the Status codes, reasons and messages of requests
// the server refuses, as upstream words them (users search for them).
func TestRequestErrors(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cfg := c.Config(0, auth.AdminUser)
	warned := &warnings{}
	cfg.WarningHandler = warned
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, testTimeout)
	const ns = "errors"
	createNamespace(ctx, t, cs, ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, configMap(ns, "exists", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("create existing", func(t *testing.T) {
		_, err := cms.Create(ctx, configMap(ns, "exists", nil), metav1.CreateOptions{})
		wantStatus(t, err, 409, metav1.StatusReasonAlreadyExists, `configmaps "exists" already exists`)
	})
	t.Run("get missing", func(t *testing.T) {
		_, err := cms.Get(ctx, "x", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `configmaps "x" not found`)
		st := statusOf(t, err)
		if st.Details == nil || st.Details.Name != "x" || st.Details.Kind != "configmaps" {
			t.Errorf("details %+v; want name x, kind configmaps", st.Details)
		}
	})
	t.Run("missing namespace", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, configMap("nowhere", "a", nil), metav1.CreateOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `namespaces "nowhere" not found`)
	})
	t.Run("body over 3 MiB", func(t *testing.T) {
		big := configMap(ns, "big", map[string]string{"blob": strings.Repeat("x", 3*1024*1024+512)})
		_, err := cms.Create(ctx, big, metav1.CreateOptions{})
		wantStatus(t, err, 413, metav1.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728")
	})
	t.Run("JSON patch of too many operations", func(t *testing.T) {
		ops := strings.Repeat(`{"op":"test","path":"/metadata/name","value":"exists"},`, 10001)
		_, err := cms.Patch(ctx, "exists", types.JSONPatchType, []byte("["+strings.TrimSuffix(ops, ",")+"]"), metav1.PatchOptions{})
		wantStatus(t, err, 413, metav1.StatusReasonRequestEntityTooLarge,
			"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
	})
	t.Run("JSON patch that copies without bound", func(t *testing.T) {
		// Fifty copies of 64 KiB, each removed again: the object stays
		// small and valid, but the copies add up to more than the 3 MiB
		// upstream allows a patch to copy.
		patch := `[{"op":"add","path":"/data","value":{"a":"` + strings.Repeat("x", 64*1024) + `"}}`
		for i := 0; i < 50; i++ {
			patch += `,{"op":"copy","from":"/data/a","path":"/data/b"},{"op":"remove","path":"/data/b"}`
		}
		_, err := cms.Patch(ctx, "exists", types.JSONPatchType, []byte(patch+"]"), metav1.PatchOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	})
	t.Run("request timeout", func(t *testing.T) {
		// A deadline already past when the request reaches storage.
		err := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").Param("timeout", "1ns").
			Body(configMap(ns, "late", nil)).Do(ctx).Error()
		wantStatus(t, err, 504, metav1.StatusReasonTimeout, "")
		if _, err := cms.Get(ctx, "late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the timed-out create was stored anyway: get = %v", err)
		}
		err = cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Param("timeout", "soon").Do(ctx).Error()
		wantStatus(t, err, 400, metav1.StatusReasonBadRequest, `invalid timeout specified in the request URL - time: invalid duration "soon"`)
	})
	t.Run("object over 1 MiB", func(t *testing.T) {
		// Under the request limit, over what a ConfigMap may hold
		// (needs package validation).
		big := configMap(ns, "big", map[string]string{"blob": strings.Repeat("x", 1024*1024+1)})
		_, err := cms.Create(ctx, big, metav1.CreateOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	})
	t.Run("wrong apiVersion", func(t *testing.T) {
		for _, apiVersion := range []string{"apps/v1", "v2"} {
			body := `{"apiVersion":"` + apiVersion + `","kind":"ConfigMap","metadata":{"name":"wrong"}}`
			err := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
				SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
			wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "")
			// Upstream's decoder message, up to the scheme's source
			// location, which differs.
			version := apiVersion[strings.LastIndex(apiVersion, "/")+1:]
			want := `ConfigMap in version "` + version + `" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "` + apiVersion + `" in scheme `
			if msg := statusOf(t, err).Message; !strings.HasPrefix(msg, want) {
				t.Errorf("apiVersion %s: message %q\nwant it to start %q", apiVersion, msg, want)
			}
		}
	})
	t.Run("strict field validation", func(t *testing.T) {
		body := []byte(strings.Replace(deploymentJSON, "%q", `"strict"`, 1))
		err := cs.AppsV1().RESTClient().Post().Namespace(ns).Resource("deployments").Param("fieldValidation", "Strict").
			SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		wantStatus(t, err, 400, metav1.StatusReasonBadRequest,
			`Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.foo"`)
	})
	t.Run("warn field validation", func(t *testing.T) {
		// Without a directive the server warns and creates the object.
		warned.take()
		body := []byte(strings.Replace(deploymentJSON, "%q", `"warned"`, 1))
		err := cs.AppsV1().RESTClient().Post().Namespace(ns).Resource("deployments").
			SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		if err != nil {
			t.Fatalf("create with an unknown field, no directive: %v", err)
		}
		if got := warned.take(); len(got) != 1 || got[0] != `unknown field "spec.foo"` {
			t.Errorf("warnings %q; want [unknown field \"spec.foo\"]", got)
		}
	})
	t.Run("apiVersion and kind from the URL", func(t *testing.T) {
		// A body may leave out its apiVersion and kind (the URL says them);
		// the answer names them all the same, dry run or not.
		for _, tc := range []struct{ name, body, dryRun string }{
			{"no kind", `{"apiVersion":"v1","metadata":{"name":"no-kind"}}`, ""},
			{"no apiVersion", `{"kind":"ConfigMap","metadata":{"name":"no-version"}}`, ""},
			{"no kind, dry run", `{"apiVersion":"v1","metadata":{"name":"dry-no-kind"}}`, "All"},
			{"no apiVersion, dry run", `{"kind":"ConfigMap","metadata":{"name":"dry-no-version"}}`, "All"},
			{"neither, dry run", `{"metadata":{"name":"dry-bare"}}`, "All"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
					SetHeader("Content-Type", "application/json").Body([]byte(tc.body))
				if tc.dryRun != "" {
					req = req.Param("dryRun", tc.dryRun)
				}
				raw, err := req.DoRaw(ctx)
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				var head metav1.TypeMeta
				if err := json.Unmarshal(raw, &head); err != nil {
					t.Fatal(err)
				}
				if head.APIVersion != "v1" || head.Kind != "ConfigMap" {
					t.Errorf("answer has apiVersion %q kind %q; want v1 ConfigMap\n%s", head.APIVersion, head.Kind, raw)
				}
			})
		}
	})
	t.Run("unsupported media type", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
			SetHeader("Content-Type", "text/plain").Body([]byte("name: x")).Do(ctx).Error()
		wantStatus(t, err, 415, metav1.StatusReasonUnsupportedMediaType, "")
	})
	t.Run("namespace mismatch", func(t *testing.T) {
		_, err := cms.Create(ctx, configMap("default", "elsewhere", nil), metav1.CreateOptions{})
		wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
	})
	t.Run("unknown resource", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("widgets").Do(ctx).Error()
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	})
}

// TestAuth: bearer tokens identify users;
// RBAC-style roles decide, with upstream's Forbidden messages.
func TestAuth(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	admin := adminClient(t, c)
	viewer := clientFor(t, c, 0, auth.ViewerUser)
	ctx := testContext(t, testTimeout)

	withToken := func(token string) kubernetes.Interface {
		cfg := rest.CopyConfig(c.Config(0, auth.AdminUser))
		cfg.BearerToken = token
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, tc := range []struct{ name, token string }{{"no token", ""}, {"unknown token", "not-a-token"}} {
		t.Run(tc.name, func(t *testing.T) {
			cs := withToken(tc.token)
			_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			wantStatus(t, err, 401, metav1.StatusReasonUnauthorized, "Unauthorized")
			// /version is public, as upstream's system:public-info-viewer.
			if _, err := cs.Discovery().ServerVersion(); err != nil {
				t.Errorf("/version without credentials: %v", err)
			}
		})
	}

	t.Run("viewer", func(t *testing.T) {
		cases := []struct {
			name    string
			do      func() error
			message string // "" means allowed
		}{
			{"create configmap", func() error {
				_, err := viewer.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "v", nil), metav1.CreateOptions{})
				return err
			}, `configmaps is forbidden: User "klab-viewer" cannot create resource "configmaps" in API group "" in the namespace "default"`},
			{"delete configmap", func() error {
				return viewer.CoreV1().ConfigMaps("default").Delete(ctx, "kube-root", metav1.DeleteOptions{})
			}, `configmaps "kube-root" is forbidden: User "klab-viewer" cannot delete resource "configmaps" in API group "" in the namespace "default"`},
			{"create namespace", func() error {
				_, err := viewer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "v"}}, metav1.CreateOptions{})
				return err
			}, `namespaces is forbidden: User "klab-viewer" cannot create resource "namespaces" in API group "" at the cluster scope`},
			{"list secrets", func() error {
				_, err := viewer.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
				return err
			}, `secrets is forbidden: User "klab-viewer" cannot list resource "secrets" in API group "" in the namespace "default"`},
			{"scale deployment", func() error {
				scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
				_, err := viewer.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
				return err
			}, `deployments.apps "web" is forbidden: User "klab-viewer" cannot update resource "deployments/scale" in API group "apps" in the namespace "default"`},
			{"list configmaps", func() error {
				_, err := viewer.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
				return err
			}, ""},
			{"list pods in all namespaces", func() error {
				_, err := viewer.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
				return err
			}, ""},
			{"get namespace", func() error {
				_, err := viewer.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
				return err
			}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.do()
				if tc.message == "" {
					if err != nil {
						t.Errorf("viewer: %v; want allowed", err)
					}
					return
				}
				wantStatus(t, err, 403, metav1.StatusReasonForbidden, tc.message)
			})
		}
	})

	t.Run("SelfSubjectAccessReview", func(t *testing.T) {
		cases := []struct {
			user      string
			cs        kubernetes.Interface
			verb, res string
			allowed   bool
		}{
			{auth.ViewerUser, viewer, "create", "configmaps", false},
			{auth.ViewerUser, viewer, "list", "configmaps", true},
			{auth.ViewerUser, viewer, "get", "secrets", false},
			{auth.AdminUser, admin, "create", "configmaps", true},
			{auth.AdminUser, admin, "delete", "nodes", true},
		}
		for _, tc := range cases {
			t.Run(tc.user+" "+tc.verb+" "+tc.res, func(t *testing.T) {
				review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: tc.verb, Resource: tc.res}}}
				got, err := tc.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Allowed != tc.allowed {
					t.Errorf("allowed = %v (reason %q); want %v", got.Status.Allowed, got.Status.Reason, tc.allowed)
				}
			})
		}
	})

	t.Run("SelfSubjectReview", func(t *testing.T) {
		got, err := viewer.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info := got.Status.UserInfo
		if info.Username != auth.ViewerUser || !contains(info.Groups, auth.ViewersGroup) || !contains(info.Groups, auth.AllAuthenticated) {
			t.Errorf("whoami = %s %v; want %s in %s and %s", info.Username, info.Groups, auth.ViewerUser, auth.ViewersGroup, auth.AllAuthenticated)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
