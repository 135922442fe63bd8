// Package timing holds Kubernetes' default timings and the cluster's speed
// factor that divides them, so a lesson can show in seconds what takes
// minutes. Every component takes its durations from here, and `klab
// status` shows each lab value beside the upstream default.
//
// Raft's timings are not here: the etcd members keep upstream's 100 ms
// heartbeat and 1 s election timeout, under their own clock control.
package timing

import (
	"fmt"
	"time"
)

// Upstream defaults.
const (
	// LeaseDuration, RenewDeadline and RetryPeriod are the leader-election
	// timings of kube-scheduler and kube-controller-manager.
	LeaseDuration = 15 * time.Second
	RenewDeadline = 10 * time.Second
	RetryPeriod   = 2 * time.Second

	// NodeLeaseDuration is the duration a kubelet writes into its node
	// Lease; NodeLeaseRenewInterval is how often it renews it (a quarter of
	// the duration, as upstream).
	NodeLeaseDuration      = 40 * time.Second
	NodeLeaseRenewInterval = 10 * time.Second
	// NodeStatusUpdateFrequency is how often a kubelet posts its node
	// status when nothing changed.
	NodeStatusUpdateFrequency = 10 * time.Second

	// NodeMonitorPeriod is how often the node lifecycle controller checks
	// nodes; NodeMonitorGracePeriod how long a node may be silent before it
	// is marked Unknown; NodeStartupGracePeriod the same for a node that
	// never reported Ready.
	NodeMonitorPeriod       = 5 * time.Second
	NodeMonitorGracePeriod  = 50 * time.Second
	NodeStartupGracePeriod  = 60 * time.Second
	DefaultTolerationPeriod = 300 * time.Second

	// BackOffInitial doubles up to BackOffMax: CrashLoopBackOff and
	// ImagePullBackOff.
	BackOffInitial = 10 * time.Second
	BackOffMax     = 300 * time.Second

	// PodInitialBackoff and PodMaxBackoff bound the scheduler's retry
	// backoff for pods that failed to schedule.
	PodInitialBackoff = 1 * time.Second
	PodMaxBackoff     = 10 * time.Second
	// PodMaxInUnschedulablePodsDuration is how long an unschedulable pod
	// waits for a cluster change before it is retried anyway.
	PodMaxInUnschedulablePodsDuration = 5 * time.Minute

	// HPASyncPeriod is how often the horizontal pod autoscaler looks at
	// each HPA; HPADownscaleStabilization how far back it looks for a
	// higher recommendation before it scales in (the window a flapping
	// load needs to settle); HPACPUInitializationPeriod and
	// HPAInitialReadinessDelay how long after a pod starts its CPU
	// reading and its readiness are not trusted.
	HPASyncPeriod              = 15 * time.Second
	HPADownscaleStabilization  = 5 * time.Minute
	HPACPUInitializationPeriod = 5 * time.Minute
	HPAInitialReadinessDelay   = 30 * time.Second
)

// Speed divides Kubernetes' timings. A zero Speed means 1 (real time).
type Speed float64

// Scale returns d divided by the speed factor.
func (s Speed) Scale(d time.Duration) time.Duration {
	if s <= 0 || s == 1 {
		return d
	}
	return time.Duration(float64(d) / float64(s))
}

// Factor returns the speed as a float, 1 when unset.
func (s Speed) Factor() float64 {
	if s <= 0 {
		return 1
	}
	return float64(s)
}

// MinLeaderLease is the shortest leader-election lease the lab runs with.
// At speed 10 upstream's 15 s lease would be 1.5 s with a 1 s renew
// deadline, and on a loaded machine (a test run, a laptop building while
// it teaches) an API server that answers a renewal a second late makes the
// leader step down though nothing failed: the controller manager was seen
// to flap so. Faster speeds stop at this floor, in upstream's proportions
// (lease 15 : renew 10 : retry 2).
const MinLeaderLease = 3 * time.Second

// LeaderElection returns the lease duration, renew deadline and retry
// period the scheduler and the controller manager elect their leader
// with: upstream's, divided by the speed down to MinLeaderLease.
func (s Speed) LeaderElection() (lease, renew, retry time.Duration) {
	lease, renew, retry = s.Scale(LeaseDuration), s.Scale(RenewDeadline), s.Scale(RetryPeriod)
	if lease < MinLeaderLease {
		// The same proportions, stretched to the floor.
		lease = MinLeaderLease
		leaseSeconds := LeaseDuration / time.Second
		renew = MinLeaderLease * (RenewDeadline / time.Second) / leaseSeconds
		retry = MinLeaderLease * (RetryPeriod / time.Second) / leaseSeconds
	}
	return lease, renew, retry
}

// Row is one timing: its upstream name, default and the lab's value.
type Row struct {
	// Name is the upstream flag or field that sets it.
	Name     string        `json:"name"`
	Upstream time.Duration `json:"upstream"`
	Lab      time.Duration `json:"lab"`
}

// String shows a row as "name: lab (upstream)".
func (r Row) String() string {
	return fmt.Sprintf("%s: %s (%s)", r.Name, r.Lab, r.Upstream)
}

// Table lists the timings a speed factor changes, under their upstream
// names.
func (s Speed) Table() []Row {
	rows := []Row{
		{Name: "leader-elect-lease-duration", Upstream: LeaseDuration},
		{Name: "leader-elect-renew-deadline", Upstream: RenewDeadline},
		{Name: "leader-elect-retry-period", Upstream: RetryPeriod},
		{Name: "node-lease-duration", Upstream: NodeLeaseDuration},
		{Name: "node-lease-renew-interval", Upstream: NodeLeaseRenewInterval},
		{Name: "node-status-update-frequency", Upstream: NodeStatusUpdateFrequency},
		{Name: "node-monitor-period", Upstream: NodeMonitorPeriod},
		{Name: "node-monitor-grace-period", Upstream: NodeMonitorGracePeriod},
		{Name: "node-startup-grace-period", Upstream: NodeStartupGracePeriod},
		{Name: "default-not-ready-toleration-seconds", Upstream: DefaultTolerationPeriod},
		{Name: "default-unreachable-toleration-seconds", Upstream: DefaultTolerationPeriod},
		{Name: "crashloop-backoff-initial", Upstream: BackOffInitial},
		{Name: "crashloop-backoff-max", Upstream: BackOffMax},
		{Name: "pod-initial-backoff", Upstream: PodInitialBackoff},
		{Name: "pod-max-backoff", Upstream: PodMaxBackoff},
		{Name: "horizontal-pod-autoscaler-sync-period", Upstream: HPASyncPeriod},
		{Name: "horizontal-pod-autoscaler-downscale-stabilization", Upstream: HPADownscaleStabilization},
		{Name: "horizontal-pod-autoscaler-cpu-initialization-period", Upstream: HPACPUInitializationPeriod},
		{Name: "horizontal-pod-autoscaler-initial-readiness-delay", Upstream: HPAInitialReadinessDelay},
	}
	for i := range rows {
		rows[i].Lab = s.Scale(rows[i].Upstream)
	}
	rows[0].Lab, rows[1].Lab, rows[2].Lab = s.LeaderElection()
	return rows
}
