package inprocess

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// sandbox is a pod's network identity: an address of its own on loopback.
// Its fields other than ready never change after creation.
type sandbox struct {
	id        string
	cfg       cri.SandboxConfig
	ip        string
	createdAt time.Time
	logDir    string
	// rootDir is the pod's filesystem, shared by its containers (as if
	// every path were one volume).
	rootDir string
	// ready is false once the sandbox is stopped; guarded by Runtime.mu.
	ready bool
}

func (sb *sandbox) status() cri.SandboxStatus {
	cfg := sb.cfg
	cfg.Labels = maps.Clone(cfg.Labels)
	return cri.SandboxStatus{
		Sandbox:   cri.Sandbox{ID: sb.id, IP: sb.ip},
		Config:    cfg,
		Ready:     sb.ready,
		CreatedAt: sb.createdAt,
	}
}

// RunPodSandbox gives a pod an address from the node's pod CIDR.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg cri.SandboxConfig) (cri.Sandbox, error) {
	if cfg.Name == "" || cfg.Namespace == "" || cfg.PodUID == "" {
		return cri.Sandbox{}, errors.New("run pod sandbox: name, namespace and UID are required")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return cri.Sandbox{}, errClosed
	}
	ip, err := r.ips.allocate()
	if err != nil {
		return cri.Sandbox{}, fmt.Errorf("run pod sandbox for pod %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	cfg.Labels = maps.Clone(cfg.Labels)
	rootDir := filepath.Join(r.cfg.RootDir, cfg.Namespace+"_"+cfg.Name+"_"+cfg.PodUID)
	if err := makeRootfs(rootDir, cfg, ip); err != nil {
		r.ips.release(ip)
		return cri.Sandbox{}, fmt.Errorf("run pod sandbox for pod %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	sb := &sandbox{
		rootDir:   rootDir,
		id:        newID(),
		cfg:       cfg,
		ip:        ip,
		createdAt: time.Now(),
		// Upstream's /var/log/pods/<namespace>_<name>_<uid>.
		logDir: filepath.Join(r.cfg.LogDir, cfg.Namespace+"_"+cfg.Name+"_"+cfg.PodUID),
		ready:  true,
	}
	r.sandboxes[sb.id] = sb
	r.logger.Info("Started pod sandbox", "pod", cfg.Namespace+"/"+cfg.Name, "sandbox", sb.id, "ip", ip)
	return cri.Sandbox{ID: sb.id, IP: ip}, nil
}

// StopPodSandbox kills the sandbox's running containers at once (the
// kubelet has already stopped them gracefully) and releases its address.
// Stopping a stopped sandbox does nothing.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errClosed
	}
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("stop pod sandbox %s: %w", id, cri.ErrNotFound)
	}
	// Not ready: no container starts in it from now on.
	wasReady := sb.ready
	sb.ready = false
	containers := r.sandboxContainersLocked(id)
	r.mu.Unlock()

	for _, c := range containers {
		if err := c.stop(ctx, 0); err != nil {
			return fmt.Errorf("stop pod sandbox %s: %w", id, err)
		}
	}
	if wasReady {
		// Only now is the address free: its containers no longer listen
		// on it.
		r.ips.release(sb.ip)
		r.logger.Info("Stopped pod sandbox", "pod", sb.cfg.Namespace+"/"+sb.cfg.Name, "sandbox", id)
	}
	return nil
}

// RemovePodSandbox stops the sandbox and removes it with its containers
// and their logs. Removing a sandbox that does not exist does nothing, as
// the CRI asks.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	_, ok := r.sandboxes[id]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	if err := r.StopPodSandbox(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return nil
	}
	containers := r.sandboxContainersLocked(id)
	for _, c := range containers {
		r.forgetLocked(c)
	}
	delete(r.sandboxes, id)
	r.mu.Unlock()

	var errs []error
	for _, c := range containers {
		errs = append(errs, c.log.remove())
	}
	if err := os.RemoveAll(sb.logDir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(sb.rootDir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", id, err)
	}
	return nil
}

// ListPodSandboxes lists every sandbox not yet removed, oldest first.
func (r *Runtime) ListPodSandboxes(ctx context.Context) ([]cri.SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	list := make([]cri.SandboxStatus, 0, len(r.sandboxes))
	for _, sb := range r.sandboxes {
		list = append(list, sb.status())
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
			return list[i].CreatedAt.Before(list[j].CreatedAt)
		}
		return list[i].ID < list[j].ID
	})
	return list, nil
}

// sandboxContainersLocked returns a sandbox's containers.
func (r *Runtime) sandboxContainersLocked(id string) []*container {
	var list []*container
	for _, c := range r.containers {
		if c.sandboxID == id {
			list = append(list, c)
		}
	}
	return list
}
