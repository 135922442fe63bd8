package proxy

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// configLoop applies the kube-proxy ConfigMap each time it changes.
func (p *Proxy) configLoop() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.configChanged:
			p.applyConfig()
		}
	}
}

// loadSettings reads the configuration from the ConfigMap informer's
// cache. A missing ConfigMap means the defaults.
func (p *Proxy) loadSettings() (settings, string, error) {
	cm, err := p.configMapLister.ConfigMaps(ConfigMapNamespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		return defaultSettings(), configSourceDefault, nil
	}
	if err != nil {
		return settings{}, "", fmt.Errorf("configmap %s/%s: %w", ConfigMapNamespace, ConfigMapName, err)
	}
	s, err := settingsFromConfigMap(cm)
	if err != nil {
		return settings{}, "", err
	}
	return s, configSourceConfigMap, nil
}

// proxierConfig is what every mode is built with.
func (p *Proxy) proxierConfig(s settings) proxier.Config {
	return proxier.Config{NodeIP: p.cfg.NodeIP, ClusterCIDR: p.cfg.PodCIDR, IPVSScheduler: s.ipvsScheduler}
}

// loadInitialConfig builds the first generation. A configuration kube-proxy
// cannot read leaves it on the defaults, with the error reported, where a
// real kube-proxy would refuse to start. syncMu is held.
func (p *Proxy) loadInitialConfig() {
	s, source, err := p.loadSettings()
	if err != nil {
		s, source = defaultSettings(), configSourceDefault
	}
	mode, newErr := proxier.New(s.mode, p.proxierConfig(s))
	if newErr != nil {
		// Cannot happen for validated settings; fall back all the same.
		err = newErr
		s, source = defaultSettings(), configSourceDefault
		mode, _ = proxier.New(s.mode, p.proxierConfig(s))
	}
	p.modeMu.Lock()
	p.gen = &generation{mode: mode, since: time.Now()}
	p.modeMu.Unlock()
	p.setSettings(s, source)
	if err != nil {
		p.reportConfigError(err)
	}
}

// applyConfig compares the ConfigMap with the running settings and acts on
// the difference: a new mode (or ipvs scheduler) is a mode switch, new
// periods go to the sync runner, a bad configuration is reported and
// changes nothing.
func (p *Proxy) applyConfig() {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	s, source, err := p.loadSettings()
	if err != nil {
		p.reportConfigError(err)
		return
	}
	p.statusMu.Lock()
	old := p.state.settings
	p.statusMu.Unlock()
	if !old.sameProxier(s) {
		if err := p.switchMode(old, s); err != nil {
			p.reportConfigError(err)
			return
		}
	}
	p.setSettings(s, source)
}

// setSettings records the running settings and hands their periods, divided
// by the speed, to the sync runner. syncMu is held.
func (p *Proxy) setSettings(s settings, source string) {
	p.statusMu.Lock()
	p.state.settings, p.state.configSource, p.state.configError = s, source, ""
	p.statusMu.Unlock()
	minSync, sync := p.cfg.Speed.Scale(s.minSyncPeriod), p.cfg.Speed.Scale(s.syncPeriod)
	if curMin, curMax := p.runner.Intervals(); curMin != minSync || curMax != sync {
		p.runner.SetIntervals(minSync, sync)
	}
}

// switchMode replaces the running mode, as restarting a real kube-proxy
// with another mode would, but without a gap: the new mode is built and
// synced first, new connections move to it in one step, and only when
// the picks already under way on the old mode have finished is the old
// mode cleaned up. Connections already established keep their endpoint.
// syncMu is held.
func (p *Proxy) switchMode(from, to settings) error {
	mode, err := proxier.New(to.mode, p.proxierConfig(to))
	if err != nil {
		return err
	}
	snap := p.buildSnapshot()
	result := mode.Sync(snap)

	next := &generation{mode: mode, since: time.Now()}
	p.modeMu.Lock()
	old := p.gen
	p.gen = next
	p.modeMu.Unlock()
	p.afterSync(next, snap, result)

	old.selecting.Wait()
	old.mode.Cleanup()

	msg := modeChangedMessage(from, to, result.Rules)
	p.log.Info("proxy mode changed", "from", from.mode, "to", to.mode, "ipvsScheduler", to.ipvsScheduler, "rules", result.Rules)
	p.hub.Publish(Event{
		Kind: EventModeChanged, Mode: to.mode, From: from.mode, To: to.mode,
		Duration: result.Duration, Rules: result.Rules, Message: msg,
	})
	p.recorder.Eventf(p.nodeRef, nil, eventTypeNormal, ReasonModeChanged, actionSwitchMode, "%s", truncateNote(msg))
	return nil
}

// modeChangedMessage tells what a switch did, in the English of
// Kubernetes Events.
func modeChangedMessage(from, to settings, rules int) string {
	what := fmt.Sprintf("Proxy mode changed from %s to %s", from.mode, to.mode)
	if from.mode == to.mode {
		what = fmt.Sprintf("IPVS scheduler changed from %s to %s", from.ipvsScheduler, to.ipvsScheduler)
	} else if to.mode == proxier.ModeIPVS {
		what += fmt.Sprintf(" (scheduler %s)", to.ipvsScheduler)
	}
	return fmt.Sprintf("%s: the %s rules were removed and %s was programmed afresh (%d rules). "+
		"A real kube-proxy reads its configuration only when it starts and would need a restart; klab restarted it in place.",
		what, from.mode, to.mode, rules)
}

// reportConfigError records a configuration kube-proxy cannot use. The
// running mode stays. Each new error is announced once, on the event
// stream and as a Warning Event on the Node. syncMu is held.
func (p *Proxy) reportConfigError(err error) {
	msg := err.Error()
	p.statusMu.Lock()
	changed := p.state.configError != msg
	p.state.configError = msg
	p.statusMu.Unlock()
	if !changed {
		return
	}
	mode := p.current().mode.Name()
	p.log.Warn("invalid kube-proxy configuration; keeping the running mode", "err", err, "mode", mode)
	p.hub.Publish(Event{Kind: EventConfigError, Mode: mode, Message: msg})
	p.recorder.Eventf(p.nodeRef, nil, eventTypeWarning, ReasonInvalidConfiguration, actionLoadConfiguration,
		"%s", truncateNote(fmt.Sprintf("%s; kube-proxy keeps running in %s mode", msg, mode)))
}
