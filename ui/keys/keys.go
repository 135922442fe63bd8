// Package keys is the TUI's one KeyMap: every key klab answers to, with
// the help text the footer and the full help show.
package keys

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
)

// KeyMap names every action by what it does. Panes decide which bindings
// apply at the moment and list only those in their help, so the footer
// never offers a key that does nothing.
type KeyMap struct {
	// Navigation, shared by every screen. Arrows only: letters are taken
	// by actions (k kills, h heals).
	Up, Down, Left, Right, Select, Back, Focus key.Binding
	Help, Lang, Quit, ForceQuit                key.Binding

	// Views.
	Overview, Raft, Scheduler, Proxy, Events key.Binding

	// The command line, and what the views offer: a filter, the next
	// kube-proxy mode, a burst of traffic, scrolling a long pane.
	Command, Filter, Mode, Traffic, PageUp, PageDown key.Binding

	// The lesson pane: next and previous step, one more hint, answering
	// the step's question, showing its solution (and then running it
	// command by command).
	NextStep, PrevStep, Hint, Answer, Solution key.Binding
	// Autoplay plays the lesson, pauses it and resumes it; Presenter
	// switches the presenter layout on and off.
	Autoplay, Presenter key.Binding
	// ResetStep brings the cluster back to the start of a lesson step.
	ResetStep key.Binding
	// Timeline pauses the views on the recording to scrub it; Live (or
	// Timeline again) goes back to the live views.
	Timeline, Live key.Binding

	// Raft clock.
	Pause, Step, Slower, Faster key.Binding

	// Chaos and load.
	Kill, Partition, Heal, Restart, Write key.Binding

	// Quit dialog.
	Keep, Remove key.Binding

	// Recreate starts the cluster again in the shape a lesson step needs.
	Recreate key.Binding
}

// Default returns the key map with help in the current language. It is
// built again when the language changes.
func Default() *KeyMap {
	b := func(keys []string, label, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(label, i18n.T(desc)))
	}
	return &KeyMap{
		Up:        b([]string{"up"}, "↑", "ui.key.up"),
		Down:      b([]string{"down"}, "↓", "ui.key.down"),
		Left:      b([]string{"left"}, "←/→", "ui.key.change"),
		Right:     b([]string{"right"}, "←/→", "ui.key.change"),
		Select:    b([]string{"enter"}, "enter", "ui.key.select"),
		Back:      b([]string{"esc"}, "esc", "ui.key.back"),
		Focus:     b([]string{"tab"}, "tab", "ui.key.focus"),
		Help:      b([]string{"?"}, "?", "ui.key.help"),
		Lang:      b([]string{"L"}, "L", "ui.key.lang"),
		Quit:      b([]string{"q"}, "q", "ui.key.quit"),
		ForceQuit: b([]string{"ctrl+c"}, "ctrl+c", "ui.key.force-quit"),

		Overview:  b([]string{"1"}, "1", "ui.view.overview"),
		Raft:      b([]string{"2"}, "2", "ui.view.raft"),
		Scheduler: b([]string{"3"}, "3", "ui.view.scheduler"),
		Proxy:     b([]string{"4"}, "4", "ui.view.proxy"),
		Events:    b([]string{"5"}, "5", "ui.view.events"),

		Command:  b([]string{":"}, ":", "ui.key.command"),
		Filter:   b([]string{"/"}, "/", "ui.key.filter"),
		Mode:     b([]string{"m"}, "m", "ui.key.mode"),
		Traffic:  b([]string{"t"}, "t", "ui.key.traffic"),
		PageUp:   b([]string{"pgup"}, "pgup", "ui.key.page-up"),
		PageDown: b([]string{"pgdown"}, "pgdn", "ui.key.page-down"),

		NextStep:  b([]string{"n"}, "n", "ui.key.next-step"),
		PrevStep:  b([]string{"N"}, "N", "ui.key.prev-step"),
		Hint:      b([]string{"i"}, "i", "ui.key.hint"),
		Answer:    b([]string{"a"}, "a", "ui.key.answer"),
		Solution:  b([]string{"s"}, "s", "ui.key.solution"),
		Autoplay:  b([]string{"A"}, "A", "ui.key.autoplay"),
		Presenter: b([]string{"P"}, "P", "ui.key.presenter"),
		ResetStep: b([]string{"R"}, "R", "ui.key.reset-step"),
		Timeline:  b([]string{"T"}, "T", "ui.key.timeline"),
		Live:      b([]string{"T", "esc"}, "T", "ui.key.live"),

		Pause:  b([]string{" "}, "space", "ui.key.pause"),
		Step:   b([]string{"."}, ".", "ui.key.step"),
		Slower: b([]string{"-", "_"}, "-", "ui.key.slower"),
		Faster: b([]string{"+", "="}, "+", "ui.key.faster"),

		Kill:      b([]string{"k"}, "k", "ui.key.kill"),
		Partition: b([]string{"p"}, "p", "ui.key.partition"),
		Heal:      b([]string{"h"}, "h", "ui.key.heal"),
		Restart:   b([]string{"r"}, "r", "ui.key.restart"),
		Write:     b([]string{"w"}, "w", "ui.key.write"),

		Keep:   b([]string{"k"}, "k", "ui.key.keep"),
		Remove: b([]string{"r"}, "r", "ui.key.remove"),

		Recreate: b([]string{"enter"}, "enter", "ui.key.recreate"),
	}
}

// described returns b with its key's help saying desc: the same key,
// described by what it does now.
func described(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, i18n.T(desc))
	return b
}

// AutoplayPause, AutoplayResume and AutoplayGoOn are the autoplay binding
// as it reads while autoplay plays, while it is paused, and while a
// question waits for the room.
func (k *KeyMap) AutoplayPause() key.Binding  { return described(k.Autoplay, "ui.key.autoplay-pause") }
func (k *KeyMap) AutoplayResume() key.Binding { return described(k.Autoplay, "ui.key.autoplay-resume") }
func (k *KeyMap) AutoplayGoOn() key.Binding   { return described(k.Autoplay, "ui.key.autoplay-go-on") }

// PresenterOff is the presenter binding while the layout is on.
func (k *KeyMap) PresenterOff() key.Binding { return described(k.Presenter, "ui.key.presenter-off") }

// RunSolution returns the solution binding described as running the next
// command, for when the solution is shown.
func (k *KeyMap) RunSolution() key.Binding { return described(k.Solution, "ui.key.run-solution") }

// Resume returns the pause binding described as resuming, for when the
// clock is paused.
func (k *KeyMap) Resume() key.Binding { return described(k.Pause, "ui.key.resume") }

// AsText marks several runes that arrived in one read (fast typing, a
// paste, a terminal multiplexer sending a word at once) as text, so that
// no binding matches them. Bindings compare a key's string, and several
// runes read together print as what they spell: "delete", "end", "up" or
// "tab" typed quickly would otherwise act as the Delete, End, Up or Tab
// key and the word would be lost from the command line. A single rune is
// left as it is: that is how a key such as q or k arrives.
func AsText(msg tea.KeyMsg) tea.KeyMsg {
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Alt {
		msg.Paste = true
	}
	return msg
}
