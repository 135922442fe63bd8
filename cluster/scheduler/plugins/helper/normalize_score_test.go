package helper

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

func TestDefaultNormalizeScore(t *testing.T) {
	tests := []struct {
		name    string
		reverse bool
		scores  []int64
		want    []int64
	}{
		{name: "scaled to the maximum", scores: []int64{1, 2, 3, 4, 5}, want: []int64{20, 40, 60, 80, 100}},
		{name: "reversed", reverse: true, scores: []int64{1, 2, 3, 4, 5}, want: []int64{80, 60, 40, 20, 0}},
		// 100*1/3 = 33 (integer division).
		{name: "integer division", scores: []int64{1, 3}, want: []int64{33, 100}},
		{name: "all zero stays zero", scores: []int64{0, 0}, want: []int64{0, 0}},
		{name: "all zero reversed is all best", reverse: true, scores: []int64{0, 0}, want: []int64{100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := make(framework.NodeScoreList, len(tt.scores))
			for i, s := range tt.scores {
				list[i] = framework.NodeScore{Name: string(rune('a' + i)), Score: s}
			}
			if st := DefaultNormalizeScore(framework.MaxNodeScore, tt.reverse, list); !st.IsSuccess() {
				t.Fatalf("DefaultNormalizeScore: %v", st.AsError())
			}
			got := make([]int64, len(list))
			for i := range list {
				got[i] = list[i].Score
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}
