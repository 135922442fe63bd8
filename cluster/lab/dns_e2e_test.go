package lab

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/klab-dev/klab/cluster/dns"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestClusterDNS brings a local cluster up and resolves names from inside
// a pod, as a student does with kubectl exec: the kube-dns Service at the
// tenth service IP, backed by the masters' coredns pods, reached through
// the node's kube-proxy, answers web, web.default,
// web.default.svc.cluster.local and kubernetes.default with the pod's
// search list.
func TestClusterDNS(t *testing.T) {
	testenv.EndToEnd(t)
	f := startLoopCluster(t, 1, 1, 10)
	ctx := f.ctx

	svc, err := f.client.CoreV1().Services("kube-system").Get(ctx, dns.ServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.10" || svc.Spec.Selector[dns.AppLabel] != dns.AppLabelValue {
		t.Fatalf("kube-dns Service: ClusterIP %s, selector %v", svc.Spec.ClusterIP, svc.Spec.Selector)
	}
	f.eventually(time.Minute, "a ready coredns pod and its endpoint", func() (bool, error) {
		pods, err := f.client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: dns.AppLabel + "=" + dns.AppLabelValue})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != "coredns-master-1" || !podRunningReady(&pods.Items[0]) {
			return false, err
		}
		slices, err := f.client.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + dns.ServiceName})
		if err != nil {
			return false, err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	})

	if _, err := f.client.AppsV1().Deployments("default").Create(ctx, deployment("web", 1, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if web, err = f.client.CoreV1().Services("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := f.waitRunning("app=web", 1, 2*time.Minute)[0]

	for _, name := range []string{"web", "web.default", "web.default.svc.cluster.local", "kubernetes.default"} {
		want := web.Spec.ClusterIP
		if strings.HasPrefix(name, "kubernetes") {
			want = "10.96.0.1"
		}
		var out string
		// The kube-proxy may not have synced the Service's rules yet.
		f.eventually(30*time.Second, "nslookup "+name, func() (bool, error) {
			var err error
			out, err = execIn(ctx, f, pod.Name, "nslookup", name)
			return err == nil && strings.Contains(out, "Address: "+want+"\n"), err
		})
		if !strings.Contains(out, "Server:\t\t10.96.0.10\n") {
			t.Errorf("nslookup %s did not ask 10.96.0.10:\n%s", name, out)
		}
	}
	out, err := execIn(ctx, f, pod.Name, "cat", "/etc/resolv.conf")
	if err != nil || !strings.Contains(out, "nameserver 10.96.0.10\n") || !strings.Contains(out, "search default.svc.cluster.local svc.cluster.local cluster.local\n") || !strings.Contains(out, "options ndots:5\n") {
		t.Errorf("resolv.conf: %v\n%s", err, out)
	}
	if out, err := execIn(ctx, f, pod.Name, "nslookup", "nope"); err == nil || !strings.Contains(out, "** server can't find nope: ") {
		t.Errorf("nslookup nope: %v\n%s", err, out)
	}
}

// execIn runs a command in the pod's app container through the API
// server's exec subresource and returns its output; a non-zero exit is an
// error.
func execIn(ctx context.Context, f *loopFixture, pod string, command ...string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", f.c.Info().Kubeconfig)
	if err != nil {
		return "", err
	}
	req := f.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "app", Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String() + errOut.String(), err
}
