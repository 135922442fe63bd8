package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/timing"
)

func TestKubeletAgainstAPIServer(t *testing.T) {
	tc := startAPIServer(t)
	k := tc.startKubelet(testRuntime())
	ctx := context.Background()

	t.Run("node registers and is Ready", func(t *testing.T) {
		var node *v1.Node
		eventually(t, "node Ready", func() (bool, string) {
			var err error
			node, err = tc.admin.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return nodeReady(node), fmt.Sprint(node.Status.Conditions)
		})
		if node.Labels[labelHostname] != testNode || node.Labels[labelOS] != "linux" {
			t.Errorf("labels = %v", node.Labels)
		}
		if _, master := node.Labels[labelControlPlane]; master || len(node.Spec.Taints) != 0 {
			t.Errorf("worker has control-plane label or taints: %v %v", node.Labels, node.Spec.Taints)
		}
		if got := node.Status.DaemonEndpoints.KubeletEndpoint.Port; got != k.port() || got == 0 {
			t.Errorf("kubelet port = %d, want %d", got, k.port())
		}
		if node.Spec.PodCIDR != "10.244.1.0/24" {
			t.Errorf("podCIDR = %q", node.Spec.PodCIDR)
		}
		pods := node.Status.Allocatable[v1.ResourcePods]
		if pods.Value() != DefaultMaxPods {
			t.Errorf("allocatable pods = %v", pods.String())
		}
		if node.Status.NodeInfo.KubeletVersion != Version || node.Status.NodeInfo.ContainerRuntimeVersion != "critest://klab" {
			t.Errorf("nodeInfo = %+v", node.Status.NodeInfo)
		}
		if len(node.Status.Images) != 2 {
			t.Errorf("images = %v", node.Status.Images)
		}
	})

	t.Run("lease is renewed", func(t *testing.T) {
		var first *coordinationv1.Lease
		eventually(t, "lease", func() (bool, string) {
			l, err := tc.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			first = l
			return len(l.OwnerReferences) == 1, "no owner yet"
		})
		if *first.Spec.HolderIdentity != testNode || *first.Spec.LeaseDurationSeconds != 2 {
			t.Errorf("lease spec = holder %q duration %d", *first.Spec.HolderIdentity, *first.Spec.LeaseDurationSeconds)
		}
		if o := first.OwnerReferences[0]; o.Kind != "Node" || o.Name != testNode {
			t.Errorf("owner = %+v", o)
		}
		eventually(t, "lease renewal", func() (bool, string) {
			l, err := tc.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.RenewTime.After(first.Spec.RenewTime.Time), l.Spec.RenewTime.String()
		})
	})

	t.Run("pod runs, serves logs and is deleted gracefully", func(t *testing.T) {
		pod := tc.createPod("web", appImage, nil)
		eventually(t, "pod Running and Ready", func() (bool, string) {
			p := tc.getPod("web")
			return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && podIsReady(p), fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		p := tc.getPod("web")
		cs := p.Status.ContainerStatuses[0]
		if !strings.HasPrefix(cs.ContainerID, "critest://") || cs.State.Running == nil || cs.RestartCount != 0 || p.Status.HostIP != "127.0.0.1" {
			t.Errorf("status = %+v", p.Status)
		}
		c, ok := tc.rt.Find(string(pod.UID), "app")
		if !ok {
			t.Fatal("no container in the runtime")
		}
		tc.rt.WriteLog(c.ID, "second line")
		raw, err := tc.admin.CoreV1().Pods("default").GetLogs("web", &v1.PodLogOptions{}).DoRaw(ctx)
		if err != nil || string(raw) != "hello from app\nsecond line\n" {
			t.Errorf("logs = %q, %v", raw, err)
		}
		raw, err = tc.admin.CoreV1().Pods("default").GetLogs("web", &v1.PodLogOptions{TailLines: ptr.To[int64](1)}).DoRaw(ctx)
		if err != nil || string(raw) != "second line\n" {
			t.Errorf("tail 1 logs = %q, %v", raw, err)
		}
		// kubectl logs reads with Stream, which turns the kubelet's Status
		// into "Error from server (BadRequest): ...".
		_, err = tc.admin.CoreV1().Pods("default").GetLogs("web", &v1.PodLogOptions{Previous: true}).Stream(ctx)
		if !apierrors.IsBadRequest(err) || err.Error() != `previous terminated container "app" in pod "web" not found` {
			t.Errorf("previous logs error = %v", err)
		}
		reasons := eventReasons(t, tc.admin, pod)
		for _, want := range []string{eventPulled, eventCreated, eventStarted} {
			if !reasons[want] {
				t.Errorf("no %s event among %v", want, reasons)
			}
		}

		if err := tc.admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "pod gone", func() (bool, string) {
			_, err := tc.admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		eventually(t, "sandbox removed", func() (bool, string) {
			pods, _ := listRuntimePods(ctx, tc.rt)
			return pods[pod.UID] == nil, "still in the runtime"
		})
	})

	t.Run("crashing container restarts with back-off", func(t *testing.T) {
		w, err := tc.admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "crash").String()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		pod := tc.createPod("crash", crashImage, nil)
		want := fmt.Sprintf("back-off 500ms restarting failed container=app pod=crash_default(%s)", pod.UID)
		sawBackOff := false
		deadline := time.After(10 * time.Second)
		for !sawBackOff {
			select {
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*v1.Pod)
				if !ok || len(p.Status.ContainerStatuses) == 0 {
					continue
				}
				cs := p.Status.ContainerStatuses[0]
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoopBackOff {
					if cs.State.Waiting.Message != want {
						t.Errorf("first back-off message = %q, want %q", cs.State.Waiting.Message, want)
					}
					if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
						t.Errorf("last state = %+v", cs.LastTerminationState)
					}
					if cs.RestartCount != 1 || p.Status.Phase != v1.PodRunning {
						t.Errorf("restart count %d phase %s during first back-off", cs.RestartCount, p.Status.Phase)
					}
					sawBackOff = true
				}
			case <-deadline:
				t.Fatal("no CrashLoopBackOff seen")
			}
		}
		eventually(t, "restarts go on", func() (bool, string) {
			cs := tc.getPod("crash").Status.ContainerStatuses[0]
			return cs.RestartCount >= 3, fmt.Sprint(cs.RestartCount)
		})
		if got := k.crashBackOff.Get(backOffKey(pod, "app")); got < 2*testSpeed.Scale(timing.BackOffInitial) {
			t.Errorf("back-off after 3 restarts = %v", got)
		}
		if err := tc.admin.CoreV1().Pods("default").Delete(ctx, "crash", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the API server's kubelet client certificate is authorized by a SubjectAccessReview", func(t *testing.T) {
		cert, err := tc.pki.KubeletClientCertificate()
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.pki.CertPool(), Certificates: []tls.Certificate{cert}}}}
		resp, err := client.Get("https://" + k.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d (%s), want 200: kubeadm:cluster-admins is bound to cluster-admin", resp.StatusCode, body)
		}
		// Without the binding kubeadm creates, the same certificate is
		// refused once the kubelet's cached answer expires.
		ctx := context.Background()
		if err := tc.admin.RbacV1().ClusterRoleBindings().Delete(ctx, "kubeadm:cluster-admins", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		k.authz.mu.Lock()
		clear(k.authz.cache)
		k.authz.mu.Unlock()
		eventually(t, "403 for the kubelet client certificate", func() (bool, string) {
			resp, err := client.Get("https://" + k.Addr() + "/healthz")
			if err != nil {
				return false, err.Error()
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusForbidden &&
				strings.Contains(string(body), "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[healthz])"), fmt.Sprint(resp.StatusCode, " ", string(body))
		})
	})

	t.Run("kubelet API authenticates and authorizes", func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.pki.CertPool()}}}
		adminToken, _ := tc.pki.Token(auth.AdminUser)
		viewerToken, _ := tc.pki.Token(auth.ViewerUser)
		tests := []struct {
			name, token string
			want        int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"unknown token", "not-a-token", http.StatusUnauthorized},
			{"the viewer may not use nodes/proxy", viewerToken, http.StatusForbidden},
			{"admin", adminToken, http.StatusOK},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, "https://"+k.Addr()+"/healthz", nil)
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("status %d (%s), want %d", resp.StatusCode, body, tt.want)
				}
			})
		}
	})

	t.Run("static pods have mirror pods that follow their health", func(t *testing.T) {
		testMirrorPods(t, tc)
	})

	t.Run("restarted kubelet adopts running pods", func(t *testing.T) {
		pod := tc.createPod("adopted", appImage, nil)
		eventually(t, "pod Running", func() (bool, string) {
			p := tc.getPod("adopted")
			return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
		})
		before, _ := tc.rt.Find(string(pod.UID), "app")
		if err := k.Stop(); err != nil {
			t.Fatal(err)
		}
		<-k.Done()
		tc.startKubelet(tc.rt)
		// Deleting the pod proves the new kubelet owns it; the container
		// it ends must be the one the first kubelet started.
		if err := tc.admin.CoreV1().Pods("default").Delete(ctx, "adopted", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "pod gone", func() (bool, string) {
			_, err := tc.admin.CoreV1().Pods("default").Get(ctx, "adopted", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if !containsCall(tc.rt.Calls(), "StopContainer ["+before.ID) {
			t.Errorf("the adopted container %s was not the one stopped: %v", before.ID, tc.rt.Calls())
		}
	})
}
