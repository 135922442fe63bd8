package apiserver_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// TestConcurrentUpdates: read-modify-write updates that carry the
// resourceVersion they read either succeed or fail with 409 Conflict;
// none is lost and none is applied twice. Writers go through two API
// servers, as controllers of a multi-master cluster do.
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{APIServers: 2})
	clients := []kubernetes.Interface{adminClient(t, c), clientFor(t, c, 1, auth.AdminUser)}
	ctx := testContext(t, testTimeout)
	const ns, writers, rounds = "concurrent", 20, 10
	createNamespace(ctx, t, clients[0], ns)
	if _, err := clients[0].CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "log", map[string]string{"log": ""}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var succeeded []string
	conflicts := 0
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cms := clients[w%2].CoreV1().ConfigMaps(ns)
			for r := range rounds {
				cm, err := cms.Get(ctx, "log", metav1.GetOptions{})
				if err != nil {
					t.Errorf("writer %d: get: %v", w, err)
					return
				}
				token := fmt.Sprintf("w%02d.%02d", w, r)
				cm.Data["log"] += token + " "
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				mu.Lock()
				switch {
				case err == nil:
					succeeded = append(succeeded, token)
				case apierrors.IsConflict(err):
					conflicts++
					want := `Operation cannot be fulfilled on configmaps "log": the object has been modified; please apply your changes to the latest version and try again`
					if msg := statusOf(t, err).Message; msg != want {
						t.Errorf("conflict message %q; want %q", msg, want)
					}
				default:
					t.Errorf("writer %d: update: %v; want success or 409 Conflict", w, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	final, err := clients[0].CoreV1().ConfigMaps(ns).Get(ctx, "log", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := strings.Fields(final.Data["log"])
	sort.Strings(stored)
	sort.Strings(succeeded)
	if !equalStrings(stored, succeeded) {
		t.Errorf("the log holds %d tokens, %d updates succeeded:\nlog       %v\nsucceeded %v", len(stored), len(succeeded), stored, succeeded)
	}
	if len(succeeded)+conflicts != writers*rounds {
		t.Errorf("%d successes + %d conflicts; want %d answers", len(succeeded), conflicts, writers*rounds)
	}
	if len(succeeded) == 0 {
		t.Errorf("no update succeeded")
	}
	t.Logf("%d updates succeeded, %d conflicted", len(succeeded), conflicts)
}

// TestConcurrentPatches: patches carry no resourceVersion, so the server
// applies each to the latest object, retrying its own lost races: merge,
// JSON and strategic merge patches from many writers all land.
func TestConcurrentPatches(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{APIServers: 2})
	clients := []kubernetes.Interface{adminClient(t, c), clientFor(t, c, 1, auth.AdminUser)}
	ctx := testContext(t, testTimeout)
	const ns = "patches"
	createNamespace(ctx, t, clients[0], ns)
	cm := configMap(ns, "target", map[string]string{"seed": "x"})
	cm.Annotations = map[string]string{"seed": "x"}
	if _, err := clients[0].CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "patched"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}}
	if _, err := clients[0].AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const writers, rounds = 10, 4
	// run starts writers×rounds patches and waits for them.
	run := func(t *testing.T, patch func(cs kubernetes.Interface, token string) error) []string {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var tokens []string
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					token := fmt.Sprintf("w%02d-%02d", w, r)
					if err := patch(clients[(w+r)%2], token); err != nil {
						t.Errorf("patch %s: %v", token, err)
						continue
					}
					mu.Lock()
					tokens = append(tokens, token)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		sort.Strings(tokens)
		return tokens
	}
	keysWithPrefix := func(m map[string]string, prefix string) []string {
		var out []string
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				out = append(out, strings.TrimPrefix(k, prefix))
			}
		}
		sort.Strings(out)
		return out
	}

	t.Run("merge", func(t *testing.T) {
		sent := run(t, func(cs kubernetes.Interface, token string) error {
			body := fmt.Sprintf(`{"data":{"m-%s":"v"}}`, token)
			_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "target", types.MergePatchType, []byte(body), metav1.PatchOptions{})
			return err
		})
		got, err := clients[0].CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysWithPrefix(got.Data, "m-"); !equalStrings(keys, sent) {
			t.Errorf("data holds %d of %d merge patches: %v", len(keys), len(sent), keys)
		}
	})
	t.Run("json", func(t *testing.T) {
		sent := run(t, func(cs kubernetes.Interface, token string) error {
			body := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations/j-%s","value":"v"}]`, token)
			_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "target", types.JSONPatchType, []byte(body), metav1.PatchOptions{})
			return err
		})
		got, err := clients[0].CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysWithPrefix(got.Annotations, "j-"); !equalStrings(keys, sent) {
			t.Errorf("annotations hold %d of %d JSON patches: %v", len(keys), len(sent), keys)
		}
	})
	t.Run("strategic", func(t *testing.T) {
		// Containers merge by name: each patch adds one container to the
		// list rather than replacing it.
		sent := run(t, func(cs kubernetes.Interface, token string) error {
			body := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"c-%s","image":"busybox:1.36"}]}}}}`, token)
			_, err := cs.AppsV1().Deployments(ns).Patch(ctx, "target", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
			return err
		})
		got, err := clients[0].AppsV1().Deployments(ns).Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		containers := map[string]string{}
		for _, ctr := range got.Spec.Template.Spec.Containers {
			containers[ctr.Name] = ctr.Image
		}
		if keys := keysWithPrefix(containers, "c-"); !equalStrings(keys, sent) {
			t.Errorf("template holds %d of %d strategic patches: %v", len(keys), len(sent), keys)
		}
		if containers["app"] != "nginx:1.27" {
			t.Errorf("the original container is gone or changed: %v", containers)
		}
		// Every patch changed the spec: the generation counts them.
		if want := int64(1 + len(sent)); got.Generation != want {
			t.Errorf("generation %d; want %d (1 + one per spec change)", got.Generation, want)
		}
	})
}
