// Package runtime runs a scheduling profile's plugins, after the
// kube-scheduler's framework runtime (pkg/scheduler/framework/runtime): it
// builds the plugins of a profile in order, sorts them by extension point,
// and runs each extension point the way upstream does, recording what every
// plugin said so that a scheduling decision can be explained afterwards.
//
// The scheduler drives the cycle (which nodes to filter, when to stop,
// which node wins); this package only runs plugins.
package runtime

import (
	"context"
	"fmt"
	"math"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Framework holds one profile's plugins, sorted by extension point in the
// order the profile lists them.
type Framework struct {
	names     []string
	preFilter []framework.PreFilterPlugin
	filter    []framework.FilterPlugin
	preScore  []framework.PreScorePlugin
	score     []weightedScorePlugin

	parallelizer Parallelizer
}

// weightedScorePlugin is a score plugin and the weight of its normalised
// score.
type weightedScorePlugin struct {
	framework.ScorePlugin
	weight int64
}

// Option changes how a Framework runs.
type Option func(*Framework)

// WithParallelism sets how many goroutines filter and score nodes at once
// (upstream's parallelism); n <= 0 keeps the default, 16.
func WithParallelism(n int) Option {
	return func(f *Framework) {
		if n > 0 {
			f.parallelizer = NewParallelizer(n)
		}
	}
}

// NewFramework builds the profile's plugins in order with h. It refuses a
// profile that lists a plugin twice, a plugin whose Name differs from the
// profile's, a negative weight, and weights whose sum could overflow a
// node's total score. A score plugin listed without a weight gets weight 1,
// as upstream.
func NewFramework(ctx context.Context, profile []framework.PluginSpec, h framework.Handle, opts ...Option) (*Framework, error) {
	f := &Framework{parallelizer: NewParallelizer(DefaultParallelism)}
	for _, opt := range opts {
		opt(f)
	}
	seen := make(map[string]bool, len(profile))
	var totalWeight int64
	for _, spec := range profile {
		if spec.Name == "" {
			return nil, fmt.Errorf("profile lists a plugin without a name")
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("profile lists plugin %q twice", spec.Name)
		}
		seen[spec.Name] = true
		if spec.Factory == nil {
			return nil, fmt.Errorf("plugin %q has no factory", spec.Name)
		}
		if spec.Weight < 0 {
			return nil, fmt.Errorf("plugin %q has negative weight %d", spec.Name, spec.Weight)
		}
		p, err := spec.Factory(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("initializing plugin %q: %w", spec.Name, err)
		}
		if p == nil {
			return nil, fmt.Errorf("initializing plugin %q: factory returned no plugin", spec.Name)
		}
		if p.Name() != spec.Name {
			return nil, fmt.Errorf("plugin %q: the factory built a plugin named %q", spec.Name, p.Name())
		}
		f.names = append(f.names, spec.Name)
		if pl, ok := p.(framework.PreFilterPlugin); ok {
			f.preFilter = append(f.preFilter, pl)
		}
		if pl, ok := p.(framework.FilterPlugin); ok {
			f.filter = append(f.filter, pl)
		}
		if pl, ok := p.(framework.PreScorePlugin); ok {
			f.preScore = append(f.preScore, pl)
		}
		if pl, ok := p.(framework.ScorePlugin); ok {
			weight := spec.Weight
			if weight == 0 {
				weight = 1
			}
			if totalWeight > (math.MaxInt64/framework.MaxNodeScore)-weight {
				return nil, fmt.Errorf("total score of Score plugins could overflow")
			}
			totalWeight += weight
			f.score = append(f.score, weightedScorePlugin{ScorePlugin: pl, weight: weight})
		}
	}
	return f, nil
}

// PluginNames returns the profile's plugins in order.
func (f *Framework) PluginNames() []string { return append([]string(nil), f.names...) }

// HasFilterPlugins reports whether any plugin filters.
func (f *Framework) HasFilterPlugins() bool { return len(f.filter) > 0 }

// HasScorePlugins reports whether any plugin scores.
func (f *Framework) HasScorePlugins() bool { return len(f.score) > 0 }

// Parallelizer returns the parallelizer the framework scores with, for the
// scheduler to filter nodes with the same parallelism.
func (f *Framework) Parallelizer() Parallelizer { return f.parallelizer }
