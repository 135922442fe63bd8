package printers

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container states for the cases below.

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, exitCode, signal int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}
}

// restartedAgo is a last state of a run that ended d ago.
func restartedAgo(d time.Duration) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: ago(d)}}
}

func status(name string, ready bool, state corev1.ContainerState) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: state}
}

func condition(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

// pod is a pod created 10m ago with the named app containers.
func pod(containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: objectMeta("web", 10*time.Minute)}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

func TestPodStatus(t *testing.T) {
	tests := []struct {
		name     string
		pod      func() *corev1.Pod
		ready    string
		status   string
		restarts string
	}{
		{
			name: "running and ready",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}
				return p
			},
			ready: "1/1", status: "Running", restarts: "0",
		},
		{
			name: "running but not ready",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, running())}
				return p
			},
			ready: "0/1", status: "Running", restarts: "0",
		},
		{
			name: "pending without a node",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
				return p
			},
			ready: "0/1", status: "Pending", restarts: "0",
		},
		{
			name: "held by a scheduling gate",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
				return p
			},
			ready: "0/1", status: "SchedulingGated", restarts: "0",
		},
		{
			name: "container being created",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, waiting("ContainerCreating"))}
				return p
			},
			ready: "0/1", status: "ContainerCreating", restarts: "0",
		},
		{
			name: "crash loop with three restarts, the last 2m ago",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				st := status("app", false, waiting("CrashLoopBackOff"))
				st.RestartCount = 3
				st.LastTerminationState = restartedAgo(2 * time.Minute)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
				return p
			},
			ready: "0/1", status: "CrashLoopBackOff", restarts: "3 (2m ago)",
		},
		{
			name: "restarts without a recorded finish time",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				st := status("app", true, running())
				st.RestartCount = 3
				p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
				return p
			},
			ready: "1/1", status: "Running", restarts: "3",
		},
		{
			name: "image pull back-off",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, waiting("ImagePullBackOff"))}
				return p
			},
			ready: "0/1", status: "ImagePullBackOff", restarts: "0",
		},
		{
			name: "completed",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("Completed", 0, 0))}
				return p
			},
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "error",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("Error", 1, 0))}
				return p
			},
			ready: "0/1", status: "Error", restarts: "0",
		},
		{
			name: "out of memory",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("OOMKilled", 137, 0))}
				return p
			},
			ready: "0/1", status: "OOMKilled", restarts: "0",
		},
		{
			name: "killed by a signal, no reason",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("", 137, 9))}
				return p
			},
			ready: "0/1", status: "Signal:9", restarts: "0",
		},
		{
			name: "exit code, no reason",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("", 2, 0))}
				return p
			},
			ready: "0/1", status: "ExitCode:2", restarts: "0",
		},
		{
			name: "evicted",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.Reason = "Evicted"
				return p
			},
			ready: "0/1", status: "Evicted", restarts: "0",
		},
		{
			name: "first container in spec order gives the reason",
			pod: func() *corev1.Pod {
				p := pod("a", "b")
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					status("a", false, waiting("ErrImagePull")),
					status("b", false, waiting("ContainerCreating")),
				}
				return p
			},
			ready: "0/2", status: "ErrImagePull", restarts: "0",
		},
		{
			name: "one of two finished, the other runs, pod ready",
			pod: func() *corev1.Pod {
				p := pod("job", "server")
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionTrue)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					status("job", false, terminated("Completed", 0, 0)),
					status("server", true, running()),
				}
				return p
			},
			ready: "1/2", status: "Running", restarts: "0",
		},
		{
			name: "one of two finished, the other runs, pod not ready",
			pod: func() *corev1.Pod {
				p := pod("job", "server")
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionFalse)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					status("job", false, terminated("Completed", 0, 0)),
					status("server", true, running()),
				}
				return p
			},
			ready: "1/2", status: "NotReady", restarts: "0",
		},
		{
			name: "first of two init containers running",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init-a"}, {Name: "init-b"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					status("init-a", false, running()),
					status("init-b", false, waiting("PodInitializing")),
				}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, waiting("PodInitializing"))}
				return p
			},
			ready: "0/1", status: "Init:0/2", restarts: "0",
		},
		{
			name: "second of two init containers running",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init-a"}, {Name: "init-b"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					status("init-a", false, terminated("Completed", 0, 0)),
					status("init-b", false, running()),
				}
				return p
			},
			ready: "0/1", status: "Init:1/2", restarts: "0",
		},
		{
			name: "init container waiting to initialize counts as progress",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{status("init", false, waiting("PodInitializing"))}
				return p
			},
			ready: "0/1", status: "Init:0/1", restarts: "0",
		},
		{
			name: "init container in a crash loop, its restarts count",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.Phase = corev1.PodPending
				st := status("init", false, waiting("CrashLoopBackOff"))
				st.RestartCount = 4
				st.LastTerminationState = restartedAgo(time.Minute)
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{st}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, waiting("PodInitializing"))}
				return p
			},
			ready: "0/1", status: "Init:CrashLoopBackOff", restarts: "4 (60s ago)",
		},
		{
			name: "init container failed",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{status("init", false, terminated("Error", 1, 0))}
				return p
			},
			ready: "0/1", status: "Init:Error", restarts: "0",
		},
		{
			name: "init container exited without a reason",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{status("init", false, terminated("", 3, 0))}
				return p
			},
			ready: "0/1", status: "Init:ExitCode:3", restarts: "0",
		},
		{
			name: "init done, app container starting",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.Phase = corev1.PodPending
				st := status("init", false, terminated("Completed", 0, 0))
				st.RestartCount = 2 // history once init is done
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{st}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, waiting("PodInitializing"))}
				return p
			},
			ready: "0/1", status: "PodInitializing", restarts: "0",
		},
		{
			name: "running sidecar counts in ready and restarts",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue), condition(corev1.PodReady, corev1.ConditionTrue)}
				sidecar := status("proxy", true, running())
				sidecar.Started = ptr(true)
				sidecar.RestartCount = 1
				sidecar.LastTerminationState = restartedAgo(5 * time.Minute)
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{sidecar}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}
				return p
			},
			ready: "2/2", status: "Running", restarts: "1 (5m ago)",
		},
		{
			name: "sidecar not started yet",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
				p.Status.Phase = corev1.PodPending
				sidecar := status("proxy", false, running())
				sidecar.Started = ptr(false)
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{sidecar}
				return p
			},
			ready: "0/2", status: "Init:0/1", restarts: "0",
		},
		{
			name: "being deleted",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}
				return p
			},
			ready: "1/1", status: "Terminating", restarts: "0",
		},
		{
			name: "finished pod being deleted keeps its end state",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", false, terminated("Completed", 0, 0))}
				return p
			},
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "node lost",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				p.Status.Reason = "NodeLost"
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}
				return p
			},
			ready: "1/1", status: "NodeLost", restarts: "0",
		},
		{
			name: "node lost and being deleted",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodRunning
				p.Status.Reason = "NodeLost"
				p.Status.ContainerStatuses = []corev1.ContainerStatus{status("app", true, running())}
				return p
			},
			ready: "1/1", status: "Unknown", restarts: "0",
		},
		{
			name: "restarts sum over containers, the latest one counts",
			pod: func() *corev1.Pod {
				p := pod("a", "b")
				p.Status.Phase = corev1.PodRunning
				a := status("a", true, running())
				a.RestartCount = 2
				a.LastTerminationState = restartedAgo(3 * time.Hour)
				b := status("b", true, running())
				b.RestartCount = 1
				b.LastTerminationState = restartedAgo(90 * time.Second)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{a, b}
				return p
			},
			ready: "2/2", status: "Running", restarts: "3 (90s ago)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rowCells(t, tt.pod())
			want := []any{"web", tt.ready, tt.status, tt.restarts, "10m"}
			if !reflect.DeepEqual(got[:5], want) {
				t.Errorf("NAME READY STATUS RESTARTS AGE\n got: %q\nwant: %q", got[:5], want)
			}
		})
	}
}

func TestPodWideCells(t *testing.T) {
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		want []any // IP NODE NOMINATED NODE READINESS GATES
	}{
		{
			name: "unscheduled",
			pod:  func(*corev1.Pod) {},
			want: []any{"<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduled with podIPs only",
			pod: func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-1"
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "fd00::5"}}
			},
			want: []any{"10.244.1.5", "worker-1", "<none>", "<none>"},
		},
		{
			name: "podIP wins over podIPs",
			pod: func(p *corev1.Pod) {
				p.Status.PodIP = "10.244.1.6"
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.5"}}
			},
			want: []any{"10.244.1.6", "<none>", "<none>", "<none>"},
		},
		{
			name: "nominated by preemption",
			pod: func(p *corev1.Pod) {
				p.Status.NominatedNodeName = "worker-2"
			},
			want: []any{"<none>", "<none>", "worker-2", "<none>"},
		},
		{
			name: "one of two readiness gates passed",
			pod: func(p *corev1.Pod) {
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
				p.Status.Conditions = []corev1.PodCondition{
					condition("example.com/lb", corev1.ConditionTrue),
					condition("example.com/dns", corev1.ConditionFalse),
				}
			},
			want: []any{"<none>", "<none>", "<none>", "1/2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod("app")
			tt.pod(p)
			assertCells(t, rowCells(t, p)[5:], tt.want)
		})
	}
}

func TestPodRowConditions(t *testing.T) {
	tests := []struct {
		phase corev1.PodPhase
		want  []metav1.TableRowCondition
	}{
		{phase: corev1.PodRunning, want: nil},
		{phase: corev1.PodSucceeded, want: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The pod has completed successfully."}}},
		{phase: corev1.PodFailed, want: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The pod failed."}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			p := pod("app")
			p.Status.Phase = tt.phase
			table, err := Table(p, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := table.Rows[0].Conditions; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("conditions = %+v, want %+v", got, tt.want)
			}
		})
	}
}
