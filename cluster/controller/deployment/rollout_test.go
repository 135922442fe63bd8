package deployment

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

// at sets the Deployment's generation, revision annotation and status.
func at(d *appsv1.Deployment, generation int64, rev string, st appsv1.DeploymentStatus) *appsv1.Deployment {
	d.Generation = generation
	if rev != "" {
		d.Annotations = map[string]string{RevisionAnnotation: rev}
	}
	if st.TerminatingReplicas == nil {
		st.TerminatingReplicas = ptr.To[int32](0)
	}
	d.Status = st
	return d
}

// counts is a status with the given counters observed at generation.
func counts(generation int64, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{
		ObservedGeneration: generation, Replicas: replicas, UpdatedReplicas: updated,
		ReadyReplicas: available, AvailableReplicas: available, UnavailableReplicas: max(replicas-available, 0),
		Conditions: conds,
	}
}

func cond(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string, ago time.Duration) appsv1.DeploymentCondition {
	return newCondition(t, status, reason, msg, now.Add(-ago))
}

var (
	available   = cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", time.Hour)
	progressing = func(ago time.Duration) appsv1.DeploymentCondition {
		return cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, "ReplicaSet is progressing.", ago)
	}
	completed = cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason, "done", time.Hour)
)

func strategy(surge, unavailable intstr.IntOrString) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	}
}

func recreate(d *appsv1.Deployment) {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
}

func deployment(replicas int32, image string, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := newDeployment(replicas, image)
	for _, o := range opts {
		o(d)
	}
	return d
}

func TestSyncDeployment(t *testing.T) {
	v1, v2 := rsName("app:v1"), rsName("app:v2")
	// check looks at what a case wrote, beyond the list of actions.
	type check func(t *testing.T, f *controllertest.Fixture)
	tests := []struct {
		name        string
		objects     func() []runtime.Object
		wantActions []string
		wantEvents  []string
		check       check
	}{
		{
			name:        "a new Deployment creates its ReplicaSet at full size",
			objects:     func() []runtime.Object { return []runtime.Object{deployment(3, "app:v1")} },
			wantActions: []string{"create replicasets " + v1, "update deployments/status web", "update deployments/status web"},
			wantEvents:  []string{"Normal ScalingReplicaSet Scaled up replica set " + v1 + " from 0 to 3"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				rs := written[*appsv1.ReplicaSet](f, "replicasets")[0]
				hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
				if *rs.Spec.Replicas != 3 || rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
					rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Name != "web-"+hash {
					t.Errorf("new ReplicaSet %s: replicas %d, selector %v, template labels %v", rs.Name, *rs.Spec.Replicas, rs.Spec.Selector, rs.Spec.Template.Labels)
				}
				wantAnn := map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}
				if diff := cmp.Diff(wantAnn, rs.Annotations); diff != "" {
					t.Errorf("ReplicaSet annotations (-want +got):\n%s", diff)
				}
				if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != "web-uid" {
					t.Errorf("controller ref = %v, want the Deployment", ref)
				}
				d := written[*appsv1.Deployment](f, "deployments/status")[1]
				if d.Annotations[RevisionAnnotation] != "1" {
					t.Errorf("deployment revision = %q, want 1", d.Annotations[RevisionAnnotation])
				}
				if got := condition(d, appsv1.DeploymentProgressing); got != `True NewReplicaSetCreated: Created new replica set "`+v1+`"` {
					t.Errorf("Progressing = %s", got)
				}
				if got := condition(d, appsv1.DeploymentAvailable); got != "False MinimumReplicasUnavailable: Deployment does not have minimum availability." {
					t.Errorf("Available = %s", got)
				}
			},
		},
		{
			name: "scaling the Deployment scales its only ReplicaSet",
			objects: func() []runtime.Object {
				old := deployment(3, "app:v1")
				return []runtime.Object{
					at(deployment(5, "app:v1"), 2, "1", counts(1, 3, 3, 3, available, completed)),
					newRS(old, "app:v1", 1, 3, 3, time.Hour),
				}
			},
			wantActions: []string{"update replicasets " + v1, "update deployments/status web"},
			wantEvents:  []string{"Normal ScalingReplicaSet Scaled up replica set " + v1 + " from 3 to 5"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				rs := written[*appsv1.ReplicaSet](f, "replicasets")[0]
				if *rs.Spec.Replicas != 5 || rs.Annotations[DesiredReplicasAnnotation] != "5" || rs.Annotations[MaxReplicasAnnotation] != "7" {
					t.Errorf("scaled ReplicaSet: replicas %d, annotations %v; want 5, desired 5, max 7 (surge 25%% of 5 rounds up to 2)", *rs.Spec.Replicas, rs.Annotations)
				}
			},
		},
		{
			name: "rolling update: the first step surges one pod and takes one old pod away",
			objects: func() []runtime.Object {
				d := at(deployment(4, "app:v2"), 2, "1", counts(1, 4, 4, 4, available, completed))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 4, 4, time.Hour)}
			},
			wantActions: []string{
				"create replicasets " + v2, "update deployments/status web",
				"update replicasets " + v1, "update deployments/status web",
			},
			wantEvents: []string{
				"Normal ScalingReplicaSet Scaled up replica set " + v2 + " from 0 to 1",
				"Normal ScalingReplicaSet Scaled down replica set " + v1 + " from 4 to 3",
			},
			check: func(t *testing.T, f *controllertest.Fixture) {
				rss := written[*appsv1.ReplicaSet](f, "replicasets")
				if created, scaled := rss[0], rss[1]; *created.Spec.Replicas != 1 || created.Annotations[RevisionAnnotation] != "2" || *scaled.Spec.Replicas != 3 {
					t.Errorf("new ReplicaSet %d replicas revision %s, old %d replicas; want 1 (maxSurge 1 of 4), 2, and 3 (maxUnavailable 1)",
						*created.Spec.Replicas, created.Annotations[RevisionAnnotation], *scaled.Spec.Replicas)
				}
				ds := written[*appsv1.Deployment](f, "deployments/status")
				if d := ds[len(ds)-1]; d.Annotations[RevisionAnnotation] != "2" || d.Status.UpdatedReplicas != 0 || d.Status.UnavailableReplicas != 1 || d.Status.ObservedGeneration != 2 {
					t.Errorf("deployment revision %s status %+v", d.Annotations[RevisionAnnotation], d.Status)
				}
			},
		},
		{
			name: "rolling update: no step while a new pod is unavailable (maxSurge 0, maxUnavailable 1)",
			objects: func() []runtime.Object {
				d := deployment(3, "app:v2", strategy(intstr.FromInt32(0), intstr.FromInt32(1)))
				at(d, 2, "2", counts(2, 3, 1, 2, available, progressing(time.Minute)))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 2, 2, time.Hour), newRS(d, "app:v2", 2, 1, 0, time.Minute)}
			},
		},
		{
			name: "rolling update: an available new pod lets one more old pod go",
			objects: func() []runtime.Object {
				d := deployment(3, "app:v2", strategy(intstr.FromInt32(0), intstr.FromInt32(1)))
				at(d, 2, "2", counts(2, 3, 1, 2, available, progressing(time.Minute)))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 2, 2, time.Hour), newRS(d, "app:v2", 2, 1, 1, time.Minute)}
			},
			wantActions: []string{"update replicasets " + v1, "update deployments/status web"},
			wantEvents:  []string{"Normal ScalingReplicaSet Scaled down replica set " + v1 + " from 2 to 1"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				d := written[*appsv1.Deployment](f, "deployments/status")[0]
				c := getCondition(d.Status, appsv1.DeploymentProgressing)
				if c.Reason != ReplicaSetUpdatedReason || !c.LastUpdateTime.Time.Equal(now) || !c.LastTransitionTime.Time.Equal(now.Add(-time.Minute)) {
					t.Errorf("Progressing = %+v; want ReplicaSetUpdated updated now, transitioned a minute ago", c)
				}
			},
		},
		{
			name: "Recreate scales the old ReplicaSet to zero before anything else",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v2", recreate), 2, "1", counts(1, 3, 3, 3, available, completed))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 3, 3, time.Hour)}
			},
			wantActions: []string{"update replicasets " + v1, "update deployments/status web"},
			wantEvents:  []string{"Normal ScalingReplicaSet Scaled down replica set " + v1 + " from 3 to 0"},
		},
		{
			name: "Recreate waits while an old pod still runs",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v2", recreate), 2, "1", appsv1.DeploymentStatus{})
				old := newRS(d, "app:v1", 1, 0, 0, time.Hour)
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{
						Name: "web-old", Namespace: "default", Labels: old.Spec.Template.Labels,
						OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(old, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
					},
					Status: corev1.PodStatus{Phase: corev1.PodRunning},
				}
				return []runtime.Object{d, old, pod}
			},
			wantActions: []string{"update deployments/status web"},
		},
		{
			name: "Recreate creates the new ReplicaSet at full size once the old pods are gone",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v2", recreate), 2, "1", appsv1.DeploymentStatus{})
				return []runtime.Object{d, newRS(d, "app:v1", 1, 0, 0, time.Hour)}
			},
			wantActions: []string{"create replicasets " + v2, "update deployments/status web", "update deployments/status web"},
			wantEvents:  []string{"Normal ScalingReplicaSet Scaled up replica set " + v2 + " from 0 to 3"},
		},
		{
			name: "rollback reuses the old ReplicaSet under the next revision",
			objects: func() []runtime.Object {
				// kubectl rollout undo put v1's template back.
				d := at(deployment(3, "app:v1"), 3, "2", counts(2, 3, 3, 3, available, completed))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 0, 0, 2*time.Hour), newRS(d, "app:v2", 2, 3, 3, time.Hour)}
			},
			wantActions: []string{
				"update replicasets " + v1, "update deployments/status web",
				"update replicasets " + v1, "update deployments/status web",
			},
			wantEvents: []string{"Normal ScalingReplicaSet Scaled up replica set " + v1 + " from 0 to 1"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				rs := written[*appsv1.ReplicaSet](f, "replicasets")[0]
				if rs.Annotations[RevisionAnnotation] != "3" || rs.Annotations[RevisionHistoryAnnotation] != "1" {
					t.Errorf("reused ReplicaSet annotations %v; want revision 3, revision-history 1", rs.Annotations)
				}
				if d := written[*appsv1.Deployment](f, "deployments/status")[0]; d.Annotations[RevisionAnnotation] != "3" {
					t.Errorf("deployment revision %q, want 3", d.Annotations[RevisionAnnotation])
				}
			},
		},
		{
			name: "a complete rollout deletes the oldest ReplicaSets beyond revisionHistoryLimit",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v4", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](1) }),
					4, "4", counts(4, 3, 3, 3, available, completed))
				return []runtime.Object{d,
					newRS(d, "app:v1", 1, 0, 0, 4*time.Hour), newRS(d, "app:v2", 2, 0, 0, 3*time.Hour),
					newRS(d, "app:v3", 3, 0, 0, 2*time.Hour), newRS(d, "app:v4", 4, 3, 3, time.Hour)}
			},
			wantActions: []string{"delete replicasets " + v1, "delete replicasets " + v2},
		},
		{
			name: "scaling during a rollout spreads the new replicas in proportion",
			objects: func() []runtime.Object {
				was := deployment(10, "app:v2") // max 10 + 3 surge
				d := at(deployment(15, "app:v2"), 3, "2", counts(2, 13, 5, 8, available, progressing(time.Minute)))
				return []runtime.Object{d, newRS(was, "app:v1", 1, 8, 8, time.Hour), newRS(was, "app:v2", 2, 5, 0, time.Minute)}
			},
			// 19 allowed (15 + 4 surge) - 13 = 6 to add: v1 gets round(8*19/13)-8 = 4, v2 the other 2.
			wantActions: []string{"update replicasets " + v1, "update replicasets " + v2, "update deployments/status web"},
			wantEvents: []string{
				"Normal ScalingReplicaSet Scaled up replica set " + v1 + " from 8 to 12",
				"Normal ScalingReplicaSet Scaled up replica set " + v2 + " from 5 to 7",
			},
		},
		{
			name: "a paused Deployment is marked paused and rolls nothing out",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v2", func(d *appsv1.Deployment) { d.Spec.Paused = true }), 2, "1", counts(1, 3, 3, 3, available, completed))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 3, 3, time.Hour)}
			},
			wantActions: []string{"update deployments/status web", "update deployments/status web"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				d := written[*appsv1.Deployment](f, "deployments/status")[1]
				if got := condition(d, appsv1.DeploymentProgressing); got != "Unknown DeploymentPaused: Deployment is paused" {
					t.Errorf("Progressing = %s", got)
				}
			},
		},
		{
			name: "a rollout without progress for progressDeadlineSeconds times out",
			objects: func() []runtime.Object {
				d := deployment(3, "app:v2", strategy(intstr.FromInt32(0), intstr.FromInt32(1)))
				at(d, 2, "2", counts(2, 3, 1, 2, available, progressing(11*time.Minute)))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 2, 2, time.Hour), newRS(d, "app:v2", 2, 1, 0, 11*time.Minute)}
			},
			wantActions: []string{"update deployments/status web"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				d := written[*appsv1.Deployment](f, "deployments/status")[0]
				if got := condition(d, appsv1.DeploymentProgressing); got != `False ProgressDeadlineExceeded: ReplicaSet "`+v2+`" has timed out progressing.` {
					t.Errorf("Progressing = %s", got)
				}
			},
		},
		{
			name: "a finished rollout reports NewReplicaSetAvailable",
			objects: func() []runtime.Object {
				d := at(deployment(3, "app:v2"), 2, "2", counts(2, 4, 2, 3, available, progressing(time.Minute)))
				return []runtime.Object{d, newRS(d, "app:v1", 1, 0, 0, time.Hour), newRS(d, "app:v2", 2, 3, 3, time.Minute)}
			},
			wantActions: []string{"update deployments/status web"},
			check: func(t *testing.T, f *controllertest.Fixture) {
				d := written[*appsv1.Deployment](f, "deployments/status")[0]
				if got := condition(d, appsv1.DeploymentProgressing); got != `True NewReplicaSetAvailable: ReplicaSet "`+v2+`" has successfully progressed.` {
					t.Errorf("Progressing = %s", got)
				}
				if d.Status.Replicas != 3 || d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 || d.Status.UnavailableReplicas != 0 {
					t.Errorf("status = %+v", d.Status)
				}
			},
		},
		{
			name: "adopts a matching orphan ReplicaSet",
			objects: func() []runtime.Object {
				d := deployment(3, "app:v1")
				rs := newRS(d, "app:v1", 1, 3, 3, time.Hour)
				rs.OwnerReferences = nil
				return []runtime.Object{d, rs}
			},
			wantActions: []string{"get deployments web", "patch replicasets " + v1, "update deployments/status web", "update deployments/status web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dc := fixture(t, tt.objects()...)
			if err := dc.syncDeployment(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(tt.wantActions, f.Actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		name                   string
		surge, unavailable     intstr.IntOrString
		replicas               int32
		wantSurge, wantUnavail int32
	}{
		{"25% of 10: surge rounds up, unavailable down", intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{"25% of 1", intstr.FromString("25%"), intstr.FromString("25%"), 1, 1, 0},
		{"both round to zero: one may be unavailable", intstr.FromString("0%"), intstr.FromString("10%"), 3, 0, 1},
		{"absolute numbers", intstr.FromInt32(2), intstr.FromInt32(1), 4, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, err := resolveFenceposts(&tt.surge, &tt.unavailable, tt.replicas)
			if err != nil || s != tt.wantSurge || u != tt.wantUnavail {
				t.Errorf("resolveFenceposts = %d, %d, %v; want %d, %d", s, u, err, tt.wantSurge, tt.wantUnavail)
			}
		})
	}
}
