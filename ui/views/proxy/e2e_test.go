package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestProxyViewOnLocalCluster starts a small cluster in this process (the
// local runtime), runs three pods of the demo app behind a NodePort
// Service, and drives the view as a student would: the Service shows with
// its three endpoints and its rules, and t sends a burst that the three
// pods answer.
func TestProxyViewOnLocalCluster(t *testing.T) {
	testenv.EndToEnd(t)
	home := t.TempDir()
	t.Setenv("KLAB_HOME", home)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(home, "no-docker.sock"))
	began := time.Now()
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := "pxview-" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background(), nil) })
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "klab/app:v1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	h := startView(t, "en", 160, 50, c.Info(), Connect)
	v := h.v
	// Everything below arrives through the informers and the kube-proxy's
	// event stream.
	h.untilWithin(60*time.Second, "web with three ready endpoints and their rules", func() bool {
		svc := v.current()
		if svc == nil || svc.key() != "default/web" || svc.readyEndpoints() != 3 {
			return false
		}
		rules := strings.Join(v.shown, "\n")
		for _, e := range svc.Endpoints {
			if !strings.Contains(rules, e.IP+":8080") {
				return false
			}
		}
		return true
	})
	t.Logf("web ready in the view after %v", time.Since(began).Round(time.Millisecond))
	if !strings.Contains(v.View(), "Rules for default/web on worker-1 (iptables-save)") {
		t.Errorf("the view shows:\n%s", v.View())
	}

	if !h.press("t") {
		t.Fatal("t sent no traffic")
	}
	h.untilWithin(30*time.Second, "the burst", func() bool { return v.burst.done })
	b := v.burst
	if b.err != nil || b.received != burstRequests || b.failed() != 0 || len(b.pods) != 3 {
		t.Fatalf("burst: err %v, %d received, %d failed, pods %+v; the view shows:\n%s", b.err, b.received, b.failed(), b.pods, v.View())
	}
	for _, p := range b.pods {
		if !strings.HasPrefix(p.pod, "web-") || !strings.Contains(v.View(), p.pod) {
			t.Errorf("pod %q is not in the chart:\n%s", p.pod, v.View())
		}
	}
	t.Logf("burst answered by %+v after %v", b.pods, time.Since(began).Round(time.Millisecond))

	// m switches every kube-proxy to ipvs; the mode-changed event brings
	// the new rules, and round-robin splits the next burst evenly.
	if !h.press("m") {
		t.Fatal("m asked for no switch")
	}
	clusterIP := v.current().ClusterIP
	h.untilWithin(30*time.Second, "ipvs rules", func() bool {
		return v.switching == "" && v.mode() == "ipvs" && strings.Contains(strings.Join(v.shown, "\n"), "TCP  "+clusterIP+":80 rr")
	})
	if v.outcome == nil || v.outcome.failed || v.diff == nil {
		t.Errorf("after the switch the view shows:\n%s", v.View())
	}
	h.press("t")
	h.untilWithin(30*time.Second, "the ipvs burst", func() bool { return v.burst.done })
	for _, p := range v.burst.pods {
		if p.count < burstRequests/3 || p.count > burstRequests/3+1 {
			t.Errorf("ipvs rr: pod %s answered %d of %d", p.pod, p.count, burstRequests)
		}
	}
	if v.burst.modes["ipvs"] != burstRequests || len(v.burst.pods) != 3 {
		t.Errorf("ipvs burst: modes %v, pods %+v", v.burst.modes, v.burst.pods)
	}
	t.Logf("ipvs burst answered by %+v; %v in all", v.burst.pods, time.Since(began).Round(time.Millisecond))
}
