package dockercri

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"

	"github.com/klab-dev/klab/cluster/dns"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Environment variables ConfigFromEnv reads: the Docker runtime sets them on
// a node's kubelet container.
const (
	EnvCluster    = "KLAB_CLUSTER"
	EnvNode       = "KLAB_NODE"
	EnvNetwork    = "KLAB_DOCKER_NETWORK"
	EnvPodCIDR    = "KLAB_POD_CIDR"
	EnvPauseImage = "KLAB_PAUSE_IMAGE"
	EnvNodeIP     = "KLAB_NODE_IP"
	EnvServiceIPs = "KLAB_SERVICE_CIDR"
)

// Config configures a Runtime.
type Config struct {
	// Cluster and Node name the cluster and the node whose pods the
	// runtime runs; they are the labels its containers carry.
	Cluster string
	Node    string
	// Network is the Docker network the pods join; it must have a subnet
	// that contains PodCIDR.
	Network string
	// PodCIDR is the node's pod range, an IPv4 CIDR of /29 or larger;
	// every sandbox gets a fixed address from it.
	PodCIDR string
	// PauseImage is the image of the sandboxes' pause containers; it is run
	// with the command ["pause"].
	PauseImage string
	// AppImage is the repository of klab's workload image, which answers to
	// every tag; empty means labels.AppImage. Tests set their own so that
	// they never touch the real one.
	AppImage string
	// AppEntrypoint runs the app in AppImage (the image's entrypoint);
	// empty means klab's, ["/klab", "component", "app"]. A web stand-in
	// runs it with --stand-in.
	AppEntrypoint []string
	// KubeletVolume is the engine's volume that holds the kubelet's root
	// directory, mounted in the kubelet's container at KubeletDir; the
	// pods' volumes are bind-mounted from it. Empty: pods get no volumes.
	KubeletVolume string
	KubeletDir    string
	// NodeIP and ServiceCIDR, when both are set, connect every pod to
	// the Services: its sandbox routes ServiceCIDR via NodeIP, where the
	// node's kube-proxy listens on every ClusterIP, and its resolv.conf
	// names the cluster DNS, the tenth address of ServiceCIDR (what the
	// kubelet's --cluster-dns says upstream). Unset, pods reach pods and
	// nodes only.
	NodeIP      string
	ServiceCIDR string
	// Logger receives the runtime's own logs; nil discards them.
	Logger *slog.Logger
}

// ConfigFromEnv reads a Config from the environment of the kubelet's
// container (EnvCluster, EnvNode, EnvNetwork, EnvPodCIDR, EnvPauseImage).
func ConfigFromEnv() (Config, error) {
	cfg := Config{
		Cluster:    os.Getenv(EnvCluster),
		Node:       os.Getenv(EnvNode),
		Network:    os.Getenv(EnvNetwork),
		PodCIDR:    os.Getenv(EnvPodCIDR),
		PauseImage: os.Getenv(EnvPauseImage),
		// Optional: a kubelet container made before klab mounted volumes
		// has neither.
		KubeletVolume: os.Getenv(EnvKubeletVolume),
		KubeletDir:    os.Getenv(EnvKubeletDir),
		// Optional: a node made before klab routed Services has neither.
		NodeIP:      os.Getenv(EnvNodeIP),
		ServiceCIDR: os.Getenv(EnvServiceIPs),
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{EnvCluster, cfg.Cluster}, {EnvNode, cfg.Node}, {EnvNetwork, cfg.Network},
		{EnvPodCIDR, cfg.PodCIDR}, {EnvPauseImage, cfg.PauseImage},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return Config{}, fmt.Errorf("docker container runtime: environment variable %s not set (klab sets it on the kubelet's container)",
			strings.Join(missing, ", "))
	}
	return cfg, nil
}

// validate checks cfg, fills in defaults, and returns the parsed pod CIDR.
func (cfg *Config) validate() (netip.Prefix, error) {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"cluster", cfg.Cluster}, {"node", cfg.Node}, {"network", cfg.Network}, {"pause image", cfg.PauseImage},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("no %s given", f.name))
		}
	}
	cidr, err := parsePodCIDR(cfg.PodCIDR)
	if err != nil {
		errs = append(errs, err)
	}
	if (cfg.NodeIP == "") != (cfg.ServiceCIDR == "") {
		errs = append(errs, errors.New("node IP and Service CIDR go together: give both or neither"))
	} else if cfg.NodeIP != "" {
		if a, err := netip.ParseAddr(cfg.NodeIP); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("node IP %q is not an IPv4 address", cfg.NodeIP))
		}
		if p, err := netip.ParsePrefix(cfg.ServiceCIDR); err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("Service CIDR %q is not an IPv4 range", cfg.ServiceCIDR))
		} else if _, err := dns.ClusterIP(cfg.ServiceCIDR); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return netip.Prefix{}, err
	}
	if cfg.AppImage == "" {
		cfg.AppImage = labels.AppImage
	}
	if len(cfg.AppEntrypoint) == 0 {
		cfg.AppEntrypoint = []string{"/klab", "component", "app"}
	}
	return cidr, nil
}

// parsePodCIDR parses an IPv4 pod range with room for a few pods.
func parsePodCIDR(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, errors.New("no pod CIDR given")
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %q: %w", s, err)
	}
	if !prefix.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %s: only IPv4 ranges are supported", s)
	}
	if prefix.Bits() > 29 {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %s is too small: want /29 or larger", s)
	}
	return prefix.Masked(), nil
}
