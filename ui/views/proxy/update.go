package proxy

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
)

// Owns reports whether msg is one of the view's own: its watches, its
// kube-proxy's events, the rules fetched, a switch's or a burst's result.
func (v *View) Owns(msg tea.Msg) bool {
	switch msg.(type) {
	case connectedMsg, watchingMsg, servicesMsg, subscribedMsg, proxyEventsMsg,
		streamEndedMsg, rulesMsg, switchedMsg, trafficMsg:
		return true
	}
	return false
}

// Update handles the view's own messages, and keys while it is shown; it
// ignores the rest.
func (v *View) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		return v.handleKey(msg)

	case connectedMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		if msg.err != nil {
			v.err = msg.err
			return nil
		}
		v.cluster = msg.cluster
		return tea.Batch(watchServices(v.ctx, v.epoch, v.cluster), v.follow())

	case watchingMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		if msg.err != nil {
			v.err = msg.err
			return nil
		}
		v.changes = msg.changes
		return waitServices(v.ctx, v.epoch, v.cluster, v.changes)

	case servicesMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		return v.servicesChanged(msg.services)

	case subscribedMsg:
		if msg.feed != v.feed {
			return nil
		}
		if msg.err != nil {
			v.streamErr = msg.err
			return v.fetch()
		}
		v.following = true
		return tea.Batch(waitProxyEvents(v.feedCtx, v.feed, msg.ch), v.fetch())

	case proxyEventsMsg:
		if msg.feed != v.feed {
			return nil
		}
		wait := waitProxyEvents(v.feedCtx, v.feed, msg.ch)
		if v.rulesMayHaveChanged(msg.events) {
			v.dirty = false
			return tea.Batch(wait, v.fetch())
		}
		return wait

	case streamEndedMsg:
		if msg.feed == v.feed {
			v.following = false
			v.streamErr = errStreamEnded
		}
		return nil

	case rulesMsg:
		if msg.feed != v.feed {
			return nil
		}
		v.fetching = false
		if msg.statuses != nil {
			v.statuses = msg.statuses
		}
		v.rulesErr = msg.err
		if msg.err == nil {
			v.rules, v.fetched = msg.rules, true
			v.updateShown()
		}
		if v.refetch {
			v.refetch = false
			return v.fetch()
		}
		return nil

	case switchedMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		v.switching = ""
		v.outcome = switchOutcome(msg)
		return v.fetch()

	case trafficMsg:
		if v.burst == nil || msg.run != v.run {
			return nil
		}
		for _, r := range msg.results {
			v.burst.add(r)
		}
		if msg.done {
			v.burst.done, v.burst.err = true, msg.err
			return nil
		}
		return waitTraffic(v.ctx, msg.run, msg.ch)
	}
	return nil
}

// rulesMayHaveChanged reports whether the kube-proxy's events may have
// changed its rules: a mode switch or a configuration it refused, a sync
// after a change the view saw, or a sync in another mode or with another
// number of rules than the view last fetched.
func (v *View) rulesMayHaveChanged(events []kubeproxy.Event) bool {
	st := v.nodeStatus()
	for _, e := range events {
		switch e.Kind {
		case kubeproxy.EventModeChanged, kubeproxy.EventConfigError:
			return true
		case kubeproxy.EventSync:
			if v.dirty || st == nil || e.Mode != st.Mode || e.Rules != st.Rules {
				return true
			}
		}
	}
	return false
}

// servicesChanged takes a new list of Services: the selection stays on
// its Service while it exists. The rules are fetched again now, in case the
// kube-proxy synced the change before the view heard of it, and after its
// next sync, in case it had not.
func (v *View) servicesChanged(svcs []service) tea.Cmd {
	first := !v.listed
	v.services, v.listed = svcs, true
	cmds := []tea.Cmd{waitServices(v.ctx, v.epoch, v.cluster, v.changes)}
	if v.current() == nil {
		v.selectService(firstChoice(svcs))
	} else {
		v.updateShown()
	}
	if !first {
		v.dirty = true
		cmds = append(cmds, v.fetch())
	}
	// The kube-proxy stream went away (its node stopped): try it again
	// now that something happened in the cluster.
	if !v.following && v.streamErr != nil {
		cmds = append(cmds, v.follow())
	}
	return tea.Batch(cmds...)
}

func switchOutcome(msg switchedMsg) *outcome {
	if msg.err != nil {
		return &outcome{failed: true, text: func() string {
			return i18n.T("ui.proxy.switch-failed", msg.mode, i18n.Localize(msg.err, i18n.Current()))
		}}
	}
	answered := 0
	for _, np := range msg.nodes {
		if np.Status != nil {
			answered++
		}
	}
	return &outcome{text: func() string {
		return i18n.T("ui.proxy.switched", msg.mode, answered, len(msg.nodes))
	}}
}
