package lab

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// upSteps brings a cluster up, in kubeadm's order: the nodes, the etcd
// members and their first leader, the certificates, the API servers (and
// the load balancer in front of several), the kubeconfigs, the control
// loops, a kubelet and a kube-proxy on every node, the cluster DNS on the
// masters, and, once every node is
// Ready, cluster.json. Up runs it for a new cluster or one kept on disk,
// and Start for a stopped Docker cluster, whose components exist already
// and are only started.
//
// A step is added by adding its row here and writing its function. A
// component's row names where it runs and how its spec is made; the runner
// creates and starts it, and it joins the cluster's topology (chaos
// targets, status) by itself.
var upSteps = []step{
	{title: fixedTitle("up.step.image"), skip: notDocker, run: (*bringUp).ensureImage},
	{run: (*bringUp).openRuntime},
	{title: (*bringUp).nodesTitle, run: (*bringUp).createNodes},
	{title: (*bringUp).lbNodeTitle, skip: singleMaster, run: (*bringUp).createLBNode},
	{title: pathTitle("up.step.etcd-pki", filepath.Join(pkiDirName, pki.EtcdDirName)), skip: etcdPlaintext, run: (*bringUp).ensureEtcdPKI},
	{title: countTitle("up.step.etcd", masters), on: masters, components: []stepComponent{
		{runtime.ComponentEtcd, (*bringUp).etcdSpec},
	}},
	{title: fixedTitle("up.step.leader"), run: (*bringUp).waitLeader},
	{title: pathTitle("up.step.pki", pkiDirName), run: (*bringUp).ensurePKI},
	{title: countTitle("up.step.apiservers", masters), on: masters, components: []stepComponent{
		{runtime.ComponentAPIServer, (*bringUp).apiServerSpec},
	}},
	{title: fixedTitle("up.step.lb"), skip: singleMaster, on: lbNode, components: []stepComponent{
		{runtime.ComponentLB, (*bringUp).lbSpec},
	}},
	{title: pathTitle("up.step.kubeconfig", KubeconfigFile), run: (*bringUp).writeKubeconfigs},
	{title: countTitle("up.step.control-loop", masters), on: masters, components: []stepComponent{
		{runtime.ComponentScheduler, (*bringUp).schedulerSpec},
		{runtime.ComponentControllerManager, (*bringUp).controllerManagerSpec},
	}},
	{title: countTitle("up.step.kubelets", nodes), on: nodes, components: []stepComponent{
		{runtime.ComponentKubelet, (*bringUp).kubeletSpec},
	}},
	{title: countTitle("up.step.kube-proxies", nodes), run: (*bringUp).ensureProxyConfig, on: nodes, components: []stepComponent{
		{runtime.ComponentKubeProxy, (*bringUp).kubeProxySpec},
	}},
	{title: (*bringUp).dnsTitle, skip: noDNSPorts, run: (*bringUp).ensureDNSAddon, on: masters, components: []stepComponent{
		{runtime.ComponentDNS, (*bringUp).dnsSpec},
	}},
	{title: countTitle("up.step.nodes-ready", nodes), run: (*bringUp).waitNodesReady},
	{title: pathTitle("up.step.info", InfoFile), run: (*bringUp).writeInfo},
}

// bringUp is what the steps of bringing a cluster up share, as kind's
// ActionContext is for its actions: the cluster, how it is brought up, the
// cleanup stack, and what the steps so far have made.
type bringUp struct {
	c    *Cluster
	opts Options
	// runtime is the runtime's name, never "auto".
	runtime string
	// prev is the cluster as an earlier run left it (data kept on disk, or
	// a stopped Docker cluster): its nodes are made again at the same
	// addresses, on their data. nil for a new cluster.
	prev *Info
	// existing is set when the cluster's components exist already and only
	// need starting (klab start of a stopped Docker cluster).
	existing bool
	// cleanup is the stack of what to undo if a step fails.
	cleanup []undo

	// image is the Docker node image; masters, workers and lb the nodes
	// created, masters first; certs the cluster's PKI.
	image   string
	masters []runtime.Node
	workers []runtime.Node
	lb      *runtime.Node
	certs   *pki.PKI
	etcdPKI *pki.EtcdPKI
	// credsOnce registers, once, the removal of the components'
	// credentials folder when this bring-up made it.
	credsOnce sync.Once
}

// attached returns the bring-up of a cluster another process brought up,
// as its cluster.json describes it: what the steps need to tell its
// topology without running.
func attached(c *Cluster, info *Info) *bringUp {
	b := &bringUp{c: c, runtime: info.Runtime, prev: info, existing: true, lb: info.LB}
	for _, n := range info.Nodes {
		switch n.Role {
		case runtime.RoleMaster:
			b.masters = append(b.masters, n)
		case runtime.RoleWorker:
			b.workers = append(b.workers, n)
		}
	}
	return b
}

// Which nodes a step's components run on.
func masters(b *bringUp) []runtime.Node { return b.masters }
func nodes(b *bringUp) []runtime.Node   { return append(slices.Clone(b.masters), b.workers...) }
func lbNode(b *bringUp) []runtime.Node {
	if b.lb == nil {
		return nil
	}
	return []runtime.Node{*b.lb}
}

// When a step has nothing to do.
func notDocker(b *bringUp) bool     { return b.runtime != RuntimeDocker }
func singleMaster(b *bringUp) bool  { return b.c.spec.Masters < 2 }
func etcdPlaintext(b *bringUp) bool { return b.etcdCredentials() == (EtcdCredentials{}) }

// Titles of steps.
func fixedTitle(key string) func(*bringUp) i18n.Message {
	return func(*bringUp) i18n.Message { return i18n.M(key) }
}

// countTitle titles a step with how many nodes it acts on.
func countTitle(key string, on func(*bringUp) []runtime.Node) func(*bringUp) i18n.Message {
	return func(b *bringUp) i18n.Message { return i18n.M(key, len(on(b))) }
}

// pathTitle titles a step with the file in the state dir it writes.
func pathTitle(key, name string) func(*bringUp) i18n.Message {
	return func(b *bringUp) i18n.Message { return i18n.M(key, filepath.Join(b.c.dir, name)) }
}

// token is the etcd cluster's initial-cluster-token, which with the
// members determines the cluster ID and each member's ID.
func (b *bringUp) token() string {
	if b.prev != nil && b.prev.ClusterToken != "" {
		return b.prev.ClusterToken
	}
	return b.c.token()
}

// writeInfo writes cluster.json, which tells other processes that the
// cluster is ready and where its components answer.
func (b *bringUp) writeInfo(context.Context) error {
	info := &Info{
		Version:         infoVersion,
		Spec:            b.c.spec,
		Name:            b.c.spec.Name,
		Runtime:         b.runtime,
		CreatedAt:       time.Now().UTC(),
		Members:         b.c.members,
		Nodes:           nodes(b),
		ClusterToken:    b.token(),
		LB:              b.lb,
		EtcdCredentials: b.etcdCredentials(),
		Kubeconfig:      filepath.Join(b.c.dir, KubeconfigFile),
	}
	if b.prev != nil {
		info.CreatedAt = b.prev.CreatedAt
	}
	for _, m := range b.c.members {
		info.EtcdEndpoints = append(info.EtcdEndpoints, m.ClientURL)
	}
	for _, n := range b.masters {
		info.APIServers = append(info.APIServers, "https://"+n.HostAddr("apiserver"))
	}
	info.APIServer = b.hostServer()
	if err := writeInfo(b.c.dir, info); err != nil {
		return err
	}
	b.c.info.Store(info)
	return nil
}
