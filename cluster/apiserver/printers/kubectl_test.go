package printers

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubectlprinters "k8s.io/cli-runtime/pkg/printers"
)

// TestKubectlOutput feeds Tables through kubectl's own table printer and
// compares the text with what `kubectl get` shows a user.
func TestKubectlOutput(t *testing.T) {
	crash := pod("app")
	crash.Name = "crash"
	crash.Status.Phase = corev1.PodRunning
	st := status("app", false, waiting("CrashLoopBackOff"))
	st.RestartCount = 3
	st.LastTerminationState = restartedAgo(2 * time.Minute)
	crash.Status.ContainerStatuses = []corev1.ContainerStatus{st}

	web := pod("app")
	web.CreationTimestamp = ago(76 * time.Hour)
	web.Spec.NodeName = "worker-1"
	web.Status.Phase = corev1.PodRunning
	web.Status.PodIP = "10.244.1.5"
	web.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}

	services := &corev1.ServiceList{Items: []corev1.Service{
		{ObjectMeta: objectMeta("kubernetes", 72*time.Hour), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.1"},
			Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}},
		}},
		{ObjectMeta: objectMeta("web", 5*time.Minute), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.1.2"},
			Ports:    []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
			Selector: map[string]string{"app": "web"},
		}},
	}}

	tests := []struct {
		name string
		obj  runtime.Object
		wide bool
		want string
	}{
		{
			name: "kubectl get pods",
			obj:  &corev1.PodList{Items: []corev1.Pod{*crash, *web}},
			want: "" +
				"NAME    READY   STATUS             RESTARTS     AGE\n" +
				"crash   0/1     CrashLoopBackOff   3 (2m ago)   10m\n" +
				"web     1/1     Running            0            3d4h\n",
		},
		{
			name: "kubectl get pod web -o wide",
			obj:  web,
			wide: true,
			want: "" +
				"NAME   READY   STATUS    RESTARTS   AGE    IP           NODE       NOMINATED NODE   READINESS GATES\n" +
				"web    1/1     Running   0          3d4h   10.244.1.5   worker-1   <none>           <none>\n",
		},
		{
			name: "kubectl get services -o wide",
			obj:  services,
			wide: true,
			want: "" +
				"NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)        AGE   SELECTOR\n" +
				"kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP        3d    <none>\n" +
				"web          NodePort    10.96.1.2    <none>        80:30080/TCP   5m    app=web\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			printer := kubectlprinters.NewTablePrinter(kubectlprinters.PrintOptions{Wide: tt.wide})
			if err := printer.PrintObj(table, &out); err != nil {
				t.Fatalf("kubectl printer: %v", err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("kubectl output\n got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
