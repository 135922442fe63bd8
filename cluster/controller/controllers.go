package controller

import (
	"github.com/klab-dev/klab/cluster/controller/clusterroleaggregation"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/cronjob"
	"github.com/klab-dev/klab/cluster/controller/csrsigning"
	"github.com/klab-dev/klab/cluster/controller/daemonset"
	"github.com/klab-dev/klab/cluster/controller/deployment"
	"github.com/klab-dev/klab/cluster/controller/disruption"
	"github.com/klab-dev/klab/cluster/controller/endpoints"
	"github.com/klab-dev/klab/cluster/controller/endpointslice"
	"github.com/klab-dev/klab/cluster/controller/garbagecollector"
	"github.com/klab-dev/klab/cluster/controller/job"
	"github.com/klab-dev/klab/cluster/controller/namespace"
	"github.com/klab-dev/klab/cluster/controller/nodelifecycle"
	"github.com/klab-dev/klab/cluster/controller/podautoscaler"
	"github.com/klab-dev/klab/cluster/controller/replicaset"
	"github.com/klab-dev/klab/cluster/controller/replication"
	"github.com/klab-dev/klab/cluster/controller/resourcequota"
	"github.com/klab-dev/klab/cluster/controller/rootcacertpublisher"
	"github.com/klab-dev/klab/cluster/controller/serviceaccount"
	"github.com/klab-dev/klab/cluster/controller/statefulset"
)

// initFuncs are the controllers a manager can run, by the names upstream's
// --controllers flag accepts. The manager initialises them in name order.
var initFuncs = map[string]controllerctx.InitFunc{
	nodelifecycle.Name:              nodelifecycle.Init,
	nodelifecycle.TaintEvictionName: nodelifecycle.InitTaintEviction,
	namespace.Name:                  namespace.Init,
	serviceaccount.Name:             serviceaccount.Init,
	endpoints.Name:                  endpoints.Init,
	endpointslice.Name:              endpointslice.Init,
	garbagecollector.Name:           garbagecollector.Init,
	replicaset.Name:                 replicaset.Init,
	replication.Name:                replication.Init,
	deployment.Name:                 deployment.Init,
	daemonset.Name:                  daemonset.Init,
	statefulset.Name:                statefulset.Init,
	job.Name:                        job.Init,
	disruption.Name:                 disruption.Init,
	cronjob.Name:                    cronjob.Init,
	podautoscaler.Name:              podautoscaler.Init,
	resourcequota.Name:              resourcequota.Init,
	clusterroleaggregation.Name:     clusterroleaggregation.Init,
	csrsigning.Name:                 csrsigning.Init,
	rootcacertpublisher.Name:        rootcacertpublisher.Init,
}

// concurrentSyncs are upstream's default worker counts per controller
// (the --concurrent-*-syncs flags, or the fixed worker pools of the
// controllers that have no flag). A controller missing here gets
// defaultConcurrentSyncs.
var concurrentSyncs = map[string]int{
	"daemonset":                     2,  // --concurrent-daemonset-syncs
	"deployment":                    5,  // --concurrent-deployment-syncs
	"endpoint":                      5,  // --concurrent-endpoint-syncs
	"endpointslice":                 5,  // --concurrent-service-endpoint-syncs
	"garbagecollector":              20, // --concurrent-gc-syncs
	"job":                           5,  // --concurrent-job-syncs
	"replicaset":                    5,  // --concurrent-replicaset-syncs
	replication.Name:                5,  // --concurrent-rc-syncs
	"statefulset":                   5,  // --concurrent-statefulset-syncs
	disruption.Name:                 1,  // one worker, as upstream starts
	namespace.Name:                  10, // --concurrent-namespace-syncs
	resourcequota.Name:              5,  // --concurrent-resource-quota-syncs
	serviceaccount.Name:             1,  // the manager starts one worker
	nodelifecycle.Name:              8,  // nodeUpdateWorkerSize
	nodelifecycle.TaintEvictionName: 8,  // UpdateWorkerSize
}

// defaultConcurrentSyncs is the worker count of a controller without an
// entry in concurrentSyncs.
const defaultConcurrentSyncs = 5
