package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/cluster/scheduler/internal/cache"
	tp "github.com/klab-dev/klab/cluster/scheduler/internal/testplugins"
)

func nodes(names ...string) []*framework.NodeInfo {
	var list []*v1.Node
	for _, n := range names {
		list = append(list, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	infos, _ := cache.NewSnapshot(nil, list).List()
	return infos
}

var testPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}

func pass(*v1.Pod, *framework.NodeInfo) *framework.Status { return nil }

func newFramework(t *testing.T, specs ...framework.PluginSpec) *runtime.Framework {
	t.Helper()
	f, err := runtime.NewFramework(context.Background(), specs, nil, runtime.WithParallelism(4))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewFrameworkValidatesProfile(t *testing.T) {
	a := &tp.Filter{PluginName: "A", Fn: pass}
	tests := []struct {
		name    string
		profile []framework.PluginSpec
		wantErr string
	}{
		{name: "plugins in order", profile: []framework.PluginSpec{tp.Spec(a, 0), tp.Spec(tp.Fit{}, 1)}},
		{name: "duplicate", profile: []framework.PluginSpec{tp.Spec(a, 0), tp.Spec(a, 0)}, wantErr: `profile lists plugin "A" twice`},
		{name: "no factory", profile: []framework.PluginSpec{{Name: "A"}}, wantErr: `plugin "A" has no factory`},
		{name: "negative weight", profile: []framework.PluginSpec{tp.Spec(tp.Fit{}, -1)}, wantErr: `plugin "NodeResourcesFit" has negative weight -1`},
		{name: "name mismatch", profile: []framework.PluginSpec{{Name: "B", Factory: tp.Spec(a, 0).Factory}}, wantErr: `plugin "B": the factory built a plugin named "A"`},
		{name: "factory error", profile: []framework.PluginSpec{{Name: "A", Factory: func(context.Context, framework.Handle) (framework.Plugin, error) {
			return nil, errors.New("boom")
		}}}, wantErr: `initializing plugin "A": boom`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := runtime.NewFramework(context.Background(), tt.profile, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := f.PluginNames(), []string{"A", "NodeResourcesFit"}; !cmp.Equal(got, want) {
				t.Errorf("PluginNames = %v, want %v", got, want)
			}
		})
	}
}

func TestRunFilterPluginsVerdicts(t *testing.T) {
	shared := framework.NewStatus(framework.Unschedulable, "shared reason")
	rejectOn := func(node string, s *framework.Status) func(*v1.Pod, *framework.NodeInfo) *framework.Status {
		return func(_ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
			if ni.Node().Name == node {
				return s
			}
			return nil
		}
	}
	f := newFramework(t,
		tp.Spec(&tp.Filter{PluginName: "First", Fn: pass}, 0),
		tp.Spec(&tp.Filter{PluginName: "Taints", Fn: rejectOn("n2", shared)}, 0),
		tp.Spec(&tp.Filter{PluginName: "Broken", Fn: rejectOn("n3", framework.AsStatus(errors.New("disk on fire")))}, 0),
		tp.Spec(&tp.Filter{PluginName: "Last", Fn: pass}, 0),
	)
	tests := []struct {
		node       string
		wantCode   framework.Code
		wantPlugin string
		wantMsg    string
		want       []runtime.PluginVerdict
	}{
		{node: "n1", want: []runtime.PluginVerdict{
			{Plugin: "First", Verdict: "passed"}, {Plugin: "Taints", Verdict: "passed"},
			{Plugin: "Broken", Verdict: "passed"}, {Plugin: "Last", Verdict: "passed"},
		}},
		{node: "n2", wantCode: framework.Unschedulable, wantPlugin: "Taints", wantMsg: "shared reason", want: []runtime.PluginVerdict{
			{Plugin: "First", Verdict: "passed"},
			{Plugin: "Taints", Verdict: "rejected", Code: "Unschedulable", Reasons: []string{"shared reason"}},
			{Plugin: "Broken", Verdict: "not-evaluated"}, {Plugin: "Last", Verdict: "not-evaluated"},
		}},
		{node: "n3", wantCode: framework.Error, wantPlugin: "Broken", wantMsg: `running "Broken" filter plugin: disk on fire`, want: []runtime.PluginVerdict{
			{Plugin: "First", Verdict: "passed"}, {Plugin: "Taints", Verdict: "passed"},
			{Plugin: "Broken", Verdict: "error", Code: "Error", Reasons: []string{`running "Broken" filter plugin: disk on fire`}},
			{Plugin: "Last", Verdict: "not-evaluated"},
		}},
	}
	infos := nodes("n1", "n2", "n3")
	state := framework.NewCycleState()
	if s, _ := f.RunPreFilterPlugins(context.Background(), state, testPod, infos); !s.IsSuccess() {
		t.Fatal(s.Message())
	}
	for i, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			s, verdicts := f.RunFilterPlugins(context.Background(), state, testPod, infos[i])
			if s.Code() != tt.wantCode || s.Plugin() != tt.wantPlugin || s.Message() != tt.wantMsg {
				t.Errorf("status = %v/%q/%q, want %v/%q/%q", s.Code(), s.Plugin(), s.Message(), tt.wantCode, tt.wantPlugin, tt.wantMsg)
			}
			if diff := cmp.Diff(tt.want, verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
	if shared.Plugin() != "" {
		t.Errorf("the plugin's shared status was tagged %q; the framework must tag a copy", shared.Plugin())
	}
}

func TestPreFilterSkipLeavesFilterOut(t *testing.T) {
	called := false
	f := newFramework(t, tp.Spec(&tp.PreFilterFilter{
		PluginName:      "NodeAffinity",
		PreFilterStatus: framework.NewStatus(framework.Skip),
		Fn: func(*v1.Pod, *framework.NodeInfo) *framework.Status {
			called = true
			return framework.NewStatus(framework.Unschedulable, "should not run")
		},
	}, 0))
	infos := nodes("n1")
	state := framework.NewCycleState()
	s, pre := f.RunPreFilterPlugins(context.Background(), state, testPod, infos)
	if !s.IsSuccess() || pre[0].Verdict != runtime.VerdictSkipped {
		t.Fatalf("PreFilter: status %v, verdicts %+v", s, pre)
	}
	s, verdicts := f.RunFilterPlugins(context.Background(), state, testPod, infos[0])
	if !s.IsSuccess() || called {
		t.Fatalf("Filter ran after PreFilter returned Skip (status %v)", s)
	}
	if verdicts[0].Verdict != runtime.VerdictSkipped {
		t.Errorf("verdict = %q, want skipped", verdicts[0].Verdict)
	}
}

func TestRunPreFilterPlugins(t *testing.T) {
	pf := func(name string, s *framework.Status) framework.PluginSpec {
		return tp.Spec(&tp.PreFilterFilter{PluginName: name, PreFilterStatus: s, Fn: pass}, 0)
	}
	tests := []struct {
		name        string
		profile     []framework.PluginSpec
		wantCode    framework.Code
		wantPlugin  string
		wantMsg     string
		wantVerdict []string
	}{
		{
			name:        "unresolvable stops at once",
			profile:     []framework.PluginSpec{pf("A", framework.NewStatus(framework.UnschedulableAndUnresolvable, "no")), pf("B", nil)},
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantPlugin:  "A",
			wantMsg:     "no",
			wantVerdict: []string{"rejected", "not-evaluated"},
		},
		{
			name:        "unschedulable lets the others run",
			profile:     []framework.PluginSpec{pf("A", framework.NewStatus(framework.Unschedulable, "later")), pf("B", nil)},
			wantCode:    framework.Unschedulable,
			wantPlugin:  "A",
			wantMsg:     "later",
			wantVerdict: []string{"rejected", "passed"},
		},
		{
			name:        "error",
			profile:     []framework.PluginSpec{pf("A", nil), pf("B", framework.AsStatus(errors.New("boom")))},
			wantCode:    framework.Error,
			wantPlugin:  "B",
			wantMsg:     `running PreFilter plugin "B": boom`,
			wantVerdict: []string{"passed", "error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFramework(t, tt.profile...)
			s, verdicts := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), testPod, nodes("n1"))
			if s.Code() != tt.wantCode || s.Plugin() != tt.wantPlugin || s.Message() != tt.wantMsg {
				t.Errorf("status = %v/%q/%q, want %v/%q/%q", s.Code(), s.Plugin(), s.Message(), tt.wantCode, tt.wantPlugin, tt.wantMsg)
			}
			var got []string
			for _, v := range verdicts {
				got = append(got, v.Verdict)
			}
			if !cmp.Equal(got, tt.wantVerdict) {
				t.Errorf("verdicts = %v, want %v", got, tt.wantVerdict)
			}
		})
	}
}

// byName scores nodes n1, n2, n3 with the given raw scores.
func byName(scores map[string]int64) func(*framework.NodeInfo) int64 {
	return func(ni *framework.NodeInfo) int64 { return scores[ni.Node().Name] }
}

func TestRunScorePluginsNormalizesAndWeighs(t *testing.T) {
	f := newFramework(t,
		tp.Spec(&tp.Score{PluginName: "Balanced", Fn: byName(map[string]int64{"n1": 90, "n2": 50, "n3": 10})}, 2),
		tp.Spec(&tp.Score{PluginName: "Images", Fn: byName(map[string]int64{"n1": 10, "n2": 20, "n3": 40}), Normalize: tp.NormalizeToMax}, 0),
	)
	state := framework.NewCycleState()
	infos := nodes("n1", "n2", "n3")
	if s, _ := f.RunPreScorePlugins(context.Background(), state, testPod, infos); !s.IsSuccess() {
		t.Fatal(s.Message())
	}
	got, s := f.RunScorePlugins(context.Background(), state, testPod, infos)
	if !s.IsSuccess() {
		t.Fatal(s.Message())
	}
	want := []runtime.NodePluginScores{
		{Node: "n1", TotalScore: 180 + 25, Scores: []runtime.PluginScore{
			{Plugin: "Balanced", Raw: 90, Normalized: 90, Weight: 2, Weighted: 180},
			{Plugin: "Images", Raw: 10, Normalized: 25, Weight: 1, Weighted: 25},
		}},
		{Node: "n2", TotalScore: 100 + 50, Scores: []runtime.PluginScore{
			{Plugin: "Balanced", Raw: 50, Normalized: 50, Weight: 2, Weighted: 100},
			{Plugin: "Images", Raw: 20, Normalized: 50, Weight: 1, Weighted: 50},
		}},
		{Node: "n3", TotalScore: 20 + 100, Scores: []runtime.PluginScore{
			{Plugin: "Balanced", Raw: 10, Normalized: 10, Weight: 2, Weighted: 20},
			{Plugin: "Images", Raw: 40, Normalized: 100, Weight: 1, Weighted: 100},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestRunScorePluginsPreScoreSkip(t *testing.T) {
	skipped := tp.ScoreWithPreScore{Score: &tp.Score{PluginName: "Spread", Fn: byName(nil), PreScoreStatus: framework.NewStatus(framework.Skip)}}
	f := newFramework(t,
		tp.Spec(skipped, 1),
		tp.Spec(&tp.Score{PluginName: "Fit", Fn: byName(map[string]int64{"n1": 7})}, 1),
	)
	state := framework.NewCycleState()
	infos := nodes("n1")
	s, verdicts := f.RunPreScorePlugins(context.Background(), state, testPod, infos)
	if !s.IsSuccess() || verdicts[0].Verdict != runtime.VerdictSkipped {
		t.Fatalf("PreScore: %v %+v", s, verdicts)
	}
	got, s := f.RunScorePlugins(context.Background(), state, testPod, infos)
	if !s.IsSuccess() {
		t.Fatal(s.Message())
	}
	if len(got[0].Scores) != 1 || got[0].Scores[0].Plugin != "Fit" || got[0].TotalScore != 7 {
		t.Errorf("scores = %+v, want Fit alone with total 7", got[0])
	}
}

func TestRunScorePluginsRejectsOutOfRange(t *testing.T) {
	f := newFramework(t, tp.Spec(&tp.Score{PluginName: "Greedy", Fn: byName(map[string]int64{"n1": 101})}, 1))
	_, s := f.RunScorePlugins(context.Background(), framework.NewCycleState(), testPod, nodes("n1"))
	want := `plugin "Greedy" returns an invalid score 101, it should in the range of [0, 100] after normalizing`
	if s.Code() != framework.Error || !strings.Contains(s.Message(), want) {
		t.Fatalf("status = %v %q, want an error %q", s.Code(), s.Message(), want)
	}
}
