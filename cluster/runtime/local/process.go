package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/components"
)

// process is one running component: what a container's main process is in
// the Docker runtime.
type process interface {
	// Stop shuts it down gracefully; Kill at once.
	Stop() error
	Kill()
	// Pause freezes it; Resume thaws it.
	Pause() error
	Resume() error
	// Done is closed when it stops by itself; Err says why.
	Done() <-chan struct{}
	Err() error
}

// startProcess starts what spec describes, logging to logger.
func (r *Runtime) startProcess(ctx context.Context, spec runtime.ComponentSpec, logger *slog.Logger) (process, error) {
	switch {
	case spec.Etcd != nil:
		m, err := components.Etcd(ctx, *spec.Etcd, r.faults, logger)
		if err != nil {
			return nil, err
		}
		return etcdProcess{m}, nil
	case spec.APIServer != nil:
		return components.APIServer(ctx, spec.Ref, *spec.APIServer, logger)
	case spec.LB != nil:
		p, err := components.LB(ctx, *spec.LB, logger)
		if err != nil {
			return nil, err
		}
		return lbProcess{p}, nil
	case spec.Scheduler != nil:
		return r.startScheduler(ctx, spec.Ref, *spec.Scheduler, logger)
	case spec.ControllerManager != nil:
		return r.startControllerManager(ctx, spec.Ref, *spec.ControllerManager, logger)
	case spec.Kubelet != nil:
		return r.startKubelet(ctx, spec.Ref, *spec.Kubelet, logger)
	case spec.KubeProxy != nil:
		return r.startKubeProxy(ctx, spec.Ref, *spec.KubeProxy, logger)
	case spec.DNS != nil:
		return r.startDNS(ctx, spec.Ref, *spec.DNS, logger)
	}
	return nil, fmt.Errorf("component %s has nothing to run", spec.Ref)
}

// etcdProcess adapts an etcd member.
type etcdProcess struct{ *etcd.Member }

func (p etcdProcess) Pause() error  { p.Member.Pause(); return nil }
func (p etcdProcess) Resume() error { p.Member.Resume(); return nil }

// lbProcess is the load balancer, which the local runtime cannot freeze: no
// network gate sits in its connections.
type lbProcess struct{ components.Process }

func (p lbProcess) Pause() error {
	return errors.New("the load balancer cannot be paused in the local runtime; stop it instead")
}
func (p lbProcess) Resume() error { return nil }
