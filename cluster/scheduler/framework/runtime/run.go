package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// The plugins whose PreFilter or PreScore returned Skip are kept in the
// cycle state, as upstream keeps them, so that Filter (run once per node)
// and Score know whom to leave out.
const (
	skipFilterPluginsKey framework.StateKey = "klab.dev/SkipFilterPlugins"
	skipScorePluginsKey  framework.StateKey = "klab.dev/SkipScorePlugins"
)

// pluginSet is a set of plugin names; it is never changed once written.
type pluginSet map[string]struct{}

// Clone returns the set itself: it is read-only after PreFilter/PreScore.
func (s pluginSet) Clone() framework.StateData { return s }

func (s pluginSet) has(name string) bool {
	_, ok := s[name]
	return ok
}

func readSkipped(state *framework.CycleState, key framework.StateKey) pluginSet {
	d, err := state.Read(key)
	if err != nil {
		return nil
	}
	s, _ := d.(pluginSet)
	return s
}

// tagged returns a copy of s that names plugin. The copy matters: a plugin
// may hand out one shared *Status for a common rejection, and Filter runs
// for many nodes at once.
func tagged(s *framework.Status, plugin string) *framework.Status {
	c := *s
	return c.WithPlugin(plugin)
}

// notEvaluated marks verdicts[from:] as not evaluated.
func notEvaluated[P framework.Plugin](verdicts []PluginVerdict, plugins []P, from int) {
	for j := from; j < len(plugins); j++ {
		verdicts[j] = PluginVerdict{Plugin: plugins[j].Name(), Verdict: VerdictNotEvaluated}
	}
}

// RunPreFilterPlugins runs every PreFilter plugin in order, as upstream:
// Skip marks the plugin's Filter to be left out; UnschedulableAndUnresolvable
// stops at once (no node can help); Unschedulable is remembered while the
// remaining plugins still run; an error stops at once. It returns the
// status that rejects the pod (nil when it may go on to Filter) and each
// plugin's verdict.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.Status, []PluginVerdict) {
	skipped := pluginSet{}
	defer state.Write(skipFilterPluginsKey, skipped)
	verdicts := make([]PluginVerdict, len(f.preFilter))
	var rejected *framework.Status
	for i, pl := range f.preFilter {
		name := pl.Name()
		s := pl.PreFilter(ctx, state, pod, nodes)
		verdicts[i] = verdictOf(name, s)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skipped[name] = struct{}{}
		case s.Code() == framework.UnschedulableAndUnresolvable:
			notEvaluated(verdicts, f.preFilter, i+1)
			return tagged(s, name), verdicts
		case s.Code() == framework.Unschedulable:
			if rejected == nil {
				rejected = tagged(s, name)
			}
		default:
			notEvaluated(verdicts, f.preFilter, i+1)
			return framework.AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", name, s.AsError())).WithPlugin(name), verdicts
		}
	}
	return rejected, verdicts
}

// RunFilterPlugins runs the Filter plugins for one node in order and stops
// at the first that does not pass, as upstream does; the plugins after it
// are reported as not evaluated. The returned status (nil when the node
// fits) is tagged with the plugin that rejected the node.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (*framework.Status, []PluginVerdict) {
	skipped := readSkipped(state, skipFilterPluginsKey)
	verdicts := make([]PluginVerdict, len(f.filter))
	for i, pl := range f.filter {
		name := pl.Name()
		if skipped.has(name) {
			verdicts[i] = PluginVerdict{Plugin: name, Verdict: VerdictSkipped}
			continue
		}
		s := pl.Filter(ctx, state, pod, nodeInfo)
		if s.IsSuccess() {
			verdicts[i] = PluginVerdict{Plugin: name, Verdict: VerdictPassed}
			continue
		}
		if !s.IsRejected() {
			// Filter plugins may only pass or reject; anything else is
			// the plugin's bug, reported as an error.
			err := s.AsError()
			if err == nil {
				err = fmt.Errorf("returned %s, which a Filter may not return", s.Code())
			}
			s = framework.AsStatus(fmt.Errorf("running %q filter plugin: %w", name, err))
		}
		s = tagged(s, name)
		verdicts[i] = verdictOf(name, s)
		notEvaluated(verdicts, f.filter, i+1)
		return s, verdicts
	}
	return nil, verdicts
}

// RunPreScorePlugins runs every PreScore plugin in order. Skip marks the
// plugin's Score to be left out; anything but success or Skip is an error.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.Status, []PluginVerdict) {
	skipped := pluginSet{}
	defer state.Write(skipScorePluginsKey, skipped)
	verdicts := make([]PluginVerdict, len(f.preScore))
	for i, pl := range f.preScore {
		name := pl.Name()
		s := pl.PreScore(ctx, state, pod, nodes)
		verdicts[i] = verdictOf(name, s)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skipped[name] = struct{}{}
		default:
			notEvaluated(verdicts, f.preScore, i+1)
			return framework.AsStatus(fmt.Errorf("running PreScore plugin %q: %w", name, s.AsError())).WithPlugin(name), verdicts
		}
	}
	return nil, verdicts
}

// RunScorePlugins scores every node with every score plugin not skipped at
// PreScore, normalises each plugin's scores (plugins with ScoreExtensions
// only), checks they lie within [MinNodeScore, MaxNodeScore], multiplies
// them by the plugin's weight and sums them per node. The result is in the
// order of nodes.
func (f *Framework) RunScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]NodePluginScores, *framework.Status) {
	skipped := readSkipped(state, skipScorePluginsKey)
	var active []weightedScorePlugin
	for _, pl := range f.score {
		if !skipped.has(pl.Name()) {
			active = append(active, pl)
		}
	}
	result := make([]NodePluginScores, len(nodes))
	for i, ni := range nodes {
		result[i] = NodePluginScores{Node: ni.Node().Name, Scores: make([]PluginScore, len(active))}
	}
	if len(active) == 0 {
		return result, nil
	}

	// Score: one list per plugin, in node order, filled in parallel.
	lists := make([]framework.NodeScoreList, len(active))
	for p := range active {
		lists[p] = make(framework.NodeScoreList, len(nodes))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		scoreErr error
	)
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		for p, pl := range active {
			score, s := pl.Score(ctx, state, pod, nodes[i])
			if !s.IsSuccess() {
				errOnce.Do(func() {
					scoreErr = fmt.Errorf("plugin %q failed with: %w", pl.Name(), statusError(s))
					cancel()
				})
				return
			}
			lists[p][i] = framework.NodeScore{Name: nodes[i].Node().Name, Score: score}
		}
	})
	if scoreErr != nil {
		return nil, framework.AsStatus(scoreErr)
	}

	// NormalizeScore, range check and weight, plugin by plugin.
	for p, pl := range active {
		for i := range nodes {
			result[i].Scores[p] = PluginScore{Plugin: pl.Name(), Raw: lists[p][i].Score, Weight: pl.weight}
		}
		if ext := pl.ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, state, pod, lists[p]); !s.IsSuccess() {
				return nil, framework.AsStatus(fmt.Errorf("plugin %q failed with: %w", pl.Name(), statusError(s)))
			}
		}
		for i := range nodes {
			n := lists[p][i].Score
			if n > framework.MaxNodeScore || n < framework.MinNodeScore {
				return nil, framework.AsStatus(fmt.Errorf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] after normalizing",
					pl.Name(), n, framework.MinNodeScore, framework.MaxNodeScore))
			}
			ps := &result[i].Scores[p]
			ps.Normalized = n
			ps.Weighted = n * pl.weight
			result[i].TotalScore += ps.Weighted
		}
	}
	return result, nil
}

// statusError is s as an error, also for a Skip, which AsError treats as
// success but which no Score or NormalizeScore may return.
func statusError(s *framework.Status) error {
	if err := s.AsError(); err != nil {
		return err
	}
	return errors.New("returned " + s.Code().String())
}
