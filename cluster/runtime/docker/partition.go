package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// ErrPartialPartition is wrapped by Partition's error when its two sides do
// not name every node of the cluster.
var ErrPartialPartition = errors.New("the Docker runtime partitions by disconnecting the nodes of one side from the cluster network, so it cannot cut only some links")

// Partition cuts the network between the nodes of a and those of b.
//
// Docker cannot cut a single link between two containers of one network;
// it can only disconnect a container from the network altogether. So a and
// b together must name every node of the cluster, and every node of a is
// disconnected from the cluster's network: its pause container, which
// carries all its components, and its pods' sandboxes. The nodes of a are
// therefore cut off from each other too, not only from b; the nodes of b
// still reach each other. Put the smaller side in a.
func (r *Runtime) Partition(ctx context.Context, a, b []string) error {
	nodes, err := r.nodeContainers(ctx)
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	if err := checkPartition(nodes, a, b); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	n, err := r.network(ctx, false)
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	for _, name := range a {
		targets := []container.Summary{nodes[name]}
		sandboxes, err := r.containers(ctx, labels.Role, labels.RoleSandbox, labels.Node, name)
		if err != nil {
			return fmt.Errorf("partition: %w", err)
		}
		targets = append(targets, sandboxes...)
		for _, c := range targets {
			if !onNetwork(c, n.name) {
				continue
			}
			if err := r.cli.NetworkDisconnect(ctx, n.id, c.ID, true); err != nil && !notFound(err) {
				return fmt.Errorf("partition: disconnect %s from %s: %w", containerName(c), n.name, err)
			}
		}
		r.opts.Logger.Info("node disconnected", "node", name, "sandboxes", len(sandboxes))
	}
	return nil
}

// checkPartition verifies that a and b name known, distinct nodes that
// together are the whole cluster, as Partition needs.
func checkPartition(nodes map[string]container.Summary, a, b []string) error {
	if len(a) == 0 || len(b) == 0 {
		return errors.New("each side needs at least one node")
	}
	seen := map[string]bool{}
	for _, name := range append(slices.Clone(a), b...) {
		if _, ok := nodes[name]; !ok {
			return fmt.Errorf("node %s: %w", name, runtime.ErrNotFound)
		}
		if seen[name] {
			return fmt.Errorf("node %s is on both sides, or named twice", name)
		}
		seen[name] = true
	}
	var missing []string
	for name := range nodes {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: put every node on one side or the other (%s on neither)", ErrPartialPartition, strings.Join(missing, ", "))
	}
	return nil
}

// Heal reconnects every container of the cluster that has an address of
// its own (nodes, pod sandboxes) and is off the cluster's network, at that
// address.
func (r *Runtime) Heal(ctx context.Context) error {
	n, err := r.network(ctx, false)
	if err != nil {
		if isNotFound(err) {
			return nil // no network, no partition
		}
		return fmt.Errorf("heal: %w", err)
	}
	list, err := r.containers(ctx)
	if err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	var errs []error
	for _, c := range list {
		ip := c.Labels[labels.IP]
		if ip == "" || onNetwork(c, n.name) {
			continue
		}
		err := r.cli.NetworkConnect(ctx, n.id, c.ID, &network.EndpointSettings{
			IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip},
			Aliases:    aliases(c),
		})
		if err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("heal: reconnect %s at %s: %w", containerName(c), ip, err))
			continue
		}
		r.opts.Logger.Info("container reconnected", "container", containerName(c), "ip", ip)
		if c.Labels[labels.Role] == labels.RoleSandbox {
			if err := r.rerouteServices(ctx, c); err != nil {
				errs = append(errs, fmt.Errorf("heal: %s: %w", containerName(c), err))
			}
		}
	}
	return errors.Join(errs...)
}

// rerouteServices sets a reconnected sandbox's route to the Service range
// again: the kernel dropped it with the interface it went through when the
// sandbox was disconnected. A sandbox made without the capability (by a
// kubelet older than the route) is left as it is.
func (r *Runtime) rerouteServices(ctx context.Context, c container.Summary) error {
	info, err := r.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return err
	}
	// The engine keeps the capability as given, or (20.10) as CAP_NET_ADMIN.
	if info.HostConfig == nil || !(slices.Contains(info.HostConfig.CapAdd, "NET_ADMIN") || slices.Contains(info.HostConfig.CapAdd, "CAP_NET_ADMIN")) {
		return nil
	}
	nodes, err := r.nodeContainers(ctx)
	if err != nil {
		return err
	}
	node, ok := nodes[c.Labels[labels.Node]]
	if !ok || node.Labels[labels.IP] == "" {
		return nil
	}
	cmd := []string{binaryInImage, "component", "route", serviceCIDR, "--via", node.Labels[labels.IP]}
	exec, err := r.cli.ContainerExecCreate(ctx, c.ID, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fmt.Errorf("route Services again: %w", err)
	}
	// Attaching starts it; its output ends when it does.
	resp, err := r.cli.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("route Services again: %w", err)
	}
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, resp.Reader)
	resp.Close()
	if err != nil {
		return fmt.Errorf("route Services again: %w", err)
	}
	st, err := r.cli.ContainerExecInspect(ctx, exec.ID)
	if err != nil {
		return fmt.Errorf("route Services again: %w", err)
	}
	if st.ExitCode != 0 {
		return fmt.Errorf("route Services again: %s exited %d: %s", strings.Join(cmd, " "), st.ExitCode, strings.TrimSpace(out.String()))
	}
	return nil
}

// onNetwork reports whether a listed container is attached to the named
// network.
func onNetwork(c container.Summary, name string) bool {
	if c.NetworkSettings == nil {
		return false
	}
	_, ok := c.NetworkSettings.Networks[name]
	return ok
}

// aliases gives a reconnected node back the DNS name it was created with.
func aliases(c container.Summary) []string {
	if isNodeRole(c.Labels[labels.Role]) {
		return []string{c.Labels[labels.Node]}
	}
	return nil
}

// containerName returns a listed container's name, for messages.
func containerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return c.ID
}
