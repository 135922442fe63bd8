package overview

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/labstate"
)

// cluster is what the view draws from.
type cluster struct {
	info  *lab.Info
	st    *labstate.State
	ks    *kubestate.State
	comps []runtime.ComponentInfo
}

// view returns the Overview of cl, width×height cells, as it is once the
// Kubernetes feed and the runtime told it cl.ks and cl.comps.
func (cl cluster) view(c *common.Common, width, height int) *View {
	v := New(c, cl.st)
	v.info, v.kube, v.report = cl.info, cl.ks, cl.comps
	v.SetSize(width, height)
	return v
}

// addWorkers gives info n workers, as cluster.json lists them.
func addWorkers(info *lab.Info, n int) {
	info.Spec.Workers = n
	for i := 1; i <= n; i++ {
		info.Nodes = append(info.Nodes, runtime.Node{Name: fmt.Sprintf("worker-%d", i), Role: runtime.RoleWorker, Index: i,
			Host: fmt.Sprintf("127.0.%d.%d", 1+i/200, 20+i%200), PodCIDR: fmt.Sprintf("10.244.%d.0/24", 10+i),
			Ports: map[string]int{"proxy": 10256}})
	}
	for i := range info.Nodes {
		if info.Nodes[i].Role == runtime.RoleMaster {
			info.Nodes[i].PodCIDR = fmt.Sprintf("10.244.%d.0/24", info.Nodes[i].Index)
		}
	}
}

// running lists every component of info running.
func running(info *lab.Info) []runtime.ComponentInfo {
	var out []runtime.ComponentInfo
	for _, n := range info.Nodes {
		names := workerComponents
		if n.Role == runtime.RoleMaster {
			names = masterComponents
		}
		for _, c := range names {
			out = append(out, runtime.ComponentInfo{Ref: runtime.Ref{Node: n.Name, Component: c}, State: runtime.StateRunning})
		}
	}
	return out
}

// setState changes one component's state in comps.
func setState(comps []runtime.ComponentInfo, node, component string, state runtime.State) {
	for i := range comps {
		if comps[i].Ref.Node == node && comps[i].Ref.Component == component {
			comps[i].State = state
		}
	}
}

// kubeOf builds the API server's side of info: every node Ready, its
// kube-proxy in mode, the kube-system leases held by master-1 (scheduler)
// and master-2 (controller manager), and pods: the control plane's mirror
// pods on each master, and perNode pods on each worker, mostly running.
func kubeOf(info *lab.Info, mode string, perNode int) *kubestate.State {
	ks := &kubestate.State{}
	ks.SetConnection(kubestate.Connection{Connected: true, Synced: true})
	ks.SetProxyConfig(kubestate.ProxyConfig{Exists: true, Mode: mode})
	since := uitest.Now.Add(-time.Hour)
	for _, n := range info.Nodes {
		ks.SetNode(kubestate.Node{Name: n.Name, Role: n.Role, Ready: corev1.ConditionTrue, ReadySince: since,
			PodCIDR: n.PodCIDR, InternalIP: n.Host})
		ks.SetProxy(kubestate.Proxy{Node: n.Name, Mode: mode, Reachable: true, Since: since})
		if n.Role == runtime.RoleMaster {
			for _, c := range []string{runtime.ComponentAPIServer, runtime.ComponentScheduler, runtime.ComponentControllerManager} {
				ks.SetPod(kubestate.Pod{Namespace: "kube-system", Name: c + "-" + n.Name, Node: n.Name,
					Phase: corev1.PodRunning, Ready: true})
			}
			continue
		}
		for j := range perNode {
			p := kubestate.Pod{Namespace: "default", Name: fmt.Sprintf("web-%s-%d", n.Name, j), Node: n.Name,
				Phase: corev1.PodRunning, Ready: true}
			switch j % 13 {
			case 5:
				p.Phase, p.Ready = corev1.PodPending, false
			case 9:
				p.Ready = false
			}
			ks.SetPod(p)
		}
	}
	ks.SetLease(kubestate.Lease{Name: kubestate.LeaseScheduler, Holder: "master-1_3f2a", Node: "master-1", Transitions: 1})
	ks.SetLease(kubestate.Lease{Name: kubestate.LeaseControllerManager, Holder: "master-2_91c0", Node: "master-2"})
	return ks
}

// healthy is 3 masters (just after an election) and 3 workers, all well.
func healthy() cluster {
	info, st := uitest.Raft(3)
	addWorkers(info, 3)
	comps := running(info)
	return cluster{info, st, kubeOf(info, "iptables", 4), comps}
}

// troubled is the killed-leader fixture with trouble on the Kubernetes
// side too: master-1's etcd and kube-apiserver are killed, worker-2's
// kubelet was stopped and the node went NotReady, its pods are being
// evicted; worker-3's kube-proxy does not answer; the kube-scheduler lease
// moved to master-3 and the kube-proxy ConfigMap was switched to ipvs,
// which only worker-1 runs so far.
func troubled() cluster {
	info, st := uitest.Killed(3)
	addWorkers(info, 3)
	comps := running(info)
	setState(comps, "master-1", runtime.ComponentEtcd, runtime.StateKilled)
	setState(comps, "master-1", runtime.ComponentAPIServer, runtime.StateKilled)
	setState(comps, "worker-2", runtime.ComponentKubelet, runtime.StateStopped)
	ks := kubeOf(info, "iptables", 5)
	ks.SetProxyConfig(kubestate.ProxyConfig{Exists: true, Mode: "ipvs"})
	p, _ := ks.Proxy("worker-1")
	p.Mode = "ipvs"
	ks.SetProxy(p)
	ks.SetProxy(kubestate.Proxy{Node: "worker-3", Mode: "iptables", Err: "connection refused"})
	n, _ := ks.Node("worker-2")
	n.Ready, n.ReadyReason, n.ReadySince = corev1.ConditionUnknown, "NodeStatusUnknown", uitest.Now.Add(-40*time.Second)
	ks.SetNode(n)
	for j := range 3 {
		ks.SetPod(kubestate.Pod{Namespace: "default", Name: fmt.Sprintf("web-worker-2-%d", j), Node: "worker-2",
			Phase: corev1.PodRunning, Deleting: true})
	}
	ks.SetPod(kubestate.Pod{Namespace: "default", Name: "batch-1", Node: "worker-1", Phase: corev1.PodFailed, Reason: "OOMKilled"})
	ks.SetPod(kubestate.Pod{Namespace: "default", Name: "batch-2", Node: "worker-1", Phase: corev1.PodSucceeded})
	ks.SetPod(kubestate.Pod{Namespace: "default", Name: "web-new", Phase: corev1.PodPending})
	ks.SetLease(kubestate.Lease{Name: kubestate.LeaseScheduler, Holder: "master-3_77aa", Node: "master-3", Transitions: 2})
	return cluster{info, st, ks, comps}
}

// large is 3 masters and workers workers with about pods pods, a few
// workers in trouble, the last one NotReady.
func large(workers, pods int) cluster {
	info, st := uitest.Raft(3)
	addWorkers(info, workers)
	comps := running(info)
	ks := kubeOf(info, "ipvs", pods/workers)
	last := fmt.Sprintf("worker-%d", workers)
	n, _ := ks.Node(last)
	n.Ready, n.ReadyReason, n.ReadySince = corev1.ConditionUnknown, "NodeStatusUnknown", uitest.Now.Add(-time.Minute)
	ks.SetNode(n)
	setState(comps, last, runtime.ComponentKubelet, runtime.StateKilled)
	ks.SetPod(kubestate.Pod{Namespace: "default", Name: "crash", Node: "worker-7", Phase: corev1.PodFailed})
	return cluster{info, st, ks, comps}
}

// disconnected is the healthy cluster after the API server stopped
// answering, before the runtime was asked again.
func disconnected() cluster {
	c := healthy()
	c.ks.SetConnection(kubestate.Connection{Synced: true, Err: "dial tcp 127.0.0.2:6443: connect: connection refused",
		Since: uitest.Now.Add(-5 * time.Second)})
	c.comps = nil
	return c
}

// etcdOnly is what the view had before any kube feed or runtime answer.
func etcdOnly() cluster {
	info, st := uitest.Raft(3)
	return cluster{info, st, nil, nil}
}
