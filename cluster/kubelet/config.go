package kubelet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/timing"
)

// Upstream defaults the kubelet takes.
const (
	// Version is the kubelet version a node reports.
	Version = "v1.37.2"
	// DefaultMaxPods is --max-pods.
	DefaultMaxPods = 110
)

// clientDefaults are the kubelet's user agent, --kube-api-qps and
// --kube-api-burst.
var clientDefaults = apiclient.Defaults{UserAgent: "kubelet/" + Version + " (klab)", QPS: 50, Burst: 100}

// Config configures a kubelet.
type Config struct {
	// NodeName is the Node this kubelet registers and runs pods for.
	NodeName string
	// REST reaches the API server as system:node:<NodeName>. QPS and
	// Burst default to the kubelet's own (50 and 100) when unset.
	REST *rest.Config
	// Runtime runs the pods. The kubelet does not close it.
	Runtime cri.Runtime
	// Speed divides the kubelet's timings (lease, status, back-off).
	// Probe timings are the pod's own and are never scaled.
	Speed timing.Speed
	// ControlPlane marks a master: the kubelet registers it with the
	// node-role.kubernetes.io/control-plane NoSchedule taint, as kubeadm's
	// --register-with-taints does. The label of the same name is not the
	// kubelet's to set (NodeRestriction forbids it); klab's bring-up adds
	// it with the admin's credentials, as kubeadm's mark-control-plane.
	ControlPlane bool
	// Labels are added to the Node's labels (--node-labels).
	Labels map[string]string
	// Capacity holds cpu, memory and pods (pods default to 110).
	Capacity v1.ResourceList
	// Reserved is subtracted from Capacity to give Allocatable
	// (--kube-reserved plus --system-reserved); optional.
	Reserved v1.ResourceList
	// NodeIP is the node's InternalIP.
	NodeIP string
	// PodCIDR is the node's pod range (spec.podCIDR).
	PodCIDR string
	// Listen is the HTTPS server's host:port ("127.0.0.1:0" picks a port);
	// the bound port goes into the node's daemonEndpoints.
	Listen string
	// TLS is the HTTPS server's configuration.
	TLS *tls.Config
	// CAPool verifies https health URLs of static pods.
	CAPool *x509.CertPool
	// RootDir is where the kubelet writes its pods' volumes (upstream's
	// /var/lib/kubelet): pods/<uid>/volumes/<plugin>/<name>, which the
	// runtime mounts into containers. Empty: no volume is mounted.
	RootDir string
	// StaticPods are the control-plane components of this node, which
	// the kubelet mirrors into the API.
	StaticPods []StaticPod
	// Logger receives the kubelet's logs (nil discards them).
	Logger *slog.Logger
}

// StaticPod is a control-plane component the node runs outside the
// kubelet (kubeadm's static pods). The kubelet shows it as a mirror pod
// named <Name>-<node> in kube-system, whose status follows HealthURL.
type StaticPod struct {
	// Name is the component ("etcd", "kube-apiserver", ...).
	Name  string
	Image string
	// HealthURL is polled like a readiness probe (https with
	// Config.CAPool); empty means always healthy.
	HealthURL string
	// Ports are the container's ports (host ports: static pods use the
	// host network).
	Ports []v1.ContainerPort
	// Labels are added to the mirror pod's own (component, tier): the
	// cluster DNS's k8s-app=kube-dns, which its Service selects.
	Labels map[string]string
}

// validate checks a configuration and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("kubelet: NodeName is required"))
	}
	if c.REST == nil {
		errs = append(errs, errors.New("kubelet: REST config is required"))
	}
	if c.Runtime == nil {
		errs = append(errs, errors.New("kubelet: Runtime is required"))
	}
	if c.TLS == nil {
		errs = append(errs, errors.New("kubelet: TLS config is required (the kubelet serves HTTPS only)"))
	}
	if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("kubelet: NodeIP %q is not an IP address", c.NodeIP))
	}
	if c.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(c.PodCIDR); err != nil {
			errs = append(errs, fmt.Errorf("kubelet: PodCIDR %q: %w", c.PodCIDR, err))
		}
	}
	seen := map[string]bool{}
	for _, sp := range c.StaticPods {
		if sp.Name == "" || seen[sp.Name] {
			errs = append(errs, fmt.Errorf("kubelet: static pod name %q is empty or repeated", sp.Name))
		}
		seen[sp.Name] = true
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:10250"
	}
	c.Logger = componentbase.Logger(c.Logger)
	c.REST = apiclient.Config(c.REST, clientDefaults)
	capacity := v1.ResourceList{}
	for k, v := range c.Capacity {
		capacity[k] = v.DeepCopy()
	}
	if _, ok := capacity[v1.ResourcePods]; !ok {
		capacity[v1.ResourcePods] = *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI)
	}
	c.Capacity = capacity
	return nil
}

// allocatable is capacity minus what is reserved, never below zero.
func (c *Config) allocatable() v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range c.Capacity {
		a := q.DeepCopy()
		if r, ok := c.Reserved[name]; ok {
			a.Sub(r)
			if a.Sign() < 0 {
				a = *resource.NewQuantity(0, q.Format)
			}
		}
		out[name] = a
	}
	return out
}
