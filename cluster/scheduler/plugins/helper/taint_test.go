package helper

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestFindMatchingUntoleratedTaint(t *testing.T) {
	taints := []v1.Taint{
		{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "hard", Value: "1", Effect: v1.TaintEffectNoSchedule},
		{Key: "evict", Effect: v1.TaintEffectNoExecute},
	}
	tests := []struct {
		name        string
		tolerations []v1.Toleration
		wantKey     string
		wantFound   bool
	}{
		{name: "first NoSchedule/NoExecute taint, PreferNoSchedule ignored", wantKey: "hard", wantFound: true},
		{
			name:        "hard tolerated, evict is next",
			tolerations: []v1.Toleration{{Key: "hard", Operator: v1.TolerationOpEqual, Value: "1"}},
			wantKey:     "evict", wantFound: true,
		},
		{
			name:        "everything tolerated",
			tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taint, found := FindMatchingUntoleratedTaint(taints, tt.tolerations, DoNotScheduleTaintsFilterFunc())
			if found != tt.wantFound || taint.Key != tt.wantKey {
				t.Errorf("got (%q, %v), want (%q, %v)", taint.Key, found, tt.wantKey, tt.wantFound)
			}
		})
	}
}
