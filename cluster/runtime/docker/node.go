package docker

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// pauseCommand is what a pause container runs: `klab component pause`,
// which sleeps until it is signalled.
const pauseCommand = "pause"

// publishHost is where node ports are published: the machine running klab
// only, never its other interfaces.
const publishHost = "127.0.0.1"

// portAttempts bounds how often CreateNode picks new host ports when
// another program took one between the choice and the container's start.
const portAttempts = 3

// CreateNode creates and starts the node's pause container, which holds the
// node's network namespace: on the cluster's network at the node's address,
// with every port of spec published on 127.0.0.1 of this machine.
//
// The host ports are chosen once, when the node is created, and stay the
// node's own: Docker would pick new ones each time the container starts or
// is reconnected to the network after a partition, and the addresses
// `klab up` wrote down would go stale.
//
// With spec.Reuse, the node exists already (`klab start`): its container is
// started if stopped, and made again at the same address if it is gone.
func (r *Runtime) CreateNode(ctx context.Context, spec runtime.NodeSpec) (runtime.Node, error) {
	if err := r.needImage(); err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	if spec.Name == "" || labels.SanitizeName(spec.Name) != spec.Name {
		return runtime.Node{}, fmt.Errorf("create node %q: a node name may hold letters, digits, '_', '.' and '-' only", spec.Name)
	}
	spec.Ports = portsOf(spec)
	for _, p := range spec.Ports {
		if p.Default <= 0 || p.Default > 65535 {
			return runtime.Node{}, fmt.Errorf("create node %s: port %s has no valid number (%d)", spec.Name, p.Name, p.Default)
		}
	}
	n, err := r.network(ctx, true)
	if err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	ip, err := nodeIP(n.x, spec.Role, spec.Index)
	if err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	existing, err := r.nodeContainer(ctx, spec.Name)
	found := err == nil
	if err != nil && !isNotFound(err) {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}

	var id string
	switch {
	case spec.Reuse != nil && spec.Reuse.Host != ip:
		return runtime.Node{}, fmt.Errorf("create node %s: it was at %s, but the cluster's network now gives it %s; remove the cluster and create it again", spec.Name, spec.Reuse.Host, ip)
	case spec.Reuse != nil && found:
		if existing.Labels[labels.IP] != ip {
			return runtime.Node{}, fmt.Errorf("create node %s: its container is at %s, not %s; remove the cluster and create it again", spec.Name, existing.Labels[labels.IP], ip)
		}
		id = existing.ID
		if existing.State != container.StateRunning {
			if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
				return runtime.Node{}, fmt.Errorf("start node %s: %w", spec.Name, portHint(err))
			}
		}
	case found:
		return runtime.Node{}, fmt.Errorf("create node %s: cluster %s has it already (container %s)", spec.Name, r.opts.Cluster, labels.NodeContainer(r.opts.Cluster, spec.Name))
	default:
		if spec.Reuse == nil {
			// A new node starts with no data: an etcd volume left by
			// a node of the same name that is gone belongs to another
			// cluster's history.
			if err := r.cli.VolumeRemove(ctx, labels.EtcdVolume(r.opts.Cluster, spec.Name), true); err != nil && !notFound(err) {
				return runtime.Node{}, fmt.Errorf("create node %s: remove the old etcd volume: %w", spec.Name, err)
			}
		} else {
			r.opts.Logger.Warn("node container is gone; making it again", "node", spec.Name)
		}
		if id, err = r.createPause(ctx, spec, n, ip); err != nil {
			return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
		}
	}

	inspect, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	node := runtime.Node{
		Name: spec.Name, Role: spec.Role, Index: spec.Index, Host: ip,
		Ports:     map[string]int{},
		Published: map[string]string{},
		PodCIDR:   podCIDR(n.x, spec.Role, spec.Index),
	}
	for _, p := range spec.Ports {
		addr, ok := publishedAddr(inspect.HostConfig, p.Default)
		if !ok {
			return runtime.Node{}, fmt.Errorf("create node %s: its container does not publish port %d (%s); remove the cluster and create it again", spec.Name, p.Default, p.Name)
		}
		node.Ports[p.Name] = p.Default
		node.Published[p.Name] = addr
	}
	r.opts.Logger.Debug("node ready", "node", spec.Name, "host", ip, "published", node.Published)
	return node, nil
}

// portsOf returns the ports a node is asked for: those of spec, or, when
// a node created before is made again without them, the ones it had.
func portsOf(spec runtime.NodeSpec) []runtime.Port {
	if len(spec.Ports) > 0 || spec.Reuse == nil {
		return spec.Ports
	}
	ports := make([]runtime.Port, 0, len(spec.Reuse.Ports))
	for name, port := range spec.Reuse.Ports {
		ports = append(ports, runtime.Port{Name: name, Default: port})
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
	return ports
}

// createPause creates and starts a node's pause container, picking free host
// ports again if one was taken meanwhile.
func (r *Runtime) createPause(ctx context.Context, spec runtime.NodeSpec, n clusterNetwork, ip string) (string, error) {
	for attempt := 1; ; attempt++ {
		hostPorts, err := freeHostPorts(len(spec.Ports))
		if err != nil {
			return "", err
		}
		exposed := nat.PortSet{}
		bindings := nat.PortMap{}
		for i, p := range spec.Ports {
			port := tcpPort(p.Default)
			exposed[port] = struct{}{}
			if _, ok := bindings[port]; !ok {
				bindings[port] = []nat.PortBinding{{HostIP: publishHost, HostPort: strconv.Itoa(hostPorts[i])}}
			}
		}
		resp, err := r.cli.ContainerCreate(ctx,
			&container.Config{
				Image:    r.opts.Image,
				Cmd:      []string{pauseCommand},
				Hostname: spec.Name,
				Labels: map[string]string{
					labels.Cluster: r.opts.Cluster,
					labels.Role:    spec.Role,
					labels.Node:    spec.Name,
					labels.IP:      ip,
				},
				ExposedPorts: exposed,
			},
			&container.HostConfig{
				NetworkMode:   container.NetworkMode(n.name),
				PortBindings:  bindings,
				RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			},
			&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				n.name: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}, Aliases: []string{spec.Name}},
			}},
			nil, labels.NodeContainer(r.opts.Cluster, spec.Name))
		if err != nil {
			return "", fmt.Errorf("create container %s: %w", labels.NodeContainer(r.opts.Cluster, spec.Name), err)
		}
		err = r.cli.ContainerStart(ctx, resp.ID, container.StartOptions{})
		if err == nil {
			return resp.ID, nil
		}
		if rmErr := r.removeContainer(ctx, resp.ID); rmErr != nil {
			r.opts.Logger.Warn("remove a node container that failed to start", "node", spec.Name, "err", rmErr)
		}
		if !portTaken(err) || attempt == portAttempts {
			return "", fmt.Errorf("start container %s: %w", labels.NodeContainer(r.opts.Cluster, spec.Name), portHint(err))
		}
		r.opts.Logger.Debug("a host port was taken meanwhile; choosing others", "node", spec.Name, "err", err)
	}
}

func tcpPort(port int) nat.Port { return nat.Port(strconv.Itoa(port) + "/tcp") }

// publishedAddr returns the host address a container's port is published
// at, as its creation fixed it.
func publishedAddr(hc *container.HostConfig, port int) (string, bool) {
	if hc == nil {
		return "", false
	}
	for _, b := range hc.PortBindings[tcpPort(port)] {
		if b.HostPort != "" && b.HostPort != "0" {
			host := b.HostIP
			if host == "" {
				host = publishHost
			}
			return net.JoinHostPort(host, b.HostPort), true
		}
	}
	return "", false
}

// freeHostPorts returns n distinct ports free on 127.0.0.1 now. The probe
// listeners stay open until all are chosen, so the kernel never hands out
// one twice.
func freeHostPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(publishHost, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port on %s: %w", publishHost, err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portTaken reports whether a container failed to start because a host
// port it publishes is in use.
func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

// portHint adds what to do to a start error caused by a taken host port.
func portHint(err error) error {
	if portTaken(err) {
		return fmt.Errorf("%w (another program took one of the node's ports on %s; stop it, or remove the cluster and create it again)", err, publishHost)
	}
	return err
}
