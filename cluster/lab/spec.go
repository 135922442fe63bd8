package lab

import (
	"os"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime/docker"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// Defaults of a cluster's shape.
const (
	// DefaultName is the cluster name when neither --name nor KLAB_CLUSTER
	// gives one.
	DefaultName = "klab"
	// DefaultMasters is three: the smallest etcd that survives the loss of
	// a member.
	DefaultMasters = 3
	// DefaultWorkers is three: enough for a Deployment to spread and for
	// one node to fail while its pods find room elsewhere.
	DefaultWorkers = 3
	// MaxMasters follows etcd's advice: more than seven members only slows
	// every write down without a practical gain in fault tolerance.
	MaxMasters = 7
	// MaxWorkers keeps an in-process cluster within what a laptop carries.
	MaxWorkers = 50
	// MaxSpeed bounds the speed factor: beyond it Kubernetes' shortest
	// timings fall under a scheduling quantum and stop meaning anything.
	MaxSpeed = 100
	// maxNameLen is a DNS label's length limit.
	maxNameLen = 63
)

// Runtime names accepted in a Spec.
const (
	RuntimeAuto   = "auto"
	RuntimeLocal  = local.Name
	RuntimeDocker = docker.Name
)

// Spec is the shape of a cluster, as `klab up` takes it.
type Spec struct {
	// Name names the cluster: its state dir, its Docker objects' labels and
	// the etcd cluster token derive from it.
	Name string `json:"name"`
	// Masters is the number of control-plane nodes, each running an etcd
	// member.
	Masters int `json:"masters"`
	// Workers is the number of worker nodes.
	Workers int `json:"workers"`
	// Speed divides Kubernetes' timings (lease durations, grace periods)
	// so that a lesson shows in seconds what takes minutes; 1 is real time.
	// Raft keeps its own clock, controlled separately.
	Speed float64 `json:"speed"`
	// Runtime is "auto", "local" or "docker".
	Runtime string `json:"runtime"`
	// NoFsync turns fsync off in etcd: faster on slow disks, unsafe on
	// power loss.
	NoFsync bool `json:"noFsync,omitempty"`
	// QuotaBackendBytes is each etcd member's space quota, as etcd's
	// --quota-backend-bytes: zero means etcd's default (2 GiB), negative
	// none. A write past it raises the NOSPACE alarm.
	QuotaBackendBytes int64 `json:"quotaBackendBytes,omitempty"`
}

// DefaultClusterName returns the cluster name commands use when --name is
// not given: KLAB_CLUSTER, else "klab".
func DefaultClusterName() string {
	if n := strings.TrimSpace(os.Getenv("KLAB_CLUSTER")); n != "" {
		return n
	}
	return DefaultName
}

// DefaultSpec returns the default shape: three masters, three workers,
// real time, runtime chosen automatically.
func DefaultSpec() Spec {
	return Spec{
		Name:    DefaultClusterName(),
		Masters: DefaultMasters,
		Workers: DefaultWorkers,
		Speed:   1,
		Runtime: RuntimeAuto,
	}
}

// Validate reports the first thing wrong with the spec, naming the field.
func (s Spec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if s.Masters < 1 || s.Masters > MaxMasters {
		return i18n.NewError("spec.err.masters", s.Masters, MaxMasters)
	}
	if s.Workers < 0 || s.Workers > MaxWorkers {
		return i18n.NewError("spec.err.workers", s.Workers, MaxWorkers)
	}
	if !(s.Speed > 0 && s.Speed <= MaxSpeed) {
		return i18n.NewError("spec.err.speed", s.Speed, float64(MaxSpeed))
	}
	switch s.Runtime {
	case RuntimeAuto, RuntimeLocal, RuntimeDocker:
	default:
		return i18n.NewError("spec.err.runtime", s.Runtime)
	}
	return nil
}

// ValidateName checks that name can name a cluster: a DNS label (lowercase
// letters, digits and '-', starting with a letter, ending with a letter or a
// digit, at most 63 characters), since it becomes part of directory names,
// Docker object names and host names.
func ValidateName(name string) error {
	if name == "" {
		return i18n.NewError("spec.err.name-empty")
	}
	if len(name) > maxNameLen {
		return i18n.NewError("spec.err.name-long", name, maxNameLen)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && i > 0 || r == '-' && i > 0 && i < len(name)-1
		if !ok {
			return i18n.NewError("spec.err.name-chars", name)
		}
	}
	return nil
}
