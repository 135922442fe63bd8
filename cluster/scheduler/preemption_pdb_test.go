package scheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func victim(name string, priority int32, labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       v1.PodSpec{Priority: ptr.To(priority)},
	}
}

func budget(name string, allowed int32, matchLabels map[string]string, disrupted ...string) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	if len(disrupted) > 0 {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
		for _, d := range disrupted {
			pdb.Status.DisruptedPods[d] = metav1.Now()
		}
	}
	return pdb
}

func podNames(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// The cases follow upstream's TestSelectVictimsOnNode/filterPodsWithPDBViolation:
// each budget allows disruptionsAllowed evictions, counted in the order the
// victims are given; pods past that violate it.
func TestFilterPodsWithPDBViolation(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name                      string
		pods                      []*v1.Pod
		pdbs                      []*policyv1.PodDisruptionBudget
		wantViolating, wantOthers []string
	}{
		{
			name:       "no budgets: nothing violates",
			pods:       []*v1.Pod{victim("a", 1, web), victim("b", 1, web)},
			wantOthers: []string{"a", "b"},
		},
		{
			name:          "budget allows one: the second matching pod violates",
			pods:          []*v1.Pod{victim("a", 1, web), victim("b", 1, web)},
			pdbs:          []*policyv1.PodDisruptionBudget{budget("web", 1, web)},
			wantViolating: []string{"b"},
			wantOthers:    []string{"a"},
		},
		{
			name:          "budget allows none: every matching pod violates, others do not",
			pods:          []*v1.Pod{victim("a", 1, web), victim("db", 1, map[string]string{"app": "db"}), victim("nolabels", 1, nil)},
			pdbs:          []*policyv1.PodDisruptionBudget{budget("web", 0, web)},
			wantViolating: []string{"a"},
			wantOthers:    []string{"db", "nolabels"},
		},
		{
			name:       "a pod already in disruptedPods is not counted again",
			pods:       []*v1.Pod{victim("a", 1, web), victim("b", 1, web)},
			pdbs:       []*policyv1.PodDisruptionBudget{budget("web", 1, web, "a")},
			wantOthers: []string{"a", "b"},
		},
		{
			name:       "an empty selector matches nothing",
			pods:       []*v1.Pod{victim("a", 1, web)},
			pdbs:       []*policyv1.PodDisruptionBudget{budget("all", 0, nil)},
			wantOthers: []string{"a"},
		},
		{
			name: "a budget in another namespace does not apply",
			pods: []*v1.Pod{victim("a", 1, web)},
			pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
				b := budget("web", 0, web)
				b.Namespace = "other"
				return b
			}()},
			wantOthers: []string{"a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			violating, others := filterPodsWithPDBViolation(tc.pods, tc.pdbs)
			if diff := cmp.Diff(tc.wantViolating, podNames(violating)); diff != "" {
				t.Errorf("violating (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOthers, podNames(others)); diff != "" {
				t.Errorf("not violating (-want +got):\n%s", diff)
			}
		})
	}
}

// pickCandidate's order is upstream's pickOneNodeForPreemption: fewest
// PDB violations first, whatever the priorities, then the lowest highest
// victim priority, the smallest sum, the fewest victims.
func TestPickCandidateOrder(t *testing.T) {
	tests := []struct {
		name  string
		cands []candidate
		want  string
	}{
		{
			name: "fewer PDB violations beats lower priorities",
			cands: []candidate{
				{node: "a", victims: []*v1.Pod{victim("low", 1, nil)}, numPDBViolations: 1},
				{node: "b", victims: []*v1.Pod{victim("high", 100, nil), victim("high2", 100, nil)}},
			},
			want: "b",
		},
		{
			name: "same violations: lowest highest priority",
			cands: []candidate{
				{node: "a", victims: []*v1.Pod{victim("mid", 50, nil)}, numPDBViolations: 1},
				{node: "b", victims: []*v1.Pod{victim("low", 10, nil), victim("low2", 10, nil)}, numPDBViolations: 1},
			},
			want: "b",
		},
		{
			name: "same highest: smallest sum",
			cands: []candidate{
				{node: "a", victims: []*v1.Pod{victim("x", 10, nil), victim("y", 10, nil)}},
				{node: "b", victims: []*v1.Pod{victim("x", 10, nil), victim("y", 5, nil)}},
			},
			want: "b",
		},
		{
			name: "all equal: the node name decides",
			cands: []candidate{
				{node: "b", victims: []*v1.Pod{victim("x", 10, nil)}},
				{node: "a", victims: []*v1.Pod{victim("x", 10, nil)}},
			},
			want: "a",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickCandidate(tc.cands); got == nil || got.node != tc.want {
				t.Errorf("picked %+v, want node %s", got, tc.want)
			}
		})
	}
}

// Victims are weighed most important first: higher priority, then the
// earlier start, which decides which pod a budget's last allowance covers.
func TestMoreImportantPod(t *testing.T) {
	early := victim("early", 5, nil)
	early.Status.StartTime = &metav1.Time{Time: time.Unix(100, 0)}
	late := victim("late", 5, nil)
	late.Status.StartTime = &metav1.Time{Time: time.Unix(200, 0)}
	high := victim("high", 9, nil)
	if !moreImportantPod(high, early) || moreImportantPod(early, high) {
		t.Error("higher priority is not more important")
	}
	if !moreImportantPod(early, late) || moreImportantPod(late, early) {
		t.Error("earlier start is not more important at equal priority")
	}
}
