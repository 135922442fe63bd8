package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/nodelifecycle"
)

// minResyncPeriod is upstream's --min-resync-period: informers replay
// their whole cache to the handlers every 12 to 24 hours (divided by the
// lab's speed), so that a missed event is eventually made up for.
const minResyncPeriod = 12 * time.Hour

// onStartedLeading runs the controllers for as long as ctx (the leader
// term) lasts. client-go calls it on a goroutine of its own.
func (m *Manager) onStartedLeading(ctx context.Context) {
	m.mu.Lock()
	if m.electionOver || ctx.Err() != nil {
		m.mu.Unlock()
		return // the term ended before it began
	}
	m.leaderWG.Add(1)
	m.leading, m.termStarted = true, true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.leading = false
		m.mu.Unlock()
		m.leaderWG.Done()
	}()
	m.logger.Info("Became leader, starting controllers")
	m.publish(Event{Kind: EventStartedLeading, Leader: m.identity})
	m.runControllers(ctx)
}

// onStoppedLeading is called whenever the election ends, leader or not.
func (m *Manager) onStoppedLeading() {
	m.mu.Lock()
	was := m.termStarted
	m.termStarted = false
	m.mu.Unlock()
	stopping := m.life.Stopping()
	if !was {
		return
	}
	if !stopping {
		m.logger.Error("Lost the lease")
	}
	m.publish(Event{Kind: EventStoppedLeading})
}

// onNewLeader notes the lease holder.
func (m *Manager) onNewLeader(identity string) {
	m.mu.Lock()
	m.holder = identity
	m.mu.Unlock()
	m.logger.Info("New leader elected", "leader", identity)
	m.publish(Event{Kind: EventLeader, Leader: identity})
}

func (m *Manager) publish(e Event) {
	e.Identity = m.identity
	m.events.Publish(e)
}

// runControllers builds the controllers' shared context, initialises every
// enabled controller, starts the informers and runs the controllers until
// ctx ends; it returns once they and the informers have stopped. A
// controller that fails to initialise stops the manager, as it makes
// upstream's process exit.
func (m *Manager) runControllers(ctx context.Context) {
	resync := time.Duration(float64(m.cfg.Speed.Scale(minResyncPeriod)) * (1 + rand.Float64()))
	shared := informers.NewSharedInformerFactoryWithOptions(m.client, resync, informers.WithTransform(trimManagedFields))
	metadataShared := metadatainformer.NewSharedInformerFactoryWithOptions(m.metadata, resync, metadatainformer.WithTransform(trimManagedFields))
	cctx := controllerctx.Context{
		Client:             m.client,
		Informers:          shared,
		Metadata:           m.metadata,
		MetadataInformers:  metadataShared,
		Recorder:           m.recorder,
		Speed:              m.cfg.Speed,
		Logger:             m.logger,
		ClusterSigningCert: m.cfg.ClusterSigningCert,
		ClusterSigningKey:  m.cfg.ClusterSigningKey,
		RootCA:             m.cfg.RootCA,
	}
	ctx = nodelifecycle.WithObserver(ctx, func(t nodelifecycle.Transition) { m.publish(eventFromTransition(t)) })

	type started struct {
		name string
		ctrl controllerctx.Controller
	}
	var controllers []started
	for _, name := range m.enabled {
		ctrl, err := initFuncs[name](ctx, cctx)
		if err != nil {
			m.logger.Error("Error starting controller", "controller", name, "err", err)
			m.life.Fail(fmt.Errorf("start controller %s: %w", name, err))
			return
		}
		if ctrl == nil {
			m.logger.Info("Warning: skipping controller", "controller", name)
			continue
		}
		m.logger.Info("Started controller", "controller", name)
		controllers = append(controllers, started{name, ctrl})
	}
	// Informers start only now, once every controller has registered its
	// handlers and indexers.
	shared.Start(ctx.Done())
	metadataShared.Start(ctx.Done())

	running := map[string]controllerctx.Controller{}
	var wg sync.WaitGroup
	for _, c := range controllers {
		running[c.name] = c.ctrl
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.ctrl.Run(ctx, m.cfg.workersFor(c.name))
		}()
	}
	m.setRunning(running)
	<-ctx.Done()
	wg.Wait()
	shared.Shutdown()
	metadataShared.Shutdown()
	m.setRunning(nil)
}

func (m *Manager) setRunning(running map[string]controllerctx.Controller) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = running
}

// trimManagedFields drops managedFields from cached objects: no controller
// reads them, and they are a large part of every object.
func trimManagedFields(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
