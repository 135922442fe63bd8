package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/internal/testenv"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// TestServiceAccountTokenMount checks, on a local cluster, what a pod
// finds in its service-account directory: its namespace, the cluster CA
// and a token the API server takes as the pod's service account, with
// upstream's rights for it (none beyond discovery: listing pods is
// forbidden); a ConfigMap volume that follows the ConfigMap; and no files
// at all when automountServiceAccountToken is false.
func TestServiceAccountTokenMount(t *testing.T) {
	testenv.EndToEnd(t)
	checkServiceAccountMount(t, startLoopCluster(t, 1, 1, 10))
}

// TestDockerServiceAccountTokenMount checks the same on Docker, where the
// kubelet writes into its volume and the pod's container gets a bind
// mount of the directory.
func TestDockerServiceAccountTokenMount(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "sa")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	defer func() {
		if _, err := Down(context.Background(), name, false, nil); err != nil {
			t.Errorf("Down: %v", err)
		}
	}()
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	checkServiceAccountMount(t, f)
}

func checkServiceAccountMount(t *testing.T, f *loopFixture) {
	ctx := f.ctx
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting"}, Data: map[string]string{"text": "hello"}}
	if _, err := f.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, automount bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				AutomountServiceAccountToken: ptr.To(automount),
				Containers: []corev1.Container{{
					Name: "app", Image: "klab/app:latest",
					VolumeMounts: []corev1.VolumeMount{{Name: "greeting", MountPath: "/etc/greeting"}},
				}},
				Volumes: []corev1.Volume{{Name: "greeting", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}},
				}}},
			},
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("with-token", true), pod("without-token", false)} {
		if _, err := f.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.eventually(2*time.Minute, "both pods running", func() (bool, error) {
		for _, name := range []string{"with-token", "without-token"} {
			p, err := f.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, err
			}
		}
		return true, nil
	})

	read := func(pod, file string) string {
		t.Helper()
		out, err := execIn(ctx, f, pod, "cat", file)
		if err != nil {
			t.Fatalf("cat %s in %s: %v\n%s", file, pod, err, out)
		}
		return out
	}
	if ns := read("with-token", saDir+"/namespace"); ns != "default" {
		t.Errorf("namespace file = %q, want default", ns)
	}
	ca := read("with-token", saDir+"/ca.crt")
	if !strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("ca.crt is not a certificate:\n%s", ca)
	}
	if out, err := execIn(ctx, f, "with-token", "ls", "-a", saDir); err != nil || !strings.Contains(out, "..data") {
		t.Errorf("ls -a %s: %v\n%s (want upstream's ..data layout)", saDir, err, out)
	}

	// The token, with the CA the pod was given, is the pod's service
	// account to the API server.
	admin, err := clientcmd.BuildConfigFromFlags("", f.c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	podCfg := &rest.Config{Host: admin.Host, BearerToken: read("with-token", saDir+"/token"),
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(ca)}}
	podClient, err := kubernetes.NewForConfig(podCfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := podClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the pod's token: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:default" {
		t.Errorf("the pod's token is %q, want system:serviceaccount:default:default", got)
	}
	if _, err := podClient.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing pods with the default account's token: %v, want upstream's 403", err)
	}

	// Inside the pod, a client with the mounted token and CA reaches the
	// API server by its in-cluster name once the account may view the
	// namespace: curl checks the server's certificate against ca.crt, so
	// the name must be one the API server's certificate carries.
	listPods := `curl -sS --cacert ` + saDir + `/ca.crt -H "Authorization: Bearer $(cat ` + saDir + `/token)" https://kubernetes.default.svc/api/v1/namespaces/default/pods`
	// The cluster DNS may still be starting: wait for the name to answer.
	f.eventually(time.Minute, "the API server's 403 Status to the pod's own client before the binding", func() (bool, error) {
		out, err := execIn(ctx, f, "with-token", "sh", "-c", listPods)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		return strings.Contains(out, `"code":403`) || strings.Contains(out, `"code": 403`), fmt.Errorf("no 403 in %s", out)
	})
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "default-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "default"}},
	}
	if _, err := f.client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(time.Minute, "the pod's own client listing pods through kubernetes.default.svc", func() (bool, error) {
		out, err := execIn(ctx, f, "with-token", "sh", "-c", listPods)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		return strings.Contains(out, `"kind":"PodList"`) && strings.Contains(out, `"name":"with-token"`), nil
	})
	if out, err := execIn(ctx, f, "with-token", "sh", "-c", `curl -sS https://kubernetes.default.svc/api`); err == nil || !strings.Contains(out, "curl: (60) SSL certificate problem") {
		t.Errorf("curl without the pod's CA: %v\n%s\nwant curl's certificate error (60)", err, out)
	}

	// automountServiceAccountToken: false leaves no directory.
	if out, err := execIn(ctx, f, "without-token", "ls", saDir); err == nil {
		t.Errorf("a pod without automount has %s:\n%s", saDir, out)
	}

	// A ConfigMap volume follows the ConfigMap.
	if got := read("without-token", "/etc/greeting/text"); got != "hello" {
		t.Errorf("/etc/greeting/text = %q, want hello", got)
	}
	cm.Data["text"] = "bonjour"
	if _, err := f.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(time.Minute, "the ConfigMap's change in the volume", func() (bool, error) {
		out, err := execIn(ctx, f, "without-token", "cat", "/etc/greeting/text")
		return err == nil && out == "bonjour", err
	})
}
