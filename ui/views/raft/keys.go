package raft

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/labstate"
)

// Action is what one of the Raft view's keys asks of the cluster.
type Action int

// The actions, one per key.
const (
	Pause Action = iota + 1
	Resume
	Step // one tick, while paused
	Slower
	Faster
	Kill      // the leader
	Partition // a member, chosen in a dialog
	Heal
	Restart // a member that is down
	Write   // a key, to watch it replicate
)

// ActionMsg asks the workspace to act on the cluster. The Raft view's
// keys drive the raft clock and break the cluster, which the workspace
// does: it reports on its status line and asks in its dialogs which
// member.
type ActionMsg struct{ Action Action }

// keyAction is a key and what it asks.
type keyAction struct {
	key    key.Binding
	action Action
}

// keyActions are the keys that work in the members' state now: step only
// while the clock is paused, speed changes only within their range, kill
// only when there is a leader, restart only when a member is down.
func (v *View) keyActions() []keyAction {
	k := v.c.Keys
	clock := v.st.Clock()
	var out []keyAction
	if clock.TickInterval > 0 {
		if clock.Paused {
			out = append(out, keyAction{k.Resume(), Resume}, keyAction{k.Step, Step})
		} else {
			out = append(out, keyAction{k.Pause, Pause})
		}
		idx := lab.SlowdownOf(clock.TickInterval)
		if idx < len(lab.Slowdowns)-1 {
			out = append(out, keyAction{k.Slower, Slower})
		}
		if idx > 0 {
			out = append(out, keyAction{k.Faster, Faster})
		}
	}
	if v.st.Leader() != nil {
		out = append(out, keyAction{k.Kill, Kill})
	}
	if len(v.st.Members) > 1 {
		out = append(out, keyAction{k.Partition, Partition})
	}
	if len(v.st.Partitions) > 0 || v.st.SawDrops() {
		out = append(out, keyAction{k.Heal, Heal})
	}
	if len(Restartable(v.st)) > 0 {
		out = append(out, keyAction{k.Restart, Restart})
	}
	return append(out, keyAction{k.Write, Write})
}

// Update turns a key that works now into the ActionMsg it asks for; other
// keys and messages change nothing.
func (v *View) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	for _, ka := range v.keyActions() {
		if key.Matches(km, ka.key) {
			a := ka.action
			return func() tea.Msg { return ActionMsg{Action: a} }
		}
	}
	return nil
}

// Typing reports false: the Raft view takes no text.
func (v *View) Typing() bool { return false }

// ShortHelp lists the keys that work now.
func (v *View) ShortHelp() []key.Binding {
	kas := v.keyActions()
	out := make([]key.Binding, len(kas))
	for i, ka := range kas {
		out[i] = ka.key
	}
	return out
}

// FullHelp lists the keys that work now, as one group.
func (v *View) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Restartable lists the members that are not running and can be started
// again.
func Restartable(st *labstate.State) []string {
	var out []string
	for i := range st.Members {
		if !st.Members[i].Running() && st.Members[i].Role() != labstate.RolePaused && st.Members[i].Role() != labstate.RoleUnknown {
			out = append(out, st.Members[i].Name)
		}
	}
	return out
}
