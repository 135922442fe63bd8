// Package plugins gathers klab's in-tree scheduler plugins into the
// default profile, in upstream's order and with upstream's score weights
// (pkg/scheduler/apis/config/v1/default_plugins.go), so that a student
// reading a FailedScheduling event recognises which plugin said no.
package plugins

import (
	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/imagelocality"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/interpodaffinity"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeaffinity"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodename"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeports"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/noderesources"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeunschedulable"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/podtopologyspread"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/tainttoleration"
)

// Default returns the default profile: the plugins in the order upstream's
// v1 defaults list them, each with upstream's default score weight. Plugins
// that only filter carry weight 0. Upstream's SchedulingGates,
// PrioritySort, volume plugins, DynamicResources, DefaultPreemption and
// DefaultBinder are left out: klab has no volumes or DRA, its framework has
// no PreEnqueue, PostFilter or Bind extension points, and the queue order
// and binding live in the scheduler core (preemption too: preemption.go in
// cluster/scheduler does DefaultPreemption's work).
func Default() []framework.PluginSpec {
	return []framework.PluginSpec{
		{Name: nodeunschedulable.Name, Factory: nodeunschedulable.New},
		{Name: nodename.Name, Factory: nodename.New},
		{Name: tainttoleration.Name, Factory: tainttoleration.New, Weight: 3},
		{Name: nodeaffinity.Name, Factory: nodeaffinity.New, Weight: 2},
		{Name: nodeports.Name, Factory: nodeports.New},
		{Name: noderesources.Name, Factory: noderesources.NewFit, Weight: 1},
		{Name: podtopologyspread.Name, Factory: podtopologyspread.New, Weight: 2},
		{Name: interpodaffinity.Name, Factory: interpodaffinity.New, Weight: 2},
		{Name: noderesources.BalancedAllocationName, Factory: noderesources.NewBalancedAllocation, Weight: 1},
		{Name: imagelocality.Name, Factory: imagelocality.New, Weight: 1},
	}
}

// NewRegistry returns a registry holding every in-tree plugin's factory,
// keyed by the plugin's name.
func NewRegistry() framework.Registry {
	r := framework.Registry{}
	for _, spec := range Default() {
		// Default has no duplicate names (its test checks), so Register
		// cannot fail here.
		_ = r.Register(spec.Name, spec.Factory)
	}
	return r
}
