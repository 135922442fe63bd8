package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
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
